"""The Delta tables written under ``--output``, declared as data.

Each table is a :class:`TableSpec`: its name, a comment that states the row grain, and a Spark
``StructType`` whose every field carries ``metadata={"comment": ...}``. The sink
(:mod:`offsets_lib.io.sink`) turns these into the Delta schema, so the comments live only in
these declarations.

Names and required columns come from ``docs/contract.md`` and are fixed; the other
columns are extras. Conventions: timestamps are UTC ``timestamp`` columns (never epoch ms);
``committed_offset`` is the consumer's position, ``log_offset``/``offsets_offset`` a position in
``__consumer_offsets``; NULL always has the meaning written in the column comment, never a
sentinel. Every table is partitioned by ``run_id`` and a run replaces its own partition.

Here are the offsets' tables and the run's (offsets, offset_decisions, rejects, runs, lag,
metrics) and `TABLES`, every table in the order TABLES.md lists them; the per-group tables are in
group_tables.py, `TableSpec` and the shared columns in table_columns.py.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
    TimestampType,
)

from offsets_lib.audit.group_tables import (
    GROUP_DECISIONS,
    GROUPS,
    LOAD_FAILURES,
    MEMBERS,
    UNREAD_MARKER_OFFSETS,
)
from offsets_lib.audit.table_columns import (
    RUN_ID,
    TableSpec,
    as_of_column,
    column,
    committed_offset_column,
    group_id_column,
    offsets_partition_column,
    partition_column,
    run_id_column,
    topic_column,
)

__all__ = ["RUN_ID", "TABLES", "TableSpec", "table_spec"]

# ---- the tables ----------------------------------------------------------------------------

# fmt: off
OFFSETS = TableSpec(
    name="offsets",
    comment="One row per live committed offset (group_id, topic, partition) at as_of, per run.",
    schema=StructType([
        group_id_column(),
        topic_column(),
        partition_column(),
        committed_offset_column(),
        column("leader_epoch", IntegerType(),
            "Leader epoch of the committed offset; null where Kafka stores -1 or the value "
            "version has none (v0-v2)."),
        column("metadata", StringType(), "Free-form metadata string the client committed."),
        column("commit_timestamp", TimestampType(),
            "Commit time stored in the offset value (commitTimestamp), not the record's log "
            "timestamp."),
        column("expire_timestamp", TimestampType(),
            "Explicit expiry time of an OffsetCommitValue v1; null for every other version or "
            "when Kafka stores -1."),
        offsets_partition_column("the commit"),
        column("log_offset", LongType(),
            "Offset in __consumer_offsets of the record that set this value (the latest one "
            "wins, LOG-1)."),
        column("topic_id", StringType(), "Topic id (UUID) of a v4+ value; null otherwise."),
        column("value_version", ShortType(), "Version of the OffsetCommitValue record."),
        column("has_pending_transaction", BooleanType(),
            "True when a transactional offset for this partition is still pending (TXN-1); "
            "false otherwise."),
        run_id_column(),
        as_of_column(),
    ]),
)

OFFSET_DECISIONS = TableSpec(
    name="offset_decisions",
    comment="One row per row of offsets: expiry and OffsetDelete outcome at as_of, per run.",
    schema=StructType([
        group_id_column(),
        topic_column(),
        partition_column(),
        column("expired", BooleanType(),
            "True when a cleanup run at as_of would delete this offset."),
        column("expires_at", TimestampType(),
            "Earliest instant the offset is expired; null = never under the current state (e.g. "
            "subscribed topic, pending transaction, no expiration condition)."),
        column("rule", StringType(),
            "Expiry rule that decided (e.g. EXP-EMPTY-STATE-TS; each rule id: docs/rules.md)."),
        column("delete_error", StringType(),
            "Null = an OffsetDelete request would succeed; else Kafka's error name (e.g. "
            "GROUP_SUBSCRIBED_TO_TOPIC)."),
        column("delete_rule", StringType(),
            "OffsetDelete rule that decided delete_error (e.g. ODEL-SUBSCRIBED; docs/rules.md)."),
        offsets_partition_column("the commit"),
        run_id_column(),
        as_of_column(),
    ]),
)

REJECTS = TableSpec(
    name="rejects",
    comment="One row per input record that could not be decoded, per run.",
    schema=StructType([
        offsets_partition_column("the record"),
        column("offsets_offset", LongType(),
            "Offset of the record in its __consumer_offsets partition."),
        column("key", BinaryType(), "Raw record key; null when the record had none."),
        column("value", BinaryType(), "Raw record value; null = tombstone."),
        column("error", StringType(),
            "Why decoding failed, e.g. 'unknown record type 99'. Never null."),
        column("offsets_timestamp", TimestampType(),
            "Log timestamp of the record; null when the input had none."),
        column("record_type", ShortType(),
            "Record type read from the key; null when the key is too short to hold one."),
        run_id_column(),
    ]),
)

RUNS = TableSpec(
    name="runs",
    comment="One row per run; written last, so a row here means the run's tables are complete.",
    schema=StructType([
        run_id_column(),
        column("status", StringType(), "Outcome of the run: succeeded or failed."),
        column("started_at", TimestampType(), "UTC instant the run started."),
        column("finished_at", TimestampType(), "UTC instant the run finished."),
        column("as_of", TimestampType(),
            "UTC instant the run evaluated the coordinator's state at; null only when the run "
            "failed before choosing it."),
        column("source", StringType(), "Input kind: parquet or kafka."),
        column("records_read", LongType(), "Raw records read from the input."),
        column("records_decoded", LongType(), "Records decoded without error."),
        column("records_rejected", LongType(), "Records written to rejects."),
        column("coordinator", StringType(),
            "Group coordinator whose rules were applied: new, classic-2.4, classic-2.4.0-2.6.0, "
            "classic-2.1 or pre-2.1."),
        column("retention_ms", LongType(), "offsets.retention.ms used for expiry decisions."),
        column("input", StringType(),
            "Input path(s) or bootstrap servers and topic; no credentials."),
        column("error", StringType(), "Error message of a failed run; null when it succeeded."),
        column("tables_written", ArrayType(StringType()),
            "Names of the tables this run committed, in commit order."),
    ]),
)

LAG = TableSpec(
    name="lag",
    comment="One row per committed offset (group, topic, partition) with its lag, per run.",
    schema=StructType([
        group_id_column(),
        topic_column(),
        partition_column(),
        committed_offset_column(),
        column("log_end_offset", LongType(),
            "Log-end offset of the consumed topic partition when the run read it (cluster high "
            "watermark or --end-offsets file; CLI: LOG-END-OFFSET); null when unknown."),
        column("lag", LongType(),
            "max(log_end_offset - committed_offset, 0) (CLI: LAG); null when either is unknown."),
        column("last_commit_at", TimestampType(), "commit_timestamp of the committed offset."),
        column("seconds_since_commit", DoubleType(),
            "as_of - last_commit_at in seconds; null when last_commit_at is null."),
        run_id_column(),
        as_of_column(),
    ]),
)

METRICS = TableSpec(
    name="metrics",
    comment="One row per hour (record log time, UTC) and __consumer_offsets partition, per run.",
    schema=StructType([
        column("hour", TimestampType(), "Start of the UTC hour of the records' log timestamps."),
        offsets_partition_column("the records"),
        column("offset_commits", LongType(), "Offset commit values written in the hour."),
        column("offset_tombstones", LongType(), "Offset commit tombstones written in the hour."),
        column("group_metadata_writes", LongType(),
            "Group metadata records (values and tombstones, any group type) in the hour."),
        column("groups_created", LongType(), "Groups that came into existence in the hour."),
        column("groups_deleted", LongType(), "Groups removed by a tombstone in the hour."),
        run_id_column(),
        as_of_column(),
    ]),
)
# fmt: on

TABLES: dict[str, TableSpec] = {
    spec.name: spec
    for spec in (
        OFFSETS,
        GROUPS,
        MEMBERS,
        OFFSET_DECISIONS,
        GROUP_DECISIONS,
        LOAD_FAILURES,
        UNREAD_MARKER_OFFSETS,
        REJECTS,
        RUNS,
        LAG,
        METRICS,
    )
}


def table_spec(name: str) -> TableSpec:
    """Return the spec of table ``name``; raise ``KeyError`` naming the known tables."""
    try:
        return TABLES[name]
    except KeyError:
        raise KeyError(f"unknown table {name!r}; known: {sorted(TABLES)}") from None
