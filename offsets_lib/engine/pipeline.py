"""The audit on Spark: one shuffle of raw records, the audit per task, then the table frames.

`audit_raw` routes every record to its task and runs `audit.task_audit` there (the decisions
included: `audit.rules`, at the evaluation time the shell picked before); `table_frames` builds
the table frames from the tasks' staged results. DataFrames in, DataFrames out; `job.run` is the
shell that reads, picks the evaluation time and writes. `tests/reference/spark_audit.py` is
the same audit in plain Spark frames.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from offsets_lib.audit import table_rows
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.metrics import hourly_sums
from offsets_lib.audit.projections import EXPLODED, MAX_TIMESTAMP_MS, PROJECTIONS
from offsets_lib.audit.rules import Params
from offsets_lib.audit.schemas import spark_schema
from offsets_lib.audit.tables import TABLES
from offsets_lib.engine import routing

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
    return groups.select(*keys, F.explode(EXPLODED[table]).alias("m")).select(
        *[c.name for c in PROJECTIONS[table][1]], "m.*"
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


# ---- the fast path: one shuffle of raw records, the audit per task (task_audit.py) ------


class TaskEmitter(Protocol):
    """What an audit task does with its result tables (staging.Staging writes them as files)."""

    @property
    def schema(self) -> pa.Schema: ...

    def __call__(self, tables: Mapping[str, pa.Table]) -> Iterator[pa.RecordBatch]: ...


def routed_by_task(records: DataFrame, *, tasks: int, by_offset_key: bool = False) -> DataFrame:
    """Positioned raw records (plus is_history) and `_copy`, each in its task's partition: the
    task of each record is `routing.audit_tasks_of` (by group, or with `by_offset_key` by offset
    key), the same rule as the file shuffle's; `_copy` > 0 marks the copies of a marker sent to
    other tasks."""
    from offsets_lib.audit.task_audit import RAW_ARROW

    if "is_history" not in records.columns:
        records = records.withColumn("is_history", F.lit(False))
    raw_columns = RAW_ARROW.names
    routed_arrow = RAW_ARROW.append(pa.field("_audit_task", pa.int32()))

    def with_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            table = pa.Table.from_batches([batch]).cast(RAW_ARROW)
            task_ids = routing.audit_tasks_of(table, tasks, by_offset_key=by_offset_key)
            with_ids = table.append_column("_audit_task", pa.array(task_ids, pa.int32()))
            yield from with_ids.to_batches()

    routed = records.select(*raw_columns).mapInArrow(with_task, spark_schema(routed_arrow))
    return routed.select(
        *raw_columns, routing.copies_to_tasks(F.col("_audit_task"), tasks).alias("_copy", "_task")
    ).repartition(tasks, "_task")


def task_sizes(records: DataFrame, *, tasks: int) -> np.ndarray:
    """Records each audit task of the per-group routing would receive (a marker counts in every
    task), counted without moving them: what decides the automatic split on the Spark shuffle,
    as `exchange.task_sizes` does on the file shuffle's pieces."""
    from offsets_lib.audit.task_audit import RAW_ARROW

    if "is_history" not in records.columns:
        records = records.withColumn("is_history", F.lit(False))

    def count(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        sizes = np.zeros(tasks, dtype=np.int64)
        for batch in batches:
            task_ids = routing.audit_tasks_of(pa.Table.from_batches([batch]).cast(RAW_ARROW), tasks)
            is_marker = task_ids == routing.MARKERS
            sizes += np.bincount(task_ids[~is_marker], minlength=tasks)[:tasks]
            sizes += int(is_marker.sum())
        yield pa.RecordBatch.from_pydict({"sizes": [sizes.tolist()]})

    total = np.zeros(tasks, dtype=np.int64)
    for row in records.select(*RAW_ARROW.names).mapInArrow(count, "sizes array<long>").collect():
        total += np.array(row["sizes"], dtype=np.int64)  # one small row per input partition
    return total


def _routed(records: DataFrame, *, tasks: int) -> DataFrame:
    """`routed_by_task` by group; the copies of a marker are history there (audited, not
    counted)."""
    from offsets_lib.audit.task_audit import RAW_ARROW

    routed = routed_by_task(records, tasks=tasks)
    return routed.withColumn("is_history", F.col("is_history") | (F.col("_copy") > 0)).select(
        *RAW_ARROW.names
    )


def audit_raw(
    records: DataFrame,
    *,
    coordinator: Coordinator,
    params: Params,
    tasks: int,
    emit: TaskEmitter,
    keep: bool = False,
) -> DataFrame:
    """Positioned raw records (decode.POSITIONED_COLUMNS, plus is_history) -> `emit`'s rows.

    One hash shuffle brings each group's records and its partition's markers together; each
    task then decodes, compacts, replays and joins its share (task_audit.task_tables) and
    hands its tables (task_audit.KIND_ARROW, decided at `params`) to `emit`, whose rows come
    back; `table_frames` turns the staged tables into the table frames.
    """
    from offsets_lib.audit import task_audit

    def run(batches):
        return emit(
            task_audit.task_tables(batches, coordinator=coordinator, params=params, keep=keep)
        )

    return _routed(records, tasks=tasks).mapInArrow(run, spark_schema(emit.schema))


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
    "rejects", "metrics",
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
