"""The tables as Spark frames, for the reference audit (`spark_audit`) and the tests that
compare the production tables with it: the projections (`audit.projections.PROJECTIONS`) in
Spark, and `conform`, which tags a frame with run_id/as_of and orders its columns as the table
declares. Production builds the same rows in Arrow, in the audit tasks (`audit.table_rows`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

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
    """Epoch milliseconds -> UTC timestamp; null beyond what a Spark timestamp holds."""
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


def lag_frame(offsets: DataFrame, end_offsets: DataFrame | None, *, as_of_ms: int) -> DataFrame:
    """The lag rule (`audit.lag.lag_rows`) in Spark SQL: the rows of the ``offsets`` frame
    joined with the largest log-end offset listed per partition."""
    base = offsets.select("group_id", "topic", "partition", "committed_offset", "commit_timestamp")
    if end_offsets is None:
        joined = base.withColumn("log_end_offset", F.lit(None).cast("long"))
    else:
        latest = end_offsets.groupBy("topic", "partition").agg(
            F.max("log_end_offset").alias("log_end_offset")
        )
        joined = base.join(latest, ["topic", "partition"], "left")
    micros = F.unix_micros("commit_timestamp")
    behind = F.col("log_end_offset") - F.col("committed_offset")  # null when either is
    return joined.select(
        "group_id",
        "topic",
        "partition",
        "committed_offset",
        "log_end_offset",
        F.when(behind.isNotNull(), F.greatest(behind, F.lit(0))).alias("lag"),
        F.col("commit_timestamp").alias("last_commit_at"),
        ((F.lit(as_of_ms * 1000) - micros) / F.lit(1e6)).alias("seconds_since_commit"),
    )
