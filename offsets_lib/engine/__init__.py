"""How the audit runs on Spark: routing records to tasks, the file shuffle, the per-task audit.

`routing` says which task audits each record (all records of a group meet in one task),
`exchange` is the file shuffle that brings them there and runs `audit.task_audit` in those
tasks, `staging` the tasks' result files, `pipeline` the tables' frames from them. Imports
`wire`, `audit` and `io`.
"""
