"""Consumer lag: committed offsets against the log-end offsets of the consumed partitions.

Pure (DataFrames in and out); the log-end offsets are read by `offsets_lib.io.watermarks`.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

LAG_COLUMNS = (
    "group_id",
    "topic",
    "partition",
    "committed_offset",
    "log_end_offset",
    "lag",
    "last_commit_at",
    "seconds_since_commit",
)


def lag_frame(offsets: DataFrame, end_offsets: DataFrame | None, *, as_of_ms: int) -> DataFrame:
    """One row per committed offset (rows of the ``offsets`` frame/table).

    ``lag = max(log_end_offset - committed_offset, 0)``; null when the log-end offset is unknown
    (no end offsets given, or the partition is missing from them). ``seconds_since_commit`` is
    ``as_of - commit_timestamp``. A partition listed several times (e.g. snapshots appended to
    one file) counts once, with its largest end: log-end offsets only grow.
    """
    base = offsets.select("group_id", "topic", "partition", "committed_offset", "commit_timestamp")
    if end_offsets is None:
        joined = base.withColumn("log_end_offset", F.lit(None).cast("long"))
    else:
        ends = end_offsets.groupBy(
            F.col("topic").cast("string").alias("topic"),
            F.col("partition").cast("int").alias("partition"),
        ).agg(F.max(F.col("log_end_offset").cast("long")).alias("log_end_offset"))
        joined = base.join(ends, ["topic", "partition"], "left")
    as_of_s = F.lit(as_of_ms / 1000.0)
    return joined.select(
        "group_id",
        "topic",
        "partition",
        "committed_offset",
        "log_end_offset",
        F.when(  # greatest() skips nulls: an unknown end must stay an unknown lag
            F.col("log_end_offset").isNotNull() & F.col("committed_offset").isNotNull(),
            F.greatest(F.col("log_end_offset") - F.col("committed_offset"), F.lit(0)),
        )
        .cast("long")
        .alias("lag"),
        F.col("commit_timestamp").alias("last_commit_at"),
        (as_of_s - F.unix_micros("commit_timestamp") / 1e6).alias("seconds_since_commit"),
    )
