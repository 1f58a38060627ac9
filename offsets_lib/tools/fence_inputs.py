"""What a fencing check reads and answers (semantics.md section 8): the commit request, the group
as the tables show it at as_of, and the decision; plus the request versions each coordinator
answers. `tools.fence` decides over these; `tools.fence_check` fills them from a run's tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from offsets_lib.audit.coordinator import Coordinator

ACCEPTED = "ACCEPTED"
UNDECIDED = "UNDECIDED"
TXN_GROUP_ID_NOT_FOUND_VERSION = 6  # TxnOffsetCommit v6+ (4.4.0): FEN-G3T, stale epochs as such

NEWEST_VERSIONS: dict[Coordinator, tuple[int, int]] = {
    Coordinator.NEW: (10, 6),  # Kafka 4.4.0
    Coordinator.CLASSIC_2_4: (8, 4),  # 3.9; its v9 (KIP-848) is the new coordinator's
    Coordinator.CLASSIC_2_4_0_TO_2_6_0: (8, 3),  # 2.5 (kafka-clients 2.5.1)
    Coordinator.CLASSIC_2_1: (7, 2),  # 2.3
    Coordinator.PRE_2_1: (4, 1),  # 2.0
}
"""(OffsetCommit, TxnOffsetCommit): the newest request versions each coordinator answers, as
its newest release does (the `validVersions` of OffsetCommitRequest.json and
TxnOffsetCommitRequest.json in kafka-clients 2.0, 2.3, 3.9 and 4.4.0)."""


def newest_version(coordinator: Coordinator, *, transactional: bool) -> int:
    """The newest OffsetCommit (or TxnOffsetCommit) version a coordinator answers. Returns the
    version (`NEWEST_VERSIONS`)."""
    return NEWEST_VERSIONS[coordinator][1 if transactional else 0]


@dataclass(frozen=True)
class CommitRequest:
    """One OffsetCommit (or TxnOffsetCommit) for one partition, as a client would send it.

    ``member_epoch`` is the generation id for classic groups. ``member_id`` "" means none.
    ``api_version`` is the request's version: OffsetCommit, or TxnOffsetCommit when
    ``transactional``; None = the newest the new coordinator speaks (:func:`newest_version`).
    ``metadata_length`` is the committed metadata's length in Java ``String.length()`` units.
    """

    group_id: str
    member_id: str
    member_epoch: int
    topic: str
    partition: int
    transactional: bool = False
    instance_id: str | None = None
    api_version: int | None = None
    metadata_length: int = 0

    @property
    def version(self) -> int:
        """The request's version, the newest the new coordinator speaks when not given."""
        if self.api_version is not None:
            return self.api_version
        return newest_version(Coordinator.NEW, transactional=self.transactional)

    @property
    def reports_group_id_not_found(self) -> bool:
        """An absent group or a stale epoch is said as such (GROUP_ID_NOT_FOUND,
        STALE_MEMBER_EPOCH): OffsetCommit v9+, TxnOffsetCommit v6+ (KIP-1319); older versions
        get ILLEGAL_GENERATION."""
        if self.transactional:
            return self.version >= TXN_GROUP_ID_NOT_FOUND_VERSION
        return self.version >= 9


@dataclass(frozen=True)
class PartitionEpoch:
    """One assigned (or pending-revocation) partition of a member (members table struct)."""

    topic: str | None
    topic_id: str | None
    partition: int
    assignment_epoch: int | None


@dataclass(frozen=True)
class FencingMember:
    member_id: str
    member_epoch: int | None
    instance_id: str | None = None
    uses_classic_protocol: bool = False  # a classic-protocol member inside a consumer group
    assigned: tuple[PartitionEpoch, ...] | None = ()  # None = unknown (unparsable assignment)
    pending_revocation: tuple[PartitionEpoch, ...] = ()


@dataclass(frozen=True)
class FencingGroup:
    """A group that exists at as_of (never Dead: a Dead group is absent, pass ``None``)."""

    group_id: str
    group_type: str
    state: str
    generation: int | None
    members: tuple[FencingMember, ...] = ()
    topic_ids: dict[str, frozenset[str]] = field(default_factory=dict)  # name -> known ids

    def member(self, member_id: str) -> FencingMember | None:
        """The member with this id, or None when the group has none."""
        return next((m for m in self.members if m.member_id == member_id), None)


@dataclass(frozen=True)
class Decision:
    outcome: str  # ACCEPTED, UNDECIDED or Kafka's error name
    rule: str  # FEN row id
    reason: str

    @property
    def accepted(self) -> bool:
        return self.outcome == ACCEPTED


def is_fenced(decision: Decision) -> bool | None:
    """Whether the broker answers the commit with an error. Returns True: an error; False: accepted;
    None: the tables cannot tell (UNDECIDED)."""
    if decision.outcome == UNDECIDED:
        return None
    return not decision.accepted
