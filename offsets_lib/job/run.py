"""The imperative shell of `offsets run` and jobs/offsets_job.py: read, audit, write, report.

Reads the clock only here (`--as-of now`, run timestamps); everything between reading and
writing is the audit per task (`pipeline.audit_raw` after Spark's shuffle, or `exchange` after
the file shuffle), decisions included, at the evaluation time fixed before the tasks run. With
the file shuffle the audit tasks also write the tables that are projections of their results
(table_rows.DIRECT_TABLES); the driver sums the tasks' partial meters and writes `metrics`
(with delta-rs; `pipeline.table_frames` builds the frames of the rest); the driver commits every
table.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa
from deltalake.transaction import AddAction
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from offsets_lib.audit import lag, table_rows, task_audit
from offsets_lib.audit.rules import Params
from offsets_lib.audit.table_rows import DIRECT_TABLES
from offsets_lib.audit.tables import table_spec
from offsets_lib.engine import exchange, key_split, pipeline
from offsets_lib.engine.decode import positioned
from offsets_lib.engine.routing import RECORDS_PER_TASK
from offsets_lib.engine.staging import (
    KeptFiles,
    Staging,
    TableFiles,
    stage_end_offsets,
    written_files,
)
from offsets_lib.io import catalog, incremental, sink
from offsets_lib.io.lock import output_lock
from offsets_lib.job.options import RunOptions, UsageError

log = logging.getLogger(__name__)

# The log-end offsets for the `lag` table (topic, partition, log_end_offset), taken once per
# run before the audit tasks (which write the lag rows with them).
EndOffsets = Callable[[], pa.Table]


class RejectRatioExceeded(RuntimeError):
    """Too many undecodable records (exit status 4); rejects and a failed runs row are written."""


@dataclass
class RunReport:
    run_id: str
    status: str
    as_of_ms: int | None = None
    records_read: int = 0
    records_decoded: int = 0
    records_rejected: int = 0
    orphaned_offsets: int = 0
    groups_by_type_state: dict[str, int] = field(default_factory=dict)
    offsets_total: int = 0
    offsets_expired: int = 0
    offsets_expiring_24h: int = 0
    groups_deleted: int = 0
    # LOG-6: checks failed, and some of them (offsets partition, group id, check)
    load_failures: int = 0
    load_failures_shown: tuple[tuple[int, str, str], ...] = ()
    tables: dict[str, str] = field(default_factory=dict)
    views: list[str] = field(default_factory=list)  # a catalog run's latest_<table> views
    stage_seconds: dict[str, float] = field(default_factory=dict)
    largest_task_records: int | None = None  # input records of the largest audit task (files)
    # the largest audit task's records over the average task's, in the step where it is largest
    task_skew: float | None = None
    # a Kafka run's {offsets partition: records} after its end that open transactions hold back
    records_held_back: dict[int, int] = field(default_factory=dict)
    error: str | None = None


def _now_ms() -> int:
    return int(time.time() * 1000)


def _audit_tasks(spark: SparkSession, records: int) -> int:
    """Enough tasks for about RECORDS_PER_TASK records each, never fewer than the shuffle
    default."""
    default = int(spark.conf.get("spark.sql.shuffle.partitions", "8"))
    return max(default, -(-records // RECORDS_PER_TASK))


def _expected_records(
    raw: DataFrame,
    increment: incremental.Increment | None,
    units: list[list[exchange.Unit]] | None,
) -> int:
    """Records the run will audit: the Kafka offset ranges and the kept records, or the dump's
    row count (the footers the file shuffle's plan read, else a Spark count)."""
    if increment is not None:
        return increment.new_records + increment.kept_rows
    rows = [unit.rows for units_of_task in units or [] for unit in units_of_task]
    if rows and None not in rows:
        return sum(rows)
    return raw.count()


class _Stages:
    """Logs one line per stage with its duration (and counts when known), and each step as it
    starts (`step`)."""

    def __init__(
        self,
        report: RunReport,
        echo: Callable[[str], None],
        step: Callable[[str], None] = log.debug,
    ) -> None:
        self.report, self.echo, self.step = report, echo, step
        self.started = time.monotonic()

    def done(self, stage: str, detail: str = "") -> None:
        now = time.monotonic()
        seconds = round(now - self.started, 2)
        self.report.stage_seconds[stage] = seconds
        self.started = now
        self.echo(f"[{stage}] {detail} ({seconds:.1f} s)".replace("]  (", "] ("))


def execute(
    spark: SparkSession,
    raw: DataFrame,
    options: RunOptions,
    *,
    echo: Callable[[str], None] = log.info,
    step: Callable[[str], None] = log.debug,
    increment: incremental.Increment | None = None,
    end_offsets: EndOffsets | None = None,
) -> RunReport:
    """Decode, audit and publish one run; `runs` is written last (failed or succeeded).

    `echo` gets one line per finished stage, `step` one line as each step starts (the command
    line shows those on a terminal only).

    `increment` (kafka): `raw` holds only the records after the stored checkpoint; they are
    audited together with the kept records, and those and the checkpoint advance after every
    audit table has committed (just before the runs row). `end_offsets()` gives the log-end
    offsets (topic, partition, log_end_offset) for the `lag` table, or None.
    """
    with output_lock(options.output, options.run_id):
        return _execute(spark, raw, options, echo, increment, end_offsets, step)


def _execute(
    spark: SparkSession,
    raw: DataFrame,
    options: RunOptions,
    echo: Callable[[str], None],
    increment: incremental.Increment | None = None,
    end_offsets: EndOffsets | None = None,
    step: Callable[[str], None] = log.debug,
) -> RunReport:
    """source -> route -> audit tasks -> decide -> write -> (state) -> publish the runs row."""
    started_ms = _now_ms()
    report = RunReport(run_id=options.run_id, status="running")
    if increment is not None:
        report.records_held_back = dict(increment.held_back)
    stages = _Stages(report, echo, step)
    staging: Staging | None = None
    try:
        staging = Staging.fresh(options.output, options.run_id)
        stages.step(f"planning: {_input_text(options, increment)}")
        inputs = _inputs(spark, raw, options, increment, staging)
        stages.step(_audit_text(inputs, increment))
        audited = _audit(spark, raw, options, report, staging, inputs, increment, end_offsets)
        stages.done("read+audit", audited.summary(report, inputs.tasks))
        tables = _frames(spark, audited, options, report, staging)
        stages.step(f"writing {len(tables)} tables under {options.output}")
        _write(spark, tables, options, report)
        _summarise(report, audited.stats)
        stages.done("decide+write", _written_summary(report))
        if increment is not None:  # after every audit table, before the runs row
            _store_increment(audited.manifest, increment, options, report, stages)
        report.status = "succeeded"
    except BaseException as exc:  # KeyboardInterrupt too: never a "running" row left behind
        report.status = "failed"
        report.error = _error_line(exc, options)
        raise
    finally:
        stages.step(f"publishing run {options.run_id} ({report.status})")
        _publish(spark, report, options, started_ms)
        if staging is not None:
            staging.remove()
    _register(spark, report, options)
    return report


def _input_text(options: RunOptions, increment: incremental.Increment | None) -> str:
    """What the run reads, for its first step line."""
    if increment is None:
        return f"reading {', '.join(options.inputs) or options.topic}"
    return (
        f"{increment.new_records} new records of {options.topic} and"
        f" {increment.kept_rows} kept from the last run"
    )


def _audit_text(inputs: _Inputs, increment: incremental.Increment | None) -> str:
    """The audit step's line: the records counted (the dump's Parquet footers or the Kafka
    range), the tasks and the shuffle."""
    if increment is not None:
        records: int | None = increment.new_records + increment.kept_rows
    else:
        rows = [unit.rows for units in inputs.units or [] for unit in units]
        records = sum(rows) if rows and None not in rows else None
    counted = f"{records} records" if records is not None else "the records"
    shuffle = "file" if inputs.units is not None or inputs.records is not None else "Spark's"
    return f"auditing {counted} in {inputs.tasks} tasks ({shuffle} shuffle)"


def _records(raw: DataFrame, increment: incremental.Increment | None) -> DataFrame:
    """The positioned records to audit through Spark's shuffle: an incremental run's kept
    records (audited again, not counted) followed by the records read."""
    records = positioned(raw).withColumn("is_history", F.lit(False))
    if increment is None:
        return records
    if increment.kept is not None:
        records = incremental.kept_as_records(increment.kept()).unionByName(records)
    # read once: the kept records are chosen from the same records
    return records.persist(StorageLevel.MEMORY_AND_DISK)


@dataclass(frozen=True)
class _Audited:
    """What the audit tasks returned: their manifest, its totals, and the table files the
    tasks wrote themselves (by table name)."""

    manifest: list[Any]
    stats: pipeline.RunStats
    written: dict[str, list[AddAction]]
    shuffle: str
    direct: tuple[str, ...]
    end_offsets: pa.Table | None  # for a lag table built in Spark

    def summary(self, report: RunReport, tasks: int) -> str:
        return (
            f"{report.records_read} records read, {report.records_decoded} decoded,"
            f" {report.records_rejected} rejected, {tasks} tasks, {self.shuffle} shuffle"
            + (f", {len(self.direct)} tables written by the audit tasks" if self.direct else "")
        )


def _audit(
    spark: SparkSession,
    raw: DataFrame,
    options: RunOptions,
    report: RunReport,
    staging: Staging,
    inputs: _Inputs,
    increment: incremental.Increment | None,
    end_offsets: EndOffsets | None,
) -> _Audited:
    """Route every record to its audit task and audit there; the tasks stage their results as
    files and return a manifest (a few rows per task). Sets the report's counts and as_of."""
    started_ms = _now_ms()
    keep = increment is not None  # the tasks choose and write the kept records while they audit
    tasks = inputs.tasks
    kept_emit = _kept_emitter(options, increment, tasks)
    direct: tuple[str, ...] = ()
    decide_at = {"coordinator": options.coordinator, "tasks": tasks, "keep": keep}
    if inputs.units is not None:
        # the map stage first: its pieces tell the evaluation time, which the audit tasks
        # decide at (and write the tables with)
        pieces, oversized = _mapped(spark, inputs, staging, split=options.split_commits)
        report.as_of_ms = _as_of(options, exchange.latest_timestamp_ms(pieces), started_ms)
        direct = _direct_tables(options)
        ends = end_offsets() if end_offsets is not None else None
        emit: pipeline.TaskEmitter = staging
        if direct:
            emit = TableFiles(
                staging,
                options.output,
                options.run_id,
                report.as_of_ms,
                direct,
                end_offsets_uri=stage_end_offsets(staging, ends) if ends is not None else None,
            )
        emit = kept_emit(emit)
        pieces, first_step, steps = _first_step(spark, pieces, oversized, staging, tasks)
        _report_task_sizes(report, steps)
        audited = exchange.audit_pieces(
            spark, pieces, params=_params(options, report), emit=emit, **decide_at
        )
        manifest = key_split.staged_rows(first_step) + audited.collect()
    else:
        records = _records(raw, increment)
        report.as_of_ms = _as_of(options, _latest_timestamp_ms(options, records), started_ms)
        params = _params(options, report)
        ends = end_offsets() if end_offsets is not None else None
        if options.split_commits and _is_skewed(pipeline.task_sizes(records, tasks=tasks)):
            manifest = key_split.audit_split(
                records, params=params, staging=staging, emit=kept_emit(staging), **decide_at
            )
        else:
            audited = pipeline.audit_raw(
                records, params=params, emit=kept_emit(staging), **decide_at
            )
            manifest = audited.collect()
        records.unpersist()
    stats = pipeline.run_stats(manifest)
    report.records_read = stats.records_read
    report.records_rejected = stats.records_rejected
    report.records_decoded = report.records_read - report.records_rejected
    written = written_files(manifest, direct, options.run_id)
    shuffle = "files" if inputs.units is not None else "spark"
    return _Audited(manifest, stats, written, shuffle, direct, ends)


def _first_step(
    spark: SparkSession,
    pieces: list[dict[str, Any]],
    oversized: set[int],
    staging: Staging,
    tasks: int,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[np.ndarray]]:
    """The split audit's first step over the oversized tasks' mapped pieces (none: no first
    step): the pieces the per-group audit reads, the first step's manifest rows, and the task
    sizes of each step."""
    steps = [exchange.task_sizes(pieces, tasks)]
    if oversized:
        first, direct = key_split.oversized_pieces(
            spark, pieces, oversized, staging=staging, tasks=tasks
        )
        reduced = key_split.reduce_pieces(spark, first, staging=staging, tasks=tasks)
        audited = [p for p in pieces if p["bucket"] not in oversized]
        audited += direct + key_split.forwarded_pieces(reduced)
        return (
            audited,
            reduced,
            [_first_step_sizes(spark, first, tasks), exchange.task_sizes(audited, tasks)],
        )
    return pieces, [], steps


def _first_step_sizes(spark: SparkSession, pieces: list[dict[str, Any]], tasks: int) -> np.ndarray:
    """Records of each task of the split audit's first step (key_split.gathered)."""
    cores = spark.sparkContext.defaultParallelism
    return exchange.task_sizes(*key_split.gathered(pieces, tasks=tasks, cores=cores))


def _kept_emitter(
    options: RunOptions, increment: incremental.Increment | None, tasks: int
) -> Callable[[pipeline.TaskEmitter], pipeline.TaskEmitter]:
    """What wraps the tasks' emitter: an incremental run's tasks also write the kept records."""
    if increment is None:
        return lambda emit: emit
    kept_id = incremental.next_kept_id(increment, options.run_id)
    return lambda emit: KeptFiles(emit, options.output, kept_id, tasks)


def _frames(
    spark: SparkSession,
    audited: _Audited,
    options: RunOptions,
    report: RunReport,
    staging: Staging,
) -> dict[str, DataFrame | list[AddAction]]:
    """The tables to commit, in their usual order: files the tasks wrote (and the driver, for
    `metrics`), else frames over their staged results (the `lag` frame with the log-end offsets
    joined)."""
    sums = staging.metric_sums(audited.manifest)
    written = dict(audited.written)
    if options.delta_writer != "spark":
        written["metrics"] = _metric_files(sums, options, report)
    frames = pipeline.table_frames(
        staging.read(spark, audited.manifest),
        orphaned_offsets=audited.stats.orphaned_offsets,
        tables=_frames_needed(written),
        metric_sums=sums,
    )
    _check_reject_ratio(spark, report, options, written, frames)
    built = dict(frames.frames)
    if "lag" not in written:
        built["lag"] = lag.lag_frame(
            built["offsets"], audited.end_offsets, as_of_ms=report.as_of_ms
        )
    return {
        name: written[name] if name in written else built[name]
        for name in (*pipeline.DECIDED_TABLES, "lag")
    }


def _metric_files(sums: pa.Table, options: RunOptions, report: RunReport) -> list[AddAction]:
    """The `metrics` table's file of the run, written by the driver (a few rows per hour and
    partition), for delta-rs to commit with the others."""
    spec = table_spec("metrics")
    assert report.as_of_ms is not None
    rows = table_rows.table_rows(
        "metrics",
        {task_audit.METRIC: sums},
        run_id=options.run_id,
        as_of_ms=report.as_of_ms,
        schema=sink.arrow_schema(spec, with_comments=False),
    )
    written = sink.write_task_files(rows, spec, output=options.output, run_id=options.run_id)
    return [sink.add_action(file, options.run_id) for file in written]


def _check_reject_ratio(
    spark: SparkSession,
    report: RunReport,
    options: RunOptions,
    written: Mapping[str, list[AddAction]],
    frames: pipeline.AuditFrames,
) -> None:
    """Too many undecodable records: write the rejects (for the person who looks) and fail."""
    ratio = report.records_rejected / report.records_read if report.records_read else 0.0
    if ratio <= options.max_reject_ratio:
        return
    rejects = written["rejects"] if "rejects" in written else frames.frames["rejects"]
    _write(spark, {"rejects": rejects}, options, report)
    raise RejectRatioExceeded(
        f"{report.records_rejected} of {report.records_read} records could not be decoded"
        f" ({ratio:.2%} > --max-reject-ratio {options.max_reject_ratio:.2%}); see the rejects"
        f" table under {options.output}"
    )


def _written_summary(report: RunReport) -> str:
    return (
        f"{len(report.tables)} tables: {report.offsets_total} offsets,"
        f" {sum(report.groups_by_type_state.values())} groups,"
        f" {report.offsets_expired} expired now"
    )


def _store_increment(
    manifest: list[Any],
    increment: incremental.Increment,
    options: RunOptions,
    report: RunReport,
    stages: _Stages,
) -> None:
    """Commit what the next incremental run needs (the kept records the audit tasks wrote),
    then advance the checkpoint."""
    table = incremental.KEPT_TABLE
    kept = written_files(manifest, [table], incremental.next_kept_id(increment, options.run_id))
    kept_id = incremental.store(
        kept[table], increment, output=options.output, run_id=options.run_id
    )
    for name in (incremental.KEPT_TABLE, incremental.CHECKPOINT_TABLE):
        report.tables[name] = sink.table_uri(options.output, name)
    stages.done("checkpoint", f"kept records {kept_id}, next offsets {increment.end_offsets}")


def _error_line(exc: BaseException, options: RunOptions) -> str:
    """The runs row's error: the exception's first line, with no secret in it."""
    from offsets_lib.io.sources.kafka import scrub

    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (SIGINT)"
    first_line = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return scrub(first_line, options.kafka_options)[:1000]


# The split audit (split_commits, the default) starts when an audit task of the per-group routing
# holds more than this many times the average task's records, and more than RECORDS_PER_TASK:
# below that one task is not what the run waits for. Measured at 10M records on 2 cores
# the split costs 5-9 s of 18 s on a dump without a dominant group. With the file
# shuffle only the oversized tasks' pieces are cut again by key and reduced
# (key_split.oversized_pieces); on the Spark shuffle the sizes are counted in one pass over the
# records (`pipeline.task_sizes`) and the whole split audit runs.
SKEWED_TASK = 2.0


def _oversized(sizes: np.ndarray) -> set[int]:
    """The audit tasks the per-group routing leaves much larger than the rest."""
    mean = float(sizes.mean()) if len(sizes) else 0.0
    limit = max(RECORDS_PER_TASK, SKEWED_TASK * mean)
    return {int(t) for t in np.flatnonzero(sizes > limit)}


def _is_skewed(sizes: np.ndarray) -> bool:
    """Whether the per-group routing leaves one task much larger than the rest."""
    return bool(_oversized(sizes))


def _mapped(
    spark: SparkSession, inputs: _Inputs, staging: Staging, *, split: bool
) -> tuple[list[dict[str, Any]], set[int]]:
    """The file shuffle's map stage (none when every record is in a stored piece): its pieces
    and the stored ones, and with `split` the oversized audit tasks, whose records alone go
    through the split audit's first step (key_split.oversized_pieces; the map cuts the records
    of tasks that look large by first-step section too, exchange.LARGE_IN_BATCH)."""
    tasks = inputs.tasks
    cutting = {"by_section": split}
    pieces = list(inputs.stored)
    if inputs.units:
        pieces += exchange.map_pieces(
            spark, inputs.units, staging_uri=staging.uri, tasks=tasks, **cutting
        )
    if inputs.records is not None:
        pieces += exchange.map_records(
            inputs.records, staging_uri=staging.uri, tasks=tasks, **cutting
        )
    if not split:
        return pieces, set()
    oversized = _oversized(exchange.task_sizes(pieces, tasks))
    if oversized:
        log.info(
            "a dominant group: the commits of %d audit tasks are reduced per key first",
            len(oversized),
        )
    return pieces, oversized


def _report_task_sizes(report: RunReport, steps: list[np.ndarray]) -> None:
    """The largest audit task's records, and how many times the average task's it holds (in
    the step with the largest task): the skew figures `make bench` reports."""
    largest = max(steps, key=lambda sizes: int(sizes.max()))
    report.largest_task_records = int(largest.max())
    report.task_skew = float(largest.max() / largest.mean()) if largest.sum() else None


def _latest_timestamp_ms(options: RunOptions, records: DataFrame) -> int | None:
    """The newest record timestamp, when the evaluation time is that (`--as-of latest`): one
    aggregate over the records' timestamps before the Spark shuffle's audit, which decides at
    that time."""
    if isinstance(options.as_of, int):
        return None
    return records.agg(F.max("log_timestamp_ms")).first()[0]


def _params(options: RunOptions, report: RunReport) -> Params:
    """What the audit tasks decide at: the retention and the run's evaluation time."""
    assert report.as_of_ms is not None
    return Params(retention_ms=options.retention_ms, as_of_ms=report.as_of_ms)


def _as_of(options: RunOptions, latest_ms: int | None, started_ms: int) -> int:
    """The evaluation time: --as-of, else the newest record's time, else (no record) now."""
    if isinstance(options.as_of, int):
        return options.as_of
    return int(latest_ms) if latest_ms is not None else started_ms


def _direct_tables(options: RunOptions) -> tuple[str, ...]:
    """Tables the audit tasks write themselves (delta-rs commits them; the Spark writer writes
    every table itself)."""
    return () if options.delta_writer == "spark" else DIRECT_TABLES


def _frames_needed(written: Mapping[str, list[AddAction]]) -> list[str]:
    """The frames to build: tables no task wrote, and `offsets` for a lag table built in Spark."""
    needed = [t for t in pipeline.DECIDED_TABLES if t not in written]
    if "lag" not in written and "offsets" not in needed:
        needed.append("offsets")
    return needed


@dataclass(frozen=True)
class _Inputs:
    """How the records reach the audit tasks: the map stage's input files by map task (None:
    the Spark shuffle), pieces already cut by audit task (MAP_ARROW rows: an incremental run's
    stored kept records, exchange.stored_pieces), and the number of audit tasks."""

    units: list[list[exchange.Unit]] | None
    stored: list[dict[str, Any]]
    tasks: int
    records: DataFrame | None = None  # positioned records Spark reads, mapped from Spark


def _inputs(
    spark: SparkSession,
    raw: DataFrame,
    options: RunOptions,
    increment: incremental.Increment | None,
    staging: Staging,
) -> _Inputs:
    """The input files by map task for `--shuffle files` (also `auto` when pyarrow can read
    the dump), or None for the Spark shuffle. A Kafka run's records are mapped as Spark reads
    them (`_kafka_records`), its kept records from their files, except those stored cut by
    audit task already."""
    units = None
    stored: list[exchange.StoredCut] = []
    tasks = None
    records = None
    if increment is None:
        if options.shuffle != "spark":
            units = exchange.plan(raw.inputFiles(), map_tasks=_map_tasks(spark))
    elif stages_kafka_records(options):
        new = increment.new_records
        kept = increment.kept_files
        cuts = exchange.stored_cuts(kept) if kept else []
        tasks = _incremental_tasks(spark, new + increment.kept_rows, cuts)
        stored = [cut for cut in cuts if cut is not None and cut.tasks % tasks == 0]
        to_map = [uri for uri in kept if uri not in {cut.path for cut in stored}]
        records = _kafka_records(spark, raw, increment) if new else None
        units = []
        if to_map:
            units = exchange.plan(
                to_map,
                map_tasks=_map_tasks(spark),
                positioned=tuple(to_map),
                history=tuple(to_map),
            )
    if units is None and options.shuffle == "files":
        raise UsageError(
            "--shuffle files needs input that pyarrow can read"
            " (local paths, file://, s3://, gs://, hdfs://); use --shuffle spark or auto"
        )
    if tasks is None:
        tasks = _audit_tasks(spark, _expected_records(raw, increment, units))
    return _Inputs(units, exchange.stored_pieces(stored, tasks), tasks, records)


def stages_kafka_records(options: RunOptions) -> bool:
    """Whether a Kafka run's records reach their audit tasks through the file shuffle: unless
    --shuffle spark, always (the staging folder is written with pyarrow on either shuffle, so
    an output pyarrow cannot write fails the run before this choice). The run (`_inputs`) and
    the CLI's choice of a quick-start JVM both ask this."""
    return options.shuffle != "spark"


def _map_tasks(spark: SparkSession) -> int:
    minimum = spark.conf.get("spark.sql.files.minPartitionNum", None)
    return int(minimum) if minimum else spark.sparkContext.defaultParallelism


# An incremental run takes as many audit tasks as its stored kept records were cut for, or
# the fewest that divide that number, while they hold at most RECORDS_PER_TASK records each and
# number at most this many times the tasks the run needs: then none of those records is mapped
# again (exchange.stored_pieces). Measured (2 cores, 10k new records over a 10M-record
# state whose 1.7M kept records were cut for 20 tasks): mapped again for 8 tasks, 3.3 s more;
# in all 20 tasks the hourly run took 22.9 s, in 10 (the fewest dividing 20) 19.8 s.
STORED_TASKS_FACTOR = 4


def _incremental_tasks(
    spark: SparkSession, records: int, cuts: list[exchange.StoredCut | None]
) -> int:
    """The audit tasks of an incremental run: `_audit_tasks`, or as stored (see
    STORED_TASKS_FACTOR)."""
    needed = _audit_tasks(spark, records)
    counts = {cut.tasks if cut is not None else None for cut in cuts}
    if len(counts) == 1 and None not in counts:
        stored = counts.pop()
        fitting = [n for n in range(needed, stored + 1) if stored % n == 0]
        if fitting and fitting[0] <= STORED_TASKS_FACTOR * needed:
            return fitting[0]
    return needed


def _kafka_records(
    spark: SparkSession, raw: DataFrame, increment: incremental.Increment
) -> DataFrame:
    """A Kafka run's records (positioned columns) as the map stage reads them from Spark's
    Kafka source (exchange.map_records). The connector reads each topic partition in a task of
    its own; a few records per partition (an hourly run) are read by fewer tasks, about
    RECORDS_PER_TASK records each but at least one per core, so that the run does not start a
    task per partition (2 cores, a fresh JVM, 10k records of 50 partitions: 50 tasks 4 s, 8
    tasks 3.6 s, 2 tasks 3.0-3.3 s). The number of partitions is the range's (asking Spark
    plans the Kafka scan once more: ~0.5 s)."""
    partitions = len(increment.end_offsets)
    tasks = max(
        spark.sparkContext.defaultParallelism, -(-increment.new_records // RECORDS_PER_TASK)
    )
    frame = positioned(raw)
    return frame.coalesce(tasks) if tasks < partitions else frame


def _summarise(report: RunReport, stats: pipeline.RunStats) -> None:
    """The summary line's counts, from the tasks' stats rows."""
    report.groups_by_type_state = dict(stats.groups_by_type_state)
    report.groups_deleted = stats.groups_deleted
    report.offsets_total = stats.offsets_total
    report.offsets_expired = stats.offsets_expired
    report.offsets_expiring_24h = stats.offsets_expiring_24h
    report.orphaned_offsets = stats.orphaned_offsets
    report.load_failures = stats.load_failures
    report.load_failures_shown = stats.load_failures_shown


def _write(
    spark: SparkSession,
    frames: Mapping[str, DataFrame | list[AddAction]],
    options: RunOptions,
    report: RunReport,
) -> None:
    """Write and commit the tables, in the order of `frames` (DataFrames, or the add actions of
    files the audit tasks wrote)."""
    conformed = {
        name: pipeline.conform(df, name, run_id=options.run_id, as_of_ms=report.as_of_ms)
        if isinstance(df, DataFrame)
        else df
        for name, df in frames.items()
    }
    if options.delta_writer == "spark":
        for name, df in conformed.items():
            sink.write_with_spark_delta(
                spark,
                df,
                name,
                output=_external_output(options),
                run_id=options.run_id,
                database=options.database,
            )
    else:
        sink.write_run_tables(conformed, output=options.output, run_id=options.run_id)
    for name in conformed:
        report.tables[name] = _table_name(options, name)


def _external_output(options: RunOptions) -> str | None:
    """Where the Spark writer puts the tables: --output, or (managed catalog tables) None."""
    return options.output if options.database is None or options.output_given else None


def _table_name(options: RunOptions, name: str) -> str:
    if options.database is not None:
        return f"{options.database}.{name}"
    return sink.table_uri(options.output, name)


def _register(spark: SparkSession, report: RunReport, options: RunOptions) -> None:
    """A catalog run's tables written by delta-rs: the catalog learns the ones it lacks, once
    every table and the runs row are committed (a failed run's tables are registered by the
    next run that succeeds; Delta's Spark writer registers its tables itself). Then each
    table's ``latest_<table>`` view, for readers that name no run."""
    if options.database is None:
        return
    if options.delta_writer != "spark":
        sink.register_tables(spark, report.tables, output=options.output, database=options.database)
    report.views = catalog.create_latest_views(spark, options.database, report.tables)


def _publish(spark: SparkSession, report: RunReport, options: RunOptions, started_ms: int) -> None:
    """Commit the `runs` row last, so a dashboard never sees a half-published run."""
    row: dict[str, Any] = {
        "run_id": report.run_id,
        "status": report.status,
        "started_at": datetime.fromtimestamp(started_ms / 1000, UTC),
        "finished_at": datetime.now(UTC),
        "as_of": datetime.fromtimestamp(report.as_of_ms / 1000, UTC) if report.as_of_ms else None,
        "source": options.source,
        "records_read": report.records_read,
        "records_decoded": report.records_decoded,
        "records_rejected": report.records_rejected,
        "coordinator": str(options.coordinator),
        "retention_ms": options.retention_ms,
        "input": ",".join(options.inputs) if options.source == "parquet" else options.topic,
        "error": report.error,
        "tables_written": sorted(report.tables),
    }
    if options.delta_writer == "spark":
        sink.publish_run_with_spark(
            spark, row, output=_external_output(options), database=options.database
        )
    else:
        sink.publish_run(row, output=options.output)
    report.tables["runs"] = _table_name(options, "runs")
