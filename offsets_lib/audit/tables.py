"""The Delta tables written under ``--output``, declared as data.

Each table is a :class:`TableSpec`: its name, a comment that states the row grain, and a Spark
``StructType`` whose every field carries ``metadata={"comment": ...}``. The sink
(:mod:`offsets_lib.io.sink`) turns these into the Delta schema, so the comments live only here.

Names and required columns come from ``shared/spec/contract.md`` and are fixed; the other
columns are extras. Conventions: timestamps are UTC ``timestamp`` columns (never epoch ms);
``committed_offset`` is the consumer's position, ``log_offset``/``offsets_offset`` a position in
``__consumer_offsets``; NULL always has the meaning written in the column comment, never a
sentinel. Every table is partitioned by ``run_id`` and a run replaces its own partition.
The file stays whole (~600 lines): every table of contract.md side by side, as TABLES.md lists
them, one declaration each.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

__all__ = ["RUN_ID", "TABLES", "TableSpec", "table_spec"]

RUN_ID = "run_id"


# A Hive metastore keeps a view's column comments in COLUMNS_V2.COMMENT, VARCHAR(256) in its
# schemas for Derby, MySQL and PostgreSQL: one longer comment failed its `latest_<table>` view's
# CREATE ten times, 2 s apart with a stack trace each, before Spark stored the view without it.
HIVE_COLUMN_COMMENT_CHARS = 256


@dataclass(frozen=True)
class TableSpec:
    """One Delta table: name, row grain, schema with commented columns, partitioning."""

    name: str
    comment: str
    schema: StructType
    partition_by: tuple[str, ...] = (RUN_ID,)

    def __post_init__(self) -> None:
        uncommented = [f.name for f in self.schema.fields if not f.metadata.get("comment")]
        if uncommented:
            raise ValueError(f"table {self.name}: columns without a comment: {uncommented}")
        too_long = [
            f.name
            for f in self.schema.fields
            if len(f.metadata["comment"]) > HIVE_COLUMN_COMMENT_CHARS
        ]
        if too_long:
            raise ValueError(
                f"table {self.name}: comments over {HIVE_COLUMN_COMMENT_CHARS} characters"
                f" (a Hive metastore's limit): {too_long}"
            )
        missing = [c for c in self.partition_by if c not in self.schema.fieldNames()]
        if missing:
            raise ValueError(f"table {self.name}: partition columns not in schema: {missing}")

    @property
    def columns(self) -> list[str]:
        """Column names in table order."""
        return self.schema.fieldNames()


def _col(name: str, dtype: DataType, comment: str, *, nullable: bool = True) -> StructField:
    return StructField(name, dtype, nullable, metadata={"comment": comment})


# ---- columns shared by several tables -------------------------------------------------------


def _run_id() -> StructField:
    return _col(
        RUN_ID,
        StringType(),
        "Id of the run that wrote this row (--run-id); partition column. A rerun with the same "
        "id replaces the run's rows. Never null.",
        nullable=False,
    )


def _as_of() -> StructField:
    return _col(
        "as_of",
        TimestampType(),
        "UTC instant the run evaluated the coordinator's state at (--as-of); the same for every "
        "row of a run. Never null.",
        nullable=False,
    )


def _group_id() -> StructField:
    return _col("group_id", StringType(), "Consumer group id (may be the empty string).")


def _topic() -> StructField:
    return _col("topic", StringType(), "Topic name of the committed offset.")


def _partition() -> StructField:
    return _col("partition", IntegerType(), "Partition of `topic` (not of __consumer_offsets).")


def _offsets_partition(what: str) -> StructField:
    return _col(
        "offsets_partition",
        IntegerType(),
        f"Partition of __consumer_offsets that holds {what} (the group's coordinator "
        "partition); null when the input had no partition.",
    )


def _committed_offset() -> StructField:
    return _col(
        "committed_offset",
        LongType(),
        "Offset the group committed: the next record the group will consume (CLI: CURRENT-OFFSET).",
    )


def _subscribed_topics(scope: str) -> StructField:
    return _col(
        "subscribed_topics",
        ArrayType(StringType()),
        f"Topics {scope} is subscribed to, sorted. Null = unknown (e.g. a classic group whose "
        "protocol type is not 'consumer' or whose subscription bytes do not parse); an empty "
        "array = known to subscribe to nothing.",
    )


ASSIGNED_PARTITION = StructType(
    [
        _col("topic", StringType(), "Assigned topic name; null when only the topic id is known."),
        _col("topic_id", StringType(), "Assigned topic id (UUID); null for classic members."),
        _col("partition", IntegerType(), "Assigned partition of the topic."),
        _col(
            "assignment_epoch",
            IntegerType(),
            "Epoch at which the partition was assigned (KIP-848); null for classic members.",
        ),
    ]
)


# ---- the tables ----------------------------------------------------------------------------

OFFSETS = TableSpec(
    name="offsets",
    comment="One row per live committed offset (group_id, topic, partition) at as_of, per run.",
    schema=StructType(
        [
            _group_id(),
            _topic(),
            _partition(),
            _committed_offset(),
            _col(
                "leader_epoch",
                IntegerType(),
                "Leader epoch of the committed offset; null where Kafka stores -1 or the value "
                "version has none (v0-v2).",
            ),
            _col("metadata", StringType(), "Free-form metadata string the client committed."),
            _col(
                "commit_timestamp",
                TimestampType(),
                "Commit time stored in the offset value (commitTimestamp), not the record's log "
                "timestamp.",
            ),
            _col(
                "expire_timestamp",
                TimestampType(),
                "Explicit expiry time of an OffsetCommitValue v1; null for every other version "
                "or when Kafka stores -1.",
            ),
            _offsets_partition("the commit"),
            _col(
                "log_offset",
                LongType(),
                "Offset in __consumer_offsets of the record that set this value (the latest one "
                "wins, LOG-1).",
            ),
            _col("topic_id", StringType(), "Topic id (UUID) of a v4+ value; null otherwise."),
            _col("value_version", ShortType(), "Version of the OffsetCommitValue record."),
            _col(
                "has_pending_transaction",
                BooleanType(),
                "True when a transactional offset for this partition is still pending (TXN-1); "
                "false otherwise.",
            ),
            _run_id(),
            _as_of(),
        ]
    ),
)

GROUPS = TableSpec(
    name="groups",
    comment="One row per group known at as_of (Dead groups included), per run.",
    schema=StructType(
        [
            _group_id(),
            _col(
                "group_type",
                StringType(),
                "classic, consumer, streams or share. A group that only has offsets is classic "
                "with a null protocol_type.",
            ),
            _col(
                "protocol_type",
                StringType(),
                "Classic protocol type (e.g. 'consumer', 'connect'); null for a simple group "
                "(offsets only) and for modern groups.",
            ),
            _col(
                "state",
                StringType(),
                "Group state inferred from the log: Empty, Stable, Assigning, Reconciling, "
                "NotReady (streams groups) or Dead (semantics.md section 2).",
            ),
            _col(
                "generation",
                IntegerType(),
                "Classic generation id, or the group epoch of a modern group; 0 for a simple "
                "group.",
            ),
            _subscribed_topics("the group"),
            _col(
                "current_state_timestamp",
                TimestampType(),
                "When the classic group entered its current state (GroupMetadataValue v2+); null "
                "for v0/v1 values, -1, and modern groups (G-M8).",
            ),
            _offsets_partition("the group's records"),
            _col(
                "protocol",
                StringType(),
                "Classic protocol (assignor) name chosen by the leader; null when none.",
            ),
            _col("leader", StringType(), "Member id of the classic leader; null when none."),
            _col("member_count", IntegerType(), "Number of members at as_of (0 when Empty/Dead)."),
            _col(
                "target_assignment_epoch",
                IntegerType(),
                "Target assignment epoch of a modern group (G-M3, -1 after its tombstone); null "
                "for classic groups.",
            ),
            _col("offset_count", IntegerType(), "Number of live committed offsets of the group."),
            _col(
                "has_pending_transactions",
                BooleanType(),
                "True when some partition of the group has a pending transactional offset.",
            ),
            _col(
                "state_notes",
                StringType(),
                "Inconsistencies met while replaying the group's records (e.g. a type change "
                "G-U1/G-U2 without the usual tombstones); null when none.",
            ),
            _run_id(),
            _as_of(),
        ]
    ),
)

MEMBERS = TableSpec(
    name="members",
    comment="One row per group member (group_id, member_id) at as_of, per run.",
    schema=StructType(
        [
            _group_id(),
            _col("member_id", StringType(), "Member id assigned by the coordinator."),
            _col(
                "group_instance_id",
                StringType(),
                "Static membership id (KIP-345); null for dynamic members.",
            ),
            _col("client_id", StringType(), "Client id the member connected with."),
            _col("client_host", StringType(), "Host (address) the member connected from."),
            _subscribed_topics("the member"),
            _col(
                "assigned_partitions",
                ArrayType(ASSIGNED_PARTITION),
                "Partitions currently assigned to the member. Null = unknown (assignment bytes "
                "missing or unparsable); an empty array = nothing assigned.",
            ),
            _col(
                "member_epoch",
                IntegerType(),
                "Member epoch of a modern member (-1 after its current-assignment tombstone, -2 "
                "while a static member is temporarily away, semantics.md G-M4); the group "
                "generation for classic members.",
            ),
            _offsets_partition("the member's records"),
            _col("rack_id", StringType(), "Client rack; null when not set."),
            _col(
                "subscribed_topic_regex",
                StringType(),
                "Subscription regular expression (KIP-848); null when the member subscribes by "
                "name. Never evaluated by this job.",
            ),
            _col(
                "rebalance_timeout_ms",
                IntegerType(),
                "Rebalance timeout in milliseconds; null when not recorded.",
            ),
            _col(
                "session_timeout_ms",
                IntegerType(),
                "Session timeout in milliseconds; null when not recorded.",
            ),
            _col(
                "member_state",
                StringType(),
                "Modern member reconciliation state: STABLE, UNREVOKED_PARTITIONS or "
                "UNRELEASED_PARTITIONS (streams members: STABLE, UNREVOKED_TASKS or "
                "UNRELEASED_TASKS); null for classic members.",
            ),
            _col(
                "server_assignor",
                StringType(),
                "Server-side assignor the member asked for (KIP-848); null when none.",
            ),
            _col(
                "previous_member_epoch",
                IntegerType(),
                "Previous member epoch of a modern member; null for classic members.",
            ),
            _col(
                "partitions_pending_revocation",
                ArrayType(ASSIGNED_PARTITION),
                "Partitions the member still owns but must revoke (KIP-848), with their "
                "assignment epochs; empty for classic members.",
            ),
            _run_id(),
            _as_of(),
        ]
    ),
)

OFFSET_DECISIONS = TableSpec(
    name="offset_decisions",
    comment="One row per row of offsets: expiry and OffsetDelete outcome at as_of, per run.",
    schema=StructType(
        [
            _group_id(),
            _topic(),
            _partition(),
            _col(
                "expired",
                BooleanType(),
                "True when a cleanup run at as_of would delete this offset.",
            ),
            _col(
                "expires_at",
                TimestampType(),
                "Earliest instant the offset is expired; null = never under the current state "
                "(e.g. subscribed topic, pending transaction, no expiration condition).",
            ),
            _col(
                "rule",
                StringType(),
                "Expiry rule that decided (e.g. EXP-EMPTY-STATE-TS; each rule id: docs/rules.md).",
            ),
            _col(
                "delete_error",
                StringType(),
                "Null = an OffsetDelete request would succeed; else Kafka's error name (e.g. "
                "GROUP_SUBSCRIBED_TO_TOPIC).",
            ),
            _col(
                "delete_rule",
                StringType(),
                "OffsetDelete rule that decided delete_error (e.g. ODEL-SUBSCRIBED; "
                "docs/rules.md).",
            ),
            _offsets_partition("the commit"),
            _run_id(),
            _as_of(),
        ]
    ),
)

GROUP_DECISIONS = TableSpec(
    name="group_decisions",
    comment="One row per row of groups: whether the broker deletes the group at as_of, per run.",
    schema=StructType(
        [
            _group_id(),
            _col(
                "deleted",
                BooleanType(),
                "True when a cleanup run at as_of deletes the group (writes its tombstones).",
            ),
            _col(
                "deletes_at",
                TimestampType(),
                "Earliest instant the group is deleted if nothing changes; null = never under "
                "the current state.",
            ),
            _col("rule", StringType(), "Deletion rule that decided (e.g. DEL-NEW; docs/rules.md)."),
            _col("group_type", StringType(), "Copy of groups.group_type."),
            _col("state", StringType(), "Copy of groups.state."),
            _col(
                "blocked_by",
                StringType(),
                "Why the group is not deleted (e.g. not Empty, unexpired offsets, pending "
                "transaction); null when deleted is true.",
            ),
            _offsets_partition("the group's records"),
            _run_id(),
            _as_of(),
        ]
    ),
)

LOAD_FAILURES = TableSpec(
    name="load_failures",
    comment="One row per record the new coordinator's loader refuses to replay (LOG-6), per "
    "run: the broker fails to load that offsets partition, and serves no group of it.",
    schema=StructType(
        [
            _offsets_partition("the record (the partition the broker would not load)"),
            _col("group_id", StringType(), "Group whose record fails the check."),
            _col(
                "failed_check",
                StringType(),
                "The LOG-6 check that fails: GROUP_TOMBSTONE_WITH_MEMBERS, "
                "GROUP_TOMBSTONE_WITH_TARGET_ASSIGNMENT_MEMBERS, "
                "GROUP_TOMBSTONE_WITHOUT_TARGET_ASSIGNMENT_TOMBSTONE, "
                "MEMBER_TOMBSTONE_WITH_EPOCH_NOT_MINUS_ONE or "
                "MEMBER_TOMBSTONE_WITH_TARGET_ASSIGNMENT.",
            ),
            _col(
                "log_offset",
                LongType(),
                "Offset in __consumer_offsets of the tombstone that fails the check.",
            ),
            _col(
                "member_id",
                StringType(),
                "Member of a member tombstone; null for a group tombstone.",
            ),
            _col(
                "detail",
                StringType(),
                "What the group still held, e.g. 'members a, b remain' or 'member epoch 3'.",
            ),
            _run_id(),
            _as_of(),
        ]
    ),
)

UNREAD_MARKER_OFFSETS = TableSpec(
    name="unread_marker_offsets",
    comment="One row per offset a read without transaction markers cannot decide under a Scala "
    "coordinator (TXN-MARKER-UNREAD), per run: offsets has it deleted, as the records read; a "
    "COMMIT marker after its tombstone would re-create it.",
    schema=StructType(
        [
            _offsets_partition("the commit and its tombstone"),
            _group_id(),
            _col(
                "is_group_in_doubt",
                BooleanType(),
                "True when the run decides the group does not exist at as_of (Dead, or deleted "
                "by a cleanup at as_of) and this offset, re-created, would keep it as an Empty "
                "group: its existence depends on the unread marker. Same for every row of a group.",
            ),
            _topic(),
            _partition(),
            _col(
                "committed_offset",
                LongType(),
                "The newest value's offset: what the Scala loader shows if a transaction wrote it "
                "and its COMMIT marker came after the tombstone.",
            ),
            _col(
                "commit_timestamp",
                TimestampType(),
                "commitTimestamp of that value.",
            ),
            _col(
                "expire_timestamp",
                TimestampType(),
                "Explicit expiry time of that value (OffsetCommitValue v1); null otherwise.",
            ),
            _col(
                "log_offset",
                LongType(),
                "Offset in __consumer_offsets of the tombstone that deleted it (OffsetDelete, "
                "DeleteGroups or a deleted topic).",
            ),
            _col(
                "log_timestamp",
                TimestampType(),
                "Log timestamp of that tombstone: at most 15 min after the value's, and before "
                "the value's own expiry.",
            ),
            _col("rule", StringType(), "TXN-MARKER-UNREAD (docs/rules.md)."),
            _col("reason", StringType(), "Why the offset is undecided, in one sentence."),
            _run_id(),
            _as_of(),
        ]
    ),
)

REJECTS = TableSpec(
    name="rejects",
    comment="One row per input record that could not be decoded, per run.",
    schema=StructType(
        [
            _offsets_partition("the record"),
            _col(
                "offsets_offset",
                LongType(),
                "Offset of the record in its __consumer_offsets partition.",
            ),
            _col("key", BinaryType(), "Raw record key; null when the record had none."),
            _col("value", BinaryType(), "Raw record value; null = tombstone."),
            _col(
                "error",
                StringType(),
                "Why decoding failed, e.g. 'unknown record type 99'. Never null.",
            ),
            _col(
                "offsets_timestamp",
                TimestampType(),
                "Log timestamp of the record; null when the input had none.",
            ),
            _col(
                "record_type",
                ShortType(),
                "Record type read from the key; null when the key is too short to hold one.",
            ),
            _run_id(),
        ]
    ),
)

RUNS = TableSpec(
    name="runs",
    comment="One row per run; written last, so a row here means the run's tables are complete.",
    schema=StructType(
        [
            _run_id(),
            _col("status", StringType(), "Outcome of the run: succeeded or failed."),
            _col("started_at", TimestampType(), "UTC instant the run started."),
            _col("finished_at", TimestampType(), "UTC instant the run finished."),
            _col(
                "as_of",
                TimestampType(),
                "UTC instant the run evaluated the coordinator's state at; null only when the "
                "run failed before choosing it.",
            ),
            _col("source", StringType(), "Input kind: parquet or kafka."),
            _col("records_read", LongType(), "Raw records read from the input."),
            _col("records_decoded", LongType(), "Records decoded without error."),
            _col("records_rejected", LongType(), "Records written to rejects."),
            _col(
                "coordinator",
                StringType(),
                "Group coordinator whose rules were applied: new, classic-2.4, classic-2.1 or "
                "pre-2.1.",
            ),
            _col("retention_ms", LongType(), "offsets.retention.ms used for expiry decisions."),
            _col(
                "input",
                StringType(),
                "Input path(s) or bootstrap servers and topic; no credentials.",
            ),
            _col("error", StringType(), "Error message of a failed run; null when it succeeded."),
            _col(
                "tables_written",
                ArrayType(StringType()),
                "Names of the tables this run committed, in commit order.",
            ),
        ]
    ),
)

LAG = TableSpec(
    name="lag",
    comment="One row per committed offset (group, topic, partition) with its lag, per run.",
    schema=StructType(
        [
            _group_id(),
            _topic(),
            _partition(),
            _committed_offset(),
            _col(
                "log_end_offset",
                LongType(),
                "Log-end offset of the consumed topic partition when the run read it (cluster "
                "high watermark or --end-offsets file; CLI: LOG-END-OFFSET); null when unknown.",
            ),
            _col(
                "lag",
                LongType(),
                "max(log_end_offset - committed_offset, 0) (CLI: LAG); null when either is "
                "unknown.",
            ),
            _col(
                "last_commit_at",
                TimestampType(),
                "commit_timestamp of the committed offset.",
            ),
            _col(
                "seconds_since_commit",
                DoubleType(),
                "as_of - last_commit_at in seconds; null when last_commit_at is null.",
            ),
            _run_id(),
            _as_of(),
        ]
    ),
)

METRICS = TableSpec(
    name="metrics",
    comment="One row per hour (record log time, UTC) and __consumer_offsets partition, per run.",
    schema=StructType(
        [
            _col("hour", TimestampType(), "Start of the UTC hour of the records' log timestamps."),
            _offsets_partition("the records"),
            _col("offset_commits", LongType(), "Offset commit values written in the hour."),
            _col("offset_tombstones", LongType(), "Offset commit tombstones written in the hour."),
            _col(
                "group_metadata_writes",
                LongType(),
                "Group metadata records (values and tombstones, any group type) in the hour.",
            ),
            _col("groups_created", LongType(), "Groups that came into existence in the hour."),
            _col("groups_deleted", LongType(), "Groups removed by a tombstone in the hour."),
            _run_id(),
            _as_of(),
        ]
    ),
)

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
