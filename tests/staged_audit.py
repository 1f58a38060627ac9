"""Shared check of the one-task-per-group audit paths: the tables the audit tasks wrote
(`staging.TableFiles`), read as Delta's Spark writer reads them (`spark_writer.files_frame`),
must equal the reference audit's tables (`tests/reference/spark_audit.audit`, plain Spark
frames) row for row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from offsets_lib.audit import table_rows, task_audit
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.rules import Params
from offsets_lib.audit.table_rows import DIRECT_TABLES
from offsets_lib.audit.tables import table_spec
from offsets_lib.engine import pipeline
from offsets_lib.engine.staging import Staging, TableFiles, written_files
from offsets_lib.io import delta_schema, spark_writer
from tests.reference.frames import AuditFrames, conform

RUN_ID = "r"


def table_files(staging: Staging, as_of_ms: int) -> TableFiles:
    """The audit tasks' emitter of a run: staged results, and every table's files written
    under the staging folder (`tables_root`)."""
    return TableFiles(staging, tables_root(staging), RUN_ID, as_of_ms, DIRECT_TABLES)


def tables_root(staging: Staging) -> str:
    return f"{staging.uri}/tables"


def task_tables(
    spark: SparkSession, staging: Staging, manifest: Sequence[Mapping[str, Any]], as_of_ms: int
) -> dict[str, DataFrame]:
    """Every table of the run as the production path builds it: the files the tasks wrote
    (`table_files`) as one frame each, and `metrics` from the staged partial counts."""
    files = written_files(manifest, DIRECT_TABLES, RUN_ID)
    frames = {
        name: spark_writer.files_frame(
            spark, name, actions, root=tables_root(staging), run_id=RUN_ID
        )
        for name, actions in files.items()
    }
    rows = table_rows.table_rows(
        "metrics",
        {task_audit.METRIC: staging.metric_sums(manifest)},
        run_id=RUN_ID,
        as_of_ms=as_of_ms,
        schema=delta_schema.arrow_schema(table_spec("metrics"), with_comments=False),
    )
    frames["metrics"] = spark.createDataFrame(rows)
    return {
        name: conform(df, name, run_id=RUN_ID, as_of_ms=as_of_ms) for name, df in frames.items()
    }


def assert_staged_equals_reference(
    spark: SparkSession,
    raw: DataFrame,
    reference: AuditFrames,
    staging: Staging,
    manifest: Sequence[Mapping[str, Any]],
    *,
    coordinator: Coordinator,
    params: Params,
) -> None:
    """Compare every table the tasks wrote (`table_files`) and every count with the
    reference's; then remove the staging."""
    stats = pipeline.run_stats(manifest)
    assert stats.records_read == raw.count()
    assert stats.orphaned_offsets == reference.orphaned_offsets.count()
    expected = {
        name: conform(df, name, run_id=RUN_ID, as_of_ms=params.as_of_ms)
        for name, df in reference.frames.items()
    }
    actual = task_tables(spark, staging, manifest, params.as_of_ms)
    assert stats.records_rejected == expected["rejects"].count() > 0
    for name, frame in expected.items():
        assert_df_equality(actual[name], frame, ignore_row_order=True, ignore_nullable=True), name
    staging.remove()
