"""The first step of the split audit: a task's offset commits reduced per offset key.

The audit replays a group with all of its records in one task, so a group holding 30 % of a
dump's offset commits made one task hold 30 % of the dump. A group's offset commits are
independent per key once transactions are resolved, so the split audit first routes offset
commits by offset key (engine.routing, `by_offset_key`): every task gets a similar share whatever
the groups' sizes, plus every transaction marker and group tombstone of its partitions. This
module is what such a task does. It resolves transactions and keeps, per key, exactly the
records `compaction.kept_rows` keeps for an incremental run (the newest counting record, the
newest value, the newest tombstone and every pending one): the audit of them gives the same
offsets, groups and transaction facts as the audit of all of them. It forwards those and every
other record (group records, markers, undecodable ones) to the usual per-group audit, and counts
here what the dropped commits would have counted there (records read, KIP-496 meters).

The groups_created meter depends on the order of a group's records: an offset commit creates
its group when it is the group's first value record or the first after a group tombstone. Each
task forwards as counted records the first commit value of each group after each group tombstone
(and the first of all); the per-group audit then sees the group's creating commit among them.
The other forwarded commits are marked as history there: audited, not counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib.audit.arrays import as_bools, as_ints, group_codes
from offsets_lib.audit.metrics import GROUP_TOMBSTONE_TYPES, kip496_meters
from offsets_lib.audit.task_audit import KIND_ARROW, METRIC, STATS
from offsets_lib.audit.task_input import RAW_ARROW, resolved_commits

# a task's records in the first step: is_copy marks the copies of a marker or group tombstone
# that other tasks also received (they resolve and delimit here; only one copy is forwarded)
SPLIT_ARROW = RAW_ARROW.append(pa.field("is_copy", pa.bool_()))


@dataclass(frozen=True)
class ReducedTask:
    """What the first step forwards to the per-group audit (RAW_ARROW rows) and what it
    counted itself (KIND_ARROW tables of kinds metric and stats)."""

    forwarded: pa.Table
    counted: dict[str, pa.Table]


def reduce_commits(batches: list[pa.RecordBatch], *, needs_decoding: np.ndarray) -> ReducedTask:
    """A task's SPLIT_ARROW records -> the records the per-group audit needs, and the counts of
    the rest. `needs_decoding` flags the rows that may be offset commits, markers or group
    tombstones (by their key's record type); the others are forwarded without being decoded."""
    source = pa.Table.from_batches(batches, schema=SPLIT_ARROW) if batches else None
    if source is None or source.num_rows == 0:
        return ReducedTask(RAW_ARROW.empty_table(), _counted(None, None, 0, None))
    is_copy = as_bools(source.column("is_copy"))
    is_history_source = as_bools(source.column("is_history"))
    decode_rows = np.flatnonzero(needs_decoding)
    raw = source.select(RAW_ARROW.names).take(pa.array(decode_rows)).cast(RAW_ARROW)
    c = resolved_commits(raw.to_batches())
    records, decoded, rows, kept = c.records, c.records.table, c.rows, c.is_kept
    at_source = decode_rows[records.source]  # source row of each decoded row
    is_history = is_history_source[at_source]
    is_commit = np.zeros(decoded.num_rows, dtype=bool)
    is_commit[rows] = True
    creating = _creation_candidates(
        decoded, c.ok, c.record_type, c.tombstone, is_commit, is_history
    )
    counted_here = is_commit & ~is_history & ~creating

    forward = np.ones(source.num_rows, dtype=bool)
    forward[at_source[is_commit & ~kept & ~creating]] = False
    forward &= ~is_copy
    as_history = is_history_source.copy()
    as_history[at_source[is_commit & kept & ~creating]] = True
    forwarded = source.select(RAW_ARROW.names).set_column(
        RAW_ARROW.get_field_index("is_history"), "is_history", pa.array(as_history)
    )
    forwarded = forwarded.filter(pa.array(forward)).cast(RAW_ARROW)
    timestamps = _take_rows(decoded.column("log_timestamp_ms"), rows)
    newest = pc.max(timestamps).as_py() if len(rows) else None
    return ReducedTask(forwarded, _counted(records, counted_here, int(counted_here.sum()), newest))


def _take_rows(column: pa.ChunkedArray, rows: np.ndarray) -> pa.ChunkedArray:
    return column.take(pa.array(rows, pa.int64()))


def _creation_candidates(
    decoded: pa.Table,
    ok: np.ndarray,
    record_type: np.ndarray,
    tombstone: np.ndarray,
    is_commit: np.ndarray,
    is_history: np.ndarray,
) -> np.ndarray:
    """Counted commit values that are the first of their group, or the first after a group
    tombstone, among this task's records (see the module docstring)."""
    value = is_commit & ~tombstone & ~is_history
    group_tombstone = (
        ok
        & tombstone
        & ~is_history
        & np.isin(record_type, GROUP_TOMBSTONE_TYPES)
        & as_bools(pc.is_valid(decoded.column("group_id")))
    )
    involved = np.flatnonzero(value | group_tombstone)
    out = np.zeros(decoded.num_rows, dtype=bool)
    if not len(involved):
        return out
    taken = decoded.select(["log_partition", "group_id", "log_offset"]).take(pa.array(involved))
    codes = group_codes(taken.column("log_partition"), taken.column("group_id"))
    offsets = as_ints(taken.column("log_offset"), -(2**63))
    order = np.lexsort((offsets, codes))
    sorted_codes = codes[order]
    starts = np.r_[True, sorted_codes[1:] != sorted_codes[:-1]]
    is_tombstone_sorted = group_tombstone[involved][order]
    after_tombstone = np.r_[False, is_tombstone_sorted[:-1]]
    first = ~is_tombstone_sorted & (starts | after_tombstone)
    out[involved[order[first]]] = True
    return out


def _counted(records, counted_here, records_read: int, newest_ms: int | None) -> dict:
    """The metric and stats partials of the dropped commits (groups_created is counted by the
    per-group audit, from the forwarded creating commits)."""
    if records is None or not records_read:
        metric = KIND_ARROW[METRIC].empty_table()
    else:
        metric = kip496_meters(records, counted_here)
        metric = metric.set_column(
            metric.schema.get_field_index("groups_created"),
            "groups_created",
            pa.array(np.zeros(metric.num_rows, dtype=np.int64)),
        )
        metric = metric.select(KIND_ARROW[METRIC].names).cast(KIND_ARROW[METRIC])
    stats = pa.table(
        {
            "records_read": pa.array([records_read], pa.int64()),
            "records_rejected": pa.array([0], pa.int64()),
            "orphaned_offsets": pa.array([0], pa.int64()),
            "max_timestamp_ms": pa.array([newest_ms], pa.int64()),
            "group_counts": pa.array(["{}"], pa.string()),
        }
    )
    return {METRIC: metric, STATS: stats}
