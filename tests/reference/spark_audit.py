"""Reference (tests only): the whole audit in plain Spark frames.

Windows for transactions, aggregations for compaction, a replay shuffle for the groups, and
Spark frames for the KIP-496 meters. `offsets run` does the same work per task with numpy and
Arrow (`offsets_lib.audit.task_audit`); the tests check that both give the same tables.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from offsets_lib.audit import replay
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.group_results import END_OF_LOG
from offsets_lib.audit.group_rows import GROUP_STATE_ARROW
from offsets_lib.audit.metrics import GROUP_TOMBSTONE_TYPES, HOUR_MS, METRIC_COUNTS
from offsets_lib.audit.replay import OFFSET_SUMMARY, Event
from offsets_lib.audit.rules import Params
from offsets_lib.audit.schemas import spark_schema
from offsets_lib.wire.decoded import OFFSET_COMMIT_TYPES
from tests.reference import compact
from tests.reference.decode import classic_group_row
from tests.reference.frames import GROUP_KEY, AuditFrames, projected_frame
from tests.reference.spark_rules import (
    group_deletion,
    subscription_facts,
    with_expiration,
    with_offset_delete,
)

GROUP_METADATA_TYPE = 2
METRIC_COLUMNS = ("hour", "offsets_partition", *METRIC_COUNTS)


def group_events(decoded: DataFrame, summary: DataFrame, *, coordinator: Coordinator) -> DataFrame:
    """Group-level records plus one offset-summary pseudo event per group, in replay order.

    New coordinator (G-S1): an offset value replayed while no group exists creates a simple
    group, so the event sits at the newest offset value's position. Scala coordinator (G-S2):
    after the whole partition is read, a group id with committed or pending offsets but no
    GroupMetadata value gets a simple group, so the event sits at the end of the log, and only
    for groups that still have offsets.
    """
    records = decoded.filter(
        compact.is_decoded()
        & (F.col("record_type") >= 2)
        & ~F.coalesce(F.col("is_control"), F.lit(False))
        & F.col("group_id").isNotNull()
    ).select(*EVENT_COLUMNS)
    if coordinator.is_scala:
        still_has_offsets = (F.col("offset_count") > 0) | F.col("has_pending_transactions")
        position = F.when(still_has_offsets, F.lit(END_OF_LOG))
    else:
        position = F.col("last_value_offset")
    pseudo = summary.select(
        "log_partition",
        "group_id",
        position.cast("long").alias("log_offset"),
        F.lit(OFFSET_SUMMARY).cast("short").alias("record_type"),
        F.lit(False).alias("is_tombstone"),
        F.lit(None).cast("string").alias("member_id"),
        F.lit(None).cast("string").alias("regular_expression"),
        F.lit(None).cast("short").alias("value_version"),
        F.lit(None).cast("string").alias("value_json"),
    )
    return records.unionByName(pseudo)


def replay_groups(events: DataFrame, *, coordinator: Coordinator) -> DataFrame:
    """Replay each group's events in log order inside the executors (one pass per task)."""

    def replay_task(batches):
        return replay_batches(batches, coordinator=coordinator)

    num_partitions = events.sparkSession.conf.get("spark.sql.shuffle.partitions")
    ordered = events.repartition(
        int(num_partitions), "log_partition", "group_id"
    ).sortWithinPartitions("log_partition", "group_id", F.col("log_offset").asc_nulls_first())
    return ordered.mapInArrow(replay_task, spark_schema(GROUP_STATE_ARROW))


def _no_cache(frame: DataFrame) -> DataFrame:
    return frame


def audit(
    decoded: DataFrame,
    *,
    coordinator: Coordinator,
    params: Params,
    cache: Callable[[DataFrame], DataFrame] = _no_cache,
    compaction_tasks: int = 8,
) -> AuditFrames:
    """Everything the broker would hold and decide, from decoded records (no I/O, no clock).

    `cache` marks the frames that several outputs share (the shell passes `persist`), so the
    compaction and the group replay run once per run instead of once per table.
    """
    commits = compact.with_transaction_status(decoded)
    keys = cache(compact.offset_keys(commits, tasks=compaction_tasks, coordinator=coordinator))
    summary = compact.group_offset_summary(keys)
    group_state = replay_groups(
        group_events(decoded, summary, coordinator=coordinator), coordinator=coordinator
    )
    groups = cache(
        group_state.join(
            summary.select(*GROUP_KEY, "offset_count", "has_pending_transactions"),
            GROUP_KEY,
            "left",
        ).fillna({"offset_count": 0, "has_pending_transactions": False})
    )

    live = keys.filter(F.col("has_committed_offset"))
    existing = groups.filter(F.col("state") != "Dead")
    joined = live.join(
        existing.select(
            *GROUP_KEY,
            "group_type",
            "protocol_type",
            "state",
            "subscribed_topics",
            "current_state_timestamp_ms",
            "metadata_value_version",
            "generation",
        ),
        GROUP_KEY,
        "inner",
    )
    joined = joined.withColumns(
        subscription_facts(F.col("subscribed_topics"), F.col("topic"))
    ).drop("subscribed_topics")
    orphaned = live.join(existing.select(*GROUP_KEY), GROUP_KEY, "left_anti")
    decided = cache(
        with_offset_delete(
            with_expiration(joined, coordinator=coordinator, params=params), coordinator=coordinator
        )
    )
    deletion = group_deletion(groups, decided, coordinator=coordinator, as_of_ms=params.as_of_ms)
    results = {
        "offset": decided,
        "group": groups,
        "reject": decoded.filter(F.col("error").isNotNull()),
    }
    frames = {
        "offsets": projected_frame(results, "offsets"),
        "offset_decisions": projected_frame(results, "offset_decisions"),
        "groups": projected_frame(results, "groups"),
        "members": projected_frame(results, "members"),
        "group_decisions": projected_frame({"group": deletion}, "group_decisions"),
        "load_failures": projected_frame(results, "load_failures"),
        "rejects": projected_frame(results, "rejects"),
        "metrics": metrics_frame(decoded),
    }
    return AuditFrames(frames, orphaned)


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


# ---- the reference's replay driver: groups of a task, from decoded rows with value_json ------

EVENT_COLUMNS = (
    "log_partition",
    "group_id",
    "log_offset",
    "record_type",
    "is_tombstone",
    "member_id",
    "regular_expression",
    "value_version",
    "value_json",
)


def replay_batches(
    batches: Iterator[pa.RecordBatch], *, coordinator: Coordinator = Coordinator.NEW
) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: events sorted by (log_partition, group_id, log_offset) -> group rows."""
    replay_group = partial(
        replay.replay_group, coordinator=coordinator, classic_row=classic_group_row
    )
    rows: list[dict[str, Any]] = []
    current: tuple[int, str] | None = None
    events: list[Event] = []
    for batch in batches:
        for record in batch.to_pylist():
            key = (record["log_partition"], record["group_id"])
            if key != current:
                if current is not None:
                    rows.append(replay_group(*current, events))
                current, events = key, []
            events.append(_event(record))
            if len(rows) >= 4096:
                yield pa.RecordBatch.from_pylist(rows, schema=GROUP_STATE_ARROW)
                rows = []
    if current is not None:
        rows.append(replay_group(*current, events))
    if rows:
        yield pa.RecordBatch.from_pylist(rows, schema=GROUP_STATE_ARROW)


def _event(record: dict[str, Any]) -> Event:
    value_json = record.get("value_json")
    return Event(
        log_offset=record["log_offset"],
        record_type=record["record_type"],
        is_tombstone=bool(record.get("is_tombstone")),
        member_id=record.get("member_id"),
        regular_expression=record.get("regular_expression"),
        value_version=record.get("value_version"),
        value=_with_blobs(json.loads(value_json)) if value_json else None,
    )


def _with_blobs(value: dict[str, Any]) -> dict[str, Any]:
    """value_json holds embedded bytes as hex (wire.to_jsonable); the replay reads them as the
    codec gives them: bytes (a classic member's subscription and assignment)."""
    for member in value.get("members") or []:
        for name in ("subscription", "assignment"):
            if isinstance(member.get(name), str):
                member[name] = bytes.fromhex(member[name])
    return value
