"""The semantics, as pure functions: what the group coordinator does with a log.

Transactions and compaction (TXN/LOG rows: `transactions`, `compaction`, `task_input`), the
group replay (G-*: `replay`, `group_rows`, `group_results`), one task's audit (`task_audit`), the
decision tables (EXP/ODEL/DEL: `rules`, `group_deletion`, one named predicate per row id), the
KIP-496 meters (`metrics`), lag (`lag`), and the tables' schemas and projections (`tables`,
`group_tables`, `table_columns`, `projections`, `table_rows`). Arrow or DataFrames in, Arrow or
DataFrames out: no clock, file or environment is read here. Imports only `offsets_lib.wire`.
"""
