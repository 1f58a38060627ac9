"""OffsetFetch (KIP-709, semantics.md section 7) as pure decisions: one function per FETCH row.

The inputs are small frozen dataclasses (`tools.fetch` fills them from one run's tables); no I/O
here. The tables hold what the log shows: ``offsets`` has one row per partition with a committed
offset, ``has_pending_transaction`` on those rows; a partition whose only offset is a pending
transactional one has no row there, only ``groups.has_pending_transactions`` says that such a
partition may exist. With ``require_stable`` such a partition is reported FETCH-NONE with a
``note`` saying the broker may answer UNSTABLE_OFFSET_COMMIT (see :func:`fetch_none`).
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

UNSTABLE = "UNSTABLE_OFFSET_COMMIT"


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
    # TXN-MARKER-UNREAD: the offset the broker shows if a COMMIT marker the run did not read
    # came after the offset's tombstone (tools.in_doubt); None: not in doubt
    in_doubt_offset: int | None = None


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
    # TXN-MARKER-UNREAD (tools.in_doubt): the group's offsets in doubt, answered or not
    # ({topic, partition, in_doubt_offset}), and whether its existence depends on one
    offsets_in_doubt: tuple[dict, ...] = ()
    is_group_in_doubt: bool = False


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
    """The first partition row that applies (FETCH-UNSTABLE, -NONE, -TOPICID, -OK).

    Args:
        group: the group (not absent, not Dead).
        topic, partition: the requested partition.
        require_stable: the request's RequireStable flag.
        topic_id: the id the request names the topic by (v10+); None for by name.
    """
    row = group.offsets.get((topic, partition))
    for rule in PARTITION_ROWS:
        result = rule(row, group, topic, partition, require_stable, topic_id)
        if result is not None:
            return replace(result, topic_id=topic_id)
    raise AssertionError("FETCH-OK/NONE cover every partition")


def decide_group(
    request: FetchRequest, group: GroupSnapshot | None, *, require_stable: bool = False
) -> GroupResult:
    """One group of a batched OffsetFetch, rows evaluated top to bottom (semantics.md 7). Returns
    the group-level answer (FETCH-NULLID, -NOGROUP, -MEMBER), else every requested partition's (all
    partitions with a committed offset when the request names no topic)."""
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

    Args:
        spec: the --group value.
        known_groups: group ids the run has (a spec equal to one is taken whole).

    Returns:
        (group, topic or None, partitions or None).

    Raises:
        ValueError: a spec ending in ':' (one line).
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
    """A topic id as Kafka prints it or as a UUID -> the UUID form the tables store.

    Args:
        text: 22 characters of URL-safe base64 (as `kafka-topics --describe` prints it), the
            same in standard base64 (confluent-kafka's `str(Uuid)`: `+` and `/` for `-` and
            `_`), or a UUID.

    Raises:
        ValueError: neither form (one line).
    """
    try:
        return str(uuid.UUID(text))
    except ValueError:
        pass
    if re.fullmatch(r"[A-Za-z0-9_-]{22}|[A-Za-z0-9+/]{22}", text):
        url_safe = text.replace("+", "-").replace("/", "_")
        return str(uuid.UUID(bytes=base64.urlsafe_b64decode(url_safe + "==")))
    raise ValueError(
        f"topic id {text!r}: expected Kafka's 22-character form (kafka-topics --describe) or a UUID"
    )


def merge_requests(specs: Sequence[tuple[str, str | None, tuple[int, ...] | None]]):
    """Several --group options for one group are one request (all topics wins). Returns one
    FetchRequest per group, in the order the groups first appear."""
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
