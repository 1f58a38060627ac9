"""OffsetFetch (KIP-709, semantics.md section 7) answered from the written Delta tables.

Two layers:

* pure decisions, one named function per FETCH row (``fetch_nullid`` ... ``fetch_ok``) and
  :func:`decide_group`, over small dataclasses (no I/O);
* :func:`load_run` / :func:`fetch_offsets`, which read one run's rows with delta-rs + pyarrow
  (no Spark: an operator's answer takes well under a second).

The tables hold what the log shows: ``offsets`` has one row per partition with a committed
offset, ``has_pending_transaction`` on those rows; a partition whose only offset is a pending
transactional one has no row there, only ``groups.has_pending_transactions`` says that such a
partition may exist. With ``require_stable`` such a partition is reported FETCH-NONE with a
``note`` saying the broker may answer UNSTABLE_OFFSET_COMMIT (see :func:`fetch_unstable`).
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

__all__ = [
    "FetchRequest",
    "GroupResult",
    "GroupSnapshot",
    "NoRunError",
    "OffsetRow",
    "PartitionResult",
    "RunSnapshot",
    "decide_group",
    "fetch_offsets",
    "load_run",
    "parse_group_spec",
    "parse_topic_id",
]

UNSTABLE = "UNSTABLE_OFFSET_COMMIT"


class NoRunError(RuntimeError):
    """The output has no tables, no successful run, or not the requested run (exit 3)."""


# ---- inputs and results ------------------------------------------------------------------------


@dataclass(frozen=True)
class FetchRequest:
    """One group of a batched OffsetFetch: ``topics`` None = all topics.

    ``topics`` maps a topic to its partition indexes, or to None = every partition of that topic
    with a committed offset (a CLI convenience; Kafka's request always lists the partitions).
    ``member_id``/``member_epoch`` are the optional KIP-848 member fields (FETCH-MEMBER).
    ``topic_ids`` maps a listed topic to the id the request names it by (OffsetFetch v10+,
    FETCH-TOPICID); a topic not in it is named by name.
    """

    group_id: str | None
    topics: Mapping[str, tuple[int, ...] | None] | None = None
    member_id: str | None = None
    member_epoch: int | None = None
    topic_ids: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class OffsetRow:
    """A row of `offsets` joined with `offset_decisions` and `lag` (those may be missing)."""

    topic: str
    partition: int
    committed_offset: int
    leader_epoch: int | None = None
    metadata: str | None = ""
    commit_timestamp: datetime | None = None
    has_pending_transaction: bool = False
    expires_at: datetime | None = None
    expired: bool | None = None
    log_end_offset: int | None = None
    lag: int | None = None
    topic_id: str | None = None  # stored with the offset (OffsetCommitValue v4+), UUID form


@dataclass(frozen=True)
class MemberEpoch:
    member_id: str
    member_epoch: int | None
    uses_classic_protocol: bool = False


@dataclass(frozen=True)
class GroupSnapshot:
    """One group as the run saw it (state Dead = absent)."""

    group_id: str
    group_type: str
    state: str
    has_pending_transactions: bool = False
    offsets: Mapping[tuple[str, int], OffsetRow] = field(default_factory=dict)
    members: tuple[MemberEpoch, ...] = ()
    offsets_partition: int | None = None
    note: str | None = None


@dataclass(frozen=True)
class PartitionResult:
    topic: str
    partition: int
    committed_offset: int  # -1 = none
    leader_epoch: int  # -1 = none
    metadata: str
    error: str | None
    rule: str
    last_commit: datetime | None = None
    expires_at: datetime | None = None
    expired: bool | None = None
    log_end_offset: int | None = None
    lag: int | None = None
    note: str | None = None
    topic_id: str | None = None  # the id the request named the topic by (v10+), UUID form


@dataclass(frozen=True)
class GroupResult:
    group_id: str | None
    error: str | None  # group-level error (None = no error)
    rule: str  # FETCH row that decided the group (FETCH-NULLID/NOGROUP/MEMBER), else FETCH-OK
    partitions: list[PartitionResult]
    group_type: str | None = None
    state: str | None = None
    run_id: str | None = None
    as_of: datetime | None = None
    note: str | None = None


# ---- the FETCH rows --------------------------------------------------------------------------


def fetch_nullid(request: FetchRequest) -> GroupResult | None:
    """FETCH-NULLID: group id null -> group error INVALID_GROUP_ID ("" is a valid id)."""
    if request.group_id is None:
        return GroupResult(None, "INVALID_GROUP_ID", "FETCH-NULLID", [])
    return None


def _none_result(topic: str, partition: int, rule: str, note: str | None = None):
    return PartitionResult(topic, partition, -1, -1, "", None, rule, note=note)


def fetch_nogroup(request: FetchRequest, group: GroupSnapshot | None) -> GroupResult | None:
    """FETCH-NOGROUP: absent, Dead or share group -> -1 per requested partition, no error."""
    if group is not None and group.state != "Dead" and group.group_type != "share":
        return None
    partitions = [
        _none_result(t, p, "FETCH-NOGROUP")
        for t, parts in sorted((request.topics or {}).items())
        for p in sorted(parts or ())
    ]
    return GroupResult(
        request.group_id,
        None,
        "FETCH-NOGROUP",
        partitions,
        group_type=group.group_type if group else None,
        state=group.state if group else None,
    )


def fetch_member(request: FetchRequest, group: GroupSnapshot) -> GroupResult | None:
    """FETCH-MEMBER: modern group, member id/epoch given: unknown member or stale epoch."""
    if group.group_type not in ("consumer", "streams") or request.member_id is None:
        return None
    member = next((m for m in group.members if m.member_id == request.member_id), None)
    error = None
    if member is None:
        error = "UNKNOWN_MEMBER_ID"
    elif request.member_epoch is not None and request.member_epoch != member.member_epoch:
        error = "ILLEGAL_GENERATION" if member.uses_classic_protocol else "STALE_MEMBER_EPOCH"
    if error is None:
        return None
    return GroupResult(request.group_id, error, "FETCH-MEMBER", [], group.group_type, group.state)


def fetch_unstable(
    row: OffsetRow | None,
    group: GroupSnapshot,
    topic: str,
    partition: int,
    require_stable: bool,
    topic_id: str | None = None,
) -> PartitionResult | None:
    """FETCH-UNSTABLE: require_stable and a pending transactional offset -> UNSTABLE, -1."""
    if require_stable and row is not None and row.has_pending_transaction:
        return PartitionResult(topic, partition, -1, -1, "", UNSTABLE, "FETCH-UNSTABLE")
    return None


def fetch_none(
    row: OffsetRow | None,
    group: GroupSnapshot,
    topic: str,
    partition: int,
    require_stable: bool,
    topic_id: str | None = None,
) -> PartitionResult | None:
    """FETCH-NONE: no committed offset -> -1, leader epoch -1, metadata ""."""
    if row is not None:
        return None
    note = None
    if require_stable and group.has_pending_transactions:
        note = (
            "the group has pending transactional offsets and the tables list them only for "
            "partitions with a committed offset: the broker may answer UNSTABLE_OFFSET_COMMIT"
        )
    return _none_result(topic, partition, "FETCH-NONE", note)


def fetch_topicid(
    row: OffsetRow | None,
    group: GroupSnapshot,
    topic: str,
    partition: int,
    require_stable: bool,
    topic_id: str | None = None,
) -> PartitionResult | None:
    """FETCH-TOPICID: the request names the topic by an id (v10+) and the offset was stored with
    another one (a topic deleted and re-created under the same name) -> as FETCH-NONE. An
    offset stored without an id (value v0-v3) matches any id."""
    if row is None or topic_id is None or row.topic_id is None or row.topic_id == topic_id:
        return None
    note = (
        f"the offset was committed for topic id {row.topic_id}, not {topic_id}: the topic was "
        "deleted and re-created since"
    )
    return _none_result(topic, partition, "FETCH-TOPICID", note)


def fetch_ok(
    row: OffsetRow | None,
    group: GroupSnapshot,
    topic: str,
    partition: int,
    require_stable: bool,
    topic_id: str | None = None,
) -> PartitionResult | None:
    """FETCH-OK: the committed offset, its leader epoch (-1 if absent) and metadata."""
    if row is None:
        return None
    return PartitionResult(
        topic,
        partition,
        row.committed_offset,
        -1 if row.leader_epoch is None else row.leader_epoch,
        row.metadata or "",
        None,
        "FETCH-OK",
        last_commit=row.commit_timestamp,
        expires_at=row.expires_at,
        expired=row.expired,
        log_end_offset=row.log_end_offset,
        lag=row.lag,
    )


PARTITION_ROWS = (fetch_unstable, fetch_none, fetch_topicid, fetch_ok)


def decide_partition(
    group: GroupSnapshot,
    topic: str,
    partition: int,
    *,
    require_stable: bool,
    topic_id: str | None = None,
) -> PartitionResult:
    """The first partition row that applies; `topic_id`: the id the request names the topic by
    (None: by name)."""
    row = group.offsets.get((topic, partition))
    for rule in PARTITION_ROWS:
        result = rule(row, group, topic, partition, require_stable, topic_id)
        if result is not None:
            return replace(result, topic_id=topic_id)
    raise AssertionError("FETCH-OK/NONE cover every partition")


def decide_group(
    request: FetchRequest, group: GroupSnapshot | None, *, require_stable: bool = False
) -> GroupResult:
    """One group of a batched OffsetFetch, rows evaluated top to bottom (semantics.md 7)."""
    decided = fetch_nullid(request) or fetch_nogroup(request, group)
    if decided is not None:
        return decided
    assert group is not None
    decided = fetch_member(request, group)
    if decided is not None:
        return decided
    if request.topics is None:  # all topics: only partitions with a committed offset
        wanted = sorted(group.offsets)
    else:
        wanted = []
        for topic, parts in sorted(request.topics.items()):
            if parts is None:
                wanted += sorted(k for k in group.offsets if k[0] == topic)
            else:
                wanted += [(topic, p) for p in sorted(set(parts))]
    # a request for all topics names none, by id or by name
    ids = request.topic_ids if request.topics is not None else {}
    partitions = [
        decide_partition(group, t, p, require_stable=require_stable, topic_id=ids.get(t))
        for t, p in wanted
    ]
    return GroupResult(
        request.group_id,
        None,
        "FETCH-OK",
        partitions,
        group.group_type,
        group.state,
        note=group.note,
    )


# ---- --group G[:TOPIC[:P,P..]] ------------------------------------------------------------------

_TOPIC = r"[A-Za-z0-9._-]+"


def parse_group_spec(
    spec: str, *, known_groups: Iterable[str] = ()
) -> tuple[str, str | None, tuple[int, ...] | None]:
    """``G``, ``G:TOPIC`` or ``G:TOPIC:P,P..`` -> (group, topic or None, partitions or None).

    Topic names cannot contain ':', group ids can: a spec that is itself a known group id is
    that group; otherwise the topic and partitions are split off from the right.
    """
    if spec in set(known_groups):
        return spec, None, None
    match = re.fullmatch(rf"(.*):({_TOPIC}):([0-9]+(?:,[0-9]+)*)", spec)
    if match:
        parts = tuple(int(p) for p in match.group(3).split(","))
        return match.group(1), match.group(2), parts
    match = re.fullmatch(rf"(.*):({_TOPIC})", spec)
    if match:
        return match.group(1), match.group(2), None
    if spec.endswith(":"):
        raise ValueError(f"--group {spec!r}: expected G, G:TOPIC or G:TOPIC:P,P..")
    return spec, None, None


def parse_topic_id(text: str) -> str:
    """A topic id as Kafka prints it (22 characters of URL-safe base64, e.g. in
    `kafka-topics --describe`) or as a UUID -> the UUID form the tables store. ValueError with
    one line otherwise."""
    try:
        return str(uuid.UUID(text))
    except ValueError:
        pass
    if re.fullmatch(r"[A-Za-z0-9_-]{22}", text):
        return str(uuid.UUID(bytes=base64.urlsafe_b64decode(text + "==")))
    raise ValueError(
        f"topic id {text!r}: expected Kafka's 22-character form (kafka-topics --describe) or a UUID"
    )


def merge_requests(specs: Sequence[tuple[str, str | None, tuple[int, ...] | None]]):
    """Several --group options for one group are one request (all topics wins)."""
    merged: dict[str, dict[str, set[int] | None] | None] = {}
    for group, topic, parts in specs:
        if topic is None:
            merged[group] = None
            continue
        if group in merged and merged[group] is None:
            continue
        topics = merged.setdefault(group, {})
        assert topics is not None
        if parts is None or (topic in topics and topics[topic] is None):
            topics[topic] = None
        else:
            topics.setdefault(topic, set()).update(parts)  # type: ignore[union-attr]
    return [
        FetchRequest(
            g,
            None
            if t is None
            else {k: None if v is None else tuple(sorted(v)) for k, v in t.items()},
        )
        for g, t in merged.items()
    ]


# ---- reading one run ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSnapshot:
    output: str
    run_id: str
    as_of: datetime | None
    finished_at: datetime | None
    has_lag: bool


def _delta_dataset(output: str, name: str):
    """A table's current files (None when it does not exist), filtered on the rows themselves:
    no answer depends on the table's Delta stats (`storage.delta_dataset`)."""
    from offsets_lib.io import storage

    uri = storage.table_uri(output, name)
    if not storage.is_delta_table(uri):
        return None
    return storage.delta_dataset(uri)


def load_run(output: str, run_id: str | None = None) -> RunSnapshot:
    """The latest succeeded run (`io.runs.latest_run`), or ``run_id``; NoRunError otherwise."""
    import pyarrow.compute as pc

    from offsets_lib.io import runs

    try:
        rows = runs.read_runs(output)
        if run_id is None:
            row = runs.latest_run(output, rows)
    except LookupError as exc:
        raise NoRunError(str(exc)) from None
    if run_id is not None:
        named = [r for r in rows if r["run_id"] == run_id]
        if not named:
            raise NoRunError(f"run {run_id!r} not found in {output}/runs")
        if named[0]["status"] != "succeeded":
            raise NoRunError(f"run {run_id!r} in {output}/runs has status {named[0]['status']!r}")
        row = named[0]
    lag = _delta_dataset(output, "lag")
    has_lag = lag is not None and lag.count_rows(filter=pc.field("run_id") == row["run_id"]) > 0
    return RunSnapshot(output, row["run_id"], row["as_of"], row["finished_at"], has_lag)


def read_run_rows(
    run: RunSnapshot, name: str, columns: list[str], group_ids: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """One run's rows of a table (optionally for some groups only) as dicts."""
    import pyarrow as pa
    import pyarrow.compute as pc

    dataset = _delta_dataset(run.output, name)
    if dataset is None or (group_ids is not None and not group_ids):
        return []
    condition = pc.field("run_id") == run.run_id
    if group_ids is not None:  # typed: isin([]) of a string column raises ArrowTypeError
        condition &= pc.field("group_id").isin(pa.array(list(group_ids), pa.string()))
    return dataset.to_table(columns=columns, filter=condition).to_pylist()


def choose_group_rows(rows: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, str | None]:
    """A group id on several __consumer_offsets partitions (only in merged dumps): pick one.

    Prefer a group that exists (not Dead), then the lowest partition; say so in a note.
    """
    if not rows:
        return None, None
    ordered = sorted(
        rows,
        key=lambda r: (
            r["state"] == "Dead",
            r.get("offsets_partition") is None,
            r.get("offsets_partition") or 0,
        ),
    )
    live = [r for r in rows if r["state"] != "Dead"]
    note = None
    if len(live) > 1:
        parts = sorted(r.get("offsets_partition") for r in live)
        note = (
            f"group found on __consumer_offsets partitions {parts}; using "
            f"{ordered[0].get('offsets_partition')}"
        )
    return ordered[0], note


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
    """GroupSnapshots of the run for ``group_ids`` (None = every group)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in read_run_rows(run, "groups", _GROUP_COLUMNS, group_ids):
        groups.setdefault(row["group_id"], []).append(row)
    chosen = {g: choose_group_rows(rows) for g, rows in groups.items()}
    ids = list(chosen)
    key = ["group_id", "topic", "partition", "offsets_partition"]
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
    """Batched OffsetFetch on the tables of the latest successful run (or ``run_id``).

    ``requests``: FetchRequests, or ``--group`` style strings (``"g1"``, ``"g1:orders:0,1"``);
    None = every group of the run that exists (like ``--all-groups``). ``topic_ids``: topic
    name -> the id (UUID form) the string requests name it by (OffsetFetch v10+). Raises
    NoRunError.
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
    results = []
    for request in reqs:
        result = decide_group(
            request,
            groups.get(request.group_id) if request.group_id is not None else None,
            require_stable=require_stable,
        )
        results.append(GroupResult(**{**result.__dict__, "run_id": run.run_id, "as_of": run.as_of}))
    return results


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
