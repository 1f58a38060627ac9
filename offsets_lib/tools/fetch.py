"""OffsetFetch (KIP-709) answered from one run's tables: read the groups, then decide.

The decisions are pure (`tools.fetch_rules`, one function per FETCH row); this module reads the
rows they need with delta-rs and pyarrow (`tools.run_tables`, no Spark: an operator's answer
takes well under a second).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from offsets_lib.tools.fetch_rules import (
    FetchRequest,
    GroupResult,
    GroupSnapshot,
    MemberEpoch,
    OffsetRow,
    decide_group,
    merge_requests,
    parse_group_spec,
)
from offsets_lib.tools.in_doubt import UNREAD_MARKER_COLUMNS, InDoubt
from offsets_lib.tools.run_tables import RunSnapshot, choose_group_rows, load_run, read_run_rows

_GROUP_COLUMNS = [
    "group_id",
    "group_type",
    "state",
    "has_pending_transactions",
    "offsets_partition",
]
_OFFSET_COLUMNS = [
    "group_id",
    "topic",
    "partition",
    "committed_offset",
    "leader_epoch",
    "metadata",
    "commit_timestamp",
    "has_pending_transaction",
    "offsets_partition",
    "topic_id",
]


def load_groups(run: RunSnapshot, group_ids: Sequence[str] | None) -> dict[str, GroupSnapshot]:
    """The groups as the run saw them, with their offsets, expirations and lag. Returns group id ->
    snapshot; a group id found on several offsets partitions is read from one
    (`run_tables.choose_group_rows`), its offsets from that partition only."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in read_run_rows(run, "groups", _GROUP_COLUMNS, group_ids):
        groups.setdefault(row["group_id"], []).append(row)
    chosen = {g: choose_group_rows(rows) for g, rows in groups.items()}
    offsets = _offset_rows(run, chosen)
    out = {}
    for g, (row, note) in chosen.items():
        assert row is not None
        out[g] = GroupSnapshot(
            group_id=g,
            group_type=row["group_type"],
            state=row["state"],
            has_pending_transactions=bool(row["has_pending_transactions"]),
            offsets=offsets[g],
            offsets_partition=row["offsets_partition"],
            note=note,
        )
    return out


_KEY = ["group_id", "topic", "partition", "offsets_partition"]


def _offset_rows(
    run: RunSnapshot, chosen: dict[str, tuple[dict[str, Any] | None, str | None]]
) -> dict[str, dict[tuple[str, int], OffsetRow]]:
    """The chosen groups' offsets joined with their decisions and lag, per group."""
    ids = list(chosen)
    key = _KEY
    decisions = {
        tuple(r[k] for k in key): r
        for r in read_run_rows(run, "offset_decisions", [*key, "expires_at", "expired"], ids)
    }
    lag = {}
    if run.has_lag:
        lag = {
            (r["group_id"], r["topic"], r["partition"]): r
            for r in read_run_rows(
                run, "lag", ["group_id", "topic", "partition", "log_end_offset", "lag"], ids
            )
        }
    offsets: dict[str, dict[tuple[str, int], OffsetRow]] = {g: {} for g in ids}
    for r in read_run_rows(run, "offsets", _OFFSET_COLUMNS, ids):
        row, _ = chosen[r["group_id"]]
        if row is None or r["offsets_partition"] != row["offsets_partition"]:
            continue
        decision = decisions.get(tuple(r[k] for k in key), {})
        lagged = lag.get((r["group_id"], r["topic"], r["partition"]), {})
        offsets[r["group_id"]][(r["topic"], r["partition"])] = OffsetRow(
            topic=r["topic"],
            partition=r["partition"],
            committed_offset=r["committed_offset"],
            leader_epoch=r["leader_epoch"],
            metadata=r["metadata"],
            commit_timestamp=r["commit_timestamp"],
            has_pending_transaction=bool(r["has_pending_transaction"]),
            expires_at=decision.get("expires_at"),
            expired=decision.get("expired"),
            log_end_offset=lagged.get("log_end_offset"),
            lag=lagged.get("lag"),
            topic_id=r["topic_id"],
        )
    return offsets


def _with_members(run: RunSnapshot, groups: dict[str, GroupSnapshot], requests) -> None:
    """Member epochs for groups whose request names a member (FETCH-MEMBER)."""
    wanted = [r.group_id for r in requests if r.member_id is not None and r.group_id in groups]
    if not wanted:
        return
    rows = read_run_rows(
        run,
        "members",
        ["group_id", "member_id", "member_epoch", "session_timeout_ms", "offsets_partition"],
        wanted,
    )
    for g in wanted:
        snap = groups[g]
        members = tuple(
            MemberEpoch(
                r["member_id"],
                r["member_epoch"],
                snap.group_type == "consumer" and r["session_timeout_ms"] is not None,
            )
            for r in rows
            if r["group_id"] == g and r["offsets_partition"] == snap.offsets_partition
        )
        groups[g] = GroupSnapshot(**{**snap.__dict__, "members": members})


def fetch_offsets(
    output: str,
    requests: Sequence[FetchRequest | str] | None,
    *,
    require_stable: bool = False,
    run_id: str | None = None,
    topic_ids: Mapping[str, str] | None = None,
) -> list[GroupResult]:
    """A batched OffsetFetch answered from one run's tables, as the broker would answer it: one
    result per requested group, in request order (NoRunError: no tables or no such run).

    ``requests``: FetchRequests or ``--group`` strings (``"g1:orders:0,1"``); None for every
    group of the run that exists (``--all-groups``). ``topic_ids``: topic name -> the id the
    string requests name it by (OffsetFetch v10+, FETCH-TOPICID).
    """
    run = load_run(output, run_id)
    if requests is None:
        groups = load_groups(run, None)
        reqs = [FetchRequest(g) for g in sorted(groups) if groups[g].state != "Dead"]
    else:
        reqs = _as_requests(run, requests)
        if topic_ids:
            reqs = [r if r.topic_ids else replace(r, topic_ids=dict(topic_ids)) for r in reqs]
        ids = sorted({r.group_id for r in reqs if r.group_id is not None})
        groups = load_groups(run, ids)
    _with_members(run, groups, reqs)
    asked = sorted({r.group_id for r in reqs if r.group_id is not None})
    in_doubt = InDoubt.of(read_run_rows(run, "unread_marker_offsets", UNREAD_MARKER_COLUMNS, asked))
    results = []
    for request in reqs:
        result = decide_group(
            request,
            groups.get(request.group_id) if request.group_id is not None else None,
            require_stable=require_stable,
        )
        result = replace(result, run_id=run.run_id, as_of=run.as_of)
        results.append(_with_doubt(result, in_doubt))
    return results


def _with_doubt(result: GroupResult, in_doubt: InDoubt) -> GroupResult:
    """The result with its offsets in doubt (TXN-MARKER-UNREAD): each answered partition's, and
    the group's list (a request for all topics lists only the offsets the run has)."""
    doubtful = in_doubt.of_group(result.group_id)
    if not doubtful:
        return result
    partitions = [
        replace(p, in_doubt_offset=in_doubt.offset(result.group_id, p.topic, p.partition))
        for p in result.partitions
    ]
    return replace(
        result,
        partitions=partitions,
        offsets_in_doubt=tuple(
            {"topic": t, "partition": p, "in_doubt_offset": o} for t, p, o in doubtful
        ),
        is_group_in_doubt=result.group_id in in_doubt.groups,
    )


def _as_requests(run: RunSnapshot, requests: Sequence[FetchRequest | str]) -> list[FetchRequest]:
    strings = [r for r in requests if isinstance(r, str)]
    known: list[str] = []
    if any(":" in s for s in strings):  # a group id may contain ':'; ask the tables
        candidates = list({s for s in strings} | {s.split(":")[0] for s in strings})
        known = [r["group_id"] for r in read_run_rows(run, "groups", ["group_id"], candidates)]
    specs = []
    given = []
    for r in requests:  # one request per group: plain FetchRequests merge with the strings
        if isinstance(r, str):
            specs.append(parse_group_spec(r, known_groups=known))
        elif r.member_id is not None or r.member_epoch is not None or r.group_id is None:
            given.append(r)
        elif r.topics is None:
            specs.append((r.group_id, None, None))
        elif r.topics:
            specs += [(r.group_id, t, parts) for t, parts in r.topics.items()]
        else:  # no topic asked
            given.append(r)
    return given + merge_requests(specs)
