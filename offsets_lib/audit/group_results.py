"""An audit task's groups: replayed, counted, and joined with their live offsets.

Per task, after the newest record per offset key is known (compaction.latest_per_key):
`group_summary` (each group's offset counts and newest offset value), `replay_groups` (every
group's records replayed in log order, replay.replay_group), `live_offsets` (the live offsets
joined with their existing group: G-S3) and the stats row's group columns (`group_counts`,
`load_failure_columns`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib.audit import partition_claims, replay
from offsets_lib.audit.arrays import (
    as_bools,
    as_ints,
    group_codes,
    group_spans,
    key_strings,
    one_array,
    take_rows,
)
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.group_rows import GROUP_METADATA, GROUP_STATE_ARROW, classic_group_rows
from offsets_lib.wire import layout_read

END_OF_LOG = 2**63 - 1  # G-S2: the position "at the end of the load", after every record
# the facts of its group each live offset carries (task_audit.KIND_ARROW's offset rows)
GROUP_FACTS = [
    ("group_type", pa.string()),
    ("protocol_type", pa.string()),
    ("state", pa.string()),
    ("generation", pa.int32()),
    ("current_state_timestamp_ms", pa.int64()),
    ("metadata_value_version", pa.int16()),
]

LOAD_FAILURES_SHOWN = 10  # per task; every one is in the load_failures table


def load_failure_columns(groups: pa.Table) -> dict[str, pa.Array]:
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


def group_counts(groups: pa.Table) -> str:
    """{"group_type/state": count} of the task's groups, as JSON."""
    names = pc.binary_join_element_wise(
        pc.fill_null(groups.column("group_type"), ""), pc.fill_null(groups.column("state"), ""), "/"
    )
    counts = pc.value_counts(names)
    pairs = zip(counts.field(0).to_pylist(), counts.field(1).to_pylist(), strict=True)
    return json.dumps(dict(sorted(pairs)))


def group_summary(keys: pa.Table) -> pa.Table:
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


def replay_groups(
    decoded: pa.Table,
    values: dict[int, Any],
    ok: np.ndarray,
    is_control: np.ndarray,
    record_type: np.ndarray,
    summary: pa.Table,
    coordinator: Coordinator,
    value_bytes: Callable[[np.ndarray], Any],
) -> pa.Table:
    """Replay every group's records in log order (replay.replay_group), offsets as one event.
    `value_bytes`: the raw value bytes of decoded rows (TaskRecords.value_bytes)."""
    # long: columns to Python lists once (no per-row Arrow access), then one loop over groups
    group_ids = decoded.column("group_id")
    has_group = ~is_control & as_bools(pc.is_valid(group_ids))
    is_event = ok & has_group & (record_type >= 2)
    # DEC-LIMIT: any record of the group over the readers' limits, decoded or not
    over_limit = has_group & as_bools(pc.is_valid(decoded.column("reader_limit")))
    over_limit &= coordinator.reads_modern_records
    rows = np.flatnonzero(is_event | over_limit)
    records = decoded.select(
        [
            "log_partition",
            "group_id",
            "log_offset",
            "is_tombstone",
            "member_id",
            "regular_expression",
            "value_version",
            "reader_limit",
        ]
    )
    records = take_rows(records, rows)
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
            one_array(records.column("log_partition")),
            one_array(summary.column("log_partition")),
        ]
    )
    groups = pa.concat_arrays(
        [one_array(records.column("group_id")), one_array(summary.column("group_id"))]
    )
    offsets = np.concatenate(
        [as_ints(records.column("log_offset"), -(2**63)), as_ints(position, -(2**63))]
    )
    has_offset = np.concatenate(
        [as_bools(pc.is_valid(records.column("log_offset"))), as_bools(pc.is_valid(position))]
    )
    n_records = len(rows)
    codes = group_codes(partitions, groups)
    order, spans = group_spans(codes, offsets)
    type_array = np.where(is_event[rows], record_type[rows], replay.READER_LIMIT)
    types = type_array.tolist()
    limits = records.column("reader_limit").to_pylist()
    tombstones = as_bools(records.column("is_tombstone")).tolist()
    members = records.column("member_id").to_pylist()
    regexes = records.column("regular_expression").to_pylist()
    value_versions = records.column("value_version").to_pylist()
    event_values = [
        values.get(i, replay.RawValue(i) if t in replay.RAW_VALUE_TYPES and not gone else None)
        for i, t, gone in zip(rows.tolist(), types, tombstones, strict=True)
    ]
    at = np.where(has_offset, offsets, None).tolist()  # None: no log offset
    partition_list = partitions.to_pylist()
    group_list = groups.to_pylist()
    if coordinator.reads_modern_records:
        _read_raw_values(event_values, type_array, codes[:n_records], value_bytes)
    # every event once, records first, then each group's offset summary (`order`'s indexes)
    all_events = [
        replay.Event(*fields)
        for fields in zip(
            at[:n_records], types, tombstones, members, regexes, event_values, value_versions,
            limits, strict=True,
        )
    ]  # fmt: skip
    all_events += [replay.Event(offset, replay.OFFSET_SUMMARY) for offset in at[n_records:]]
    order_list = order.tolist()
    replayed: list[replay.Replayed] = []
    classic_values: list[Any] = []  # of the classic groups, in `out`'s order
    classic_versions: list[int | None] = []

    def collected(value: Any, version: int | None) -> dict[str, Any]:
        classic_values.append(value)
        classic_versions.append(version)
        return {CLASSIC_ROW: True}

    event_at = all_events.__getitem__
    for start, end in spans:
        events = list(map(event_at, order_list[start:end]))
        first = order_list[start]
        replayed.append(
            replay.replay_steps(
                partition_list[first],
                group_list[first],
                events,
                coordinator=coordinator,
                classic_row=collected,
            )
        )
    # LOG-7 for every group at once: each group's updates, in order, after the ones before
    updates = [update for group in replayed for update in group.updates]
    claims = partition_claims.failed_claims(updates)
    firsts = np.cumsum([0, *(len(group.updates) for group in replayed)]).tolist()
    out = [
        group.finished(claims, first) for group, first in zip(replayed, firsts[:-1], strict=True)
    ]
    groups_table = _group_table(out, classic_values, classic_versions, value_bytes)
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


def _read_raw_values(
    values: list[Any], types: np.ndarray, groups: np.ndarray, value_bytes: Callable
) -> None:
    """Read in place, as columns (wire.layout_read), the values left raw (replay.RawValue) that
    the replay reads: every current assignment (LOG-7 claims each in turn: kept as columns,
    partition_claims.ReadAssignment), and the GroupMetadata of the groups (`groups`: their
    codes) that also have modern records (whether such a classic group is simple decides
    LOG-8). Measured (one 526k-record task of the 10M bench, 2 busy cores): the 7,973
    assignments took 0.55 CPU-s through the codec, 0.12 here as dicts, 0.05 kept as columns;
    this call 0.023 CPU-s picking them by type in numpy, 0.028 passing over the values per
    type."""
    modern = np.unique(groups[types >= 3])
    for record_type in sorted(replay.RAW_VALUE_TYPES):
        candidates = np.flatnonzero(types == record_type)
        if record_type == 2:
            candidates = candidates[np.isin(groups[candidates], modern)]
        at = [i for i in candidates.tolist() if isinstance(values[i], replay.RawValue)]
        if at:
            rows = np.array([values[i].row for i in at])
            read, _ = layout_read.record_values(record_type, value_bytes(rows))
            is_assignment = record_type == 8
            read_values = (
                partition_claims.ReadAssignment.of(read) if is_assignment else read.to_pylist()
            )
            for i, value in zip(at, read_values, strict=True):
                values[i] = value


CLASSIC_ROW = "_classic"  # a replayed row whose group columns `_group_table` builds


def _group_table(
    rows: list[dict[str, Any]],
    classic_values: list[Any],
    classic_versions: list[int | None],
    value_bytes: Callable[[np.ndarray], Any],
) -> pa.Table:
    """GROUP_STATE_ARROW of the replayed `rows`: the classic groups' (CLASSIC_ROW) built as
    columns from their last GroupMetadata values, in one go (group_rows.classic_group_rows):
    read from their bytes (replay.RawValue: wire.layout_read) or converted from the codec's
    dicts; the others' as they are: the classic groups first."""
    is_classic = np.array([CLASSIC_ROW in row for row in rows], dtype=bool)
    classic = [rows[i] for i in np.flatnonzero(is_classic)]
    own = ["log_partition", "group_id", "state_notes", "load_failures"]
    is_raw = np.array([isinstance(v, replay.RawValue) for v in classic_values], dtype=bool)
    raw_rows = np.array([v.row for v in classic_values if isinstance(v, replay.RawValue)], np.int64)
    read, read_versions = layout_read.record_values(2, value_bytes(raw_rows))
    dicts = [v for v in classic_values if not isinstance(v, replay.RawValue)]
    if dicts:  # values the codec decoded (the walk did not vouch for them): in their places
        versions = [v for v, raw in zip(classic_versions, is_raw.tolist(), strict=True) if not raw]
        position = np.concatenate([np.flatnonzero(is_raw), np.flatnonzero(~is_raw)])
        back = pa.array(np.argsort(position))
        read = pa.concat_arrays([read, pa.array(dicts, GROUP_METADATA)]).take(back)
        read_versions = pa.concat_arrays([read_versions, pa.array(versions, pa.int16())]).take(back)
    built = classic_group_rows(read, read_versions)
    for name in own:
        built = built.append_column(
            GROUP_STATE_ARROW.field(name), pa.array([row[name] for row in classic],
                                                    GROUP_STATE_ARROW.field(name).type)
        )  # fmt: skip
    others = pa.Table.from_pylist([rows[i] for i in np.flatnonzero(~is_classic)],
                                  schema=GROUP_STATE_ARROW)  # fmt: skip
    return pa.concat_tables(
        [built.select(GROUP_STATE_ARROW.names).cast(GROUP_STATE_ARROW), others]
    )  # rows by kind: nothing reads the groups' order


def live_offsets(keys: pa.Table, groups: pa.Table) -> tuple[pa.Table, int]:
    """Live offsets joined with their existing group (G-S3: the rest are orphaned)."""
    live = keys.filter(keys.column("has_committed_offset")).drop_columns(
        ["has_committed_offset", "last_value_offset", "log_timestamp_ms", "is_tombstone"]
    )
    existing = groups.filter(pc.not_equal(groups.column("state"), "Dead"))
    facts = existing.select(["log_partition", "group_id", *[n for n, _ in GROUP_FACTS]])
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
