"""The rows the group replay emits: a replayed group's Arrow schema (GROUP_STATE_ARROW, with its
members and load failures), and the rows of the groups the loader builds without modern records
(simple, Dead, and classic from the group's last GroupMetadata value: G-C1/G-C2, SUB-C1..C4).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib.audit.arrays import as_bools
from offsets_lib.wire import layout_read
from offsets_lib.wire.layouts import RECORD_TYPES, current_value

# the group_type column's values
CLASSIC, CONSUMER, STREAMS, SHARE = "classic", "consumer", "streams", "share"

LOAD_FAILURE = pa.struct(
    [
        ("failed_check", pa.string()),
        ("log_offset", pa.int64()),
        ("member_id", pa.string()),
        ("detail", pa.string()),
    ]
)
PARTITION = pa.struct(
    [
        ("topic", pa.string()),
        ("topic_id", pa.string()),
        ("partition", pa.int32()),
        ("assignment_epoch", pa.int32()),
    ]
)
MEMBER = pa.struct(
    [
        ("member_id", pa.string()),
        ("group_instance_id", pa.string()),
        ("client_id", pa.string()),
        ("client_host", pa.string()),
        ("rack_id", pa.string()),
        ("subscribed_topics", pa.list_(pa.string())),
        ("subscribed_topic_regex", pa.string()),
        ("assigned_partitions", pa.list_(PARTITION)),
        ("partitions_pending_revocation", pa.list_(PARTITION)),
        ("member_epoch", pa.int32()),
        ("previous_member_epoch", pa.int32()),
        ("member_state", pa.string()),
        ("rebalance_timeout_ms", pa.int32()),
        ("session_timeout_ms", pa.int32()),
        ("server_assignor", pa.string()),
    ]
)
GROUP_STATE_ARROW = pa.schema(
    [
        ("log_partition", pa.int32()),
        ("group_id", pa.string()),
        ("group_type", pa.string()),
        ("protocol_type", pa.string()),
        ("state", pa.string()),
        ("generation", pa.int32()),
        ("protocol", pa.string()),
        ("leader", pa.string()),
        ("subscribed_topics", pa.list_(pa.string())),
        ("current_state_timestamp_ms", pa.int64()),
        # the schema version of a classic group's last GroupMetadataValue (null for other
        # groups): EXP-EMPTY-V3-COMMIT-TS reads it (Kafka 2.3's loader skips v3's state time)
        ("metadata_value_version", pa.int16()),
        ("target_assignment_epoch", pa.int32()),
        ("member_count", pa.int32()),
        ("members", pa.list_(MEMBER)),
        ("state_notes", pa.string()),
        # DEL-STREAMS-PLUGIN: a streams group's StoredDescriptionTopologyEpoch (-1 when absent);
        # null for other groups
        ("stored_description_topology_epoch", pa.int32()),
        # the group's records the new coordinator refuses to replay (LOG-6, LOG-7) or to read
        # (DEC-LIMIT); empty: none
        ("load_failures", pa.list_(LOAD_FAILURE)),
    ]
)


def simple_group_row() -> dict[str, Any]:
    return {
        "group_type": CLASSIC,
        "protocol_type": None,
        "state": "Empty",
        "generation": 0,
        "protocol": None,
        "leader": None,
        "subscribed_topics": None,
        "current_state_timestamp_ms": None,
        "metadata_value_version": None,
        "target_assignment_epoch": None,
        "member_count": 0,
        "members": [],
        "stored_description_topology_epoch": None,
    }


def dead_group_row() -> dict[str, Any]:
    row = simple_group_row()
    row.update(state="Dead", generation=None, member_count=None)
    return row


GROUP_METADATA = layout_read.arrow_type(current_value(RECORD_TYPES[2]).fields)
"""A GroupMetadata value in Arrow (the codec's dict of one converts to it)."""
# the classic rows' columns: GROUP_STATE_ARROW but the replay's own (key, notes, load checks)
_CLASSIC_COLUMNS = [
    f for f in GROUP_STATE_ARROW
    if f.name not in ("log_partition", "group_id", "state_notes", "load_failures")
]  # fmt: skip


def classic_group_rows(values: pa.Array, versions: pa.Array) -> pa.Table:
    """G-C1/G-C2 and SUB-C1..C4: classic groups, each from its last GroupMetadata value
    (GROUP_METADATA) of schema version `versions`, as columns; the consumer groups' members'
    subscriptions and assignments decoded all at once (wire.layout_read)."""
    n = len(values)
    written = pc.struct_field(values, "protocolType")  # "" means no protocol type
    protocol_type = pc.if_else(pc.equal(written, ""), pa.scalar(None, pa.string()), written)
    is_consumer = as_bools(pc.equal(protocol_type, "consumer"))
    lists = pc.struct_field(values, "members")
    counts = np.asarray(pc.fill_null(pc.list_value_length(lists), 0), dtype=np.int64)
    members = pc.list_flatten(lists)
    owner = np.asarray(pc.list_parent_indices(lists), dtype=np.int64)
    parsed = np.flatnonzero(is_consumer[owner])
    topics = _sorted_sets(layout_read.subscription_topic_lists(
        pc.struct_field(members, "subscription").take(pa.array(parsed))
    ))  # fmt: skip
    member_topics = _scattered(topics, parsed, len(members))
    session = pc.struct_field(members, "sessionTimeout")
    rebalance = pc.struct_field(members, "rebalanceTimeout")
    no_rebalance = pc.fill_null(pc.less(rebalance, 0), True)  # v0 has none: the session's
    none = pa.nulls(len(members))
    no_partitions = _empty_lists(len(members), PARTITION)
    member_columns = [
            pc.struct_field(members, "memberId"),
            pc.struct_field(members, "groupInstanceId"),
            pc.struct_field(members, "clientId"),
            pc.struct_field(members, "clientHost"),
            none,
            member_topics,
            none,
            _assigned(pc.struct_field(members, "assignment"), parsed, len(members)),
            no_partitions,
            none,
            none,
            none,
            pc.if_else(no_rebalance, session, rebalance),
            session,
            none,
    ]  # fmt: skip
    member_rows = pa.StructArray.from_arrays(
        [c.cast(f.type) for c, f in zip(member_columns, MEMBER, strict=True)], fields=list(MEMBER)
    )
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
    # SUB-C3: the union of the members' topics; SUB-C4 when the protocol or a member's is unknown
    union = _sorted_sets_of(
        owner[np.asarray(pc.list_parent_indices(member_topics), dtype=np.int64)],
        pc.list_flatten(member_topics),
        np.zeros(n, dtype=bool),
    )
    unknown_member = np.bincount(
        owner, weights=as_bools(pc.is_null(member_topics)), minlength=n
    ) > 0  # fmt: skip
    unknown = unknown_member | as_bools(pc.is_null(pc.struct_field(values, "protocol")))
    subscribed = pc.if_else(
        pa.array(~is_consumer | ((counts > 0) & unknown)), pa.nulls(n, union.type), union
    )  # SUB-C1 (not consumer), SUB-C2 (no members: [])
    state_ts = pc.struct_field(values, "currentStateTimestamp")
    columns = {
        "group_type": pa.array([CLASSIC] * n, pa.string()),
        "protocol_type": protocol_type,
        "state": pa.array(np.where(counts > 0, "Stable", "Empty")),
        "generation": pc.struct_field(values, "generation"),
        "protocol": pc.struct_field(values, "protocol"),
        "leader": pc.struct_field(values, "leader"),
        "subscribed_topics": subscribed,
        "current_state_timestamp_ms": pc.if_else(
            pc.fill_null(pc.greater_equal(state_ts, 0), False), state_ts, None
        ),
        "metadata_value_version": versions,
        "target_assignment_epoch": pa.nulls(n),
        "member_count": pa.array(counts),
        "members": pa.ListArray.from_arrays(offsets, member_rows),
        "stored_description_topology_epoch": pa.nulls(n),
    }
    return pa.table(
        [columns[f.name].cast(f.type) for f in _CLASSIC_COLUMNS], schema=pa.schema(_CLASSIC_COLUMNS)
    )


def _assigned(assignments: pa.Array, parsed: np.ndarray, n: int) -> pa.Array:
    """Each member's assigned partitions (the consumer members' `parsed` assignments, one row
    per topic partition; none where absent or malformed, and for the other members)."""
    topics = layout_read.assignment_lists(assignments.take(pa.array(parsed)))
    by_topic = pc.list_flatten(topics)
    member = parsed[np.asarray(pc.list_parent_indices(topics), dtype=np.int64)]
    partitions = pc.struct_field(by_topic, "Partitions")
    of_topic = np.asarray(pc.list_parent_indices(partitions), dtype=np.int64)
    flat = pc.list_flatten(partitions)
    rows = pa.StructArray.from_arrays(
        [
            pc.struct_field(by_topic, "Topic").take(pa.array(of_topic)),
            pa.nulls(len(flat), pa.string()),
            flat,
            pa.nulls(len(flat), pa.int32()),
        ],
        fields=list(PARTITION),
    )
    counts = np.bincount(member[of_topic], minlength=n)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), rows)


def _sorted_sets(lists: pa.Array) -> pa.Array:
    """Each list sorted, without repeats (null lists stay null)."""
    owner = np.asarray(pc.list_parent_indices(lists), dtype=np.int64)
    return _sorted_sets_of(owner, pc.list_flatten(lists), as_bools(pc.is_null(lists)))


def _sorted_sets_of(owner: np.ndarray, values: pa.Array, is_null: np.ndarray) -> pa.Array:
    """Lists (null where `is_null`) of the distinct `values` of each owner, sorted."""
    pairs = pa.table({"owner": owner, "value": values}).sort_by(
        [("owner", "ascending"), ("value", "ascending")]
    )
    owner = pairs.column("owner").to_numpy()
    value = pairs.column("value").combine_chunks()
    repeated = np.zeros(len(owner), dtype=bool)
    if len(owner) > 1:
        same = as_bools(pc.equal(value[1:], value[:-1]))
        repeated[1:] = same & (owner[1:] == owner[:-1])
    kept = ~repeated
    counts = np.bincount(owner[kept], minlength=len(is_null))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return pa.ListArray.from_arrays(
        pa.array(offsets), value.filter(pa.array(kept)), mask=pa.array(is_null)
    )


def _scattered(values: pa.Array, rows: np.ndarray, n: int) -> pa.Array:
    """`values` at `rows` of an array of `n`, null elsewhere."""
    where = np.full(n, -1, np.int64)
    where[rows] = np.arange(len(rows))
    return values.take(pa.array(np.maximum(where, 0), mask=where < 0))


def _empty_lists(n: int, type_: pa.DataType) -> pa.Array:
    return pa.ListArray.from_arrays(pa.array(np.zeros(n + 1, np.int32)), pa.array([], type_))


def member_row(**values: Any) -> dict[str, Any]:
    row = {name: None for name in MEMBER.names}
    row.update(assigned_partitions=[], partitions_pending_revocation=[])
    row.update(values)
    return row


def partition_row(
    topic: str | None, topic_id: str | None, partition: int, epoch: int | None
) -> dict:
    return {"topic": topic, "topic_id": topic_id, "partition": partition, "assignment_epoch": epoch}
