"""Reference (tests only): compaction as the loader sees it, in plain Spark frames (LOG, TXN rows).

The log cleaner compacts raw key bytes, but the loader maps offset-commit keys of record types 0
and 1 to the same (group, topic, partition); we follow the loader. Keys never interact across
partitions of the offsets topic (LOG-3), so every key includes `log_partition`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from offsets_lib.audit import compaction
from offsets_lib.audit.arrays import id_codes
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.transactions import ABORTED, COMMITTED, NOT_TRANSACTIONAL, PENDING
from offsets_lib.wire.decoded import OFFSET_COMMIT_TYPES

OFFSET_KEY = compaction.OFFSET_KEY
_OFFSET_FIELDS = (
    "log_offset",
    "log_timestamp_ms",
    "is_tombstone",
    "record_type",
    "value_version",
    "committed_offset",
    "leader_epoch",
    "metadata",
    "commit_timestamp_ms",
    "expire_timestamp_ms",
    "topic_id",
)


def is_decoded() -> Column:
    return F.col("error").isNull()


def is_offset_commit() -> Column:
    return F.col("record_type").isin(*OFFSET_COMMIT_TYPES) & ~F.coalesce(
        F.col("is_control"), F.lit(False)
    )


def is_transactional_commit() -> Column:
    """TXN-1: an offset value written by a producer (transactional batch, producer id set).

    Tombstones are never written transactionally by the coordinator; one that is found in a
    transactional batch is treated as a plain tombstone (TXN-4 applies to it).
    """
    return (
        F.coalesce(F.col("is_transactional"), F.lit(False))
        & (F.coalesce(F.col("producer_id"), F.lit(-1)) >= 0)
        & ~F.col("is_tombstone")
    )


def with_transaction_status(decoded: DataFrame) -> DataFrame:
    """Offset commits with `txn_status`: none, committed, aborted or pending (TXN-1..TXN-3, TXN-5).

    A transactional record's outcome is the first COMMIT/ABORT marker of the same producer after
    it in the same offsets-topic partition; without one it is still pending. Only transactional
    records and markers are windowed (per producer), so plain commits take no extra shuffle.
    """
    commits = decoded.filter(is_decoded() & is_offset_commit())
    plain = commits.filter(~is_transactional_commit()).withColumns(
        {"txn_status": F.lit(NOT_TRANSACTIONAL), "marker_offset": F.lit(None).cast("long")}
    )
    transactional = commits.filter(is_transactional_commit()).withColumn(
        "marker", F.lit(None).cast("string")
    )
    markers = decoded.filter(
        is_decoded()
        & F.coalesce(F.col("is_control"), F.lit(False))
        & F.col("control_type").isin("COMMIT", "ABORT")
    ).select(
        *[
            F.col(c)
            if c in ("log_partition", "log_offset", "producer_id")
            else F.lit(None).cast(t).alias(c)
            for c, t in transactional.dtypes
            if c != "marker"
        ],
        F.col("control_type").alias("marker"),
    )
    following = (
        Window.partitionBy("log_partition", "producer_id")
        .orderBy("log_offset")
        .rowsBetween(1, Window.unboundedFollowing)
    )
    marker_offset = F.when(F.col("marker").isNotNull(), F.col("log_offset"))
    resolved = (
        transactional.unionByName(markers)
        .withColumn("outcome", F.first("marker", ignorenulls=True).over(following))
        .withColumn("marker_offset", F.first(marker_offset, ignorenulls=True).over(following))
        .filter(F.col("marker").isNull())
        .withColumn(
            "txn_status",
            F.when(F.col("outcome") == "COMMIT", F.lit(COMMITTED))
            .when(F.col("outcome") == "ABORT", F.lit(ABORTED))
            .otherwise(F.lit(PENDING)),
        )
        .withColumn("marker_offset", F.when(F.col("outcome").isNotNull(), F.col("marker_offset")))
        .drop("marker", "outcome")
    )
    return plain.unionByName(resolved)


def offset_keys(commits: DataFrame, *, tasks: int, coordinator: Coordinator) -> DataFrame:
    """One row per offset key: the surviving record (LOG-1, LOG-2, TXN-2..TXN-4) and pending state.

    The committed value is the newest record among plain records (tombstones included) and
    records of committed transactions; a tombstone also wipes older pending records (TXN-4).
    Records are hash-partitioned by their whole key (so one busy group cannot make one task
    hold a whole offsets-topic partition) and deduplicated with numpy in each task; `tasks`
    should grow with the input (about a million records per task).
    """

    columns = [*OFFSET_KEY, "txn_status", "marker_offset", *_OFFSET_FIELDS]
    schema = offset_keys_sql(commits.limit(0), coordinator=coordinator).schema
    arrow_schema = _arrow_schema(schema)

    def latest(batches):
        return latest_per_key_batches(batches, arrow_schema, coordinator=coordinator)

    return commits.select(*columns).repartition(tasks, *OFFSET_KEY).mapInArrow(latest, schema)


def _arrow_schema(schema):
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema)


def offset_keys_sql(commits: DataFrame, *, coordinator: Coordinator) -> DataFrame:
    """Reference implementation of `offset_keys` with Spark's own aggregation (max_by).

    A plain tombstone at t removes a value whose "effect" position is below t. New coordinator
    (TXN-4): every record's effect is its own position. Scala loader (semantics.md 1.3): a
    committed transactional value takes effect at its commit marker, a pending one never is
    removed by a tombstone.
    """
    counts = F.col("txn_status").isin(NOT_TRANSACTIONAL, COMMITTED)
    if coordinator.is_scala:
        effect = (
            F.when(F.col("txn_status") == COMMITTED, F.col("marker_offset"))
            .when(F.col("txn_status") == PENDING, F.lit(2**63 - 1))
            .otherwise(F.col("log_offset"))
        )
    else:
        effect = F.col("log_offset")
    key = Window.partitionBy(*OFFSET_KEY)
    last_tombstone = F.coalesce(
        F.max(F.when(F.col("is_tombstone"), F.col("log_offset"))).over(key), F.lit(-1)
    )
    flagged = commits.withColumns({"_effect": effect, "_last_tombstone": last_tombstone})
    live = counts & ~F.col("is_tombstone") & (F.col("_effect") > F.col("_last_tombstone"))
    newest = F.struct(*[F.col(c) for c in _OFFSET_FIELDS])
    return (
        flagged.groupBy(*OFFSET_KEY)
        .agg(
            F.max_by(newest, F.when(live, F.col("log_offset"))).alias("value"),
            F.max_by(newest, F.when(counts, F.col("log_offset"))).alias("newest"),
            F.max(F.when(F.col("txn_status") == PENDING, F.col("_effect"))).alias("_pending"),
            F.first("_last_tombstone").alias("_last_tombstone"),
            F.max(F.when(~F.col("is_tombstone"), F.col("log_offset"))).alias("last_value_offset"),
        )
        .withColumn("newest", F.coalesce("value", "newest"))
        .select(
            *OFFSET_KEY,
            "newest.*",
            F.col("value").isNotNull().alias("has_committed_offset"),
            F.coalesce(F.col("_pending") > F.col("_last_tombstone"), F.lit(False)).alias(
                "has_pending_transaction"
            ),
            "last_value_offset",
        )
    )


def group_offset_summary(keys: DataFrame) -> DataFrame:
    """Per group: newest offset-commit value position (for G-S1) and offset/pending counts."""
    return keys.groupBy("log_partition", "group_id").agg(
        F.max("last_value_offset").alias("last_value_offset"),
        F.count(F.when(F.col("has_committed_offset"), 1)).cast("int").alias("offset_count"),
        F.max(F.col("has_pending_transaction").cast("int"))
        .cast("boolean")
        .alias("has_pending_transactions"),
    )


def latest_per_key_batches(
    batches: Iterator[pa.RecordBatch], schema: pa.Schema, *, coordinator: Coordinator
) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: all of a task's records at once (keys never straddle tasks)."""
    collected = list(batches)
    if not collected:
        return
    table = pa.Table.from_batches(collected)
    codes = pa.array(id_codes(table.column("group_id")))  # as the audit task codes them
    result = compaction.latest_per_key(
        table.append_column("group_code", codes), coordinator=coordinator
    ).cast(schema)
    yield from result.to_batches(max_chunksize=65_536)
