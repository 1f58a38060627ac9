"""Every layout the codec knows, as data (records.md sections 5-7 and 9).

`RECORD_TYPES` maps the int16 record type of a key to its `RecordType`; the embedded consumer
protocol payloads and the transaction control records are separate `Message`s. The codec is
driven only by these tables: a new Kafka version is a table edit, never a parser change.
"""

from __future__ import annotations

from offsets_lib.wire import layouts_classic, layouts_consumer, layouts_share, layouts_streams
from offsets_lib.wire.layout_types import (
    FIXED_WIDTH,
    NO_DEFAULT,
    ZERO_UUID,
    F,
    Field,
    M,
    Message,
    RecordType,
    in_range,
    parse_range,
)

__all__ = [
    "ASSIGNMENT",
    "CONTROL_KEY",
    "CONTROL_TYPES",
    "CONTROL_VALUE",
    "FIXED_WIDTH",
    "NO_DEFAULT",
    "RECORD_TYPES",
    "SUBSCRIPTION",
    "ZERO_UUID",
    "Field",
    "Message",
    "RecordType",
    "current_value",
    "in_range",
    "parse_range",
]

RECORD_TYPES: dict[int, RecordType] = {
    rt.type: rt
    for table in (layouts_classic, layouts_consumer, layouts_share, layouts_streams)
    for rt in table.TABLE
}
"""Record type (int16 at the start of every key) -> layouts; types 0..23."""

assert sorted(RECORD_TYPES) == list(range(24)), "record type table must cover 0..23"


def current_value(rt: RecordType) -> Message:
    """The value layout a record type's values are decoded with first (`value_from` for type 0,
    whose keys carry OffsetCommitValue of any version)."""
    return RECORD_TYPES[rt.value_from].value if rt.value_from is not None else rt.value


# Embedded in GroupMetadataValue.members[].subscription / .assignment when protocolType is
# "consumer" (records.md section 6). Never flexible; newer versions parse as version 3.
SUBSCRIPTION = M(
    "ConsumerProtocolSubscription",
    "0-3",
    "none",
    clamp_newer=True,
    fields=(
        F("Topics", "[]string", "0+", since="0.9.0.0"),
        F("UserData", "bytes", "0+", nullable="0+", default=None, since="0.9.0.0"),
        F(
            "OwnedPartitions",
            "[]TopicPartition",
            "1+",
            fields=(
                F("Topic", "string", "1+"),
                F("Partitions", "[]int32", "1+"),
            ),
            since="2.4.0",
            note="KIP-429",
        ),
        F("GenerationId", "int32", "2+", default=-1, since="3.4.0", note="KIP-792; -1 = none"),
        F("RackId", "string", "3+", nullable="3+", default=None, since="3.4.0", note="KIP-881"),
    ),
)

ASSIGNMENT = M(
    "ConsumerProtocolAssignment",
    "0-3",
    "none",
    clamp_newer=True,
    fields=(
        F(
            "AssignedPartitions",
            "[]TopicPartition",
            "0+",
            fields=(
                F("Topic", "string", "0+"),
                F("Partitions", "[]int32", "0+"),
            ),
            since="0.9.0.0",
        ),
        F(
            "UserData",
            "bytes",
            "0+",
            nullable="0+",
            default=None,
            since="0.9.0.0",
            note="versions 1-3 add nothing; they mirror the subscription version",
        ),
    ),
)

# Transaction markers (records.md section 9): only in raw log segments, never in a consumer
# dump. Key = int16 version + int16 type; value of ABORT/COMMIT = int16 version + int32 epoch.
# Kafka parses higher versions as version 0.
CONTROL_KEY = M(
    "ControlRecordKey",
    "0",
    "none",
    clamp_newer=True,
    fields=(F("type", "int16", "0+", note="0 ABORT, 1 COMMIT; 2-6 KRaft types"),),
)

CONTROL_VALUE = M(
    "EndTxnMarker",
    "0",
    "none",
    clamp_newer=True,
    fields=(F("coordinatorEpoch", "int32", "0+"),),
)

CONTROL_TYPES: dict[int, str] = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
"""Control record type id -> name; only ABORT and COMMIT occur in `__consumer_offsets`."""
