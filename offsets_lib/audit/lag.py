"""Consumer lag: committed offsets against the log-end offsets of the consumed partitions.

One rule (`lag_rows`, Arrow), used by the audit tasks that write the lag table themselves and
by `offsets lag` against log-end offsets asked later (`with_end_offsets` joins them in). The
log-end offsets are read by `io.log_end_offsets`; `latest_end_offsets` makes them one row per
partition for both.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

LAG_COLUMNS = (
    "group_id",
    "topic",
    "partition",
    "committed_offset",
    "log_end_offset",
    "lag",
    "last_commit_at",
    "seconds_since_commit",
)

END_OFFSETS_ARROW = pa.schema(
    [("topic", pa.string()), ("partition", pa.int32()), ("log_end_offset", pa.int64())]
)


def lag_rows(offsets: pa.Table, *, as_of_ms: int) -> pa.Table:
    """One row per committed offset (rows of the ``offsets`` table, with ``log_end_offset`` when
    it is known; without that column every end is unknown).

    ``lag = max(log_end_offset - committed_offset, 0)``; null when the log-end offset is unknown.
    ``seconds_since_commit`` is ``as_of - commit_timestamp`` in seconds.
    """
    n = offsets.num_rows
    committed = offsets.column("committed_offset")
    if "log_end_offset" in offsets.column_names:
        end = pc.cast(offsets.column("log_end_offset"), pa.int64())
    else:
        end = pa.nulls(n, pa.int64())
    behind = pc.max_element_wise(pc.subtract(end, committed), pa.scalar(0, pa.int64()))
    # an unknown end must stay an unknown lag (max_element_wise skips nulls)
    behind = pc.if_else(pc.or_(pc.is_null(end), pc.is_null(committed)), None, behind)
    commit = offsets.column("commit_timestamp")
    micros = np.asarray(pc.fill_null(pc.cast(commit, pa.int64()), 0), dtype=np.int64)
    # integer microseconds, divided once: whole milliseconds stay exact decimals (546906.7, not
    # the 546906.7000000477 of subtracting two rounded seconds)
    since = (np.int64(as_of_ms) * 1000 - micros) / 1e6
    return pa.table(
        {
            "group_id": offsets.column("group_id"),
            "topic": offsets.column("topic"),
            "partition": offsets.column("partition"),
            "committed_offset": committed,
            "log_end_offset": end,
            "lag": pc.cast(behind, pa.int64()),
            "last_commit_at": commit,
            "seconds_since_commit": pa.array(since, mask=~np.asarray(pc.is_valid(commit))),
        }
    )


def latest_end_offsets(end_offsets: pa.Table) -> pa.Table:
    """One row per partition (topic, partition, log_end_offset). A partition listed several
    times (e.g. snapshots appended to one file) counts once, with its largest end: log-end
    offsets only grow. (A few rows per partition of a cluster: the driver holds them.)"""
    ends = end_offsets.select(["topic", "partition", "log_end_offset"]).cast(END_OFFSETS_ARROW)
    latest = ends.group_by(["topic", "partition"], use_threads=False).aggregate(
        [("log_end_offset", "max")]
    )
    return pa.table(
        [latest.column("topic"), latest.column("partition"), latest.column("log_end_offset_max")],
        schema=END_OFFSETS_ARROW,
    )


def with_end_offsets(offsets: pa.Table, end_offsets: pa.Table | None) -> pa.Table:
    """Rows of the ``offsets`` table with ``log_end_offset`` joined in from `end_offsets` (one
    row per partition: `latest_end_offsets`); unchanged without them."""
    if end_offsets is None:
        return offsets
    ends = end_offsets.select(["topic", "partition", "log_end_offset"]).cast(END_OFFSETS_ARROW)
    return offsets.join(ends, ["topic", "partition"], join_type="left outer", use_threads=False)
