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

from offsets_lib.audit.arrays import as_bools, in_key_order
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.transactions import COMMITTED, NOT_TRANSACTIONAL, PENDING, takes_effect_at

OFFSET_KEY = ("log_partition", "group_id", "topic", "partition")
# what the keys are coded by: the group id as the task's codes of it (`group_code`, made once per
# task for compaction and the meters: arrays.id_codes; 8.8 ms of the largest 10M task's 501k
# commits when compaction encoded the ids again)
KEY_CODE_COLUMNS = ("log_partition", "group_code", "topic", "partition")
RECORD_COLUMNS = (
    "log_offset", "log_timestamp_ms", "is_tombstone", "record_type", "value_version",
    "committed_offset", "leader_epoch", "metadata", "commit_timestamp_ms",
    "expire_timestamp_ms", "topic_id",
)  # fmt: skip
COUNTING = (NOT_TRANSACTIONAL, COMMITTED)  # txn_status values that take part in the committed state


def _key_codes(table: pa.Table) -> np.ndarray:
    """Int codes of the key (KEY_CODE_COLUMNS), exact (no hashing).

    Each text column is dictionary-encoded on its own and the four codes are packed into one
    int64 when their ranges fit (always, in practice); otherwise the columns are joined as text.
    """
    parts, width = [], 0
    for name in KEY_CODE_COLUMNS:
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
        *[table.column(c).cast(pa.string()) for c in KEY_CODE_COLUMNS], "\x00"
    )
    return np.asarray(pc.dictionary_encode(joined).combine_chunks().indices, dtype=np.int64)


def _reduce_max(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    return np.maximum.reduceat(values, starts) if len(values) else values


class _Sorted:
    """A task's offset commits sorted by (key, log offset), with the per-row facts the LOG and TXN
    rows read; `starts` are the first sorted position of each key."""

    def __init__(self, table: pa.Table) -> None:
        n = table.num_rows
        # dense key codes (by first appearance): the sort by code is then a radix sort
        codes = np.asarray(pc.dictionary_encode(pa.array(_key_codes(table))).indices, np.int64)
        log_offset = np.asarray(table.column("log_offset"), dtype=np.int64)
        self.order = in_key_order(codes, log_offset)
        sorted_codes = codes[self.order]
        self.starts = (
            np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]]) if n else self.order
        )
        status = table.column("txn_status")
        self.counting = as_bools(pc.is_in(status, value_set=pa.array(COUNTING)))[self.order]
        self.committed = as_bools(pc.equal(status, COMMITTED))[self.order]
        self.pending = as_bools(pc.equal(status, PENDING))[self.order]
        self.tombstone = as_bools(table.column("is_tombstone"))[self.order]
        self.offsets = log_offset[self.order]
        marker = table.column("marker_offset")
        self.marker_offsets = np.asarray(pc.fill_null(marker, -1), dtype=np.int64)[self.order]
        self.position = np.arange(n)

    def per_key_max(self, values: np.ndarray) -> np.ndarray:
        return _reduce_max(values, self.starts)

    def effect(self, coordinator: Coordinator) -> np.ndarray:
        """transactions.takes_effect_at for every sorted row."""
        return takes_effect_at(
            self.offsets,
            self.marker_offsets,
            self.committed,
            self.pending,
            coordinator=coordinator,
        )

    def last_tombstone(self) -> np.ndarray:
        """Per key: the log offset of its newest tombstone, -1 without one."""
        return self.per_key_max(np.where(self.tombstone, self.offsets, -1))

    def newest_value(self, coordinator: Coordinator) -> np.ndarray:
        """Per key: the sorted position of the committed value (-1: none, LOG-2 or TXN-4).

        The committed value is the newest counting value that no later tombstone removed
        (transactions.takes_effect_at says which tombstones reach which record)."""
        after = np.repeat(self.last_tombstone(), np.diff(np.r_[self.starts, len(self.order)]))
        live = self.counting & ~self.tombstone & (self.effect(coordinator) > after)
        return self.per_key_max(np.where(live, self.position, -1))

    def has_pending(self, coordinator: Coordinator) -> np.ndarray:
        """Per key: a pending transactional value that no tombstone wiped (TXN-4)."""
        last_pending = self.per_key_max(np.where(self.pending, self.effect(coordinator), -1))
        return last_pending > self.last_tombstone()


# the `rule` of the unread_marker_offsets table's rows (docs/rules.md)
TXN_MARKER_UNREAD = "TXN-MARKER-UNREAD"
# An expiry's tombstone may carry a log time a little before the value's commitTimestamp plus
# the retention: 3 ms before on a Kafka 2.3.1 broker (the broker's clock read at other moments).
EXPIRY_CLOCK_SLACK_MS = 1_000


def is_behind_unread_marker(
    rows: _Sorted, table: pa.Table, *, within_ms: int, retention_ms: int | None
) -> np.ndarray:
    """Per key: the offset depends on a transaction marker this read cannot see (TXN-MARKER-UNREAD).

    For a read without batch metadata under a Scala coordinator (the caller decides that): the
    key's newest record is a tombstone written at most `within_ms` (transaction.max.timeout.ms)
    after the key's newest value. That value may be a transactional commit whose COMMIT marker
    came after the tombstone, and the Scala loader then re-creates it (semantics.md 1.3); read
    without control records and producer ids, a transactional commit looks like a plain one.
    A tombstone at or after that value's own deadline (its explicit expireTimestamp, else its
    commitTimestamp + `retention_ms`; less EXPIRY_CLOCK_SLACK_MS) is read as the cleanup's
    expiry of it: that reading is wrong only if a transaction stayed open longer than the
    retention (a retention under 15 min).
    """
    stamps = np.asarray(pc.fill_null(table.column("log_timestamp_ms"), 0), dtype=np.int64)
    stamps = stamps[rows.order]
    tombstone = rows.per_key_max(np.where(rows.tombstone, rows.position, -1))
    value = rows.per_key_max(np.where(~rows.tombstone, rows.position, -1))
    deleted = (value >= 0) & (tombstone > value)  # sorted by log offset within each key
    deleted_at = stamps[np.maximum(tombstone, 0)]
    soon = deleted_at - stamps[np.maximum(value, 0)] <= within_ms
    if retention_ms is None:
        return deleted & soon
    at = rows.order[np.maximum(value, 0)]
    explicit = table.column("expire_timestamp_ms").take(pa.array(at))
    commit = table.column("commit_timestamp_ms").take(pa.array(at))
    deadline = pc.subtract(
        pc.coalesce(explicit, pc.add(commit, retention_ms)), EXPIRY_CLOCK_SLACK_MS
    )
    expired = np.asarray(
        pc.fill_null(pc.greater_equal(pa.array(deleted_at), deadline), False), dtype=bool
    )
    return deleted & soon & ~expired


def latest_per_key(table: pa.Table, *, coordinator: Coordinator) -> pa.Table:
    """One row per key: key columns, the surviving record's columns, and key facts.

    The surviving record is the committed value (`_Sorted.newest_value`) or, when there is none,
    the newest counting record (a tombstone) if any. Facts: has_committed_offset,
    has_pending_transaction (a pending transactional value no tombstone wiped, TXN-4),
    last_value_offset (newest value of any status, G-S1). `table` holds offset commits with
    `txn_status`, `marker_offset` (the resolving marker's log offset, null without one) and
    `group_code` (KEY_CODE_COLUMNS).
    """
    rows = _Sorted(table)
    order = rows.order
    value = rows.newest_value(coordinator)
    newest_counting = rows.per_key_max(np.where(rows.counting, rows.position, -1))
    newest = np.where(value >= 0, value, newest_counting)
    last_value = rows.per_key_max(np.where(~rows.tombstone, rows.offsets, -1))
    has_newest = newest >= 0
    # a key without a surviving record takes a null index: null record columns
    newest_rows = pa.array(order[np.where(has_newest, newest, 0)], mask=~has_newest)
    columns = {c: table.column(c).take(pa.array(order[rows.starts])) for c in OFFSET_KEY}
    for c in RECORD_COLUMNS:
        columns[c] = table.column(c).take(newest_rows)
    columns["has_committed_offset"] = pa.array(value >= 0)
    columns["has_pending_transaction"] = pa.array(rows.has_pending(coordinator))
    columns["last_value_offset"] = pa.array(last_value, mask=last_value < 0)
    return pa.table(columns)


UNREAD_MARKER_VALUE = ("committed_offset", "commit_timestamp_ms", "expire_timestamp_ms")


def unread_marker_offsets(table: pa.Table, *, within_ms: int, retention_ms: int | None) -> pa.Table:
    """One row per key `is_behind_unread_marker`: key columns, its newest value's
    UNREAD_MARKER_VALUE columns (what a COMMIT marker after the tombstone would re-create), and
    the tombstone's `log_offset` and `log_timestamp_ms`. `latest_per_key` still lets the
    tombstone win (the records as they read); this table says which keys it may be wrong for."""
    rows = _Sorted(table)
    behind = is_behind_unread_marker(rows, table, within_ms=within_ms, retention_ms=retention_ms)
    value = rows.per_key_max(np.where(~rows.tombstone, rows.position, -1))[behind]
    tombstone = rows.per_key_max(np.where(rows.tombstone, rows.position, -1))[behind]
    columns = {
        c: table.column(c).take(pa.array(rows.order[rows.starts[behind]])) for c in OFFSET_KEY
    }
    for c in UNREAD_MARKER_VALUE:
        columns[c] = table.column(c).take(pa.array(rows.order[value]))
    for c in ("log_offset", "log_timestamp_ms"):
        columns[c] = table.column(c).take(pa.array(rows.order[tombstone]))
    return pa.table(columns)


def kept_rows(table: pa.Table) -> np.ndarray:
    """Rows of offset commits (with `txn_status`) that an audit of them plus newer records needs.

    Per key: the committed value under every coordinator's transaction rule, the newest counting
    record, the newest value of any status (G-S1 position), the newest tombstone (TXN-4) and every
    pending transactional record (a later marker may still commit it). Everything else is
    replaced whatever comes next. (The markers that resolved kept records are kept by the caller.)
    """
    n = table.num_rows
    keep = np.zeros(n, dtype=bool)
    if n == 0:
        return keep
    rows = _Sorted(table)
    order = rows.order
    for flag in (rows.counting, ~rows.tombstone, rows.tombstone):
        newest = rows.per_key_max(np.where(flag, rows.position, -1))
        keep[order[newest[newest >= 0]]] = True
    for coordinator in (Coordinator.NEW, Coordinator.CLASSIC_2_4):  # both transaction rules
        value = rows.newest_value(coordinator)
        keep[order[value[value >= 0]]] = True
    keep[order[rows.pending]] = True
    return keep
