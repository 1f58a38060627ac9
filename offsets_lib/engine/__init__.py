"""How the audit runs on Spark: routing records to tasks, the shuffles, the per-task audit.

`routing` says which task audits each record (all records of a group meet in one task),
`pipeline` runs `audit.task_audit` in those tasks through Spark's shuffle and applies the
decision tables, `exchange` is the file shuffle for Parquet dumps, `staging` the tasks' result
files. Imports `wire`, `audit` and `io`.
"""
