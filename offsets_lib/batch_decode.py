"""Decode one Arrow batch of raw __consumer_offsets records (no Spark; runs inside executors).

Offset commits, the bulk of every dump, go through the vectorized numpy path in fastpath.py; the
rare other records, and any offset commit the fast path does not accept, go through the generic
codec, which is also the oracle the fast path is tested against.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import numpy as np
import pyarrow as pa

from offsets_lib import fastpath, wire
from offsets_lib.schemas import DECODED_ARROW

_PASS_THROUGH = (
    "log_partition",
    "log_offset",
    "log_timestamp_ms",
    "producer_id",
    "producer_epoch",
    "is_transactional",
    "is_control",
)
_ZERO_UUID = uuid.UUID(int=0)
# Key fields of every record type, by their Kafka names, mapped to decoded columns.
_KEY_COLUMNS = {
    "group": "group_id",
    "GroupId": "group_id",
    "topic": "topic",
    "partition": "partition",
    "MemberId": "member_id",
    "RegularExpression": "regular_expression",
}
_ROW_COLUMNS = [f.name for f in DECODED_ARROW if f.name not in _PASS_THROUGH]


def decode_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Decode a batch of raw rows (log position, key, value, batch metadata) into DECODED_ARROW."""
    return _decode(batch, as_json=True)[0]


def decode_batches_with_values(
    batches: list[pa.RecordBatch],
) -> tuple[pa.Table, dict[int, Any]]:
    """Decode a task's batches into one DECODED_ARROW table; the values of records other than
    offset commits come back as the codec's field dicts by row index (value_json stays null):
    no JSON round trip for callers that use the values in Python. The fast path runs per batch,
    the codec and the merge once for all of them."""
    fasts = [fastpath.decode_offset_commits(b) for b in batches]
    fast = fastpath.FastResult(
        np.concatenate([f.handled for f in fasts]) if fasts else np.zeros(0, dtype=bool),
        {
            f.name: pa.concat_arrays([part.columns[f.name].cast(f.type) for part in fasts])
            if fasts
            else pa.nulls(0, f.type)
            for f in DECODED_ARROW
            if f.name not in _PASS_THROUGH
        },
    )
    table = pa.Table.from_batches(batches) if batches else DECODED_ARROW.empty_table()
    columns, values = _merge_slow_rows(table, fast, as_json=False)
    return _assemble(table, columns, pa.Table), values


def _decode(batch: pa.RecordBatch, *, as_json: bool) -> tuple[pa.RecordBatch, dict[int, Any]]:
    fast = fastpath.decode_offset_commits(batch)
    columns, values = _merge_slow_rows(batch, fast, as_json=as_json)
    return _assemble(batch, columns, pa.RecordBatch), values


def _merge_slow_rows(
    source: pa.RecordBatch | pa.Table, fast: fastpath.FastResult, *, as_json: bool
) -> tuple[dict[str, Any], dict[int, Any]]:
    """The fast path's columns with every row it left decoded by the codec instead."""
    slow_rows = np.flatnonzero(~fast.handled).tolist()
    if not slow_rows:
        return fast.columns, {}
    picked = pa.array(slow_rows, type=pa.int64())
    keys = source.column("key").take(picked).to_pylist()
    raw_values = source.column("value").take(picked).to_pylist()
    controls = source.column("is_control").take(picked).to_pylist()
    decoded = [
        _decode_row(*row, as_json=as_json) for row in zip(keys, raw_values, controls, strict=True)
    ]
    slow = {c: [row.get(c) for row in decoded] for c in _ROW_COLUMNS}
    values = {}
    if not as_json:
        values = {
            i: row["fields"] for i, row in zip(slow_rows, decoded, strict=True) if "fields" in row
        }
    return fastpath.merge(fast, slow_rows, slow, source.num_rows), values


def _assemble(source: pa.RecordBatch | pa.Table, columns: dict[str, Any], kind: type) -> Any:
    arrays = [
        source.column(name) if name in _PASS_THROUGH else columns[name]
        for name in DECODED_ARROW.names
    ]
    return kind.from_arrays(
        [
            pa.array(a, type=f.type)
            if not isinstance(a, pa.Array | pa.ChunkedArray)
            else a.cast(f.type)
            for a, f in zip(arrays, DECODED_ARROW, strict=True)
        ],
        schema=DECODED_ARROW,
    )


def _decode_row(
    key: bytes | None, value: bytes | None, is_control: bool | None, *, as_json: bool = True
) -> dict[str, Any]:
    if is_control:
        control = wire.decode_control(key, value)
        row = {"control_type": control.type, "error": control.error}
    else:
        row = decode_record_row(key, value, as_json=as_json)
    if row.get("error"):
        row["key"], row["value"] = key, value
    return row


def decode_record_row(
    key: bytes | None, value: bytes | None, *, as_json: bool = True
) -> dict[str, Any]:
    """One record through the generic codec, flattened into decoded columns.

    Values of records other than offset commits go to `value_json`, or with `as_json=False`
    to the non-column entry `fields` (the codec's dict).
    """
    record = wire.decode_record(key, value)
    row: dict[str, Any] = {"error": record.error, "record_type": record.record_type}
    if record.record_type is not None and record.record_type in wire.RECORD_TYPES:
        row["record_name"] = wire.RECORD_TYPES[record.record_type].name
    for name, column in _KEY_COLUMNS.items():
        if name in (record.key or {}):
            row[column] = record.key[name]
    row["is_tombstone"] = value is None
    row["value_version"] = record.version
    row["layout"] = record.layout
    row["trailing_bytes"] = record.trailing_bytes
    fields = record.value
    if fields is None:
        return row
    if record.record_type in (0, 1):
        row.update(
            committed_offset=fields["offset"],
            leader_epoch=_absent_if_negative(fields.get("leaderEpoch", -1)),
            metadata=fields["metadata"],
            commit_timestamp_ms=fields["commitTimestamp"],
            expire_timestamp_ms=_absent_if_negative(fields.get("expireTimestamp", -1)),
            topic_id=_topic_id(fields.get("topicId")),
        )
    elif as_json:
        row["value_json"] = json.dumps(fields, separators=(",", ":"), default=_json_leaf)
    else:
        row["fields"] = fields
    return row


def _json_leaf(value: object) -> str:
    """JSON for the leaves json cannot write itself (same text as wire.to_jsonable)."""
    return wire.to_jsonable(value)


def _absent_if_negative(value: int | None) -> int | None:
    """Kafka stores -1 for 'none' in leaderEpoch and expireTimestamp."""
    return None if value is None or value < 0 else value


def _topic_id(value: uuid.UUID | None) -> str | None:
    return None if value is None or value == _ZERO_UUID else str(value)
