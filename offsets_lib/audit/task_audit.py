"""The audit of one task's records, in one pass with numpy and Arrow (no Spark; runs in executors).

The file shuffle (engine/exchange.py) brings every record of a group, and every transaction
marker of the group's offsets-topic partition, to the same task; this module does
the rest of the work there: decode (numpy fast path for offset commits, codec for the rest),
resolve transactions (TXN rows), keep the newest record per offset key (LOG rows), replay every
group (G rows), join live offsets with their groups and count the metrics; `task_tables` then
applies the decisions (EXP, ODEL, DEL rows: rules.py, group_deletion.py) to the task's offsets
and groups. The steps live beside it: task_input.py (decoding, transactions), group_results.py (the
replay, the live offsets), unread_markers.py, metrics.py (the meters) and kept_records.py
(what an incremental run keeps).

`tests/reference/spark_audit.py` is the same audit in plain Spark frames; the tests check that
both give the same tables.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib.audit import compaction
from offsets_lib.audit.arrays import as_bools
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.group_deletion import with_group_deletion
from offsets_lib.audit.group_results import (
    GROUP_FACTS,
    group_counts,
    group_summary,
    live_offsets,
    load_failure_columns,
    replay_groups,
)
from offsets_lib.audit.group_rows import GROUP_STATE_ARROW
from offsets_lib.audit.kept_records import kept_records, stored_markers_once
from offsets_lib.audit.metrics import METRIC_COUNTS, kip496_meters
from offsets_lib.audit.rules import DAY_MS, Params, with_expiration, with_offset_delete
from offsets_lib.audit.task_input import RAW_ARROW, ResolvedCommits, audit_decoded
from offsets_lib.audit.transactions import TRANSACTION_MAX_TIMEOUT_MS
from offsets_lib.audit.unread_markers import (
    UNREAD_MARKER_OFFSET,
    is_group_in_doubt,
    unread_marker_lists,
)
from offsets_lib.wire.decoded import DECODED_ARROW

# What the task emits, by kind of row: each kind is one table of these columns.
OFFSET, GROUP, REJECT, METRIC, STATS = "offset", "group", "reject", "metric", "stats"
KEPT = "kept"  # an incremental run's kept records (POSITIONED_ARROW), with `keep` only
_GROUP_KEY = [("log_partition", pa.int32()), ("group_id", pa.string())]
_REJECT_COLUMNS = (
    "log_partition", "log_offset", "key", "value", "error", "log_timestamp_ms", "record_type",
)  # fmt: skip
KIND_ARROW: dict[str, pa.Schema] = {
    # the surviving record of each live offset key and the facts of its group
    OFFSET: pa.schema(
        [
            *_GROUP_KEY,
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("log_offset", pa.int64()),
            ("value_version", pa.int16()),
            ("committed_offset", pa.int64()),
            ("leader_epoch", pa.int32()),
            ("metadata", pa.string()),
            ("commit_timestamp_ms", pa.int64()),
            ("expire_timestamp_ms", pa.int64()),
            ("topic_id", pa.string()),
            ("has_pending_transaction", pa.bool_()),
            *GROUP_FACTS,
            ("has_known_subscriptions", pa.bool_()),
            ("is_topic_subscribed", pa.bool_()),
            # the decisions (rules.with_expiration, rules.with_offset_delete)
            ("rule", pa.string()),
            ("expires_at_ms", pa.int64()),
            ("expired", pa.bool_()),
            ("delete_error", pa.string()),
            ("delete_rule", pa.string()),
        ]
    ),
    # the replayed state of every group (group_rows.GROUP_STATE_ARROW), its offset counts and
    # the deletion decision (group_deletion.with_group_deletion)
    GROUP: pa.schema(
        [
            *GROUP_STATE_ARROW,
            ("offset_count", pa.int32()),
            ("has_pending_transactions", pa.bool_()),
            ("unread_marker_offsets", pa.list_(UNREAD_MARKER_OFFSET)),
            ("deleted", pa.bool_()),
            ("deletes_at_ms", pa.int64()),
            ("deletion_rule", pa.string()),
            ("blocked_by", pa.string()),
            ("is_group_in_doubt", pa.bool_()),  # unread_markers.is_group_in_doubt
        ]
    ),
    # the undecodable records, as they came (decoded columns)
    REJECT: pa.schema([DECODED_ARROW.field(name) for name in _REJECT_COLUMNS]),
    # partial counts per task; summed per hour and partition afterwards
    METRIC: pa.schema(
        [
            ("hour_ms", pa.int64()),
            ("log_partition", pa.int32()),
            *[(name, pa.int64()) for name in METRIC_COUNTS],
        ]
    ),
    # one row per task
    STATS: pa.schema(
        [
            ("records_read", pa.int64()),
            ("records_rejected", pa.int64()),
            ("orphaned_offsets", pa.int64()),
            ("max_timestamp_ms", pa.int64()),
            # groups by "group_type/state", as a JSON object (for the run's summary line)
            ("group_counts", pa.string()),
            # LOG-6 checks failed, and the first group_results.LOAD_FAILURES_SHOWN of them as JSON
            # [[offsets partition, group id, check], ...] (for the run's summary lines)
            ("load_failures", pa.int64()),
            ("load_failures_shown", pa.string()),
            # rows of unread_marker_offsets (TXN-MARKER-UNREAD; for the run's summary lines)
            ("unplaced_marker_deletes", pa.int64()),
            # the decisions' counts (for the run's summary line)
            ("offsets_total", pa.int64()),
            ("offsets_expired", pa.int64()),
            ("offsets_expiring_24h", pa.int64()),
            ("groups_deleted", pa.int64()),
        ]
    ),
}


def audit_records(
    batches: list[pa.RecordBatch],
    *,
    coordinator: Coordinator = Coordinator.NEW,
    resolved: ResolvedCommits | None = None,
    retention_ms: int | None = None,
) -> dict[str, pa.Table]:
    """Everything the decisions need from one task's records (see the module docstring).

    Returns tables by kind: offset (live keys with their group's facts), group, reject, metric
    and stats (one row). Records of a group and the markers of its partition must all be here.
    `resolved`: the same records already decoded for the audit (`audit_decoded`).
    `retention_ms`: the cluster's offset retention, which tells an expiry's tombstone from an
    OffsetDelete's in a read without transaction markers (`compaction.is_behind_unread_marker`).
    """
    if not batches:
        return {}
    if resolved is None:
        resolved = audit_decoded(batches)
    records = resolved.records
    decoded, values, source = records.table, records.values, records.source  # rows reordered
    history = pa.chunked_array([b.column("is_history") for b in batches], type=pa.bool_())
    is_history = as_bools(history)[source]
    ok, is_control, record_type = resolved.ok, resolved.is_control, resolved.record_type

    out = {
        REJECT: _rejects(decoded, ~ok & ~is_history),
        METRIC: kip496_meters(
            records, ok & ~is_control & (record_type >= 0) & ~is_history, resolved.group_codes
        ),
    }
    keys = compaction.latest_per_key(resolved.commits, coordinator=coordinator)
    summary = group_summary(keys)
    groups = replay_groups(
        decoded, values, ok, is_control, record_type, summary, coordinator, records.value_bytes
    )
    window_ms = _unread_marker_window_ms(decoded, coordinator)
    unread = (
        compaction.unread_marker_offsets(
            resolved.commits, within_ms=window_ms, retention_ms=retention_ms
        )
        if window_ms is not None
        else None
    )
    groups = groups.append_column("unread_marker_offsets", unread_marker_lists(groups, unread))
    out[GROUP] = groups
    out[OFFSET], orphaned = live_offsets(keys, groups)
    timestamps = decoded.column("log_timestamp_ms")
    out[STATS] = pa.table(
        {
            "records_read": pa.array([int((~is_history).sum())], pa.int64()),
            "records_rejected": pa.array([int((~ok & ~is_history).sum())], pa.int64()),
            "orphaned_offsets": pa.array([orphaned], pa.int64()),
            "max_timestamp_ms": pa.array([pc.max(timestamps).as_py()], pa.int64()),
            "group_counts": pa.array([group_counts(groups)], pa.string()),
            **load_failure_columns(groups),
            "unplaced_marker_deletes": pa.array(
                [0 if unread is None else unread.num_rows], pa.int64()
            ),
        }
    )
    return out


def _unread_marker_window_ms(decoded: pa.Table, coordinator: Coordinator) -> int | None:
    """How long after a value a tombstone leaves the key's offset undecided
    (`compaction.is_behind_unread_marker`), or None when the read decides every key: the new
    coordinator's tombstone wipes pending offsets wherever the marker is (TXN-4), and batch
    metadata (producer ids, control records) places every marker. Spark's Kafka source reads
    read_committed: no control records, no producer ids."""
    has_batch_metadata = decoded.column("is_transactional").null_count < decoded.num_rows
    if not coordinator.is_scala or has_batch_metadata:
        return None
    return TRANSACTION_MAX_TIMEOUT_MS


def _rejects(decoded: pa.Table, rejected: np.ndarray) -> pa.Table:
    return decoded.filter(pa.array(rejected)).select(list(_REJECT_COLUMNS))


def decided(
    tables: dict[str, pa.Table], *, coordinator: Coordinator, params: Params
) -> dict[str, pa.Table]:
    """`audit_records`' tables with the decisions: the EXP and ODEL rows on the offsets, the DEL
    row on the groups, and their counts in the stats row."""
    if not tables:
        return tables
    offsets = with_offset_delete(
        with_expiration(tables[OFFSET], coordinator=coordinator, params=params),
        coordinator=coordinator,
    )
    groups = with_group_deletion(
        tables[GROUP], offsets, coordinator=coordinator, as_of_ms=params.as_of_ms
    )
    groups = groups.append_column("is_group_in_doubt", is_group_in_doubt(groups))
    expired = as_bools(offsets.column("expired"))
    horizon = params.as_of_ms + DAY_MS
    expiring = ~expired & as_bools(pc.less_equal(offsets.column("expires_at_ms"), horizon))
    counts = {
        "offsets_total": offsets.num_rows,
        "offsets_expired": int(expired.sum()),
        "offsets_expiring_24h": int(expiring.sum()),
        "groups_deleted": int(as_bools(groups.column("deleted")).sum()),
    }
    stats = tables[STATS]
    for name, count in counts.items():
        stats = stats.append_column(name, pa.array([count], pa.int64()))
    return {**tables, OFFSET: offsets, GROUP: groups, STATS: stats}


def task_tables(
    batches: Iterator[pa.RecordBatch],
    *,
    coordinator: Coordinator,
    params: Params,
    keep: bool = False,
    superseded: pa.Table | None = None,
) -> dict[str, pa.Table]:
    """mapInArrow body's core: all of the task's records at once -> one table per KIND_ARROW,
    decided at `params` (`decided`), and with `keep` (an incremental run) a KEPT table: the
    `kept_records` of the same records, chosen while the task has them (no second pass over the
    records). `superseded`: the counts of the task's records the map dropped
    (superseded_commits.SUPERSEDED_ARROW), added to its meters and stats.

    Python's cycle collector is paused for the task: the decoded values are hundreds of
    thousands of small acyclic dicts and lists, which reference counting frees anyway, and
    re-scanning them on every collection took a third of the task's time.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        collected = stored_markers_once(
            [b.cast(RAW_ARROW) if b.schema != RAW_ARROW else b for b in batches]
        )
        # decoded once for both: the second decode of the kept records' choice was ~0.27 of
        # ~1.1 s of an incremental run's audit task
        resolved = audit_decoded(collected) if collected else None
        tables = decided(
            audit_records(
                collected,
                coordinator=coordinator,
                resolved=resolved,
                retention_ms=params.retention_ms,
            ),
            coordinator=coordinator,
            params=params,
        )
        kept = kept_records(iter(collected), resolved=resolved) if keep else None
    finally:
        if was_enabled:
            gc.enable()
    out = {
        kind: (
            tables[kind].select(schema.names).cast(schema)
            if kind in tables
            else schema.empty_table()
        )
        for kind, schema in KIND_ARROW.items()
    }
    if superseded is not None and superseded.num_rows:
        out.update(_with_superseded(out, superseded))
    if kept is not None:
        out[KEPT] = kept
    return out


def _with_superseded(tables: dict[str, pa.Table], superseded: pa.Table) -> dict[str, pa.Table]:
    """The task's METRIC and STATS tables with the map's dropped values counted: offset_commits
    per hour and partition, records read, the newest log timestamp."""
    n = superseded.num_rows
    metric = pa.table(
        {
            name: superseded.column(name)
            if name in ("hour_ms", "log_partition", "offset_commits")
            else pa.array(np.zeros(n, dtype=np.int64))
            for name in KIND_ARROW[METRIC].names
        }
    ).cast(KIND_ARROW[METRIC])
    stats = tables[STATS]
    dropped = pc.sum(superseded.column("offset_commits")).as_py()
    newest = pc.max(
        pa.chunked_array(
            [*stats.column("max_timestamp_ms").chunks, *superseded.column("newest_ms").chunks]
        )
    ).as_py()
    if stats.num_rows == 0:  # no record reached the task itself
        stats = pa.table(
            {
                name: pa.nulls(1, field.type)
                for name, field in zip(stats.schema.names, stats.schema, strict=True)
            }
        ).cast(stats.schema)
    read = pc.add(pc.fill_null(stats.column("records_read"), 0), dropped)
    stats = stats.set_column(stats.schema.get_field_index("records_read"), "records_read", read)
    stats = stats.set_column(
        stats.schema.get_field_index("max_timestamp_ms"),
        "max_timestamp_ms",
        pa.array([newest], pa.int64()),
    )
    return {
        METRIC: pa.concat_tables([tables[METRIC], metric]),
        STATS: stats.cast(KIND_ARROW[STATS]),
    }
