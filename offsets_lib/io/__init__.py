"""Input and output: sources of records, Delta tables, what runs keep, the output lock.

`sources` (Parquet dumps, Kafka), `sink` (Delta tables and their commits), `incremental` (the
kept records and checkpoint between Kafka runs), `log_end_offsets` (log-end offsets for lag),
`lock` (one writer per output). Imports only `wire` and `audit`.
"""
