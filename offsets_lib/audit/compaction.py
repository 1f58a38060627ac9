"""Newest record per offset key inside one task, with numpy (no Spark; runs in executors).

Spark's own "latest per key" (`max_by` over a struct) plans two sort-aggregates over every
record. Hash-partitioning the records by their key and sorting int64 key codes with numpy in
each task does the same work with one plain shuffle (../shared/notes/performance.md measured
0.85x the raw-dedupe baseline for this shape). Every record of a key must reach the same task,
which the caller guarantees by partitioning on the key columns; `offset_keys_sql` in
`tests/reference/compact.py` is the reference this is tested against.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib.audit.transactions import COMMITTED, NOT_TRANSACTIONAL, PENDING

OFFSET_KEY = ("log_partition", "group_id", "topic", "partition")
RECORD_COLUMNS = (
    "log_offset", "log_timestamp_ms", "is_tombstone", "record_type", "value_version",
    "committed_offset", "leader_epoch", "metadata", "commit_timestamp_ms",
    "expire_timestamp_ms", "topic_id",
)  # fmt: skip
COUNTING = (NOT_TRANSACTIONAL, COMMITTED)  # txn_status values that take part in the committed state


def _key_codes(table: pa.Table) -> np.ndarray:
    """Int codes of (log_partition, group_id, topic, partition), exact (no hashing).

    Each column is dictionary-encoded on its own and the four codes are packed into one int64
    when their ranges fit (always, in practice); otherwise the columns are joined as text.
    """
    parts, width = [], 0
    for name in OFFSET_KEY:
        column = table.column(name)
        if pa.types.is_integer(column.type):
            values = np.asarray(column.fill_null(0), dtype=np.int64)
            low = int(values.min()) if len(values) else 0
            code = np.where(np.asarray(column.is_valid()), values - low + 1, 0)  # null = 0
        else:
            encoded = pc.dictionary_encode(column.fill_null("")).combine_chunks()
            code = np.asarray(encoded.indices, dtype=np.int64)
            if column.null_count:  # null and "" must differ
                code = np.where(np.asarray(column.is_null()), len(encoded.dictionary), code)
        bits = int(code.max()).bit_length() if len(code) else 0
        parts.append((code, bits))
        width += bits
    if width <= 62:
        packed = np.zeros(table.num_rows, dtype=np.int64)
        for code, bits in parts:
            packed = (packed << bits) | code
        return packed
    joined = pc.binary_join_element_wise(
        *[table.column(c).cast(pa.string()) for c in OFFSET_KEY], "\x00"
    )
    return np.asarray(pc.dictionary_encode(joined).combine_chunks().indices, dtype=np.int64)


def _reduce_max(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    return np.maximum.reduceat(values, starts) if len(values) else values


def latest_per_key(table: pa.Table) -> pa.Table:
    """One row per key: key columns, the newest counting record's columns, and key facts.

    Facts: has_committed_offset (the newest counting record is a value), has_pending_transaction
    (a pending transactional value newer than the newest tombstone, TXN-4), last_value_offset
    (newest value of any status, G-S1).
    """
    n = table.num_rows
    codes = _key_codes(table)
    log_offset = np.asarray(table.column("log_offset"), dtype=np.int64)
    order = np.lexsort((log_offset, codes))
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]]) if n else order
    status = table.column("txn_status")
    counting = np.asarray(pc.is_in(status, value_set=pa.array(COUNTING)), dtype=bool)[order]
    pending = np.asarray(pc.fill_null(pc.equal(status, PENDING), False), dtype=bool)[order]
    tombstone = np.asarray(table.column("is_tombstone"), dtype=bool)[order]
    offsets = log_offset[order]
    position = np.arange(n)
    newest = _reduce_max(np.where(counting, position, -1), starts)
    last_tombstone = _reduce_max(np.where(tombstone, offsets, -1), starts)
    last_pending = _reduce_max(np.where(pending, offsets, -1), starts)
    last_value = _reduce_max(np.where(~tombstone, offsets, -1), starts)
    has_newest = newest >= 0
    newest_rows = pa.array(order[np.where(has_newest, newest, 0)])
    no_newest = pa.array(~has_newest)
    columns = {c: table.column(c).take(pa.array(order[starts])) for c in OFFSET_KEY}
    for c in RECORD_COLUMNS:
        values = table.column(c).take(newest_rows)
        columns[c] = pc.if_else(no_newest, pa.nulls(len(values), values.type), values)
    columns["has_committed_offset"] = pa.array(
        has_newest & ~tombstone[np.where(has_newest, newest, 0)]
    )
    columns["has_pending_transaction"] = pa.array(last_pending > np.maximum(last_tombstone, -1))
    columns["last_value_offset"] = pa.array(last_value, mask=last_value < 0)
    return pa.table(columns)


def kept_rows(table: pa.Table) -> np.ndarray:
    """Rows of offset commits (with `txn_status`) that an audit of them plus newer records needs.

    Per key: the newest counting record (the committed state), the newest value of any status
    (G-S1 position), the newest tombstone (TXN-4) and every pending transactional record (a
    later marker may still commit it). Everything else is replaced whatever comes next.
    """
    n = table.num_rows
    keep = np.zeros(n, dtype=bool)
    if n == 0:
        return keep
    codes = _key_codes(table)
    log_offset = np.asarray(table.column("log_offset"), dtype=np.int64)
    order = np.lexsort((log_offset, codes))
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    status = table.column("txn_status")
    counting = np.asarray(pc.is_in(status, value_set=pa.array(COUNTING)), dtype=bool)[order]
    pending = np.asarray(pc.fill_null(pc.equal(status, PENDING), False), dtype=bool)[order]
    tombstone = np.asarray(table.column("is_tombstone"), dtype=bool)[order]
    position = np.arange(n)
    for flag in (counting, ~tombstone, tombstone):
        newest = _reduce_max(np.where(flag, position, -1), starts)
        keep[order[newest[newest >= 0]]] = True
    keep[order[pending]] = True
    return keep
