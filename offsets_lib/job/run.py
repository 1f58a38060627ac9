"""The imperative shell of `offsets run` and jobs/offsets_job.py: read, audit, write, report.

Reads the clock only in this shell (`--as-of now`, run timestamps: `run_report.now_ms`, the
runs row's times); everything between reading and writing is the audit per task
(`exchange` after the file shuffle), decisions included, at the evaluation time fixed before
the tasks run. The audit tasks also write the tables that are projections of their results
(table_rows.DIRECT_TABLES); the driver sums the tasks' partial meters and writes `metrics`;
`job.run_output` commits every table (or has Delta's Spark writer write their files' rows),
then the runs row; `job.run_report` is what the run tells.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from deltalake.transaction import AddAction
from pyspark.sql import DataFrame, SparkSession

from offsets_lib.audit.rules import Params
from offsets_lib.audit.table_rows import DIRECT_TABLES
from offsets_lib.engine import exchange, pipeline
from offsets_lib.engine.staging import (
    Staging,
    TableFiles,
    stage_end_offsets,
    written_files,
)
from offsets_lib.io import incremental, sink
from offsets_lib.io.lock import output_lock
from offsets_lib.job import audit_plan, run_output, run_report
from offsets_lib.job.options import RunOptions
from offsets_lib.job.run_catalog import CatalogSide
from offsets_lib.job.run_report import RunReport

log = logging.getLogger(__name__)

# The log-end offsets for the `lag` table (topic, partition, log_end_offset), taken once per
# run before the audit tasks (which write the lag rows with them).
LogEndOffsets = Callable[[], pa.Table]


def execute(
    spark: SparkSession,
    raw: DataFrame,
    options: RunOptions,
    *,
    echo: Callable[[str], None] = log.info,
    step: Callable[[str], None] = log.debug,
    increment: incremental.Increment | None = None,
    end_offsets: LogEndOffsets | None = None,
    catalog_side: CatalogSide | None = None,
) -> RunReport:
    """Decode, audit and publish one run; `runs` is written last (failed or succeeded).

    `echo` gets one line per finished stage, `step` one line as each step starts (the command
    line shows those on a terminal only).

    `increment` (kafka): `raw` holds only the records after the stored checkpoint; they are
    audited together with the kept records, and those and the checkpoint advance after every
    audit table has committed (just before the runs row). `end_offsets()` gives the log-end
    offsets (topic, partition, log_end_offset) for the `lag` table, or None. `catalog_side`
    (--database): the catalog, waited for before the first commit.
    """
    with output_lock(options.output, options.run_id):
        return _execute(spark, raw, options, echo, increment, end_offsets, step, catalog_side)


def _execute(
    spark: SparkSession,
    raw: DataFrame,
    options: RunOptions,
    echo: Callable[[str], None],
    increment: incremental.Increment | None = None,
    end_offsets: LogEndOffsets | None = None,
    step: Callable[[str], None] = log.debug,
    catalog_side: CatalogSide | None = None,
) -> RunReport:
    """source -> route -> audit tasks -> decide -> write -> kept records, checkpoint -> runs row."""
    started_ms = run_report.now_ms()
    report = RunReport(run_id=options.run_id, status="running")
    if increment is not None:
        report.records_held_back = dict(increment.held_back)
    stages = run_report.Stages(report, echo, step)
    staging: Staging | None = None
    entries, stopped_by = None, None
    try:
        staging = Staging.fresh(options.output, options.run_id)
        stages.step(f"planning: {_input_text(options, increment)}")
        inputs = audit_plan.plan_inputs(spark, raw, increment)
        stages.step(audit_plan.audit_line(inputs))
        audited = _audit(spark, options, report, staging, inputs, increment, end_offsets)
        stages.done("read+audit", audited.summary(report, inputs))
        root = run_output.files_root(options, staging)
        tables = _tables(spark, audited, options, report, staging, root)
        if catalog_side is not None:  # asked beside the audit: its answer before any commit
            stages.step(f"waiting for the catalog of database {options.database}")
            entries = catalog_side.ready()
        stages.step(f"writing {len(tables)} tables under {options.output}")
        run_output.write_tables(spark, tables, options, report, root)
        _summarise(report, audited.stats)
        stages.done("decide+write", run_output.written_summary(report))
        if increment is not None:  # after every audit table, before the runs row
            _store_increment(audited.manifest, increment, options, report, stages)
        report.status = "succeeded"
    except BaseException as exc:  # KeyboardInterrupt too: never a "running" row left behind
        report.status = "failed"
        stopped_by = catalog_side.failure() if catalog_side is not None else None
        report.error = _error_line(stopped_by or exc, options)
        if stopped_by is not None and stopped_by is not exc:  # the audit's jobs it cancelled
            raise stopped_by from None
        raise
    finally:
        if stopped_by is None:  # a failed catalog: nothing committed, no runs row either
            stages.step(f"publishing run {options.run_id} ({report.status})")
            run_output.publish(spark, report, options, started_ms)
        if staging is not None:
            staging.remove()
    run_output.register(spark, report, options, entries)
    return report


def _input_text(options: RunOptions, increment: incremental.Increment | None) -> str:
    """What the run reads, for its first step line."""
    if increment is None:
        return f"reading {', '.join(options.inputs) or options.topic}"
    return (
        f"{increment.new_records} new records of {options.topic} and"
        f" {increment.kept_rows} kept from the last run"
    )


@dataclass(frozen=True)
class _Audited:
    """What the audit tasks returned: their manifest, its totals, and the table files the
    tasks wrote (by table name)."""

    manifest: list[Any]
    stats: pipeline.RunStats
    written: dict[str, list[AddAction]]

    def summary(self, report: RunReport, inputs: audit_plan.Inputs) -> str:
        return (
            f"{report.records_read} records read, {report.records_decoded} decoded,"
            f" {report.records_rejected} rejected, {inputs.tasks} tasks, read by {inputs.reader},"
            f" {len(self.written)} tables written by the audit tasks"
        )


def _audit(
    spark: SparkSession,
    options: RunOptions,
    report: RunReport,
    staging: Staging,
    inputs: audit_plan.Inputs,
    increment: incremental.Increment | None,
    end_offsets: LogEndOffsets | None,
) -> _Audited:
    """Route every record to its audit task and audit there; the tasks stage their results as
    files and return a manifest (a few rows per task). Sets the report's counts and as_of."""
    started_ms = run_report.now_ms()
    keep = increment is not None  # the tasks choose and write the kept records while they audit
    tasks = inputs.tasks
    kept_emit = audit_plan.kept_emitter(options, increment, tasks)
    # the map stage first: its pieces tell the evaluation time, which the audit tasks decide at
    # (and write the tables with)
    pieces = audit_plan.mapped_pieces(spark, inputs, staging, reduce_large=options.split_commits)
    report.as_of_ms = _as_of(options, exchange.latest_timestamp_ms(pieces), started_ms)
    ends = end_offsets() if end_offsets is not None else None
    report.log_end_offsets = ends.num_rows if ends is not None else None
    emit = kept_emit(_table_emitter(options, report, staging, ends))
    _report_task_sizes(report, exchange.task_sizes(pieces, tasks))
    audited = exchange.audit_pieces(
        spark,
        pieces,
        coordinator=options.coordinator,
        params=_params(options, report),
        tasks=tasks,
        emit=emit,
        keep=keep,
    )
    manifest = audited.collect()
    stats = pipeline.run_stats(manifest)
    report.records_read = stats.records_read
    report.records_rejected = stats.records_rejected
    report.records_decoded = report.records_read - report.records_rejected
    written = written_files(manifest, DIRECT_TABLES, options.run_id)
    return _Audited(manifest, stats, written)


def _tables(
    spark: SparkSession,
    audited: _Audited,
    options: RunOptions,
    report: RunReport,
    staging: Staging,
    root: str,
) -> dict[str, list[AddAction]]:
    """The tables to commit, in their usual order: the files the tasks wrote, and the driver's
    `metrics` file from the tasks' summed meters."""
    written = dict(audited.written)
    sums = staging.metric_sums(audited.manifest)
    written["metrics"] = run_output.metric_files(sums, options, report, root)
    run_output.check_reject_ratio(spark, report, options, written, root)
    return {name: written[name] for name in (*pipeline.DECIDED_TABLES, "lag")}


def _store_increment(
    manifest: list[Any],
    increment: incremental.Increment,
    options: RunOptions,
    report: RunReport,
    stages: run_report.Stages,
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
    from offsets_lib.io.sources.kafka_names import scrub

    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (SIGINT)"
    first_line = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return scrub(first_line, options.kafka_options)[:1000]


def _report_task_sizes(report: RunReport, sizes: np.ndarray) -> None:
    """The largest audit task's records, and how many times the average task's it holds: the
    skew figures `make bench` reports."""
    report.largest_task_records = int(sizes.max())
    report.task_skew = float(sizes.max() / sizes.mean()) if sizes.sum() else None


def _table_emitter(
    options: RunOptions, report: RunReport, staging: Staging, ends: pa.Table | None
) -> pipeline.TaskEmitter:
    """What the audit tasks hand their results to: the staging folder, and the files of the
    tables that are projections of the results, written by the tasks at the run's evaluation
    time under `run_output.files_root` (at 20k records on the 2-worker cluster, building those
    tables from the staged results in Spark took 24.6 s of the run's 125 s)."""
    assert report.as_of_ms is not None
    return TableFiles(
        staging,
        run_output.files_root(options, staging),
        options.run_id,
        report.as_of_ms,
        DIRECT_TABLES,
        end_offsets_uri=stage_end_offsets(staging, ends) if ends is not None else None,
    )


def _params(options: RunOptions, report: RunReport) -> Params:
    """What the audit tasks decide at: the retention and the run's evaluation time."""
    assert report.as_of_ms is not None
    return Params(retention_ms=options.retention_ms, as_of_ms=report.as_of_ms)


def _as_of(options: RunOptions, latest_ms: int | None, started_ms: int) -> int:
    """The evaluation time: --as-of, else the newest record's time, else (no record) now."""
    if isinstance(options.as_of, int):
        return options.as_of
    return int(latest_ms) if latest_ms is not None else started_ms


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
    report.unplaced_marker_deletes = stats.unplaced_marker_deletes
