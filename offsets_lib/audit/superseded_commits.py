"""Offset-commit values that a later value of the same key replaces, found where the records
are cut by audit task: what a dominant group's audit task need not receive.

A group's records all meet in one audit task, so a group writing 30 % of a dump's commits made
one task hold 30 % of the dump. Most of those commits are values that a later plain value of the
same offset key replaces. Such a value V decides nothing the audit reads, when:

* V and the later value W are plain (not transactional: a transactional value takes effect at
  its marker, which may come after W) and decoded by the fast path (a record that fails to
  decode is a reject, and a rejected W replaces nothing), and neither is history;
* then V is never the key's committed value, its newest value or its newest counting record,
  under any coordinator's transaction rule, and never what an incremental run keeps
  (compaction.kept_rows): W is later on each count;
* V does not create its group (the groups_created meter): an earlier counted value P of the
  same group precedes it with no group tombstone between, which the batch shows when it holds
  every record of the offsets partition from P to V (no record of another batch can lie
  between; transaction markers included). Then P, or the first value of P's own chain, stays,
  so a value that creates its group in the whole log still does in the audit's records.

The dropped values still count: `superseded_counts` gives their offset_commits meter per hour
and offsets partition, and the audit task adds them (and them as records read) to its own.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib.audit.arrays import as_bools, as_ints
from offsets_lib.audit.metrics import GROUP_TOMBSTONE_TYPES, hour_of
from offsets_lib.wire.decoded import OFFSET_COMMIT_TYPES
from offsets_lib.wire.fastpath import (
    accepted_offset_commits,
    group_id_bytes,
    is_one_of,
    key_types,
)

# the dropped values' counts, per hour and offsets partition, with the newest log timestamp
SUPERSEDED_ARROW = pa.schema(
    [
        ("hour_ms", pa.int64()),
        ("log_partition", pa.int32()),
        ("offset_commits", pa.int64()),
        ("newest_ms", pa.int64()),
    ]
)


def superseded(records: pa.Table, rows: np.ndarray) -> np.ndarray:
    """Which of `rows` (RAW_ARROW rows of `records`, one batch as read: every record of it, for
    the partitions' offsets) the audit does not need (see the module docstring)."""
    dropped = np.zeros(records.num_rows, dtype=bool)
    if not len(rows):
        return dropped
    partition = as_ints(records.column("log_partition"), -1)
    offset = as_ints(records.column("log_offset"), -(2**63))
    # ranks of the batch's records by (partition, offset): P..V is whole when the ranks between
    # them are as many as the offsets
    by_position = np.lexsort((offset, partition))
    same = (partition[by_position][1:] == partition[by_position][:-1]) & (
        offset[by_position][1:] == offset[by_position][:-1]
    )
    if same.any():  # a record at an offset twice: no contiguous range can be trusted
        return dropped
    rank = np.empty(records.num_rows, dtype=np.int64)
    rank[by_position] = np.arange(records.num_rows)

    sub = records.take(pa.array(rows))
    keys = sub.column("key").combine_chunks()
    values = sub.column("value").combine_chunks()
    kind = key_types(keys)
    is_control = as_bools(sub.column("is_control"))
    is_history = as_bools(sub.column("is_history"))
    has_value = as_bools(pc.is_valid(values))
    commit = is_one_of(kind, OFFSET_COMMIT_TYPES) & ~is_control & ~is_history & has_value
    decoded = np.zeros(len(rows), dtype=bool)
    at = np.flatnonzero(commit)
    decoded[at] = accepted_offset_commits(keys.take(pa.array(at)), values.take(pa.array(at)))
    transactional = as_bools(sub.column("is_transactional")) & (
        as_ints(sub.column("producer_id"), -1) >= 0
    )
    counted_value = commit & decoded  # P: any counted value
    plain = counted_value & ~transactional  # V and W
    group_tombstone = is_one_of(kind, GROUP_TOMBSTONE_TYPES) & ~has_value & ~is_control

    group = _codes(group_id_bytes(keys), partition[rows])
    pos = offset[rows]
    order = np.lexsort((pos, group))
    n = len(order)
    starts = np.r_[True, group[order][1:] != group[order][:-1]]
    group_start = np.maximum.accumulate(np.where(starts, np.arange(n), 0))

    def last_before(flag: np.ndarray) -> np.ndarray:
        upto = np.maximum.accumulate(np.where(flag[order], np.arange(n), -1))
        before = np.r_[-1, upto[:-1]]
        return np.where(before >= group_start, before, -1)

    previous_value = last_before(counted_value)
    previous_tombstone = last_before(group_tombstone)
    value_row = rows[order[np.maximum(previous_value, 0)]]
    whole = rank[rows[order]] - rank[value_row] == offset[rows[order]] - offset[value_row]
    not_creating = np.zeros(len(rows), dtype=bool)
    not_creating[order] = (previous_value >= 0) & (previous_value > previous_tombstone) & whole

    replaced = np.zeros(len(rows), dtype=bool)
    at = np.flatnonzero(plain)
    if len(at):
        key = _codes(pc.binary_slice(keys.take(pa.array(at)), 2, 2**31 - 1), partition[rows[at]])
        newest = np.lexsort((pos[at], key))
        is_last = np.r_[key[newest][1:] != key[newest][:-1], True]
        replaced[at[newest[~is_last]]] = True
    dropped[rows[replaced & not_creating]] = True
    return dropped


def _codes(values: pa.Array, partition: np.ndarray) -> np.ndarray:
    """Exact codes of (offsets partition, bytes)."""
    code = np.asarray(pc.dictionary_encode(values).indices, dtype=np.int64)
    width = int(partition.max()) + 2 if len(partition) else 1
    return code * width + (partition + 1)


def superseded_counts(records: pa.Table) -> pa.Table:
    """SUPERSEDED_ARROW rows of the dropped records (offset-commit values, none of them history)."""
    counts = (
        pa.table(
            {
                "hour_ms": hour_of(records.column("log_timestamp_ms")),
                "log_partition": records.column("log_partition"),
                "log_timestamp_ms": records.column("log_timestamp_ms"),
            }
        )
        .group_by(["hour_ms", "log_partition"], use_threads=False)
        .aggregate([([], "count_all"), ("log_timestamp_ms", "max")])
    )
    return pa.table(
        {
            "hour_ms": counts.column("hour_ms"),
            "log_partition": counts.column("log_partition"),
            "offset_commits": counts.column("count_all"),
            "newest_ms": counts.column("log_timestamp_ms_max"),
        },
        schema=SUPERSEDED_ARROW,
    )
