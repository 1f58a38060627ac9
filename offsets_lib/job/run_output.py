"""A run's output: its tables written and committed, the `runs` row last, then the catalog.

The audit tasks write every table's files (and the driver `metrics`'); delta-rs commits them,
one transaction per table, or on request (`--delta-writer spark`) Delta's Spark writer writes
each table's files as one frame. `job.run` calls these once the audit tasks are done.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
from deltalake.transaction import AddAction
from pyspark.sql import SparkSession

from offsets_lib.audit import table_rows, task_audit
from offsets_lib.audit.tables import TABLES, table_spec
from offsets_lib.engine.staging import Staging
from offsets_lib.io import catalog, delta_schema, sink, spark_writer
from offsets_lib.job.options import RunOptions
from offsets_lib.job.run_report import RejectRatioExceeded, RunReport


def files_root(options: RunOptions, staging: Staging) -> str:
    """Where the tables' files are written: into the tables, for delta-rs to commit them there;
    for Delta's Spark writer, which writes rows of its own, in the staging folder (removed with
    it)."""
    return f"{staging.uri}/tables" if options.delta_writer == "spark" else options.output


def metric_files(
    sums: pa.Table, options: RunOptions, report: RunReport, root: str
) -> list[AddAction]:
    """The `metrics` table's file of the run, written by the driver under `root` (a few rows per
    hour and partition), to be committed with the others."""
    spec = table_spec("metrics")
    assert report.as_of_ms is not None
    rows = table_rows.table_rows(
        "metrics",
        {task_audit.METRIC: sums},
        run_id=options.run_id,
        as_of_ms=report.as_of_ms,
        schema=delta_schema.arrow_schema(spec, with_comments=False),
    )
    written = sink.write_task_files(rows, spec, output=root, run_id=options.run_id)
    return [sink.add_action(file, options.run_id) for file in written]


def check_reject_ratio(
    spark: SparkSession,
    report: RunReport,
    options: RunOptions,
    written: Mapping[str, list[AddAction]],
    root: str,
) -> None:
    """Too many undecodable records: write the rejects (for the person who looks) and fail."""
    ratio = report.records_rejected / report.records_read if report.records_read else 0.0
    if ratio <= options.max_reject_ratio:
        return
    write_tables(spark, {"rejects": written["rejects"]}, options, report, root)
    raise RejectRatioExceeded(
        f"{report.records_rejected} of {report.records_read} records could not be decoded"
        f" ({ratio:.2%} > --max-reject-ratio {options.max_reject_ratio:.2%}); see the rejects"
        f" table under {options.output}"
    )


def written_summary(report: RunReport) -> str:
    """The decide+write stage's line: tables (the summary lists `runs` too, written last),
    offsets, groups, offsets expired now."""
    return (
        f"{len(report.tables)} tables, runs next: {report.offsets_total} offsets,"
        f" {sum(report.groups_by_type_state.values())} groups,"
        f" {report.offsets_expired} expired now"
    )


def write_tables(
    spark: SparkSession,
    files: Mapping[str, list[AddAction]],
    options: RunOptions,
    report: RunReport,
    root: str,
) -> None:
    """Commit the tables, in the order of `files` (the add actions of each table's files,
    written under `root`: `files_root`)."""
    if options.delta_writer == "spark":
        for name, actions in files.items():
            spark_writer.write_with_spark_delta(
                spark,
                spark_writer.files_frame(spark, name, actions, root=root, run_id=options.run_id),
                name,
                output=external_output(options),
                run_id=options.run_id,
                database=options.database,
            )
    else:
        sink.write_run_tables(files, output=options.output, run_id=options.run_id)
    for name in files:
        report.tables[name] = table_name(options, name)


def external_output(options: RunOptions) -> str | None:
    """Where the Spark writer puts the tables: --output, or (managed catalog tables) None."""
    return options.output if options.database is None or options.output_given else None


def table_name(options: RunOptions, name: str) -> str:
    """How the report names a table: `<database>.<name>`, else its location."""
    if options.database is not None:
        return f"{options.database}.{name}"
    return sink.table_uri(options.output, name)


def register(
    spark: SparkSession,
    report: RunReport,
    options: RunOptions,
    entries: catalog.CatalogEntries | None = None,
) -> None:
    """A catalog run's tables written by delta-rs: the catalog learns the ones it still lacks,
    once every table and the runs row are committed (a first run whose catalog was asked beside
    the audit has them already: job.run_catalog). Delta's Spark writer registers the tables it
    writes itself; a Kafka run's kept records and checkpoint are delta-rs' with either writer.
    Then each audit table's ``latest_<table>`` view, for readers that name no run (the kept
    records and the checkpoint are the next run's state, not a run's rows: the kept records'
    run_id is a state id, so a view of them by run would always be empty). ``entries``: what
    the catalog held before the commits (with delta-rs, this run's registrations are the only
    change since; the Spark writer's are asked for again)."""
    if options.database is None:
        return
    is_known = entries is not None and options.delta_writer != "spark"
    catalog.register_tables(
        spark,
        report.tables,
        output=options.output,
        database=options.database,
        registered=entries.locations if is_known else None,
    )
    views = entries.views if entries is not None else None
    audit_tables = [name for name in report.tables if name in TABLES]
    report.views = catalog.create_latest_views(spark, options.database, audit_tables, views)


def publish(spark: SparkSession, report: RunReport, options: RunOptions, started_ms: int) -> None:
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
        spark_writer.publish_run_with_spark(
            spark, row, output=external_output(options), database=options.database
        )
    else:
        sink.publish_run(row, output=options.output)
    report.tables["runs"] = table_name(options, "runs")
