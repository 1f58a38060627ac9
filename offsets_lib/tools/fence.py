"""Offset-commit fencing (semantics.md section 8): one named decision function per FEN row.

Pure functions, no I/O: the inputs are small frozen dataclasses (`tools.fence_inputs`) that
`tools.fence_check` builds from the `groups` and `members` tables. Each ``fen_*`` function
returns a `Decision` when its row is the first one that matches (rows are evaluated top to
bottom, as the tables list them) and ``None`` otherwise. :func:`decide_strict` chains the rows
of the strict rule (3.7 - 4.2: client epoch == broker epoch) and :func:`decide_relaxed` those of
the relaxed rule (KAFKA-19779 / KIP-1251: assignment epoch <= client epoch <= broker epoch, per
partition).

Versions matter where the broker answers the same check with different errors: FEN-G2 (an absent
group, OffsetCommit v9+) and FEN-G3T / the stale-epoch rows (TxnOffsetCommit v6+, Kafka 4.4.0,
KIP-1319). A request without a version is the newest the new coordinator speaks
(`fence_inputs.NEWEST_VERSIONS`).

What the log cannot tell is said, never guessed: the result is then ``UNDECIDED`` with the
reason (e.g. a streams group's task -> topic mapping, an assignment whose topic names are
unknown). Classic groups read from the log are Empty or Stable only, so FEN-C8
(CompletingRebalance) is never chosen from the tables; the function exists for completeness.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from offsets_lib.tools.fence_inputs import (
    ACCEPTED,
    UNDECIDED,
    CommitRequest,
    Decision,
    FencingGroup,
    FencingMember,
    PartitionEpoch,
)

METADATA_MAX_BYTES = 4096  # offset.metadata.max.bytes default
CLASSIC, CONSUMER, STREAMS, SHARE = "classic", "consumer", "streams", "share"


Row = Callable[[FencingGroup | None, CommitRequest], Decision | None]


def _d(outcome: str, rule: str, reason: str) -> Decision:
    return Decision(outcome, rule, reason)


def _has_member_data(req: CommitRequest) -> bool:
    return req.member_epoch >= 0 or req.member_id != "" or req.instance_id is not None


# ---- 8.1 group lookup ------------------------------------------------------------------------


def fen_g1(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-G1: group absent, epoch < 0 -> a simple classic group is created; accepted."""
    if group is None and req.member_epoch < 0:
        return _d(ACCEPTED, "FEN-G1", "group absent; the commit creates a simple classic group")
    return None


def fen_g2(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-G2: group absent, epoch >= 0, OffsetCommit v9+ -> GROUP_ID_NOT_FOUND."""
    if (
        group is None
        and req.member_epoch >= 0
        and not req.transactional
        and req.reports_group_id_not_found
    ):
        return _d("GROUP_ID_NOT_FOUND", "FEN-G2", "group absent and the request carries an epoch")
    return None


def fen_g3t(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-G3T: group absent, epoch >= 0, TxnOffsetCommit v6+ (4.4.0) -> GROUP_ID_NOT_FOUND."""
    if (
        group is None
        and req.member_epoch >= 0
        and req.transactional
        and req.reports_group_id_not_found
    ):
        return _d(
            "GROUP_ID_NOT_FOUND",
            "FEN-G3T",
            f"group absent and the TxnOffsetCommit v{req.version} carries an epoch",
        )
    return None


def fen_g3(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-G3: group absent, epoch >= 0, OffsetCommit v0-v8 or TxnOffsetCommit v0-v5."""
    if group is None and req.member_epoch >= 0:
        kind = "TxnOffsetCommit" if req.transactional else "OffsetCommit"
        return _d(
            "ILLEGAL_GENERATION",
            "FEN-G3",
            f"group absent and the {kind} v{req.version} carries an epoch",
        )
    return None


def fen_g4(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-G4: share group -> GROUP_ID_NOT_FOUND."""
    if group is not None and group.group_type == SHARE:
        return _d("GROUP_ID_NOT_FOUND", "FEN-G4", "share groups do not take offset commits")
    return None


def fen_g5(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-G5: metadata longer than offset.metadata.max.bytes -> OFFSET_METADATA_TOO_LARGE.

    Checked per partition after the group/member validation accepted the request.
    """
    if req.metadata_length > METADATA_MAX_BYTES:
        return _d(
            "OFFSET_METADATA_TOO_LARGE",
            "FEN-G5",
            f"metadata of {req.metadata_length} > {METADATA_MAX_BYTES} characters",
        )
    return None


# ---- 8.2 classic groups (the member "epoch" is the generation) ------------------------------


def fen_c1(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-C1: classic group Dead -> COORDINATOR_NOT_AVAILABLE (never from the tables)."""
    if group is not None and group.state == "Dead":
        return _d("COORDINATOR_NOT_AVAILABLE", "FEN-C1", "classic group is Dead")
    return None


def fen_c2(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-C2: generation < 0 and group Empty -> accepted (admin tools, manual assignment)."""
    if group is not None and req.member_epoch < 0 and group.state == "Empty":
        return _d(ACCEPTED, "FEN-C2", "generation < 0 and the group is Empty")
    return None


def fen_c3(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-C3: member data given, instance id unknown -> UNKNOWN_MEMBER_ID."""
    if group is None or not _has_member_data(req) or req.instance_id is None:
        return None
    if not any(m.instance_id == req.instance_id for m in group.members):
        return _d("UNKNOWN_MEMBER_ID", "FEN-C3", f"instance id {req.instance_id!r} unknown")
    return None


def fen_c4(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-C4: instance id mapped to another member id -> FENCED_INSTANCE_ID."""
    if group is None or not _has_member_data(req) or req.instance_id is None:
        return None
    owner = next((m for m in group.members if m.instance_id == req.instance_id), None)
    if owner is not None and owner.member_id != req.member_id:
        return _d(
            "FENCED_INSTANCE_ID",
            "FEN-C4",
            f"instance id {req.instance_id!r} belongs to member {owner.member_id!r}",
        )
    return None


def fen_c5(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-C5: member data given (no instance id), member id not in the group."""
    if group is None or not _has_member_data(req) or req.instance_id is not None:
        return None
    if group.member(req.member_id) is None:
        return _d("UNKNOWN_MEMBER_ID", "FEN-C5", f"member {req.member_id!r} not in the group")
    return None


def fen_c6(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-C6: member data given, generation != group generation -> ILLEGAL_GENERATION."""
    if group is not None and _has_member_data(req) and req.member_epoch != group.generation:
        return _d(
            "ILLEGAL_GENERATION",
            "FEN-C6",
            f"generation {req.member_epoch} != group generation {group.generation}",
        )
    return None


def fen_c7(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-C7: no member data, non-transactional, group not Empty -> UNKNOWN_MEMBER_ID."""
    if (
        group is not None
        and not _has_member_data(req)
        and not req.transactional
        and group.state != "Empty"
    ):
        return _d("UNKNOWN_MEMBER_ID", "FEN-C7", f"no member data and the group is {group.state}")
    return None


def fen_c8(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-C8: non-transactional, group CompletingRebalance -> REBALANCE_IN_PROGRESS."""
    if group is not None and not req.transactional and group.state == "CompletingRebalance":
        return _d("REBALANCE_IN_PROGRESS", "FEN-C8", "group is CompletingRebalance")
    return None


def fen_c9(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-C9: otherwise accepted."""
    if group is None:
        return None
    note = " (the log cannot show CompletingRebalance, FEN-C8)" if group.state == "Stable" else ""
    return _d(ACCEPTED, "FEN-C9", f"member and generation match{note}")


# ---- 8.3 consumer/streams groups, strict rule --------------------------------------------------


def _stale(req: CommitRequest, member: FencingMember) -> str:
    """A stale epoch: classic-protocol members and TxnOffsetCommit v0-v5 get
    ILLEGAL_GENERATION; consumer-protocol members otherwise STALE_MEMBER_EPOCH (FEN-M5)."""
    if member.uses_classic_protocol or (req.transactional and not req.reports_group_id_not_found):
        return "ILLEGAL_GENERATION"
    return "STALE_MEMBER_EPOCH"


def fen_m1(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-M1: member epoch < 0 and the group has no members -> accepted."""
    if group is not None and req.member_epoch < 0 and not group.members:
        return _d(ACCEPTED, "FEN-M1", "epoch < 0 and the group has no members")
    return None


def fen_m2(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-M2: transactional, epoch -1, member id "", no instance id -> accepted."""
    if (
        group is not None
        and req.transactional
        and req.member_epoch == -1
        and req.member_id == ""
        and req.instance_id is None
    ):
        return _d(ACCEPTED, "FEN-M2", "TxnOffsetCommit without member data")
    return None


def fen_m3(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-M3: member id unknown -> UNKNOWN_MEMBER_ID."""
    if group is not None and group.member(req.member_id) is None:
        return _d("UNKNOWN_MEMBER_ID", "FEN-M3", f"member {req.member_id!r} not in the group")
    return None


def fen_m4(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-M4: non-transactional, consumer-protocol member, OffsetCommit < v9 -> UNSUPPORTED."""
    if group is None or group.group_type != CONSUMER or req.transactional:
        return None
    member = group.member(req.member_id)
    if member is not None and not member.uses_classic_protocol and req.version < 9:
        return _d(
            "UNSUPPORTED_VERSION",
            "FEN-M4",
            f"consumer-protocol member committing with OffsetCommit v{req.version} (< 9)",
        )
    return None


def fen_m5(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-M5: request epoch != broker's member epoch -> STALE_MEMBER_EPOCH/ILLEGAL_GENERATION."""
    member = group.member(req.member_id) if group is not None else None
    if member is not None and req.member_epoch != member.member_epoch:
        return _d(
            _stale(req, member),
            "FEN-M5",
            f"epoch {req.member_epoch} != broker member epoch {member.member_epoch}",
        )
    return None


def fen_m6(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-M6: otherwise accepted."""
    if group is not None and group.member(req.member_id) is not None:
        return _d(ACCEPTED, "FEN-M6", "epoch equals the broker member epoch")
    return None


# ---- 8.4 relaxed rule ("assignment epochs") ----------------------------------------------------

FOUND, NOT_FOUND, UNKNOWN = "found", "not found", "unknown"


def find_assignment(
    member: FencingMember,
    topic: str,
    partition: int,
    *,
    topic_ids: Iterable[str] = (),
    group_type: str = CONSUMER,
) -> tuple[str, PartitionEpoch | None, str]:
    """Look the partition up among assigned partitions, else partitions pending revocation.

    Args:
        member: the member whose assignment is searched.
        topic: the committed topic, matched against an entry's topic name or topic id.
        topic_ids: further ids known for that name (from OffsetCommit v4+ values).
        group_type: the group's type; a streams group's entries are tasks, not partitions.

    Returns:
        (FOUND, NOT_FOUND or UNKNOWN, the entry or None, why). UNKNOWN when the tables cannot
        tell: assignment unknown, entries with the same partition whose topic name is unknown,
        or a streams group.
    """
    if group_type == STREAMS:
        return UNKNOWN, None, "streams assignments are tasks; the task -> topic map is not stored"
    if member.assigned is None:
        return UNKNOWN, None, "the member's assignment is unknown"
    ids = {topic, *topic_ids}
    unnamed = False
    for entries in (member.assigned, member.pending_revocation):
        for entry in entries:
            if entry.partition != partition:
                continue
            if entry.topic == topic or (entry.topic_id is not None and entry.topic_id in ids):
                return FOUND, entry, ""
            if entry.topic is None:
                unnamed = True
        if unnamed:  # an unnamed entry might be the partition: the fallback list cannot decide
            break
    if unnamed:
        return UNKNOWN, None, f"topic name of an assigned partition {partition} is unknown"
    return NOT_FOUND, None, ""


def _effective_epoch(entry: PartitionEpoch, member: FencingMember) -> int:
    """KIP-1251 assignment epoch; records without one use the member epoch (never below 0)."""
    if entry.assignment_epoch is not None:
        return entry.assignment_epoch
    return max(member.member_epoch or 0, 0)


def fen_r1(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-R1: request epoch == broker member epoch -> accepted for all partitions."""
    member = group.member(req.member_id) if group is not None else None
    if member is not None and req.member_epoch == member.member_epoch:
        return _d(ACCEPTED, "FEN-R1", "epoch equals the broker member epoch")
    return None


def fen_r2(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-R2: request epoch > broker member epoch -> STALE_MEMBER_EPOCH."""
    member = group.member(req.member_id) if group is not None else None
    if member is not None and req.member_epoch > (member.member_epoch or 0):
        return _d(
            _stale(req, member),
            "FEN-R2",
            f"epoch {req.member_epoch} > broker member epoch {member.member_epoch}",
        )
    return None


def _lookup(group: FencingGroup, req: CommitRequest):
    member = group.member(req.member_id)
    assert member is not None
    return member, find_assignment(
        member,
        req.topic,
        req.partition,
        topic_ids=group.topic_ids.get(req.topic, frozenset()),
        group_type=group.group_type,
    )


def fen_r3(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-R3: epoch < broker epoch and the partition is neither assigned nor pending revocation.

    Returns UNDECIDED (rule FEN-R3) when the tables cannot tell whether it is assigned.
    """
    if group is None or group.member(req.member_id) is None:
        return None
    member, (status, _, why) = _lookup(group, req)
    if status == NOT_FOUND:
        return _d(
            _stale(req, member),
            "FEN-R3",
            f"{req.topic}-{req.partition} is neither assigned to nor pending revocation from "
            f"member {req.member_id!r}",
        )
    if status == UNKNOWN:
        return _d(UNDECIDED, "FEN-R3", f"cannot tell whether the partition is assigned: {why}")
    return None


def fen_r4(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-R4: found, request epoch < the partition's assignment epoch -> STALE_MEMBER_EPOCH."""
    if group is None or group.member(req.member_id) is None:
        return None
    member, (status, entry, _) = _lookup(group, req)
    if status == FOUND and entry is not None and req.member_epoch < _effective_epoch(entry, member):
        return _d(
            _stale(req, member),
            "FEN-R4",
            f"epoch {req.member_epoch} < assignment epoch {_effective_epoch(entry, member)} of "
            f"{req.topic}-{req.partition}",
        )
    return None


def fen_r5(group: FencingGroup | None, req: CommitRequest) -> Decision | None:
    """FEN-R5: found, assignment epoch <= request epoch (< broker epoch) -> accepted."""
    if group is None or group.member(req.member_id) is None:
        return None
    member, (status, entry, _) = _lookup(group, req)
    if status == FOUND and entry is not None:
        return _d(
            ACCEPTED,
            "FEN-R5",
            f"assignment epoch {_effective_epoch(entry, member)} <= epoch {req.member_epoch} < "
            f"broker member epoch {member.member_epoch}",
        )
    return None


# ---- chains ------------------------------------------------------------------------------------

GROUP_LOOKUP: tuple[Row, ...] = (fen_g1, fen_g2, fen_g3t, fen_g3, fen_g4)
CLASSIC_ROWS: tuple[Row, ...] = (fen_c1, fen_c2, fen_c3, fen_c4, fen_c5, fen_c6, fen_c7, fen_c8)
CLASSIC_ROWS_ALL: tuple[Row, ...] = (*CLASSIC_ROWS, fen_c9)
MODERN_PREFIX: tuple[Row, ...] = (fen_m1, fen_m2, fen_m3, fen_m4)
STRICT_ROWS: tuple[Row, ...] = (*MODERN_PREFIX, fen_m5, fen_m6)
RELAXED_ROWS: tuple[Row, ...] = (*MODERN_PREFIX, fen_r1, fen_r2, fen_r3, fen_r4, fen_r5)


def _first(rows: Iterable[Row], group: FencingGroup | None, req: CommitRequest) -> Decision:
    for row in rows:
        decision = row(group, req)
        if decision is not None:
            return decision
    raise AssertionError("decision table has no matching row")  # every chain ends in a catch-all


def _decide(group: FencingGroup | None, req: CommitRequest, modern_rows: tuple[Row, ...]):
    if group is None or group.group_type == SHARE:
        decision = _first(GROUP_LOOKUP, group, req)
    elif group.group_type == CLASSIC:
        decision = _first(CLASSIC_ROWS_ALL, group, req)
    else:
        decision = _first(modern_rows, group, req)
    if decision.accepted:
        return fen_g5(group, req) or decision
    return decision


def decide_strict(group: FencingGroup | None, req: CommitRequest) -> Decision:
    """Strict rule (Kafka 3.7 - 4.2): the client's member epoch must equal the broker's. Returns the
    first row of the chain that matches, then FEN-G5's size check if it was accepted."""
    return _decide(group, req, STRICT_ROWS)


def decide_relaxed(group: FencingGroup | None, req: CommitRequest) -> Decision:
    """Relaxed rule (KIP-1251 / KAFKA-19779): assignment epoch <= epoch <= broker epoch.

    Classic-protocol members of consumer groups keep the strict check (semantics.md 11.9). Returns
    the first row of the chain that matches, then FEN-G5's size check if it was accepted."""
    member = group.member(req.member_id) if group is not None else None
    if member is not None and member.uses_classic_protocol:
        return _decide(group, req, STRICT_ROWS)
    return _decide(group, req, RELAXED_ROWS)
