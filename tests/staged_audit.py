"""Shared check of the one-task-per-group audit paths: staged task results, decided, must give
the reference audit's tables (`tests/reference/spark_audit.audit`, plain Spark frames) row
for row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.rules import Params
from offsets_lib.engine import pipeline
from offsets_lib.engine.pipeline import AuditFrames
from offsets_lib.engine.staging import Staging


def _tables(frames: AuditFrames, as_of_ms: int) -> dict[str, DataFrame]:
    return {
        name: pipeline.conform(df, name, run_id="r", as_of_ms=as_of_ms)
        for name, df in frames.frames.items()
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
    """Decide the staged results and compare every table and count; then remove the staging."""
    stats = pipeline.run_stats(manifest)
    decided = pipeline.table_frames(
        staging.read(spark, manifest), orphaned_offsets=stats.orphaned_offsets
    )
    assert stats.records_read == raw.count()
    assert stats.latest_ms == params.as_of_ms
    assert stats.orphaned_offsets == reference.orphaned_offsets.count()
    expected = _tables(reference, params.as_of_ms)
    actual = _tables(decided, params.as_of_ms)
    assert stats.records_rejected == expected["rejects"].count() > 0
    for name, frame in expected.items():
        assert_df_equality(actual[name], frame, ignore_row_order=True, ignore_nullable=True), name
    staging.remove()
