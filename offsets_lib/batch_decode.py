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
) -> tuple[pa.Table, dict[int, Any], np.ndarray]:
    """Decode a task's batches into one DECODED_ARROW table, rows reordered: first the rows the
    fast path decoded, then the codec's. Returns (table, values, source) where `source[i]` is
    the position of table row i among the input rows, and `values` holds the codec's field
    dicts of records other than offset commits by table row (value_json stays null): no JSON
    round trip for callers that use the values in Python, and no full-length merge of the two
    paths' columns (the task's audit does not depend on row order)."""
    if not batches:
        return DECODED_ARROW.empty_table(), {}, np.zeros(0, dtype=np.int64)
    fasts = [fastpath.decode_offset_commits(b) for b in batches]
    handled = np.concatenate([f.handled for f in fasts])
    source = pa.Table.from_batches(batches)
    fast_rows = np.flatnonzero(handled)
    slow_rows = np.flatnonzero(~handled)
    decoded, fields = _decode_rows(source, slow_rows, as_json=False)
    slow = _columns(decoded)
    order = np.concatenate([fast_rows, slow_rows])
    take = pa.array(order)
    arrays = []
    for field in DECODED_ARROW:
        if field.name in _PASS_THROUGH:
            arrays.append(source.column(field.name).take(take).combine_chunks().cast(field.type))
        else:
            parts = [f.columns[field.name].cast(field.type) for f in fasts]
            arrays.append(pa.concat_arrays([*parts, slow[field.name]]))
    values = {len(fast_rows) + j: v for j, v in fields.items()}
    return pa.Table.from_arrays(arrays, schema=DECODED_ARROW), values, order


def _decode_rows(
    source: pa.RecordBatch | pa.Table, rows: np.ndarray, *, as_json: bool
) -> tuple[list[dict[str, Any]], dict[int, Any]]:
    """The codec's rows for `rows` of the source, and (not as_json) their values by position."""
    picked = pa.array(rows, type=pa.int64())
    keys = source.column("key").take(picked).to_pylist()
    raw_values = source.column("value").take(picked).to_pylist()
    controls = source.column("is_control").take(picked).to_pylist()
    decoded = [
        _decode_row(*row, as_json=as_json) for row in zip(keys, raw_values, controls, strict=True)
    ]
    values = (
        {} if as_json else {j: row["fields"] for j, row in enumerate(decoded) if "fields" in row}
    )
    return decoded, values


_ROW_STRUCT = pa.struct([f for f in DECODED_ARROW if f.name in _ROW_COLUMNS])


def _columns(rows: list[dict[str, Any]]) -> dict[str, pa.Array]:
    """The decoded columns of the codec's rows (Arrow reads the dicts in C++: a Python list per
    column took 6x longer)."""
    rows_array = pa.array(rows, type=_ROW_STRUCT)
    return {f.name: rows_array.field(i) for i, f in enumerate(_ROW_STRUCT)}


def _decode(batch: pa.RecordBatch, *, as_json: bool) -> tuple[pa.RecordBatch, dict[int, Any]]:
    fast = fastpath.decode_offset_commits(batch)
    columns, values = _merge_slow_rows(batch, fast, as_json=as_json)
    return _assemble(batch, columns, pa.RecordBatch), values


def _merge_slow_rows(
    source: pa.RecordBatch | pa.Table, fast: fastpath.FastResult, *, as_json: bool
) -> tuple[dict[str, Any], dict[int, Any]]:
    """The fast path's columns with every row it left decoded by the codec instead."""
    slow_rows = np.flatnonzero(~fast.handled)
    if not len(slow_rows):
        return fast.columns, {}
    decoded, fields = _decode_rows(source, slow_rows, as_json=as_json)
    values = {int(slow_rows[j]): v for j, v in fields.items()}
    return fastpath.merge(fast, slow_rows, _columns(decoded), source.num_rows), values


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
