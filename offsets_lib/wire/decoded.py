"""The decoded-record schema: what the vectorized readers produce from raw records, in Arrow.

One column list (name, Arrow type, meaning) is the source; the Spark schema the planner sees
(`offsets_lib.audit.schemas.DECODED`) is derived from it, so the two cannot drift apart.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

# (name, arrow type, meaning). Positions in __consumer_offsets are `log_*`; the consumer's
# position is `committed_offset`.
DECODED_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("log_partition", pa.int32(), "partition of __consumer_offsets"),
    ("log_offset", pa.int64(), "offset of the record in that partition"),
    ("log_timestamp_ms", pa.int64(), "record timestamp (coordinator clock), epoch ms"),
    ("key", pa.binary(), "raw key; kept only for rejected records"),
    ("value", pa.binary(), "raw value; kept only for rejected records"),
    ("producer_id", pa.int64(), "batch producer id; null when the dump has no batch metadata"),
    ("producer_epoch", pa.int32(), "batch producer epoch"),
    ("is_transactional", pa.bool_(), "record came from a transactional batch"),
    ("is_control", pa.bool_(), "record is a transaction marker"),
    ("record_type", pa.int16(), "key's int16 record type (0-23)"),
    ("record_name", pa.string(), "record type name, e.g. OffsetCommit"),
    ("group_id", pa.string(), "group id from the key"),
    ("topic", pa.string(), "offset commits: consumed topic"),
    ("partition", pa.int32(), "offset commits: consumed partition"),
    ("member_id", pa.string(), "member-level records: member id"),
    ("regular_expression", pa.string(), "regex records: the regular expression"),
    ("is_tombstone", pa.bool_(), "value is null"),
    ("value_version", pa.int16(), "value's int16 schema version"),
    ("layout", pa.string(), "current, or the label of an older layout of the same version"),
    ("trailing_bytes", pa.int32(), "bytes after the last known field (accepted, counted)"),
    ("committed_offset", pa.int64(), "offset commits: the consumer's committed offset"),
    ("leader_epoch", pa.int32(), "offset commits: leader epoch, null when -1 or absent"),
    ("metadata", pa.string(), "offset commits: client metadata"),
    ("commit_timestamp_ms", pa.int64(), "offset commits: commit timestamp"),
    ("expire_timestamp_ms", pa.int64(), "offset commits v1: explicit expiry, null when -1/absent"),
    ("topic_id", pa.string(), "offset commits v4+: topic id, null when unknown"),
    ("value_json", pa.string(), "other records: decoded value as JSON (Kafka field names)"),
    ("control_type", pa.string(), "control records: COMMIT or ABORT"),
    ("error", pa.string(), "null when decoded; otherwise why the record was rejected"),
    (
        "reader_limit",
        pa.string(),
        "DEC-LIMIT: 'CHECK: detail' of a count 4.2.2+/4.3.2+/4.4.0 readers refuse, else null",
    ),
]

DECODED_ARROW = pa.schema([pa.field(n, t) for n, t, _ in DECODED_COLUMNS])
# Key fields of every record type, by their Kafka names, mapped to decoded columns.
KEY_FIELD_COLUMNS = {
    "group": "group_id",
    "GroupId": "group_id",
    "topic": "topic",
    "partition": "partition",
    "MemberId": "member_id",
    "RegularExpression": "regular_expression",
}
# Raw records with their log position and batch metadata: the decoders' input (decode.positioned).
POSITIONED_ARROW = pa.schema(
    [
        DECODED_ARROW.field(n)
        for n in DECODED_ARROW.names[: DECODED_ARROW.names.index("is_control") + 1]
    ]
)


OFFSET_COMMIT_TYPES = (0, 1)

ZERO_TOPIC_ID = "00000000-0000-0000-0000-000000000000"


def absent_as_null(columns: dict[str, pa.Array]) -> dict[str, pa.Array]:
    """Kafka's 'none' sentinels as nulls: -1 in leaderEpoch and expireTimestamp, the zero uuid
    in topicId. Both decoders (fast path and codec) emit the raw values; this is the one place
    that maps them, so the two paths cannot disagree."""
    out = dict(columns)
    for name in ("leader_epoch", "expire_timestamp_ms", "topic_id"):
        column = out.get(name)
        if column is None or column.null_count == len(column):  # nothing to map
            continue
        absent = pc.equal(column, ZERO_TOPIC_ID) if name == "topic_id" else pc.less(column, 0)
        out[name] = pc.if_else(absent, pa.scalar(None, column.type), column)
    return out
