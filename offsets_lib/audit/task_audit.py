"""The audit of one task's records, in one pass with numpy and Arrow (no Spark; runs in executors).

The file shuffle (engine/exchange.py) brings every record of a group, and every transaction
marker of the group's offsets-topic partition, to the same task; this module does
the rest of the work there: decode (numpy fast path for offset commits, codec for the rest),
resolve transactions (TXN rows), keep the newest record per offset key (LOG rows), replay every
group (G rows), join live offsets with their groups and count the metrics; `task_tables` then
applies the decisions (EXP, ODEL, DEL rows: rules.py) to the task's offsets and groups.

`tests/reference/spark_audit.py` is the same audit in plain Spark frames; the tests check that
both give the same tables.
"""

# Whole (~740 lines): one pass over a task's decoded columns that the audit, the kept records
# and the split audit's first step share; cut, each part would import the others' privates.

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib.audit import compaction, replay
from offsets_lib.audit.arrays import as_bools, as_ints, group_codes, key_strings
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.metrics import GROUP_TOMBSTONE_TYPES, HOUR_MS, METRIC_COUNTS
from offsets_lib.audit.rules import (
    DAY_MS,
    Params,
    with_expiration,
    with_group_deletion,
    with_offset_delete,
)
from offsets_lib.audit.transactions import ABORTED, COMMITTED, transaction_status
from offsets_lib.wire.batch_decode import TaskRecords, decode_task_records
from offsets_lib.wire.decoded import DECODED_ARROW, OFFSET_COMMIT_TYPES, POSITIONED_ARROW

# the previous run's kept records (is_history) are audited, not counted
RAW_ARROW = POSITIONED_ARROW.append(pa.field("is_history", pa.bool_()))
END_OF_LOG = 2**63 - 1

# What the task emits, by kind of row: each kind is one table of these columns.
OFFSET, GROUP, REJECT, METRIC, STATS = "offset", "group", "reject", "metric", "stats"
KEPT = "kept"  # an incremental run's kept records (POSITIONED_ARROW), with `keep` only
_GROUP_FACTS = [
    ("group_type", pa.string()),
    ("protocol_type", pa.string()),
    ("state", pa.string()),
    ("generation", pa.int32()),
    ("current_state_timestamp_ms", pa.int64()),
    ("metadata_value_version", pa.int16()),
]
_GROUP_KEY = [("log_partition", pa.int32()), ("group_id", pa.string())]
_REJECT_COLUMNS = (
    "log_partition", "log_offset", "key", "value", "error", "log_timestamp_ms", "record_type",
)  # fmt: skip
# an offset whose tombstone may lose to a COMMIT marker this read cannot see (TXN-MARKER-UNREAD):
# its newest value and the tombstone (compaction.unread_marker_offsets), one per element of
# a group's `unread_marker_offsets`
UNREAD_MARKER_OFFSET = pa.struct(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("committed_offset", pa.int64()),
        ("commit_timestamp_ms", pa.int64()),
        ("expire_timestamp_ms", pa.int64()),
        ("log_offset", pa.int64()),
        ("log_timestamp_ms", pa.int64()),
        ("rule", pa.string()),
        ("reason", pa.string()),
    ]
)
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
            *_GROUP_FACTS,
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
    # the replayed state of every group (replay.GROUP_STATE_ARROW), its offset counts and
    # the deletion decision (rules.with_group_deletion)
    GROUP: pa.schema(
        [
            *replay.GROUP_STATE_ARROW,
            ("offset_count", pa.int32()),
            ("has_pending_transactions", pa.bool_()),
            ("unread_marker_offsets", pa.list_(UNREAD_MARKER_OFFSET)),
            ("deleted", pa.bool_()),
            ("deletes_at_ms", pa.int64()),
            ("deletion_rule", pa.string()),
            ("blocked_by", pa.string()),
            ("is_group_in_doubt", pa.bool_()),  # _is_group_in_doubt
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
            # LOG-6 checks failed, and the first LOAD_FAILURES_SHOWN of them as JSON
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
    history = pa.chunked_array(
        [b.column("is_history") for b in batches], type=pa.bool_()
    ).combine_chunks()
    is_history = as_bools(history)[source]
    ok, is_control, record_type = resolved.ok, resolved.is_control, resolved.record_type

    out = {
        REJECT: _rejects(decoded, ~ok & ~is_history),
        METRIC: kip496_meters(records, ok & ~is_control & (record_type >= 0) & ~is_history),
    }
    keys = compaction.latest_per_key(resolved.commits, coordinator=coordinator)
    summary = _group_summary(keys)
    groups = _replay(decoded, values, ok, is_control, record_type, summary, coordinator)
    window_ms = _unread_marker_window_ms(decoded, coordinator)
    unread = (
        compaction.unread_marker_offsets(
            resolved.commits, within_ms=window_ms, retention_ms=retention_ms
        )
        if window_ms is not None
        else None
    )
    groups = groups.append_column("unread_marker_offsets", _unread_marker_lists(groups, unread))
    out[GROUP] = groups
    out[OFFSET], orphaned = _live_offsets(keys, groups)
    timestamps = decoded.column("log_timestamp_ms")
    out[STATS] = pa.table(
        {
            "records_read": pa.array([int((~is_history).sum())], pa.int64()),
            "records_rejected": pa.array([int((~ok & ~is_history).sum())], pa.int64()),
            "orphaned_offsets": pa.array([orphaned], pa.int64()),
            "max_timestamp_ms": pa.array([pc.max(timestamps).as_py()], pa.int64()),
            "group_counts": pa.array([_group_counts(groups)], pa.string()),
            **_load_failures(groups),
            "unplaced_marker_deletes": pa.array(
                [0 if unread is None else unread.num_rows], pa.int64()
            ),
        }
    )
    return out


# Kafka's default transaction.max.timeout.ms: the transaction coordinator aborts a transaction
# open longer, so a COMMIT marker follows its offsets by about this much at most.
TRANSACTION_MAX_TIMEOUT_MS = 900_000


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


UNREAD_MARKER_REASON = (
    f"deleted within {TRANSACTION_MAX_TIMEOUT_MS // 60_000} min of this commit, before it"
    " expired; read without transaction markers: if a transaction wrote it and its COMMIT"
    " marker came after the delete, the Scala loader re-creates it"
)


def _unread_marker_lists(groups: pa.Table, unread: pa.Table | None) -> pa.Array:
    """Per group row: its offsets `compaction.unread_marker_offsets` found (UNREAD_MARKER_OFFSET
    elements, by topic and partition); every such key's group has a row (_group_summary)."""
    list_type = pa.list_(UNREAD_MARKER_OFFSET)
    if unread is None or unread.num_rows == 0:
        empty = np.zeros(groups.num_rows + 1, dtype=np.int32)
        return pa.ListArray.from_arrays(empty, pa.array([], UNREAD_MARKER_OFFSET), type=list_type)
    at = pc.index_in(
        key_strings(unread.column("log_partition"), unread.column("group_id")),
        value_set=key_strings(groups.column("log_partition"), groups.column("group_id")),
    )
    owner = as_ints(at, -1)
    unread = unread.filter(pa.array(owner >= 0)).append_column(
        "_group_row", pa.array(owner[owner >= 0])
    )
    unread = unread.sort_by(
        [("_group_row", "ascending"), ("topic", "ascending"), ("partition", "ascending")]
    )
    n = unread.num_rows
    elements = pa.StructArray.from_arrays(
        [
            *[
                unread.column(f.name).combine_chunks().cast(f.type)
                for f in UNREAD_MARKER_OFFSET
                if f.name not in ("rule", "reason")
            ],
            pa.repeat(pa.scalar(compaction.TXN_MARKER_UNREAD), n),
            pa.repeat(pa.scalar(UNREAD_MARKER_REASON), n),
        ],
        fields=list(UNREAD_MARKER_OFFSET),
    )
    counts = np.bincount(as_ints(unread.column("_group_row"), 0), minlength=groups.num_rows)
    offsets = pa.array(np.r_[0, np.cumsum(counts)], pa.int32())
    return pa.ListArray.from_arrays(offsets, elements, type=list_type)


def _is_group_in_doubt(groups: pa.Table) -> pa.Array:
    """`unread_marker_offsets.is_group_in_doubt`: the run decides the group does not exist at
    as_of (Dead, or deleted by a cleanup at as_of) and one of its offsets is one a COMMIT
    marker after its tombstone would re-create, which the Scala loader then shows in the group
    (an Empty group of that offset). A group that exists either way is not in doubt."""
    has_unread = pc.greater(pc.list_value_length(groups.column("unread_marker_offsets")), 0)
    gone = pc.or_(
        pc.fill_null(pc.equal(groups.column("state"), "Dead"), False),
        pc.fill_null(groups.column("deleted"), False),
    )
    return pc.fill_null(pc.and_(has_unread, gone), False)


LOAD_FAILURES_SHOWN = 10  # per task; every one is in the load_failures table


def _load_failures(groups: pa.Table) -> dict[str, pa.Array]:
    """The stats row's LOG-6 columns: how many checks the task's groups fail, and the first
    few as (offsets partition, group id, check)."""
    counts = pc.fill_null(pc.list_value_length(groups.column("load_failures")), 0)
    failing = groups.filter(pc.greater(counts, 0))
    shown: list[list[Any]] = []
    for row in failing.select(["log_partition", "group_id", "load_failures"]).to_pylist():
        for failure in row["load_failures"]:
            shown.append([row["log_partition"], row["group_id"], failure["failed_check"]])
    return {
        "load_failures": pa.array([len(shown)], pa.int64()),
        "load_failures_shown": pa.array([json.dumps(shown[:LOAD_FAILURES_SHOWN])], pa.string()),
    }


def _group_counts(groups: pa.Table) -> str:
    """{"group_type/state": count} of the task's groups, as JSON."""
    names = pc.binary_join_element_wise(
        pc.fill_null(groups.column("group_type"), ""), pc.fill_null(groups.column("state"), ""), "/"
    )
    counts = pc.value_counts(names)
    pairs = zip(counts.field(0).to_pylist(), counts.field(1).to_pylist(), strict=True)
    return json.dumps(dict(sorted(pairs)))


def _take(rows_of: pa.Table | pa.Array, rows: np.ndarray) -> pa.Table | pa.Array:
    """`rows_of.take(rows)`, as a zero-copy slice when the rows are one ascending run (the
    decoded table starts with the fast path's offset commits, so they usually are)."""
    if len(rows) and rows[-1] - rows[0] == len(rows) - 1:
        return rows_of.slice(int(rows[0]), len(rows))
    return rows_of.take(pa.array(rows))


def _rejects(decoded: pa.Table, rejected: np.ndarray) -> pa.Table:
    return decoded.filter(pa.array(rejected)).select(list(_REJECT_COLUMNS))


def _commits_with_status(
    decoded: pa.Table,
    ok: np.ndarray,
    is_control: np.ndarray,
    record_type: np.ndarray,
    tombstone: np.ndarray,
) -> tuple[np.ndarray, pa.Table, np.ndarray]:
    """The offset commits (their rows, and their columns with `txn_status` and `marker_offset`)
    and, for each row of `decoded`, the row of the transaction marker that resolved it (-1 for
    none)."""
    control_type = decoded.column("control_type")
    marker = np.select(
        [as_bools(pc.equal(control_type, "COMMIT")), as_bools(pc.equal(control_type, "ABORT"))],
        [1, 2],
        0,
    )
    marker = np.where(ok & is_control, marker, 0)
    commit = ok & ~is_control & np.isin(record_type, OFFSET_COMMIT_TYPES)
    producer = as_ints(decoded.column("producer_id"), -1)
    is_txn = commit & as_bools(decoded.column("is_transactional")) & (producer >= 0) & ~tombstone
    log_offset = as_ints(decoded.column("log_offset"), -1)
    status, resolved_by = transaction_status(
        as_ints(decoded.column("log_partition"), -1), producer, log_offset, is_txn, marker
    )
    rows = np.flatnonzero(commit)
    commits = _take(decoded.select([*compaction.OFFSET_KEY, *compaction.RECORD_COLUMNS]), rows)
    resolving = resolved_by[rows]
    marker_offset = pa.array(log_offset[np.maximum(resolving, 0)], mask=resolving < 0)
    commits = commits.append_column("txn_status", _take(status, rows))
    return rows, commits.append_column("marker_offset", marker_offset), resolved_by


def _group_summary(keys: pa.Table) -> pa.Table:
    """Per group: newest offset-value position (G-S1) and offset / pending counts."""
    facts = pa.table(
        {
            "log_partition": keys.column("log_partition"),
            "group_id": keys.column("group_id"),
            "last_value_offset": keys.column("last_value_offset"),
            "committed": pc.cast(keys.column("has_committed_offset"), pa.int32()),
            "pending": pc.cast(keys.column("has_pending_transaction"), pa.int32()),
        }
    )
    summary = facts.group_by(["log_partition", "group_id"], use_threads=False).aggregate(
        [("last_value_offset", "max"), ("committed", "sum"), ("pending", "max")]
    )
    return pa.table(
        {
            "log_partition": summary.column("log_partition"),
            "group_id": summary.column("group_id"),
            "last_value_offset": summary.column("last_value_offset_max"),
            "offset_count": pc.cast(summary.column("committed_sum"), pa.int32()),
            "has_pending_transactions": pc.greater(summary.column("pending_max"), 0),
        }
    )


def _replay(
    decoded: pa.Table,
    values: dict[int, Any],
    ok: np.ndarray,
    is_control: np.ndarray,
    record_type: np.ndarray,
    summary: pa.Table,
    coordinator: Coordinator,
) -> pa.Table:
    """Replay every group's records in log order (replay.replay_group), offsets as one event."""
    # long: columns to Python lists once (no per-row Arrow access), then one loop over groups
    group_ids = decoded.column("group_id")
    is_event = ok & ~is_control & (record_type >= 2) & as_bools(pc.is_valid(group_ids))
    rows = np.flatnonzero(is_event)
    records = decoded.select(
        [
            "log_partition",
            "group_id",
            "log_offset",
            "is_tombstone",
            "member_id",
            "regular_expression",
            "value_version",
        ]
    )
    records = _take(records, rows)
    if coordinator.reads_modern_records:
        position = summary.column("last_value_offset")
    else:  # G-S2: at the end of the load, only for group ids that still have offsets
        still = pc.or_(
            pc.greater(summary.column("offset_count"), 0),
            summary.column("has_pending_transactions"),
        )
        position = pc.if_else(still, END_OF_LOG, pa.scalar(None, pa.int64()))
    partitions = pa.concat_arrays(
        [
            records.column("log_partition").combine_chunks(),
            summary.column("log_partition").combine_chunks(),
        ]
    )
    groups = pa.concat_arrays(
        [records.column("group_id").combine_chunks(), summary.column("group_id").combine_chunks()]
    )
    offsets = np.concatenate(
        [as_ints(records.column("log_offset"), -(2**63)), as_ints(position, -(2**63))]
    )
    has_offset = np.concatenate(
        [as_bools(pc.is_valid(records.column("log_offset"))), as_bools(pc.is_valid(position))]
    )
    n_records = len(rows)
    order, spans = _group_spans(group_codes(partitions, groups), offsets)
    types = record_type[rows].tolist()
    tombstones = as_bools(records.column("is_tombstone")).tolist()
    members = records.column("member_id").to_pylist()
    regexes = records.column("regular_expression").to_pylist()
    value_versions = records.column("value_version").to_pylist()
    event_values = [values.get(int(i)) for i in rows]
    offset_list = offsets.tolist()
    present = has_offset.tolist()
    partition_list = partitions.to_pylist()
    group_list = groups.to_pylist()
    order_list = order.tolist()
    out: list[dict[str, Any]] = []
    for start, end in spans:
        events = []
        for i in order_list[start:end]:
            at = offset_list[i] if present[i] else None
            if i >= n_records:
                events.append(replay.Event(log_offset=at, record_type=replay.OFFSET_SUMMARY))
            else:
                events.append(
                    replay.Event(
                        log_offset=at,
                        record_type=types[i],
                        is_tombstone=tombstones[i],
                        member_id=members[i],
                        regular_expression=regexes[i],
                        value=event_values[i],
                        value_version=value_versions[i],
                    )
                )
        first = order_list[start]
        out.append(
            replay.replay_group(
                partition_list[first],
                group_list[first],
                events,
                coordinator=coordinator,
            )
        )
    groups_table = pa.Table.from_pylist(out, schema=replay.GROUP_STATE_ARROW)
    # offset facts of each group (Arrow joins take no nested payload such as `members`)
    at = pc.index_in(
        key_strings(groups_table.column("log_partition"), groups_table.column("group_id")),
        value_set=key_strings(summary.column("log_partition"), summary.column("group_id")),
    )
    return groups_table.append_column(
        "offset_count", pc.fill_null(summary.column("offset_count").take(at), 0)
    ).append_column(
        "has_pending_transactions",
        pc.fill_null(summary.column("has_pending_transactions").take(at), False),
    )


def _group_spans(
    codes: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Rows in log order within each group (`order`), and each group's (start, end) in it: how
    the replay and the choice of a modern group's kept records walk the group-level records."""
    order = np.lexsort((offsets, codes))
    if not len(order):
        return order, []
    ordered = codes[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]).tolist()
    return order, list(zip(starts, [*starts[1:], len(order)], strict=True))


def _live_offsets(keys: pa.Table, groups: pa.Table) -> tuple[pa.Table, int]:
    """Live offsets joined with their existing group (G-S3: the rest are orphaned)."""
    live = keys.filter(keys.column("has_committed_offset")).drop_columns(
        ["has_committed_offset", "last_value_offset", "log_timestamp_ms", "is_tombstone"]
    )
    existing = groups.filter(pc.not_equal(groups.column("state"), "Dead"))
    facts = existing.select(["log_partition", "group_id", *[n for n, _ in _GROUP_FACTS]])
    facts = facts.append_column(
        "has_known_subscriptions", pc.is_valid(existing.column("subscribed_topics"))
    )
    joined = live.join(facts, ["log_partition", "group_id"], join_type="inner", use_threads=False)
    orphaned = live.num_rows - joined.num_rows
    # (group, topic) pairs a group is subscribed to, to flag each offset's topic
    subscribed = existing.select(["log_partition", "group_id", "subscribed_topics"]).filter(
        pc.is_valid(existing.column("subscribed_topics"))
    )
    lengths = pc.list_value_length(subscribed.column("subscribed_topics")).to_numpy(
        zero_copy_only=False
    )
    parents = np.repeat(np.arange(subscribed.num_rows), lengths.astype(np.int64))
    pairs = pa.table(
        {
            "log_partition": subscribed.column("log_partition").take(pa.array(parents)),
            "group_id": subscribed.column("group_id").take(pa.array(parents)),
            "topic": pc.list_flatten(subscribed.column("subscribed_topics")),
            "is_topic_subscribed": pa.array(np.ones(len(parents), dtype=bool)),
        }
    )
    flagged = joined.join(
        pairs, ["log_partition", "group_id", "topic"], join_type="left outer", use_threads=False
    )
    flagged = flagged.set_column(
        flagged.schema.get_field_index("is_topic_subscribed"),
        "is_topic_subscribed",
        pc.fill_null(flagged.column("is_topic_subscribed"), False),
    )
    return flagged, orphaned


def kip496_meters(task: TaskRecords, counted: np.ndarray) -> pa.Table:
    """Partial KIP-496 meters per (UTC hour, offsets partition): see metrics.py for the meaning."""
    # long: the meters' vectorised flags over one sort of the task's records, then one sum
    rows = np.flatnonzero(counted)
    records = task.table.select(
        [
            "log_partition",
            "group_id",
            "log_offset",
            "log_timestamp_ms",
            "record_type",
            "is_tombstone",
        ]
    )
    records = _take(records, rows)
    n = len(rows)
    record_type = as_ints(records.column("record_type"), -1)
    tombstone = as_bools(records.column("is_tombstone"))
    has_group = as_bools(pc.is_valid(records.column("group_id")))
    offsets = as_ints(records.column("log_offset"), -(2**63))
    codes = group_codes(records.column("log_partition"), records.column("group_id"))
    order = np.lexsort((offsets, codes))
    sorted_codes = codes[order]
    is_start = np.r_[True, sorted_codes[1:] != sorted_codes[:-1]] if n else np.zeros(0, bool)
    group_start = np.maximum.accumulate(np.where(is_start, np.arange(n), 0)) if n else is_start
    position = np.arange(n)

    def last_before(flag: np.ndarray) -> np.ndarray:
        """Sorted position of the newest earlier row of the same group with `flag`, or -1."""
        upto = np.maximum.accumulate(np.where(flag, position, -1)) if n else position
        before = np.r_[-1, upto[:-1]] if n else upto
        return np.where(before >= group_start, before, -1)

    group_tombstone = tombstone & np.isin(record_type, GROUP_TOMBSTONE_TYPES)
    last_value = last_before(~tombstone[order])
    last_deletion = last_before(group_tombstone[order])
    created_sorted = (
        has_group[order] & ~tombstone[order] & ((last_value < 0) | (last_deletion > last_value))
    )
    created = np.empty(n, dtype=bool)
    created[order] = created_sorted
    has_members = np.zeros(n, dtype=bool)
    written = np.flatnonzero((record_type == 2) & ~tombstone)
    has_members[written] = task.list_is_nonempty("members", rows[written])
    is_commit = np.isin(record_type, OFFSET_COMMIT_TYPES)
    timestamps = records.column("log_timestamp_ms")
    hour = pc.multiply(pc.floor(pc.divide(pc.cast(timestamps, pa.float64()), HOUR_MS)), HOUR_MS)
    flags = pa.table(
        {
            "hour_ms": pc.cast(hour, pa.int64()),
            "log_partition": records.column("log_partition"),
            "offset_commits": pa.array((is_commit & ~tombstone).astype(np.int64)),
            "offset_tombstones": pa.array((is_commit & tombstone).astype(np.int64)),
            "group_metadata_writes": pa.array(has_members.astype(np.int64)),
            "groups_created": pa.array(created.astype(np.int64)),
            "groups_deleted": pa.array(group_tombstone.astype(np.int64)),
        }
    )
    summed = flags.group_by(["hour_ms", "log_partition"], use_threads=False).aggregate(
        [(c, "sum") for c in METRIC_COUNTS]
    )
    return summed.rename_columns([c.removesuffix("_sum") for c in summed.column_names])


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
    groups = groups.append_column("is_group_in_doubt", _is_group_in_doubt(groups))
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
) -> dict[str, pa.Table]:
    """mapInArrow body's core: all of the task's records at once -> one table per KIND_ARROW,
    decided at `params` (`decided`), and with `keep` (an incremental run) a KEPT table: the
    `kept_records` of the same records, chosen while the task has them (no second pass over the
    records).

    Python's cycle collector is paused for the task: the decoded values are hundreds of
    thousands of small acyclic dicts and lists, which reference counting frees anyway, and
    re-scanning them on every collection took a third of the task's time.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        collected = _stored_markers_once(
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
    if kept is not None:
        out[KEPT] = kept
    return out


def _stored_markers_once(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
    """The task's records with each stored transaction marker once.

    Every task that keeps a marker stores it (engine.staging.KeptFiles), and every task of the
    next run receives each stored copy; the copies are one record of the log (same partition
    and offset), audited once. Only history (stored) markers can repeat."""
    table = pa.Table.from_batches(batches, schema=RAW_ARROW)
    stored = np.flatnonzero(
        as_bools(table.column("is_history").combine_chunks())
        & as_bools(table.column("is_control").combine_chunks())
    )
    if len(stored) < 2:
        return batches
    partition = as_ints(_take(table.column("log_partition"), stored), -1)
    offset = as_ints(_take(table.column("log_offset"), stored), -1)
    order = np.lexsort((offset, partition))
    repeated = np.zeros(len(stored), dtype=bool)
    repeated[order[1:]] = (partition[order[1:]] == partition[order[:-1]]) & (
        offset[order[1:]] == offset[order[:-1]]
    )
    if not repeated.any():
        return batches
    keep = np.ones(table.num_rows, dtype=bool)
    keep[stored[repeated]] = False
    return table.filter(pa.array(keep)).combine_chunks().to_batches()


def kept_records(
    batches: Iterator[pa.RecordBatch], *, resolved: ResolvedCommits | None = None
) -> pa.Table:
    """The task's records that an audit of them plus newer records needs (POSITIONED_ARROW).

    This is what an incremental run stores instead of the whole history, chosen by the same
    rules the audit applies: the offset commits `compaction.kept_rows` keeps, the transaction
    markers that resolved the kept committed or aborted ones, and the group-level records: of a
    group that has a modern (KIP-848, streams, share) record the records its replay needs
    (replay.needed_records), and of a classic-only group its newest GroupMetadata record and its
    newest GroupMetadata tombstone. Undecodable records are not kept. A marker may be kept by
    several tasks (each task gets every marker of its partitions); the audit that reads them
    again takes each once (`task_tables`).
    `resolved`: the same records already decoded (`audit_decoded`).
    """
    collected = [b.cast(RAW_ARROW) if b.schema != RAW_ARROW else b for b in batches]
    if not collected:
        return POSITIONED_ARROW.empty_table()
    c = resolved if resolved is not None else resolved_commits(collected)
    decoded = c.records.table
    keep = c.is_kept.copy()
    status = c.commits.column("txn_status")
    resolved = np.asarray(pc.is_in(status, value_set=pa.array([COMMITTED, ABORTED])), dtype=bool)
    markers = c.resolved_by[c.rows[resolved & c.is_kept[c.rows]]]
    keep[markers[markers >= 0]] = True
    keep |= _kept_group_records(decoded, c.ok & ~c.is_control, c.record_type, c.tombstone)
    source = pa.Table.from_batches(collected).select(POSITIONED_ARROW.names)
    return source.take(pa.array(np.sort(c.records.source[keep])))


@dataclass(frozen=True)
class ResolvedCommits:
    """A task's records decoded once (values left undecoded), their offset commits with the
    transaction status, and the commits `compaction.kept_rows` keeps: what the kept
    records (`kept_records`) and the split audit's first step (`key_split`) both choose from."""

    records: TaskRecords
    ok: np.ndarray  # decoded without error
    is_control: np.ndarray
    record_type: np.ndarray  # -1 where unknown
    tombstone: np.ndarray
    rows: np.ndarray  # decoded rows of the offset commits
    commits: pa.Table  # their columns, with txn_status and marker_offset
    resolved_by: np.ndarray  # per decoded row: the row of the marker that resolved it, or -1

    @cached_property
    def is_kept(self) -> np.ndarray:
        """Per decoded row: an offset commit that kept_rows keeps."""
        is_kept = np.zeros(self.records.table.num_rows, dtype=bool)
        is_kept[self.rows[compaction.kept_rows(self.commits)]] = True
        return is_kept


def resolved_commits(batches: list[pa.RecordBatch]) -> ResolvedCommits:
    """`ResolvedCommits` of records decoded without their group-level values."""
    return _resolved(decode_task_records(batches, every_value_of=frozenset()))


def audit_decoded(batches: list[pa.RecordBatch]) -> ResolvedCommits:
    """`ResolvedCommits` of records decoded with the values the group replay reads."""
    return _resolved(
        decode_task_records(
            batches,
            every_value_of=replay.EVERY_VALUE_TYPES,
            newest_value_of=replay.LAST_VALUE_TYPES,
        )
    )


def _resolved(records: TaskRecords) -> ResolvedCommits:
    decoded = records.table
    ok = ~as_bools(pc.is_valid(decoded.column("error")))
    is_control = as_bools(decoded.column("is_control"))
    record_type = as_ints(decoded.column("record_type"), -1)
    tombstone = as_bools(decoded.column("is_tombstone"))
    rows, commits, resolved_by = _commits_with_status(
        decoded, ok, is_control, record_type, tombstone
    )
    return ResolvedCommits(
        records, ok, is_control, record_type, tombstone, rows, commits, resolved_by
    )


def _kept_group_records(
    decoded: pa.Table, ok: np.ndarray, record_type: np.ndarray, tombstone: np.ndarray
) -> np.ndarray:
    """Group-level records to keep (see `kept_records`), as a mask over `decoded`'s rows."""
    is_group = ok & (record_type >= 2) & as_bools(pc.is_valid(decoded.column("group_id")))
    rows = np.flatnonzero(is_group)
    keep = np.zeros(decoded.num_rows, dtype=bool)
    if not len(rows):
        return keep
    codes = group_codes(
        _take(decoded.column("log_partition"), rows), _take(decoded.column("group_id"), rows)
    )
    log_offset = as_ints(_take(decoded.column("log_offset"), rows), -1)
    classic = record_type[rows] == 2
    groups = codes.max() + 1
    has_modern = np.zeros(groups, dtype=bool)
    np.logical_or.at(has_modern, codes, ~classic)
    newest = np.full(groups, -1, dtype=np.int64)
    np.maximum.at(newest, codes, np.where(classic, log_offset, -1))
    removed = np.full(groups, -1, dtype=np.int64)
    np.maximum.at(removed, codes, np.where(classic & tombstone[rows], log_offset, -1))
    at_newest = classic & ((log_offset == newest[codes]) | (log_offset == removed[codes]))
    keep[rows[~has_modern[codes] & at_newest]] = True
    of_modern = has_modern[codes]
    needed = _needed_modern_records(
        decoded, rows[of_modern], codes[of_modern], record_type, tombstone
    )
    keep[rows[of_modern][needed]] = True
    return keep


def _needed_modern_records(
    decoded: pa.Table,
    rows: np.ndarray,
    codes: np.ndarray,
    record_type: np.ndarray,
    tombstone: np.ndarray,
) -> np.ndarray:
    """Of the records `rows` of groups with modern records (group `codes`), those the group's
    replay needs (replay.needed_records), as a mask over `rows`. Measured on the bench's
    10M-record topic: a modern group kept all its records, 403k of the 1.72M kept
    records, growing with every rebalance."""
    order, spans = _group_spans(codes, as_ints(_take(decoded.column("log_offset"), rows), -1))
    ordered = rows[order]
    members = _take(decoded.column("member_id"), ordered).to_pylist()
    expressions = _take(decoded.column("regular_expression"), ordered).to_pylist()
    kinds, tombstones = record_type[ordered].tolist(), tombstone[ordered].tolist()
    events = [
        replay.Event(None, kind, is_tombstone, member, expression)
        for kind, is_tombstone, member, expression in zip(
            kinds, tombstones, members, expressions, strict=True
        )
    ]
    needed: list[bool] = []
    for start, end in spans:
        needed += replay.needed_records(events[start:end])
    mask = np.zeros(len(rows), dtype=bool)
    mask[order[np.asarray(needed, dtype=bool)]] = True
    return mask
