"""Input and output: sources of raw records, Delta tables, stored state, the output lock.

`sources` (Parquet dumps, Kafka), `sink` (Delta tables and their commits), `incremental` (the
compacted state and checkpoint kept between Kafka runs), `watermarks` (log-end offsets for lag),
`lock` (one writer per output). Imports only `wire` and `audit`.
"""
