"""The audit's results on Spark: the tasks' emitter, their stats, then the table frames.

The audit tasks (exchange.audit_pieces) run `audit.task_audit` (the decisions included:
`audit.rules`, at the evaluation time the shell picked before) and hand their tables to a
`TaskEmitter`; `run_stats` totals their stats rows and `table_frames` builds the table frames
from their staged results. `job.run` is the shell that reads, picks the evaluation time and
writes. `tests/reference/spark_audit.py` is the same audit in plain Spark frames.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from offsets_lib.audit import table_rows
from offsets_lib.audit.metrics import hourly_sums
from offsets_lib.audit.projections import (
    EXPLODED,
    EXPLODED_EPOCH_MS,
    MAX_TIMESTAMP_MS,
    PROJECTIONS,
)
from offsets_lib.audit.tables import TABLES

GROUP_KEY = ["log_partition", "group_id"]


@dataclass(frozen=True)
class AuditFrames:
    """The frames of one run, before tagging with run_id/as_of; keys are table names."""

    frames: dict[str, DataFrame]
    orphaned_offsets: DataFrame | int  # live offsets whose group does not exist (G-S3)


def _ts(column: str | Column) -> Column:
    """Epoch milliseconds -> UTC timestamp (tables use timestamps; _ms stays internal).

    A decodable but absurd value (beyond year 294247) becomes null instead of failing the run.
    """
    ms = F.col(column) if isinstance(column, str) else column
    return F.when(ms.between(-MAX_TIMESTAMP_MS, MAX_TIMESTAMP_MS), F.timestamp_millis(ms))


def _projected(frame: DataFrame, table: str) -> DataFrame:
    """The table's columns from a result frame (projections.PROJECTIONS)."""
    return frame.select(
        *[
            (_ts(c.source) if c.is_epoch_ms else F.col(c.source)).alias(c.name)
            for c in PROJECTIONS[table][1]
        ]
    )


def _exploded_frame(groups: DataFrame, table: str) -> DataFrame:
    """One row per element of the table's list column (projections.EXPLODED)."""
    keys = [F.col(c.source).alias(c.name) for c in PROJECTIONS[table][1]]
    exploded = groups.select(*keys, F.explode(EXPLODED[table]).alias("m")).select(
        *[c.name for c in PROJECTIONS[table][1]], "m.*"
    )
    epoch_ms = EXPLODED_EPOCH_MS.get(table, ())
    if not epoch_ms:
        return exploded
    return exploded.withColumns({c.name: _ts(c.source) for c in epoch_ms}).drop(
        *[c.source for c in epoch_ms]
    )


def projected_frame(results: Mapping[str, DataFrame], table: str) -> DataFrame:
    """Table `table`'s frame from the results by kind (projections.PROJECTIONS)."""
    kind = PROJECTIONS[table][0]
    if table in EXPLODED:
        return _exploded_frame(results[kind], table)
    return _projected(results[kind], table)


def conform(frame: DataFrame, table: str, *, run_id: str, as_of_ms: int) -> DataFrame:
    """Tag a frame with run_id/as_of and select exactly the table's columns, in order."""
    spec = TABLES[table]
    tagged = frame.withColumns({"run_id": F.lit(run_id), "as_of": _ts(F.lit(as_of_ms))})
    missing = [c for c in spec.columns if c not in tagged.columns]
    if missing:
        raise ValueError(f"table {table}: the audit produced no column(s) {missing}")
    return tagged.select(*[F.col(f.name).cast(f.dataType) for f in spec.schema.fields])


class TaskEmitter(Protocol):
    """What an audit task does with its result tables (staging.Staging writes them as files)."""

    @property
    def schema(self) -> pa.Schema: ...

    def __call__(self, tables: Mapping[str, pa.Table]) -> Iterator[pa.RecordBatch]: ...


@dataclass(frozen=True)
class RunStats:
    records_read: int
    records_rejected: int
    orphaned_offsets: int
    latest_ms: int | None  # newest record timestamp (as_of "latest")
    groups_by_type_state: dict[str, int]  # "group_type/state" -> groups
    offsets_total: int = 0  # the decisions' counts (task_audit.decided)
    offsets_expired: int = 0
    offsets_expiring_24h: int = 0
    groups_deleted: int = 0
    load_failures: int = 0  # LOG-6 checks failed (rows of load_failures)
    # some of them: (offsets partition, group id, check), sorted
    load_failures_shown: tuple[tuple[int, str, str], ...] = ()
    # offsets deleted soon after a value, read without transaction markers (Scala coordinators)
    unplaced_marker_deletes: int = 0


def run_stats(stats_rows: Iterable[Mapping[str, Any]]) -> RunStats:
    """Totals of the tasks' stats rows (kind "stats"; other rows are ignored)."""
    rows = [r for r in stats_rows if r["kind"] == "stats"]
    stamps = [r["max_timestamp_ms"] for r in rows if r["max_timestamp_ms"] is not None]
    return RunStats(
        records_read=sum(r["records_read"] or 0 for r in rows),
        records_rejected=sum(r["records_rejected"] or 0 for r in rows),
        orphaned_offsets=sum(r["orphaned_offsets"] or 0 for r in rows),
        latest_ms=max(stamps) if stamps else None,
        groups_by_type_state=_summed_counts(r["group_counts"] for r in rows),
        load_failures=sum(r["load_failures"] or 0 for r in rows),
        unplaced_marker_deletes=sum(r["unplaced_marker_deletes"] or 0 for r in rows),
        load_failures_shown=tuple(
            sorted(
                tuple(shown) for r in rows for shown in json.loads(r["load_failures_shown"] or "[]")
            )
        ),
        **{name: sum(r[name] or 0 for r in rows) for name in _DECISION_COUNTS},
    )


_DECISION_COUNTS = ("offsets_total", "offsets_expired", "offsets_expiring_24h", "groups_deleted")


def _summed_counts(tasks: Iterable[str | None]) -> dict[str, int]:
    """The tasks' group counts (JSON objects, partition_audit STATS) added up."""
    total: dict[str, int] = {}
    for counts in tasks:
        for name, count in json.loads(counts or "{}").items():
            total[name] = total.get(name, 0) + int(count)
    return total


DECIDED_TABLES = (
    "offsets", "offset_decisions", "groups", "members", "group_decisions", "load_failures",
    "unread_marker_offsets", "rejects", "metrics",
)  # fmt: skip


def table_frames(
    results: Mapping[str, DataFrame],
    *,
    orphaned_offsets: int,
    tables: Collection[str] = DECIDED_TABLES,
    metric_sums: pa.Table | None = None,
) -> AuditFrames:
    """Task results by kind (task_audit.KIND_ARROW, decided by the tasks) -> the frames of
    `tables` (each frame is built only when asked for: building Spark plans costs driver
    time). `metric_sums`: the run's `metrics` counts (metrics.hourly_sums, e.g.
    staging.Staging.metric_sums); without them the partial counts are collected and summed."""

    def metrics() -> DataFrame:
        sums = metric_sums
        if sums is None:
            sums = hourly_sums([results["metric"].toArrow()])
        rows = table_rows.metric_rows(sums)
        return results["metric"].sparkSession.createDataFrame(rows)

    builders: dict[str, Callable[[], DataFrame]] = {
        name: (lambda name=name: projected_frame(results, name)) for name in PROJECTIONS
    }
    builders["metrics"] = metrics
    frames = {name: build() for name, build in builders.items() if name in tables}
    return AuditFrames(frames, orphaned_offsets)
