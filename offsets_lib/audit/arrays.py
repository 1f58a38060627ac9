"""Numpy views of Arrow columns, group keys, row takes and group spans, shared by the audit's
per-task steps."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def as_bools(array: pa.Array | pa.ChunkedArray, default: bool = False) -> np.ndarray:
    """Booleans as numpy, nulls as `default`: unpacked from the bits by numpy, 0.03-0.07 ms for
    526k values against 0.5 ms through fill_null and Arrow's conversion."""
    if isinstance(array, pa.ChunkedArray):
        chunks = [_unpacked(chunk, default) for chunk in array.chunks]
        return chunks[0] if len(chunks) == 1 else np.concatenate([np.zeros(0, bool), *chunks])
    return _unpacked(array, default)


def _unpacked(array: pa.Array, default: bool) -> np.ndarray:
    validity, data = array.buffers()[:2] if array.type == pa.bool_() else (None, None)
    if data is None:  # not booleans (a null column), or no bits to read
        return np.asarray(pc.fill_null(array, default), dtype=bool)
    end = array.offset + len(array)

    def bits(buffer: pa.Buffer) -> np.ndarray:
        raw = np.frombuffer(buffer, np.uint8)
        return np.unpackbits(raw, count=end, bitorder="little")[array.offset :].view(bool)

    values = bits(data)
    if not array.null_count:
        return values
    return values | ~bits(validity) if default else values & bits(validity)


def one_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The values as one Array: a ChunkedArray's only chunk as it is. Why: pyarrow's
    ChunkedArray.combine_chunks copies even a single chunk (a map batch's 262k keys, 13 MB)."""
    if isinstance(values, pa.Array):
        return values
    return values.chunk(0) if values.num_chunks == 1 else values.combine_chunks()


def as_ints(array: pa.Array | pa.ChunkedArray, fill: int) -> np.ndarray:
    return np.asarray(pc.fill_null(array, fill), dtype=np.int64)


def group_codes(
    partition: pa.Array | pa.ChunkedArray, group: pa.Array | pa.ChunkedArray
) -> np.ndarray:
    """Dense codes of (log_partition, group_id) in order of first appearance; null group ids get
    their own code (`paired_codes` of the group ids' `id_codes`)."""
    return paired_codes(partition, id_codes(group))


def id_codes(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Exact codes of the values (dictionary indices by first appearance; null its own code)."""
    encoded = pc.dictionary_encode(values, null_encoding="encode")  # chunks share a dictionary
    if isinstance(encoded, pa.Array):
        return np.asarray(encoded.indices, np.int64)
    return np.concatenate(
        [np.zeros(0, np.int64), *(np.asarray(c.indices, np.int64) for c in encoded.chunks)]
    )


def paired_codes(partition: pa.Array | pa.ChunkedArray, codes: np.ndarray) -> np.ndarray:
    """Dense codes of (log_partition, code) in order of first appearance (`packed_pairs`, then
    hashed again): joining partition and group id as text first took ~3x as long (30 ms of a
    500k-record task's meters)."""
    packed, _ = packed_pairs(partition, codes)
    return np.asarray(pc.dictionary_encode(pa.array(packed)).indices, dtype=np.int64)


class PairPacking(NamedTuple):
    """How `packed_pairs` packed: pair = code * width + (partition - low); a null partition
    packs as `low` itself, one below the least partition."""

    width: int
    low: int

    def unpacked(self, packed: np.ndarray) -> tuple[np.ndarray, pa.Array]:
        """(code, partition as int32, null where it was null) of packed pairs."""
        partition = packed % self.width + self.low
        is_null = partition == self.low
        partitions = pa.array(np.where(is_null, 0, partition), pa.int32(), mask=is_null)
        return packed // self.width, partitions


def packed_pairs(
    partition: pa.Array | pa.ChunkedArray, codes: np.ndarray
) -> tuple[np.ndarray, PairPacking]:
    """Each (log_partition, code) as one exact integer (codes are below the row count, so the
    product fits in int64 for any int32 partitions), and how it was packed."""
    valid = as_bools(pc.is_valid(partition))
    partitions = as_ints(partition, 0)
    least = np.where(valid, partitions, np.iinfo(np.int64).max).min() if valid.any() else 1
    low = int(least) - 1
    partitions = np.where(valid, partitions, low)
    width = int(partitions.max()) - low + 1 if len(partitions) else 1
    return codes * width + (partitions - low), PairPacking(width, low)


def key_strings(partition: pa.Array | pa.ChunkedArray, group: pa.Array | pa.ChunkedArray):
    return pc.binary_join_element_wise(
        pc.cast(partition, pa.string()), pc.fill_null(group, "\x01<null>"), "\x00"
    )


def take_rows(rows_of: pa.Table | pa.Array, rows: np.ndarray) -> pa.Table | pa.Array:
    """`rows_of.take(rows)`, as a zero-copy slice when the rows are one ascending run (the
    decoded table starts with the fast path's offset commits, so they usually are)."""
    if len(rows) and rows[-1] - rows[0] == len(rows) - 1:
        return rows_of.slice(int(rows[0]), len(rows))
    return rows_of.take(pa.array(rows))


def stable_order(keys: np.ndarray) -> np.ndarray:
    """`np.argsort(keys, kind="stable")` of int64 `keys`: one sort of the keys shifted over their
    positions when both fit in 63 bits, else the argsort. Why: numpy sorts int64 with SIMD and
    argsorts them stably with a timsort. Measured (340k random keys): 2.2 ms against 29.5 ms;
    with it and its epochs read per distinct value, LOG-7's check of the largest 10M task's 10k
    member updates took 35-37 ms against 40-41 ms."""
    n = len(keys)
    if not n:
        return np.zeros(0, np.int64)
    low = int(keys.min())
    span_bits = (int(keys.max()) - low).bit_length()
    position_bits = (n - 1).bit_length()
    if span_bits + position_bits > 63:
        return np.argsort(keys, kind="stable")
    packed = ((keys - low) << position_bits) | np.arange(n, dtype=np.int64)
    return np.sort(packed) & ((1 << position_bits) - 1)


def in_key_order(codes: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The rows ordered by key `codes` (0 .. 2**32; else lexsort), then by `offsets`, ties in
    row order: `np.lexsort((offsets, codes))`, done as two stable sorts (least significant key
    first): numpy's timsort by offset (a task's records come as ascending runs, one per piece and
    partition), then its radix sort by code on 16-bit halves. Measured (the largest 10M task's
    501k offset commits, 58k keys): 8.7-9.3 ms against lexsort's 27-31 ms when the pieces come
    in any order, as a dump's map tasks bring them; a radix sort by code alone, checked for
    ascending offsets, took 5.3 ms in log order and 34 ms (the check failing, then lexsort)
    otherwise."""
    if not len(codes) or int(codes.max()) >= 2**32 or int(codes.min()) < 0:
        return np.lexsort((offsets, codes))
    order = np.argsort(offsets, kind="stable")
    for shift in (0, 16) if int(codes.max()) >= 2**16 else (0,):
        half = ((codes[order] >> shift) & 0xFFFF).astype(np.uint16)
        order = order[np.argsort(half, kind="stable")]
    return order


def group_spans(codes: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Rows in log order within each group (`order`), and each group's (start, end) in it: how
    the replay and the choice of a modern group's kept records walk the group-level records."""
    order = in_key_order(codes, offsets)
    if not len(order):
        return order, []
    ordered = codes[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]).tolist()
    return order, list(zip(starts, [*starts[1:], len(order)], strict=True))
