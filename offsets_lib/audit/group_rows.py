"""The rows the group replay emits: a replayed group's Arrow schema (GROUP_STATE_ARROW, with its
members and load failures), and the rows of the groups the loader builds without modern records
(simple, Dead, and classic from the group's last GroupMetadata value: G-C1/G-C2, SUB-C1..C4).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from offsets_lib import wire

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


def classic_group_row(value: dict[str, Any], version: int | None) -> dict[str, Any]:
    """G-C1/G-C2 and SUB-C1..C4: a classic group from its last GroupMetadata value (schema
    `version`)."""
    protocol_type = value.get("protocolType") or None  # "" means no protocol type
    raw_members = value.get("members") or []
    is_consumer = protocol_type == "consumer"
    members = [_classic_member(m, parse=is_consumer) for m in raw_members]
    state_ts = value.get("currentStateTimestamp", -1)
    subscribed: list[str] | None
    if not is_consumer:
        subscribed = None  # SUB-C1
    elif not members:
        subscribed = []  # SUB-C2
    elif value.get("protocol") is None or any(m["subscribed_topics"] is None for m in members):
        subscribed = None  # SUB-C4
    else:
        subscribed = sorted({t for m in members for t in m["subscribed_topics"]})  # SUB-C3
    return {
        "group_type": CLASSIC,
        "protocol_type": protocol_type,
        "state": "Stable" if members else "Empty",
        "generation": value.get("generation"),
        "protocol": value.get("protocol"),
        "leader": value.get("leader"),
        "subscribed_topics": subscribed,
        "current_state_timestamp_ms": state_ts if state_ts is not None and state_ts >= 0 else None,
        "metadata_value_version": version,
        "target_assignment_epoch": None,
        "member_count": len(members),
        "members": members,
        "stored_description_topology_epoch": None,
    }


def _classic_member(member: dict[str, Any], *, parse: bool) -> dict[str, Any]:
    topics: list[str] | None = None
    assigned: list[dict[str, Any]] = []
    if parse:
        raw = member.get("subscription")
        listed = wire.subscription_topics(raw) if raw else None
        if listed is not None:
            topics = sorted(set(listed))
        assignment = _parse_embedded(wire.decode_assignment, member.get("assignment"))
        for tp in (assignment or {}).get("AssignedPartitions") or []:
            assigned += [
                partition_row(tp.get("Topic"), None, p, None) for p in tp.get("Partitions", [])
            ]
    rebalance = member.get("rebalanceTimeout", -1)
    session = member.get("sessionTimeout")
    return member_row(
        member_id=member.get("memberId"),
        group_instance_id=member.get("groupInstanceId"),
        client_id=member.get("clientId"),
        client_host=member.get("clientHost"),
        subscribed_topics=topics,
        assigned_partitions=assigned,
        # v0 has no rebalance timeout; Kafka then uses the session timeout
        rebalance_timeout_ms=session if rebalance is None or rebalance < 0 else rebalance,
        session_timeout_ms=session,
    )


def _parse_embedded(decoder: Any, data: bytes | None) -> dict[str, Any] | None:
    """Decode an embedded ConsumerProtocol blob; None when absent or malformed."""
    if not data:
        return None
    try:
        result = decoder(data)
    except Exception:
        return None
    fields = getattr(result, "fields", result)
    if getattr(result, "error", None) or not isinstance(fields, dict) or fields.get("error"):
        return None
    return fields


def member_row(**values: Any) -> dict[str, Any]:
    row = {name: None for name in MEMBER.names}
    row.update(assigned_partitions=[], partitions_pending_revocation=[])
    row.update(values)
    return row


def partition_row(
    topic: str | None, topic_id: str | None, partition: int, epoch: int | None
) -> dict:
    return {"topic": topic, "topic_id": topic_id, "partition": partition, "assignment_epoch": epoch}
