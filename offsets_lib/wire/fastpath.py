"""Vectorized decoding of offset-commit records (record types 0 and 1) over Arrow buffers.

Offset commits are nearly every record of a dump, so they are decoded with numpy over the raw
key and value buffers of a whole batch, without a Python call per row. Only the layouts that
Kafka writes in practice are accepted here: keys of type 0/1 without trailing bytes, and values
v0-v4 (v4 with no tagged field or only the topic id, tag 0: never over DEC-LIMIT's tag limit,
so `reader_limit` stays null). Any other row, including every row
that is malformed in any way, is left to the generic codec (wire), which gives the precise
reason; tests check that both paths agree on every row the fast path accepts.

The field positions below follow the OffsetCommit layouts in wire.layouts; the conformance and
equivalence tests pin them to that table.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib.wire.decoded import absent_as_null

PAD = 16  # zero bytes appended so fixed-width reads near the end stay in bounds
# Column values shared by every row: taken or repeated in C++ (numpy string arrays converted
# to Arrow cost ~0.1 s per 500k rows each).
_RECORD_NAMES = pa.array(["LegacyOffsetCommit", "OffsetCommit"], pa.string())  # by type 0, 1
_CURRENT_LAYOUT = pa.scalar("current", pa.string())


@dataclass
class FastResult:
    """The handled mask over the batch's rows, and the fast path's DECODED_ARROW columns for the
    handled rows only (in row order; the columns it does not give are null in every handled
    row): merging them with the codec's rows then needs no null-filled full-length columns."""

    handled: np.ndarray
    columns: dict[str, pa.Array]


def buffers(array: pa.Array, narrow: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (padded data bytes, start, length) of a binary array, rebased to its own bytes;
    with `narrow`, start and length are int32 below NARROW_BELOW_BYTES."""
    raw, starts, lengths = _unpadded(array, narrow)
    data = np.zeros(len(raw) + PAD, dtype=np.uint8)
    data[: len(raw)] = raw
    return data, starts, lengths


def readable_buffers(
    array: pa.Array, narrow: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`buffers` for readers that clip every position (`be_ints`, `u8`, `cut_strings`,
    `uuid_strings`): the array's own bytes, no copy, unless there are fewer than PAD. Why: the
    padded copy of a 131k-record run of offset-commit values (8.9 MB) took 1.0-3.8 ms of the
    values' 17.6-20.9 ms, fresh memory each time."""
    raw, starts, lengths = _unpadded(array, narrow)
    if len(raw) < PAD:
        return buffers(array, narrow)
    return raw, starts, lengths


class RowBytes(NamedTuple):
    """A binary column's rows for the vectorized walks: `buffers` and which rows are not null."""

    data: np.ndarray
    start: np.ndarray
    length: np.ndarray
    is_valid: np.ndarray


def array_bytes(array: pa.Array) -> RowBytes:
    """`RowBytes` of a whole binary array."""
    data, start, length = buffers(array)
    is_valid = np.asarray(array.is_valid()) if array.null_count else np.ones(len(array), bool)
    return RowBytes(data, start, length, is_valid)


def rows_buffers(column: pa.Array | pa.ChunkedArray, rows: np.ndarray) -> RowBytes:
    """`RowBytes` of ``column[rows]``, copied chunk by chunk into the one padded buffer. Why:
    taking the rows, merging the chunks and padding copied a task's 266 MB of group metadata
    three times (1.8 s; once: see the skew bench)."""
    order, parts = _taken_by_chunk(column, np.asarray(rows, dtype=np.int64))
    unpadded = [(first, _unpadded(taken), taken) for first, taken in parts]
    data = np.zeros(sum(len(raw) for _, (raw, _, _), _ in unpadded) + PAD, dtype=np.uint8)
    starts = np.empty(len(rows), dtype=np.int64)
    lengths = np.empty(len(rows), dtype=np.int64)
    is_valid = np.empty(len(rows), dtype=bool)
    base = 0
    for first, (raw, part_starts, part_lengths), taken in unpadded:
        data[base : base + len(raw)] = raw
        at = np.arange(first, first + len(taken))
        at = at if order is None else order[at]
        starts[at] = part_starts + base
        lengths[at] = part_lengths
        is_valid[at] = np.asarray(taken.is_valid()) if taken.null_count else True
        base += len(raw)
    return RowBytes(data, starts, lengths, is_valid)


def _unpadded(array: pa.Array, narrow: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(data bytes, start, length) of a binary array: a view of its own bytes, no copy; int32
    start and length with `narrow` below NARROW_BELOW_BYTES, else int64."""
    array = array.cast(pa.binary()) if array.type != pa.binary() else array
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int32)[
        array.offset : array.offset + len(array) + 1
    ]
    base, end = int(offsets[0]), int(offsets[-1])
    raw = array.buffers()[2]
    data = (
        np.frombuffer(raw, dtype=np.uint8)[base:end]
        if raw is not None and end > base
        else np.zeros(0, dtype=np.uint8)
    )
    if narrow and end - base < NARROW_BELOW_BYTES:
        return data, offsets[:-1] - np.int32(base), np.diff(offsets)
    return data, offsets[:-1].astype(np.int64) - base, np.diff(offsets).astype(np.int64)


# The offset commits' fields are read at int32 positions, and their int16 and int32 fields
# kept as int32, when the batch's bytes are fewer than this (a position plus anything the fast
# path adds to it, at most 2**17, then stays an int32): each numpy step moves half the bytes.
# Measured (the largest 10M task's 450k commits, min of 6, three alternations): 0.141-0.152 ->
# 0.137-0.142 CPU-s in 13k-record pieces, 0.119-0.123 -> 0.117-0.119 in 131k-record batches.
NARROW_BELOW_BYTES = 2**31 - 2**17


def take_rows(column: pa.Array | pa.ChunkedArray, rows: np.ndarray) -> pa.Array:
    """``column[rows]`` as one array, taken chunk by chunk. Why: pyarrow's ChunkedArray.take of
    a binary column is slow with many chunks (26.0, a task's 60 batches holding 266 MB of
    group metadata: 0.69 s against 0.01 s chunk by chunk)."""
    rows = np.asarray(rows, dtype=np.int64)
    if isinstance(column, pa.ChunkedArray) and column.num_chunks == 1:
        column = column.chunk(0)
    if isinstance(column, pa.Array):
        return column.take(pa.array(rows))
    order, parts = _taken_by_chunk(column, rows)
    if not parts:
        return pa.array([], type=column.type)
    taken = pa.concat_arrays([part for _, part in parts])
    if order is None:
        return taken
    back = np.empty(len(order), dtype=np.int64)
    back[order] = np.arange(len(order))
    return taken.take(pa.array(back))


def _taken_by_chunk(
    column: pa.Array | pa.ChunkedArray, rows: np.ndarray
) -> tuple[np.ndarray | None, list[tuple[int, pa.Array]]]:
    """The rows of each chunk, taken in ascending row order: (the order that sorts `rows`, None
    when they were sorted; per chunk with rows, its first position in that order and its
    taken rows)."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    is_sorted = len(rows) < 2 or not bool(np.any(rows[1:] < rows[:-1]))
    order = None if is_sorted else np.argsort(rows, kind="stable")
    ascending = rows if order is None else rows[order]
    bounds = np.cumsum([0, *(len(chunk) for chunk in chunks)])
    cuts = np.searchsorted(ascending, bounds)
    return order, [
        (int(cuts[k]), chunk.take(pa.array(ascending[cuts[k] : cuts[k + 1]] - bounds[k])))
        for k, chunk in enumerate(chunks)
        if cuts[k + 1] > cuts[k]
    ]


def be_ints(data: np.ndarray, pos: np.ndarray, width: int, dtype: type = np.int64) -> np.ndarray:
    """Signed big-endian integers of `width` bytes starting at each position (vectorized), as
    `dtype` (int32 holds those of up to 4 bytes). Of `dtype`'s own width, they are gathered as
    `dtype` and byte-swapped in place (one array, not two: 8-byte fields of 131k values 1.30 ->
    0.74 ms)."""
    at = np.clip(pos, 0, len(data) - width)
    if np.dtype(dtype).itemsize == width:
        view = np.ndarray((len(data) - width + 1,), dtype=dtype, buffer=data, strides=(1,))
        values = view[at]
        return values.byteswap(inplace=True) if sys.byteorder == "little" else values
    view = np.ndarray((len(data) - width + 1,), dtype=f">i{width}", buffer=data, strides=(1,))
    return view[at].astype(dtype)


def is_one_of(values: np.ndarray, choices: Iterable[int]) -> np.ndarray:
    """`np.isin` for a few integer choices: one comparison each. Measured (numpy 2.4, 500k
    int64, 2 choices): 0.18 ms against np.isin's 2.7 ms; 100 values: 2 us against 22 us."""
    out = np.zeros(len(values), dtype=bool)
    for choice in choices:
        out |= values == choice
    return out


def u8(data: np.ndarray, pos: np.ndarray, dtype: type = np.int64) -> np.ndarray:
    return data[np.clip(pos, 0, len(data) - 1)].astype(dtype)


def cut_strings(
    data: np.ndarray, start: np.ndarray, length: np.ndarray, ok: np.ndarray, as_bytes: bool = False
) -> pa.Array:
    """Cut length-prefixed byte ranges out of `data` as one Arrow string array, no Python loop.

    The ranges become the odd slots of a 2n+1-element binary array over the same buffer (the even
    slots are the gaps), and Arrow's take copies the odd slots out.
    """
    n = len(start)
    s = np.where(ok, start, 0)
    e = np.where(ok, start + length, 0)
    # keep offsets monotone: rows without a string get an empty range at the running end
    running = np.maximum.accumulate(np.maximum(s, e)) if n else e
    s = np.where(ok, s, running)
    e = np.where(ok, e, running)
    offsets = np.empty(2 * n + 2, dtype=np.int32)
    offsets[0] = 0
    offsets[1 : 2 * n + 1 : 2] = s
    offsets[2 : 2 * n + 2 : 2] = e
    offsets[-1] = int(e.max()) if n else 0  # the last gap ends where the last range does
    if (np.diff(offsets) < 0).any():  # overlapping ranges cannot be cut this way
        raise ValueError("overlapping string ranges")
    big = pa.Array.from_buffers(
        pa.binary(),
        2 * n + 1,
        [None, pa.py_buffer(offsets), pa.py_buffer(data[: offsets[-1]])],  # no copy
    )
    taken = big.take(pa.array(np.arange(1, 2 * n, 2, dtype=np.int32), mask=~ok))
    return taken if as_bytes else as_text(taken)


def as_text(binary: pa.Array) -> pa.Array:
    """A binary array as strings, UTF-8 checked: raises ArrowInvalid where a value is not UTF-8.
    All-ASCII bytes (ids, topics and metadata nearly always) are valid as they are, which one
    max over the bytes tells: 0.03 ms against Arrow's per-string check's 1.0-1.2 ms for 123k
    group ids or topics (2.5 MB)."""
    _, offsets, data = binary.buffers()
    if data is not None and len(binary):
        bounds = np.frombuffer(offsets, np.int32)[[binary.offset, binary.offset + len(binary)]]
        used = np.frombuffer(data, np.uint8)[bounds[0] : bounds[1]]
        if len(used) and int(used.max()) >= 0x80:
            return binary.cast(pa.string())
    return binary.view(pa.string())


def uuid_strings(data: np.ndarray, pos: np.ndarray, ok: np.ndarray) -> pa.Array:
    """Canonical 8-4-4-4-12 strings of the 16-byte uuids at `pos` (null where not `ok`), built
    as one byte buffer (no Python string per uuid): each byte's two hex digits from a table,
    placed by five slices. Measured (60k uuids): 4.3 ms against 9.5 ms placing each digit by
    a fancy index."""
    if not ok.any():  # e.g. offset commits before version 4
        return pa.nulls(len(pos), pa.string())
    starts = np.clip(pos[ok], 0, len(data) - 16)
    raw = np.ndarray((len(data) - 15, 16), dtype=np.uint8, buffer=data, strides=(1, 1))[starts]
    digits = _HEX_PAIRS[raw].view(np.uint8)  # 32 per uuid
    text = np.empty((len(raw), 36), np.uint8)
    text[:, [8, 13, 18, 23]] = ord("-")
    for begin, end, at in ((0, 8, 0), (8, 12, 9), (12, 16, 14), (16, 20, 19), (20, 32, 24)):
        text[:, at : at + end - begin] = digits[:, begin:end]
    offsets = np.zeros(len(pos) + 1, np.int32)
    np.cumsum(np.where(ok, 36, 0), out=offsets[1:])
    validity = None if ok.all() else pa.array(ok).buffers()[1]
    return pa.Array.from_buffers(
        pa.string(), len(pos), [validity, pa.py_buffer(offsets), pa.py_buffer(text)]
    )


_HEX = "0123456789abcdef"
# the two hex digits of each byte value, the first at the lower address
_HEX_PAIRS = np.array([ord(a) | ord(b) << 8 for a in _HEX for b in _HEX], dtype="<u2")


def group_id_bytes(keys: pa.Array) -> pa.Array:
    """Each key's group id bytes (binary): bytes 4 .. 4 + int16 at byte 2, cut to the key.

    Short, null or malformed keys give whatever bytes they have there (possibly empty): they
    still land in one task, whose decoding rejects them.
    """
    keys = keys.cast(pa.binary()) if keys.type != pa.binary() else keys
    n = len(keys)
    if n == 0:
        return pa.array([], pa.binary())
    offsets = np.frombuffer(keys.buffers()[1], dtype=np.int32)[keys.offset : keys.offset + n + 1]
    data_buffer = keys.buffers()[2]
    data = (
        np.frombuffer(data_buffer, dtype=np.uint8)
        if data_buffer is not None
        else np.zeros(0, np.uint8)
    )
    # int32 positions as the offsets are (half the memory traffic), unless near their limit
    wide = int(offsets[-1]) >= NARROW_BELOW_BYTES
    start = offsets[:-1].astype(np.int64) if wide else offsets[:-1]
    length = np.diff(offsets).astype(start.dtype)
    if len(data) < 4:  # no key long enough to hold a group id
        return pa.array([b""] * n, pa.binary())
    # a key shorter than 4 bytes has an empty group range whatever `declared` reads
    at = np.clip(start + 2, 0, start.dtype.type(min(len(data), int(offsets[-1])) - 2))
    declared = (data[at].astype(start.dtype) << 8) | data[at + 1]
    group_start = np.minimum(start + 4, start + length)
    group_end = np.minimum(group_start + declared, start + length)
    # the group ranges as the odd slots of a 2n+1-slot binary array over the keys' own buffer;
    # monotone as they are: each range lies inside its key (declared >= 0, null and short keys
    # get an empty one at their end), and the keys' offsets are
    slots = np.empty(2 * n + 2, dtype=np.int32)
    slots[0] = 0
    slots[1 : 2 * n + 1 : 2] = group_start
    slots[2 : 2 * n + 2 : 2] = group_end
    slots[-1] = len(data)
    ranges = pa.Array.from_buffers(pa.binary(), 2 * n + 1, [None, pa.py_buffer(slots), data_buffer])
    return ranges.take(pa.array(np.arange(1, 2 * n, 2, dtype=np.int32)))


def key_types(keys: pa.Array) -> np.ndarray:
    """Each key's record type (the int16 its bytes start with); -1 for null or short keys."""
    keys = keys.cast(pa.binary()) if keys.type != pa.binary() else keys
    n = len(keys)
    out = np.full(n, -1, dtype=np.int64)
    if n == 0 or keys.buffers()[2] is None:
        return out
    offsets = np.frombuffer(keys.buffers()[1], dtype=np.int32)[keys.offset : keys.offset + n + 1]
    data = np.frombuffer(keys.buffers()[2], dtype=np.uint8)
    start = offsets[:-1].astype(np.int64)
    long_enough = (np.diff(offsets) >= 2) & np.asarray(pc.is_valid(keys), dtype=bool)
    at = np.where(long_enough, start, 0)
    if len(data) >= 2:
        typed = (data[np.minimum(at, len(data) - 2)].astype(np.int64) << 8) | data[
            np.minimum(at + 1, len(data) - 1)
        ]
        out = np.where(long_enough, np.where(typed >= 2**15, typed - 2**16, typed), -1)
    return out


def _decode_keys(keys: pa.Array) -> tuple[np.ndarray, dict[str, Any]]:
    data, start, length = readable_buffers(keys, narrow=True)
    at = start.dtype.type  # int32 positions and fields when the bytes allow
    valid = np.asarray(keys.is_valid()) if keys.null_count else np.ones(len(keys), bool)
    record_type = be_ints(data, start, 2, at)
    group_len = be_ints(data, start + 2, 2, at)
    topic_pos = start + 4 + group_len
    topic_len = be_ints(data, topic_pos, 2, at)
    expected = 4 + group_len + 2 + topic_len + 4
    ok = (
        valid
        & (length >= 10)
        & ((record_type == 0) | (record_type == 1))
        & (group_len >= 0)
        & (4 + group_len + 2 <= length)
        & (topic_len >= 0)
        & (expected == length)
    )
    cols = {
        "record_type": record_type,
        "group": (start + 4, group_len),
        "topic": (topic_pos + 2, topic_len),
        "partition": be_ints(data, topic_pos + 2 + topic_len, 4, at),
    }
    return ok, {"data": data, **cols}


def _decode_values(values: pa.Array) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Return (accepted, is_tombstone, fields) for v0-v4 offset-commit values."""
    data, start, length = readable_buffers(values, narrow=True)
    at = start.dtype.type  # int32 positions and fields when the bytes allow
    present = np.asarray(values.is_valid()) if values.null_count else np.ones(len(values), bool)
    version = be_ints(data, start, 2, at)
    has_epoch = version >= 3
    flexible = version == 4
    meta_len_pos = start + np.where(has_epoch, at(14), at(10))
    # classic: int16 length; flexible: uvarint(length + 1) in one or two bytes
    b0 = u8(data, meta_len_pos, at)
    b1 = u8(data, meta_len_pos + 1, at)
    two_byte = flexible & (b0 >= 0x80)
    varint = np.where(two_byte, (b0 & 0x7F) | (b1 << 7), b0) - 1
    meta_len = np.where(flexible, varint, be_ints(data, meta_len_pos, 2, at))
    meta_pos = meta_len_pos + np.where(flexible, np.where(two_byte, at(2), at(1)), at(2))
    commit_pos = meta_pos + meta_len
    after_commit = commit_pos + 8
    has_expire = version == 1
    end_fixed = after_commit + np.where(has_expire, at(8), at(0))
    tag_count = u8(data, after_commit, at)
    tag_id = u8(data, after_commit + 1, at)
    tag_size = u8(data, after_commit + 2, at)
    has_topic_id = flexible & (tag_count == 1) & (tag_id == 0) & (tag_size == 16)
    flexible_end = after_commit + 1 + np.where(has_topic_id, at(18), at(0))
    end = np.where(flexible, flexible_end, end_fixed)
    shape_ok = (
        (version >= 0)
        & (version <= 4)
        & (length >= 2)
        & (meta_len >= 0)
        & (end == start + length)
        & (~flexible | (tag_count == 0) | has_topic_id)
        & (~two_byte | (b1 < 0x80))
    )
    accepted = ~present | shape_ok
    fields = {
        "data": data,
        "version": version,
        "offset": be_ints(data, start + 2, 8),
        "leader_epoch": np.where(has_epoch, be_ints(data, start + 10, 4, at), at(-1)),
        "metadata": (meta_pos, meta_len),
        "commit_ts": be_ints(data, commit_pos, 8),
        "expire_ts": np.where(has_expire, be_ints(data, after_commit, 8), -1),
        "topic_id_pos": after_commit + 3,
        "has_topic_id": has_topic_id,
    }
    return accepted, ~present, fields


def _accepted(keys: pa.Array, values: pa.Array, is_control: np.ndarray) -> tuple | None:
    """The rows the fast path decodes (handled mask and positions), the keys' and values'
    fields, and their group, topic and metadata strings; None when a string is not UTF-8 (or
    the buffers cannot be cut so): then the codec decides every row."""
    key_ok, key = _decode_keys(keys)
    value_ok, tombstone, value = _decode_values(values)
    value["tombstone"] = tombstone
    handled = key_ok & value_ok & ~is_control
    rows = np.flatnonzero(handled)
    every = np.ones(len(rows), dtype=bool)
    try:
        strings = (
            cut_strings(key["data"], key["group"][0][rows], key["group"][1][rows], every),
            cut_strings(key["data"], key["topic"][0][rows], key["topic"][1][rows], every),
            cut_strings(
                value["data"],
                value["metadata"][0][rows],
                value["metadata"][1][rows],
                ~tombstone[rows],
            ),
        )
    except (pa.ArrowInvalid, ValueError):
        return None
    return handled, rows, key, value, strings


def accepted_offset_commits(keys: pa.Array, values: pa.Array) -> np.ndarray:
    """Which (non-control) records the fast path would decode, each on its own: offset commits
    whose every string is UTF-8 (`decode_offset_commits` leaves a whole batch to the codec for
    one that is not), checked without building their columns."""
    key_ok, key = _decode_keys(keys)
    value_ok, tombstone, value = _decode_values(values)
    accepted = key_ok & value_ok
    strings = (
        (key["data"], key["group"], accepted),
        (key["data"], key["topic"], accepted),
        (value["data"], value["metadata"], accepted & ~tombstone),
    )
    try:
        for data, (start, length), ok in strings:
            cut = cut_strings(data, start, length, ok, as_bytes=True)
            try:
                as_text(cut)  # every string UTF-8: the usual case, one check
                continue
            except pa.ArrowInvalid:
                pass
            encoded = pc.dictionary_encode(cut)  # else each distinct string on its own
            is_text = np.array([_is_utf8(v) for v in encoded.dictionary.to_pylist()] + [True])
            accepted &= is_text[np.asarray(encoded.indices.fill_null(-1), dtype=np.int64)]
    except (pa.ArrowInvalid, ValueError):  # ranges that cannot be cut so: the codec decides
        return np.zeros(len(keys), dtype=bool)
    return accepted


def _is_utf8(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _int_column(values: np.ndarray, mask: np.ndarray, arrow_type: pa.DataType) -> pa.Array:
    """Arrow array of `values` where mask is true, null elsewhere."""
    return pa.array(values, mask=~mask).cast(arrow_type)


def decode_offset_commits(batch: pa.RecordBatch) -> FastResult:
    """Decode every offset-commit row of the batch that the fast path accepts."""
    n = batch.num_rows
    if n == 0:
        return FastResult(np.zeros(0, dtype=bool), {})
    control = batch.column("is_control")
    is_control = np.asarray(control.fill_null(False)) if control.null_count else np.asarray(control)
    accepted = _accepted(batch.column("key"), batch.column("value"), is_control)
    if accepted is None:
        return FastResult(np.zeros(n, dtype=bool), {})
    handled, rows, key, value, (group, topic, metadata) = accepted
    m = len(rows)
    has_value = ~value["tombstone"][rows]
    record_type = key["record_type"][rows]
    epoch = value["leader_epoch"][rows]
    expire = value["expire_ts"][rows]
    with_topic_id = has_value & value["has_topic_id"][rows]
    columns = dict(
        record_type=pa.array(record_type, type=pa.int16()),
        record_name=_RECORD_NAMES.take(pa.array(record_type)),
        group_id=group,
        topic=topic,
        partition=pa.array(key["partition"][rows], type=pa.int32()),
        is_tombstone=pa.array(~has_value),
        value_version=_int_column(value["version"][rows], has_value, pa.int16()),
        layout=pa.repeat(_CURRENT_LAYOUT, m),
        trailing_bytes=pa.array(np.zeros(m, np.int32)),
        committed_offset=_int_column(value["offset"][rows], has_value, pa.int64()),
        leader_epoch=_int_column(epoch, has_value, pa.int32()),
        metadata=metadata,
        commit_timestamp_ms=_int_column(value["commit_ts"][rows], has_value, pa.int64()),
        expire_timestamp_ms=_int_column(expire, has_value, pa.int64()),
        topic_id=uuid_strings(value["data"], value["topic_id_pos"][rows], with_topic_id),
    )
    return FastResult(handled, absent_as_null(columns))
