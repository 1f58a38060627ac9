"""Decode one Arrow batch of raw __consumer_offsets records (no Spark; runs inside executors).

Offset commits, the bulk of every dump, go through the vectorized numpy path in fastpath.py; the
rare other records, and any offset commit the fast path does not accept, go through the generic
codec, which is also the oracle the fast path is tested against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib import wire
from offsets_lib.wire import fastpath, layout_scan
from offsets_lib.wire.decoded import DECODED_ARROW, KEY_FIELD_COLUMNS, absent_as_null

_PASS_THROUGH = (
    "log_partition",
    "log_offset",
    "log_timestamp_ms",
    "producer_id",
    "producer_epoch",
    "is_transactional",
    "is_control",
)
_ROW_COLUMNS = [f.name for f in DECODED_ARROW if f.name not in _PASS_THROUGH]
# A task's input arrives in pieces of ~13k records (a map batch cut over 20 tasks at 10M): the
# fast path's ~40 numpy steps, the walk and the assembly cost per batch, so consecutive pieces
# are decoded as runs of up to this many records (and DECODE_RUN_BYTES, far below a binary
# array's 2 GB). Measured (the largest 10M task's 41 pieces, the concatenation included, four
# alternations): decoding 0.256-0.262 -> 0.227-0.243 CPU-s, the task 0.68-0.69 -> 0.65-0.67;
# the task's records as one batch decoded no faster than the pieces.
DECODE_RUN_RECORDS = 1 << 17
DECODE_RUN_BYTES = 1 << 28


@dataclass
class TaskRecords:
    """A task's records decoded for the audit (`decode_task_records`).

    `table` is DECODED_ARROW with rows reordered (`source[i]` is the input position of row i):
    first the fast path's offset commits, then the group-level records vouched for by the
    layout walk, then the codec's rows. `values` holds the codec's field dicts by table row
    (value_json stays null): no JSON round trip for callers that use the values in Python.
    `counts` gives, per top-level array field of the walked values, its element count for each
    walked row, from table row `walked_from` on (-1 where the value has no such field)."""

    table: pa.Table
    values: dict[int, Any]
    source: np.ndarray
    counts: dict[str, np.ndarray]
    raw_values: pa.ChunkedArray | None = None  # the input's value column, in input order
    walked_from: int = 0

    def value_bytes(self, rows: np.ndarray) -> fastpath.RowBytes:
        """The raw value bytes of table rows `rows` (for wire.layout_read)."""
        assert self.raw_values is not None
        return fastpath.rows_buffers(self.raw_values, self.source[rows])

    def list_is_nonempty(self, name: str, rows: np.ndarray) -> np.ndarray:
        """Whether the value of each row has a non-empty top-level array `name`."""
        out = np.zeros(len(rows), dtype=bool)
        walked = self.counts.get(name)
        if walked is not None:
            at = rows - self.walked_from
            inside = (at >= 0) & (at < len(walked))
            out[inside] = walked[at[inside]] > 0
        with_value = np.isin(rows, np.fromiter(self.values, dtype=np.int64, count=len(self.values)))
        for i in np.flatnonzero(with_value).tolist():  # the few rows the codec decoded
            out[i] = bool(self.values[int(rows[i])].get(name))
        return out


def _assembled(
    source: pa.Table,
    order: np.ndarray,
    fasts: list[fastpath.FastResult],
    walked: layout_scan.Scanned | None,
    walked_count: int,
    slow: dict[str, pa.Array],
) -> list[pa.Array | pa.ChunkedArray]:
    """DECODED_ARROW's columns in `order`: the fast path's rows, the walked ones, the codec's
    (`decode_task_records`), each column chunked by path and run, not concatenated; the
    batch-metadata columns taken from `source`.

    Why chunked: the audit reads few of the columns whole, and its compute functions take
    chunks. Measured (10M records, one local[2] session, five alternations): 11.12 -> 10.86 s
    and 21.25 -> 20.79 CPU-s (medians), faster in every pair."""
    take = pa.array(order)  # fixed-width columns: Arrow's chunked take is fast for them
    fast_count = sum(int(f.handled.sum()) for f in fasts)
    arrays = []
    for field in DECODED_ARROW:
        if field.name in _PASS_THROUGH:
            arrays.append(source.column(field.name).take(take).cast(field.type))
            continue
        parts = [f.columns[field.name].cast(field.type) for f in fasts if field.name in f.columns]
        if not parts and fast_count:  # a column the fast path does not give: null in its rows
            parts = [pa.nulls(fast_count, field.type)]
        if walked is not None:
            column = walked.columns.get(field.name)
            missing = column is None
            parts.append(pa.nulls(walked_count, field.type) if missing else column.cast(field.type))
        arrays.append(pa.chunked_array([*parts, slow[field.name]], field.type))
    return arrays


def decode_task_records(
    batches: list[pa.RecordBatch],
    *,
    every_value_of: frozenset[int] | None = None,
    newest_value_of: frozenset[int] = frozenset(),
    raw_value_of: frozenset[int] = frozenset(),
) -> TaskRecords:
    """Decode a task's batches for the audit (no full-length merge of the paths' columns: the
    audit does not depend on row order).

    With `every_value_of` (record types), the values of group-level records are decoded only
    where a reader of the values needs them: for those types always, for other types only for
    the newest decodable record of each key in its offsets-topic partition (older values of a
    key are replaced by it) and, for the types in `newest_value_of`, also the newest value of
    each key (a reader that updates the previous value on a tombstone needs it). The other
    records are still checked against their layouts, so errors, keys and every other column are
    exactly what the codec gives. The types in `raw_value_of` are left undecoded where the walk
    vouches for them: their reader reads the raw bytes (`TaskRecords.value_bytes`) as columns.
    """
    if not batches:
        return TaskRecords(DECODED_ARROW.empty_table(), {}, np.zeros(0, dtype=np.int64), {})
    batches = decode_runs(batches)
    fasts = [fastpath.decode_offset_commits(b) for b in batches]
    handled = np.concatenate([f.handled for f in fasts])
    source = pa.Table.from_batches(batches)
    fast_rows = np.flatnonzero(handled)
    slow_rows = np.flatnonzero(~handled)
    walked_rows = np.zeros(0, dtype=np.int64)
    walked: layout_scan.Scanned | None = None
    if every_value_of is not None and len(slow_rows):
        walked, walked_rows = _walk(source, slow_rows)
    codec_rows = np.setdiff1d(slow_rows, walked_rows, assume_unique=True)
    decoded, fields = _decode_rows(source, codec_rows)
    if walked is not None and len(walked_rows):
        keep = _values_needed(
            source, walked, walked_rows, codec_rows, decoded, every_value_of, newest_value_of
        ) & ~fastpath.is_one_of(np.asarray(walked.columns["record_type"]), raw_value_of)
        extra, extra_fields = _decode_rows(source, walked_rows[keep])
        fields.update((len(decoded) + j, v) for j, v in extra_fields.items())
        decoded += extra
        codec_rows = np.concatenate([codec_rows, walked_rows[keep]])
        walked = _subset(walked, ~keep)
        walked_rows = walked_rows[~keep]
    slow = _columns(decoded)
    order = np.concatenate([fast_rows, walked_rows, codec_rows])
    arrays = _assembled(source, order, fasts, walked, len(walked_rows), slow)
    first_codec = len(fast_rows) + len(walked_rows)
    values = {first_codec + j: v for j, v in fields.items()}
    counts = walked.counts if walked is not None else {}
    table = pa.Table.from_arrays(arrays, schema=DECODED_ARROW)
    return TaskRecords(table, values, order, counts, source.column("value"), len(fast_rows))


def decode_runs(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
    """The batches in order, consecutive ones of one schema concatenated up to DECODE_RUN_RECORDS
    records and DECODE_RUN_BYTES bytes (a larger batch stays as it is)."""
    runs: list[list[pa.RecordBatch]] = []
    records = size = 0
    for batch in batches:
        fits = (
            records + batch.num_rows <= DECODE_RUN_RECORDS
            and size + batch.nbytes <= DECODE_RUN_BYTES
        )
        if not runs or not fits or not batch.schema.equals(runs[-1][0].schema):
            runs.append([])
            records = size = 0
        runs[-1].append(batch)
        records += batch.num_rows
        size += batch.nbytes
    return [run[0] if len(run) == 1 else pa.concat_batches(run) for run in runs]


def _walk(source: pa.Table, slow_rows: np.ndarray) -> tuple[layout_scan.Scanned, np.ndarray]:
    """The layout walk over the non-control slow rows: (its result, their input positions)."""
    control = fastpath.take_rows(source.column("is_control"), slow_rows)
    candidates = slow_rows[~np.asarray(control.fill_null(False), dtype=bool)]
    walked = layout_scan.scan_records(
        fastpath.take_rows(source.column("key"), candidates),
        fastpath.rows_buffers(source.column("value"), candidates),
    )
    return walked, candidates[walked.rows]


def _values_needed(
    source: pa.Table,
    walked: layout_scan.Scanned,
    walked_rows: np.ndarray,
    codec_rows: np.ndarray,
    decoded: list[dict[str, Any]],
    every_value_of: frozenset[int],
    newest_value_of: frozenset[int],
) -> np.ndarray:
    """Which walked rows must still be decoded by the codec: non-tombstones of a type in
    `every_value_of`, the newest decodable group-level record of their key (ties included), or,
    for a type in `newest_value_of`, the newest value of their key."""
    codec_ok = np.array([_is_group_row(row) for row in decoded], dtype=bool)
    rows = np.concatenate([walked_rows, codec_rows[codec_ok] if len(codec_rows) else codec_rows])
    keys = fastpath.take_rows(source.column("key"), rows)
    key_codes = np.asarray(pc.dictionary_encode(keys).indices, dtype=np.int64)
    partition = np.asarray(
        fastpath.take_rows(source.column("log_partition"), rows).fill_null(-1), np.int64
    )
    offset = np.asarray(
        fastpath.take_rows(source.column("log_offset"), rows).fill_null(-(2**63)),
        dtype=np.int64,
    )
    order = np.lexsort((offset, key_codes, partition))
    same = (key_codes[order][1:] == key_codes[order][:-1]) & (
        partition[order][1:] == partition[order][:-1]
    )
    starts = np.flatnonzero(np.r_[True, ~same])
    newest = np.maximum.reduceat(offset[order], starts)
    run = np.cumsum(np.r_[True, ~same]) - 1
    is_newest = np.empty(len(rows), dtype=bool)
    is_newest[order] = offset[order] == newest[run]
    has_value = ~np.asarray(walked.columns["is_tombstone"], dtype=bool)
    record_type = np.asarray(walked.columns["record_type"])
    always = fastpath.is_one_of(record_type, every_value_of)
    wanted = is_newest[: len(walked_rows)] | always
    if newest_value_of:
        codec_values = [not row.get("is_tombstone") for row in decoded if _is_group_row(row)]
        values = np.concatenate([has_value, np.asarray(codec_values, dtype=bool)])
        value_offset = np.where(values, offset, -(2**63))
        newest_value = np.maximum.reduceat(value_offset[order], starts)
        is_newest_value = np.empty(len(rows), dtype=bool)
        is_newest_value[order] = value_offset[order] == newest_value[run]
        reads_newest_value = fastpath.is_one_of(record_type, newest_value_of)
        wanted |= is_newest_value[: len(walked_rows)] & reads_newest_value
    return has_value & wanted


def _is_group_row(row: dict[str, Any]) -> bool:
    return row.get("error") is None and (row.get("record_type") or 0) >= 2


def _subset(walked: layout_scan.Scanned, mask: np.ndarray) -> layout_scan.Scanned:
    chosen = pa.array(mask)
    return layout_scan.Scanned(
        walked.rows[mask],
        {name: column.filter(chosen) for name, column in walked.columns.items()},
        {name: count[mask] for name, count in walked.counts.items()},
    )


def _decode_rows(
    source: pa.RecordBatch | pa.Table, rows: np.ndarray
) -> tuple[list[dict[str, Any]], dict[int, Any]]:
    """The codec's rows for `rows` of the source, and their values by position."""
    keys = fastpath.take_rows(source.column("key"), rows).to_pylist()
    raw_values = fastpath.take_rows(source.column("value"), rows).to_pylist()
    controls = fastpath.take_rows(source.column("is_control"), rows).to_pylist()
    decoded = [_decode_row(*row) for row in zip(keys, raw_values, controls, strict=True)]
    values = {j: row["fields"] for j, row in enumerate(decoded) if "fields" in row}
    return decoded, values


_ROW_STRUCT = pa.struct([f for f in DECODED_ARROW if f.name in _ROW_COLUMNS])


def _columns(rows: list[dict[str, Any]]) -> dict[str, pa.Array]:
    """The decoded columns of the codec's rows (Arrow reads the dicts in C++: a Python list per
    column took 6x longer)."""
    rows_array = pa.array(rows, type=_ROW_STRUCT)
    return absent_as_null({f.name: rows_array.field(i) for i, f in enumerate(_ROW_STRUCT)})


def _decode_row(key: bytes | None, value: bytes | None, is_control: bool | None) -> dict[str, Any]:
    if is_control:
        control = wire.decode_control(key, value)
        row = {"control_type": control.type, "error": control.error}
    else:
        row = decode_record_row(key, value)
    if row.get("error"):
        row["key"], row["value"] = key, value
    return row


def decode_record_row(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """One record through the generic codec, flattened into decoded columns.

    Values of records other than offset commits go to the non-column entry `fields` (the
    codec's dict; `value_json` stays null: the audit reads the values in Python).
    """
    record = wire.decode_record(key, value)
    row: dict[str, Any] = {
        "error": record.error,
        "record_type": record.record_type,
        "reader_limit": record.reader_limit,
    }
    if record.record_type is not None and record.record_type in wire.RECORD_TYPES:
        row["record_name"] = wire.RECORD_TYPES[record.record_type].name
    for name, column in KEY_FIELD_COLUMNS.items():
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
            leader_epoch=fields.get("leaderEpoch", -1),
            metadata=fields["metadata"],
            commit_timestamp_ms=fields["commitTimestamp"],
            expire_timestamp_ms=fields.get("expireTimestamp", -1),
            topic_id=None if fields.get("topicId") is None else str(fields["topicId"]),
        )
    else:
        row["fields"] = fields
    return row
