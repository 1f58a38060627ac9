"""Table rows from one audit task's results, in Arrow (pure; runs in the executors).

The projections of `projections.PROJECTIONS`, plus the lag rows (`lag.lag_rows`, the one lag
rule, with the run's log-end offsets when it has some), with `run_id` and `as_of`, in the
table's Arrow schema: an audit task writes these tables' files itself, which either writer
commits.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib.audit.arrays import one_array
from offsets_lib.audit.lag import lag_rows, with_end_offsets
from offsets_lib.audit.metrics import METRIC_COUNTS
from offsets_lib.audit.projections import (
    EXPLODED,
    EXPLODED_EPOCH_MS,
    MAX_TIMESTAMP_MS,
    PROJECTIONS,
    ProjectedColumn,
)

DIRECT_TABLES = (
    "offsets", "offset_decisions", "groups", "members", "group_decisions", "load_failures",
    "unread_marker_offsets", "rejects", "lag",
)  # fmt: skip
# the result kind each table is built from (the projections', and lag's: the offsets); a kind
# whose tables a task writes all of itself needs no staging (engine.staging.TableFiles)
KIND_OF_TABLE: dict[str, str] = {
    **{table: kind for table, (kind, _columns) in PROJECTIONS.items()},
    "lag": PROJECTIONS["offsets"][0],
}
TABLES_OF_KIND: dict[str, tuple[str, ...]] = {
    kind: tuple(t for t, k in KIND_OF_TABLE.items() if k == kind)
    for kind in dict.fromkeys(KIND_OF_TABLE.values())
}
_TIMESTAMP = pa.timestamp("us", tz="UTC")


def timestamps(epoch_ms: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Epoch milliseconds -> UTC timestamps; null beyond what a Spark timestamp can hold."""
    ms = pc.cast(epoch_ms, pa.int64())
    ms = one_array(ms)
    values = np.asarray(pc.fill_null(ms, 0), dtype=np.int64)
    in_range = (values >= -MAX_TIMESTAMP_MS) & (values <= MAX_TIMESTAMP_MS)
    valid = np.asarray(ms.is_valid(), dtype=bool) & in_range
    micros = np.where(valid, values, 0) * 1000
    return pa.array(micros, type=pa.int64(), mask=~valid).cast(_TIMESTAMP)


def _column(table: pa.Table, column: ProjectedColumn) -> pa.Array | pa.ChunkedArray:
    values = table.column(column.source)
    return timestamps(values) if column.is_epoch_ms else values


def _projected(table: pa.Table, name: str) -> pa.Table:
    columns = PROJECTIONS[name][1]
    return pa.table({c.name: _column(table, c) for c in columns})


def _exploded(groups: pa.Table, name: str) -> pa.Table:
    """One row per element of the table's list column (projections.EXPLODED), e.g. per member:
    the group's key columns, then the element's fields (explode)."""
    members = one_array(groups.column(EXPLODED[name]))
    lengths = np.asarray(pc.fill_null(pc.list_value_length(members), 0), dtype=np.int64)
    parents = pa.array(np.repeat(np.arange(groups.num_rows), lengths))
    keys = _projected(groups, name)
    flat = pc.list_flatten(members)
    columns = {name: keys.column(name).take(parents) for name in keys.column_names}
    for i, field in enumerate(flat.type):
        columns[field.name] = flat.field(i)
    for column in EXPLODED_EPOCH_MS.get(name, ()):
        columns[column.name] = timestamps(columns.pop(column.source))
    return pa.table(columns)


def metric_rows(sums: pa.Table) -> pa.Table:
    """The `metrics` table's columns (before run_id and as_of) from the summed counts
    (metrics.hourly_sums)."""
    return pa.table(
        {
            "hour": timestamps(sums.column("hour_ms")),
            "offsets_partition": sums.column("log_partition"),
            **{name: sums.column(name) for name in METRIC_COUNTS},
        }
    )


def table_rows(
    name: str,
    results: Mapping[str, pa.Table],
    *,
    run_id: str,
    as_of_ms: int,
    schema: pa.Schema,
    end_offsets: pa.Table | None = None,
) -> pa.Table:
    """Rows of table `name` (one of DIRECT_TABLES) from a task's results, in `schema` (the
    table's Arrow schema, run_id and as_of included); `end_offsets` (topic, partition,
    log_end_offset; one row per partition) for the lag table."""
    if name == "metrics":  # results["metric"]: the run's summed counts, not a task's partials
        table = metric_rows(results["metric"])
    elif name == "lag":
        offsets = _projected(results[PROJECTIONS["offsets"][0]], "offsets")
        table = lag_rows(with_end_offsets(offsets, end_offsets), as_of_ms=as_of_ms)
    elif name in EXPLODED:
        table = _exploded(results[PROJECTIONS[name][0]], name)
    else:
        table = _projected(results[PROJECTIONS[name][0]], name)
    n = table.num_rows
    table = table.append_column("run_id", pa.repeat(pa.scalar(run_id, pa.string()), n))
    table = table.append_column("as_of", timestamps(pa.repeat(pa.scalar(as_of_ms, pa.int64()), n)))
    return table.select(schema.names).cast(schema)
