"""The per-group Delta tables of the audit, declared as data: groups, members, group_decisions,
load_failures and unread_marker_offsets (conventions: tables.py).
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructType,
    TimestampType,
)

from offsets_lib.audit.table_columns import (
    ASSIGNED_PARTITION,
    TableSpec,
    as_of_column,
    column,
    group_id_column,
    offsets_partition_column,
    partition_column,
    run_id_column,
    subscribed_topics_column,
    topic_column,
)

# fmt: off
GROUPS = TableSpec(
    name="groups",
    comment="One row per group known at as_of (Dead groups included), per run.",
    schema=StructType([
        group_id_column(),
        column("group_type", StringType(),
            "classic, consumer, streams or share. A group that only has offsets is classic with "
            "a null protocol_type."),
        column("protocol_type", StringType(),
            "Classic protocol type (e.g. 'consumer', 'connect'); null for a simple group "
            "(offsets only) and for modern groups."),
        column("state", StringType(),
            "Group state inferred from the log: Empty, Stable, Assigning, Reconciling, NotReady "
            "(streams groups) or Dead (docs/semantics.md section 2)."),
        column("generation", IntegerType(),
            "Classic generation id, or the group epoch of a modern group; 0 for a simple group."),
        subscribed_topics_column("the group"),
        column("current_state_timestamp", TimestampType(),
            "When the classic group entered its current state (GroupMetadataValue v2+); null "
            "for v0/v1 values, -1, and modern groups (G-M8)."),
        offsets_partition_column("the group's records"),
        column("protocol", StringType(),
            "Classic protocol (assignor) name chosen by the leader; null when none."),
        column("leader", StringType(), "Member id of the classic leader; null when none."),
        column("member_count", IntegerType(), "Number of members at as_of (0 when Empty/Dead)."),
        column("target_assignment_epoch", IntegerType(),
            "Target assignment epoch of a modern group (G-M3, -1 after its tombstone); null for "
            "classic groups."),
        column("offset_count", IntegerType(), "Number of live committed offsets of the group."),
        column("has_pending_transactions", BooleanType(),
            "True when some partition of the group has a pending transactional offset."),
        column("state_notes", StringType(),
            "Inconsistencies met while replaying the group's records (e.g. a type change "
            "G-U1/G-U2 without the usual tombstones); null when none."),
        run_id_column(),
        as_of_column(),
    ]),
)

MEMBERS = TableSpec(
    name="members",
    comment="One row per group member (group_id, member_id) at as_of, per run.",
    schema=StructType([
        group_id_column(),
        column("member_id", StringType(), "Member id assigned by the coordinator."),
        column("group_instance_id", StringType(),
            "Static membership id (KIP-345); null for dynamic members."),
        column("client_id", StringType(), "Client id the member connected with."),
        column("client_host", StringType(), "Host (address) the member connected from."),
        subscribed_topics_column("the member"),
        column("assigned_partitions", ArrayType(ASSIGNED_PARTITION),
            "Partitions currently assigned to the member. Null = unknown (assignment bytes "
            "missing or unparsable); an empty array = nothing assigned."),
        column("member_epoch", IntegerType(),
            "Member epoch of a modern member (-1 after its current-assignment tombstone, -2 "
            "while a static member is temporarily away, docs/semantics.md G-M4); null for "
            "classic members (their generation is groups.generation)."),
        offsets_partition_column("the member's records"),
        column("rack_id", StringType(), "Client rack; null when not set."),
        column("subscribed_topic_regex", StringType(),
            "Subscription regular expression (KIP-848); null when the member subscribes by "
            "name. Never evaluated by this job."),
        column("rebalance_timeout_ms", IntegerType(),
            "Rebalance timeout in milliseconds; null when not recorded."),
        column("session_timeout_ms", IntegerType(),
            "Session timeout in milliseconds; null when not recorded."),
        column("member_state", StringType(),
            "Modern member reconciliation state: STABLE, UNREVOKED_PARTITIONS or "
            "UNRELEASED_PARTITIONS (streams members: STABLE, UNREVOKED_TASKS or "
            "UNRELEASED_TASKS); null for classic members."),
        column("server_assignor", StringType(),
            "Server-side assignor the member asked for (KIP-848); null when none."),
        column("previous_member_epoch", IntegerType(),
            "Previous member epoch of a modern member; null for classic members."),
        column("partitions_pending_revocation", ArrayType(ASSIGNED_PARTITION),
            "Partitions the member still owns but must revoke (KIP-848), with their assignment "
            "epochs; empty for classic members."),
        run_id_column(),
        as_of_column(),
    ]),
)

GROUP_DECISIONS = TableSpec(
    name="group_decisions",
    comment="One row per row of groups: whether the broker deletes the group at as_of, per run.",
    schema=StructType([
        group_id_column(),
        column("deleted", BooleanType(),
            "True when a cleanup run at as_of deletes the group (writes its tombstones)."),
        column("deletes_at", TimestampType(),
            "Earliest instant the group is deleted if nothing changes; null = never under the "
            "current state."),
        column("rule", StringType(), "Deletion rule that decided (e.g. DEL-NEW; docs/rules.md)."),
        column("group_type", StringType(), "Copy of groups.group_type."),
        column("state", StringType(), "Copy of groups.state."),
        column("blocked_by", StringType(),
            "Why the group is not deleted (e.g. not Empty, unexpired offsets, pending "
            "transaction); null when deleted is true."),
        offsets_partition_column("the group's records"),
        run_id_column(),
        as_of_column(),
    ]),
)

LOAD_FAILURES = TableSpec(
    name="load_failures",
    comment="One row per record the new coordinator's loader refuses to replay (LOG-6, LOG-7, "
    "LOG-8) or to read (DEC-LIMIT, 4.2.2+/4.3.2+/4.4.0), "
    "per run: the broker fails to load that offsets partition, and serves no group of it.",
    schema=StructType([
        offsets_partition_column("the record (the partition the broker would not load)"),
        column("group_id", StringType(), "Group whose record fails the check."),
        column("failed_check", StringType(),
            "The check that fails: GROUP_TOMBSTONE_* and MEMBER_TOMBSTONE_* (LOG-6), "
            "ASSIGNMENT_CLAIMS_PARTITION_HELD_AT_* (LOG-7), RECORD_FOR_GROUP_OF_ANOTHER_TYPE "
            "(LOG-8), TAGGED_FIELD_COUNT_* or ARRAY_OVER_1000000_ELEMENTS (DEC-LIMIT); "
            "docs/rules.md."),
        column("log_offset", LongType(),
            "Offset in __consumer_offsets of the record that fails the check."),
        column("member_id", StringType(),
            "Member of a member tombstone, of a claiming member record or of a member record "
            "over a reader limit; null for a group tombstone and other records."),
        column("detail", StringType(),
            "What the group still held, e.g. 'members a, b remain', 'member epoch 3' or '<topic "
            "id>-1 claimed at epoch 5, held at epoch 6', or the count a reader refuses and who "
            "refuses it."),
        run_id_column(),
        as_of_column(),
    ]),
)

UNREAD_MARKER_OFFSETS = TableSpec(
    name="unread_marker_offsets",
    comment="One row per offset a read without transaction markers cannot decide under a Scala "
    "coordinator (TXN-MARKER-UNREAD), per run: offsets has it deleted, as the records read; a "
    "COMMIT marker after its tombstone would re-create it.",
    schema=StructType([
        offsets_partition_column("the commit and its tombstone"),
        group_id_column(),
        column("is_group_in_doubt", BooleanType(),
            "True when the run decides the group does not exist at as_of (Dead, or deleted by a "
            "cleanup at as_of) and this offset, re-created, would keep it as an Empty group: "
            "its existence depends on the unread marker. Same for every row of a group."),
        topic_column(),
        partition_column(),
        column("committed_offset", LongType(),
            "The newest value's offset: what the Scala loader shows if a transaction wrote it "
            "and its COMMIT marker came after the tombstone."),
        column("commit_timestamp", TimestampType(), "commitTimestamp of that value."),
        column("expire_timestamp", TimestampType(),
            "Explicit expiry time of that value (OffsetCommitValue v1); null otherwise."),
        column("log_offset", LongType(),
            "Offset in __consumer_offsets of the tombstone that deleted it (OffsetDelete, "
            "DeleteGroups or a deleted topic)."),
        column("log_timestamp", TimestampType(),
            "Log timestamp of that tombstone: at most 15 min after the value's, and before the "
            "value's own expiry."),
        column("rule", StringType(), "TXN-MARKER-UNREAD (docs/rules.md)."),
        column("reason", StringType(), "Why the offset is undecided, in one sentence."),
        run_id_column(),
        as_of_column(),
    ]),
)
# fmt: on
