"""KIP-496 coordinator meters rebuilt from the log: the `metrics` table (pure Spark, no collect).

`offsets run` counts them per task (partition_audit._metrics) and sums the partial counts;
`metrics_frame` here is the same count in Spark frames, the reference of the reference audit.

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

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

__all__ = ["GROUP_TOMBSTONE_TYPES", "HOUR_MS", "METRIC_COUNTS", "metrics_frame"]

HOUR_MS = 3_600_000
OFFSET_COMMIT_TYPES = (0, 1)
GROUP_METADATA_TYPE = 2
GROUP_TOMBSTONE_TYPES = (2, 3, 11, 17)  # GroupMetadata and the modern groups' metadata records
METRIC_COUNTS = (
    "offset_commits",
    "offset_tombstones",
    "group_metadata_writes",
    "groups_created",
    "groups_deleted",
)
METRIC_COLUMNS = ("hour", "offsets_partition", *METRIC_COUNTS)


def _hour() -> Column:
    # integer arithmetic, so the bucket is the UTC hour whatever the session time zone
    return F.timestamp_millis(
        F.floor(F.col("log_timestamp_ms") / F.lit(HOUR_MS)).cast("long") * F.lit(HOUR_MS)
    )


def _count(condition: Column) -> Column:
    return F.count(F.when(condition, F.lit(1)))


def metrics_frame(decoded: DataFrame) -> DataFrame:
    """Decoded records (schemas.DECODED) -> metrics rows (without run_id/as_of)."""
    records = decoded.filter(
        F.col("error").isNull()
        & ~F.coalesce(F.col("is_control"), F.lit(False))
        & F.col("record_type").isNotNull()
    ).select(
        "log_partition",
        "log_offset",
        "log_timestamp_ms",
        "record_type",
        F.coalesce(F.col("is_tombstone"), F.lit(False)).alias("is_tombstone"),
        "group_id",
        # a GroupMetadata value with members: a completed rebalance (no full JSON parse)
        (
            (F.col("record_type") == GROUP_METADATA_TYPE)
            & F.get_json_object("value_json", "$.members[0]").isNotNull()
        ).alias("has_members"),
    )
    group_tombstone = F.col("is_tombstone") & F.col("record_type").isin(*GROUP_TOMBSTONE_TYPES)
    before = (
        Window.partitionBy("log_partition", "group_id")
        .orderBy("log_offset")
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    last_value = F.max(F.when(~F.col("is_tombstone"), F.col("log_offset"))).over(before)
    last_deletion = F.max(F.when(group_tombstone, F.col("log_offset"))).over(before)
    flagged = records.withColumn(
        "created",
        F.col("group_id").isNotNull()
        & ~F.col("is_tombstone")
        & (last_value.isNull() | (last_deletion > last_value)),
    )
    is_commit = F.col("record_type").isin(*OFFSET_COMMIT_TYPES)
    return (
        flagged.groupBy(_hour().alias("hour"), F.col("log_partition").alias("offsets_partition"))
        .agg(
            _count(is_commit & ~F.col("is_tombstone")).alias("offset_commits"),
            _count(is_commit & F.col("is_tombstone")).alias("offset_tombstones"),
            _count(F.col("has_members") & ~F.col("is_tombstone")).alias("group_metadata_writes"),
            _count(F.col("created")).alias("groups_created"),
            _count(group_tombstone).alias("groups_deleted"),
        )
        .select(*METRIC_COLUMNS)
    )
