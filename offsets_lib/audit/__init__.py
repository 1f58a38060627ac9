"""The semantics, as pure functions: what the group coordinator does with a log.

Transactions and compaction (TXN/LOG rows: `task_audit`, `compaction`), the group replay (G-*:
`replay`), the decision tables (EXP/ODEL/DEL: `rules`, one named predicate per row id), the
KIP-496 meters (`metrics`), lag (`lag`), and the tables' schemas and projections (`tables`,
`projections`, `table_rows`). Arrow or DataFrames in, Arrow or DataFrames out: no clock, file or
environment is read here. Imports only `offsets_lib.wire`.
"""
