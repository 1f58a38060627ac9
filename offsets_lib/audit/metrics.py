"""KIP-496 coordinator meters rebuilt from the log: the `metrics` table.

`offsets run` counts them per task (`task_audit.kip496_meters`) and sums the partial counts
(`hourly_sums`, on the driver: a few rows per hour and partition per task);
`tests/reference/spark_audit.py` counts the same in Spark frames.

One row per UTC hour of the records' log timestamps and per __consumer_offsets partition:

* ``offset_commits``: offset-commit values (record types 0/1, transactional ones included,
  whatever their transaction's outcome: the broker wrote and metered them all);
* ``offset_tombstones``: offset-commit tombstones (expiration, OffsetDelete, group deletion);
* ``group_metadata_writes``: GroupMetadata (type 2) values with at least one member, i.e.
  completed classic rebalances (the meter KIP-496 calls rebalances; empty-group writes and
  tombstones are not rebalances);
* ``groups_created``: a group id's first value record in the dump, or its first value record
  after a group tombstone (types 2, 3, 11, 17). An approximation: a dump that starts after the
  cleaner ran shows a long-lived group's oldest surviving record, not its creation; an offset
  commit value counts because it creates a simple group (G-S1);
* ``groups_deleted``: group tombstones (types 2, 3, 11, 17).

Undecodable records (``error`` not null) and transaction markers are not counted. Records
without a log timestamp fall into the hour null. ``run_id``/``as_of`` are added by
``pipeline.conform`` like for every other table.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

HOUR_MS = 3_600_000
GROUP_TOMBSTONE_TYPES = (2, 3, 11, 17)  # GroupMetadata and the modern groups' metadata records
METRIC_COUNTS = (
    "offset_commits",
    "offset_tombstones",
    "group_metadata_writes",
    "groups_created",
    "groups_deleted",
)
METRIC_COLUMNS = ("hour", "offsets_partition", *METRIC_COUNTS)


def hourly_sums(partials: Iterable[pa.Table]) -> pa.Table:
    """The `metrics` counts: the tasks' partial counts (task_audit.kip496_meters: hour_ms,
    log_partition and METRIC_COUNTS) summed per hour and partition, in that order. Folded table by
    table, so memory holds the result and one partial table, however many tasks there were."""
    keys = ["hour_ms", "log_partition"]
    total: pa.Table | None = None
    for partial in partials:
        table = partial.select([*keys, *METRIC_COUNTS])
        if total is not None:
            table = pa.concat_tables([total, table.cast(total.schema)])
        summed = table.group_by(keys, use_threads=False).aggregate(
            [(name, "sum") for name in METRIC_COUNTS]
        )
        names = [name.removesuffix("_sum") for name in summed.column_names]
        total = summed.rename_columns(names).select([*keys, *METRIC_COUNTS])
    if total is None:
        return pa.table(
            {
                "hour_ms": pa.array([], pa.int64()),
                "log_partition": pa.array([], pa.int32()),
                **{name: pa.array([], pa.int64()) for name in METRIC_COUNTS},
            }
        )
    return total.sort_by([(key, "ascending") for key in keys])
