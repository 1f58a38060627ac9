"""Offset-commit fencing (semantics.md section 8): every FEN row, strict and relaxed chains."""

from __future__ import annotations

import pytest

from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.tools import fence
from offsets_lib.tools.fence import decide_relaxed, decide_strict
from offsets_lib.tools.fence_inputs import (
    ACCEPTED,
    UNDECIDED,
    CommitRequest,
    FencingGroup,
    FencingMember,
    PartitionEpoch,
    is_fenced,
    newest_version,
)

ORDERS_ID = "3f1c9a2e-5b7d-4e10-9a3b-0c2d4e6f8a01"


def req(**kw) -> CommitRequest:
    base = {
        "group_id": "g",
        "member_id": "m1",
        "member_epoch": 5,
        "topic": "orders",
        "partition": 0,
    }
    return CommitRequest(**{**base, **kw})


def pe(partition: int, epoch: int | None, topic: str | None = "orders", topic_id=ORDERS_ID):
    return PartitionEpoch(topic, topic_id, partition, epoch)


def consumer_group(*members: FencingMember, group_type: str = "consumer", **kw) -> FencingGroup:
    return FencingGroup("g", group_type, kw.pop("state", "Stable"), 7, members, **kw)


M1 = FencingMember(
    "m1",
    5,
    assigned=(pe(0, 3), pe(1, None)),
    pending_revocation=(pe(2, 4),),
)
CLASSIC_M = FencingMember("c1", 5, uses_classic_protocol=True, assigned=(pe(0, None),))
STATIC = FencingMember("s1", None, instance_id="inst-1")
CLASSIC = FencingGroup("g", "classic", "Stable", 4, (FencingMember("m1", None), STATIC))
EMPTY_CLASSIC = FencingGroup("g", "classic", "Empty", 4)


def outcome(decision) -> tuple[str, str]:
    return decision.outcome, decision.rule


# ---- 8.1 group lookup ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "request_", "expected"),
    [
        (None, req(member_epoch=-1, member_id=""), (ACCEPTED, "FEN-G1")),
        (None, req(member_epoch=0), ("GROUP_ID_NOT_FOUND", "FEN-G2")),
        (None, req(member_epoch=0, api_version=8), ("ILLEGAL_GENERATION", "FEN-G3")),
        (
            None,
            req(member_epoch=3, transactional=True, api_version=5),
            ("ILLEGAL_GENERATION", "FEN-G3"),
        ),
        (
            None,
            req(member_epoch=3, transactional=True, api_version=6),
            ("GROUP_ID_NOT_FOUND", "FEN-G3T"),
        ),
        (None, req(member_epoch=3, transactional=True), ("GROUP_ID_NOT_FOUND", "FEN-G3T")),
        (
            None,
            req(member_epoch=-1, member_id="", transactional=True, api_version=6),
            (ACCEPTED, "FEN-G1"),
        ),
        (consumer_group(M1, group_type="share"), req(), ("GROUP_ID_NOT_FOUND", "FEN-G4")),
        (None, req(member_epoch=-1, metadata_length=4097), ("OFFSET_METADATA_TOO_LARGE", "FEN-G5")),
    ],
    ids=[
        "G1",
        "G2",
        "G3-v8",
        "G3-txn-v5",
        "G3T-txn-v6",
        "G3T-newest",
        "G1-txn-v6",
        "G4-share",
        "G5",
    ],
)
def test_group_lookup_rows(group, request_, expected) -> None:
    assert outcome(decide_strict(group, request_)) == expected
    assert outcome(decide_relaxed(group, request_)) == expected


def test_metadata_limit_is_inclusive_and_applies_only_after_acceptance() -> None:
    assert decide_strict(None, req(member_epoch=-1, metadata_length=4096)).accepted
    rejected = decide_strict(None, req(member_epoch=0, metadata_length=5000))
    assert outcome(rejected) == ("GROUP_ID_NOT_FOUND", "FEN-G2")
    assert outcome(decide_strict(consumer_group(M1), req(metadata_length=4097))) == (
        "OFFSET_METADATA_TOO_LARGE",
        "FEN-G5",
    )


# ---- 8.2 classic groups ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "request_", "expected"),
    [
        (
            FencingGroup("g", "classic", "Dead", None),
            req(),
            ("COORDINATOR_NOT_AVAILABLE", "FEN-C1"),
        ),
        (EMPTY_CLASSIC, req(member_epoch=-1, member_id=""), (ACCEPTED, "FEN-C2")),
        (CLASSIC, req(member_epoch=4, instance_id="other"), ("UNKNOWN_MEMBER_ID", "FEN-C3")),
        (CLASSIC, req(member_epoch=4, instance_id="inst-1"), ("FENCED_INSTANCE_ID", "FEN-C4")),
        (CLASSIC, req(member_id="zz", member_epoch=4), ("UNKNOWN_MEMBER_ID", "FEN-C5")),
        (CLASSIC, req(member_epoch=3), ("ILLEGAL_GENERATION", "FEN-C6")),
        (CLASSIC, req(member_id="", member_epoch=-1), ("UNKNOWN_MEMBER_ID", "FEN-C7")),
        (
            FencingGroup("g", "classic", "CompletingRebalance", 4, (FencingMember("m1", None),)),
            req(member_epoch=4),
            ("REBALANCE_IN_PROGRESS", "FEN-C8"),
        ),
        (CLASSIC, req(member_epoch=4), (ACCEPTED, "FEN-C9")),
        (CLASSIC, req(member_id="s1", instance_id="inst-1", member_epoch=4), (ACCEPTED, "FEN-C9")),
        (CLASSIC, req(member_id="", member_epoch=-1, transactional=True), (ACCEPTED, "FEN-C9")),
    ],
    ids=["C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9", "C9-static", "C9-txn-no-member"],
)
def test_classic_rows(group, request_, expected) -> None:
    assert outcome(decide_strict(group, request_)) == expected
    assert outcome(decide_relaxed(group, request_)) == expected  # relaxed: modern groups only


def test_classic_member_data_against_empty_group_is_unknown_member() -> None:
    """Generation >= 0 on an Empty (or simple) group: the member check fails (FEN-C5)."""
    assert outcome(decide_strict(EMPTY_CLASSIC, req(member_epoch=0))) == (
        "UNKNOWN_MEMBER_ID",
        "FEN-C5",
    )


def test_transactional_commit_skips_completing_rebalance() -> None:
    group = FencingGroup("g", "classic", "CompletingRebalance", 4, (FencingMember("m1", None),))
    assert outcome(decide_strict(group, req(member_epoch=4, transactional=True))) == (
        ACCEPTED,
        "FEN-C9",
    )


# ---- 8.3 strict rule ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "request_", "expected"),
    [
        (consumer_group(state="Empty"), req(member_epoch=-1), (ACCEPTED, "FEN-M1")),
        (
            consumer_group(M1),
            req(member_id="", member_epoch=-1, transactional=True),
            (ACCEPTED, "FEN-M2"),
        ),
        (consumer_group(M1), req(member_id="nobody"), ("UNKNOWN_MEMBER_ID", "FEN-M3")),
        (consumer_group(state="Empty"), req(member_epoch=0), ("UNKNOWN_MEMBER_ID", "FEN-M3")),
        (consumer_group(M1), req(api_version=8), ("UNSUPPORTED_VERSION", "FEN-M4")),
        (consumer_group(M1), req(member_epoch=4), ("STALE_MEMBER_EPOCH", "FEN-M5")),
        (
            consumer_group(M1),
            req(member_epoch=4, transactional=True, api_version=5),
            ("ILLEGAL_GENERATION", "FEN-M5"),
        ),
        (
            consumer_group(M1),
            req(member_epoch=4, transactional=True, api_version=6),
            ("STALE_MEMBER_EPOCH", "FEN-M5"),
        ),
        (
            consumer_group(CLASSIC_M),
            req(member_id="c1", member_epoch=4, transactional=True, api_version=6),
            ("ILLEGAL_GENERATION", "FEN-M5"),
        ),
        (
            consumer_group(CLASSIC_M),
            req(member_id="c1", member_epoch=4, api_version=8),
            ("ILLEGAL_GENERATION", "FEN-M5"),
        ),
        (consumer_group(M1), req(), (ACCEPTED, "FEN-M6")),
        (consumer_group(M1), req(transactional=True, api_version=3), (ACCEPTED, "FEN-M6")),
    ],
    ids=[
        "M1",
        "M2",
        "M3",
        "M3-empty",
        "M4",
        "M5",
        "M5-txn-v5",
        "M5-txn-v6",
        "M5-classic-txn-v6",
        "M5-classic",
        "M6",
        "M6-txn",
    ],
)
def test_strict_rows(group, request_, expected) -> None:
    assert outcome(decide_strict(group, request_)) == expected


def test_m4_only_for_consumer_groups() -> None:
    streams = consumer_group(M1, group_type="streams")
    assert outcome(decide_strict(streams, req(api_version=8))) == (ACCEPTED, "FEN-M6")


# ---- 8.4 relaxed rule --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (req(), (ACCEPTED, "FEN-R1")),
        (req(member_epoch=6), ("STALE_MEMBER_EPOCH", "FEN-R2")),
        (req(member_epoch=6, transactional=True, api_version=5), ("ILLEGAL_GENERATION", "FEN-R2")),
        (req(member_epoch=6, transactional=True, api_version=6), ("STALE_MEMBER_EPOCH", "FEN-R2")),
        (req(member_epoch=4, partition=9), ("STALE_MEMBER_EPOCH", "FEN-R3")),
        (req(member_epoch=4, topic="payments"), ("STALE_MEMBER_EPOCH", "FEN-R3")),
        (req(member_epoch=2, partition=0), ("STALE_MEMBER_EPOCH", "FEN-R4")),
        (req(member_epoch=3, partition=2), ("STALE_MEMBER_EPOCH", "FEN-R4")),
        (
            req(member_epoch=2, partition=0, transactional=True, api_version=5),
            ("ILLEGAL_GENERATION", "FEN-R4"),
        ),
        (
            req(member_epoch=2, partition=0, transactional=True),
            ("STALE_MEMBER_EPOCH", "FEN-R4"),
        ),
        (req(member_epoch=3, partition=0), (ACCEPTED, "FEN-R5")),
        (req(member_epoch=4, partition=2), (ACCEPTED, "FEN-R5")),  # pending revocation
        (req(member_epoch=4, topic=ORDERS_ID), (ACCEPTED, "FEN-R5")),  # topic given by id
        # no assignment epoch recorded (pre-KIP-1251): the member epoch 5 is used -> as strict
        (req(member_epoch=4, partition=1), ("STALE_MEMBER_EPOCH", "FEN-R4")),
    ],
    ids=[
        "R1",
        "R2",
        "R2-txn-v5",
        "R2-txn-v6",
        "R3-partition",
        "R3-topic",
        "R4-assigned",
        "R4-pending",
        "R4-txn-v5",
        "R4-txn-newest",
        "R5-boundary",
        "R5-pending",
        "R5-topic-id",
        "R4-no-epochs",
    ],
)
def test_relaxed_rows(request_, expected) -> None:
    assert outcome(decide_relaxed(consumer_group(M1), request_)) == expected


def test_strict_and_relaxed_differ_exactly_in_the_relaxed_window() -> None:
    group = consumer_group(M1)
    stale = req(member_epoch=3, partition=0)
    assert outcome(decide_strict(group, stale)) == ("STALE_MEMBER_EPOCH", "FEN-M5")
    assert outcome(decide_relaxed(group, stale)) == (ACCEPTED, "FEN-R5")


def test_relaxed_prefix_rows_are_the_strict_ones() -> None:
    group = consumer_group(M1)
    for request_, rule in [
        (req(member_id="nobody"), "FEN-M3"),
        (req(api_version=8), "FEN-M4"),
        (req(member_id="", member_epoch=-1, transactional=True), "FEN-M2"),
    ]:
        assert decide_relaxed(group, request_).rule == rule
    assert decide_relaxed(consumer_group(state="Empty"), req(member_epoch=-1)).rule == "FEN-M1"


def test_classic_protocol_member_keeps_the_strict_check() -> None:
    group = consumer_group(CLASSIC_M)
    assert outcome(decide_relaxed(group, req(member_id="c1", member_epoch=4))) == (
        "ILLEGAL_GENERATION",
        "FEN-M5",
    )


def test_member_epoch_below_zero_counts_as_zero_without_assignment_epochs() -> None:
    member = FencingMember("m1", -2, assigned=(pe(0, None),))
    group = consumer_group(member)
    # epoch -3 < broker epoch -2 but below the effective assignment epoch max(-2, 0) = 0
    decision = decide_relaxed(group, req(member_epoch=-3))
    assert outcome(decision) == ("STALE_MEMBER_EPOCH", "FEN-R4")
    assert decision.reason == "epoch -3 < assignment epoch 0 of orders-0"


def test_topic_ids_known_from_offsets_resolve_unnamed_assignments() -> None:
    member = FencingMember("m1", 5, assigned=(pe(0, 2, topic=None),))
    unknown = consumer_group(member)
    decision = decide_relaxed(unknown, req(member_epoch=4))
    assert outcome(decision) == (UNDECIDED, "FEN-R3")
    assert "topic name" in decision.reason
    known = consumer_group(member, topic_ids={"orders": frozenset({ORDERS_ID})})
    assert outcome(decide_relaxed(known, req(member_epoch=4))) == (ACCEPTED, "FEN-R5")
    # a different partition number cannot be the one asked for, even unnamed
    assert outcome(decide_relaxed(unknown, req(member_epoch=4, partition=7))) == (
        "STALE_MEMBER_EPOCH",
        "FEN-R3",
    )


def test_streams_and_unknown_assignments_are_undecided_below_the_broker_epoch() -> None:
    streams = consumer_group(M1, group_type="streams")
    assert outcome(decide_relaxed(streams, req(member_epoch=4))) == (UNDECIDED, "FEN-R3")
    assert outcome(decide_relaxed(streams, req())) == (ACCEPTED, "FEN-R1")
    unknown = consumer_group(FencingMember("m1", 5, assigned=None))
    assert outcome(decide_relaxed(unknown, req(member_epoch=4))) == (UNDECIDED, "FEN-R3")


def test_every_fen_row_has_a_named_function() -> None:
    rows = [f"fen_{k}" for k in ["g1", "g2", "g3", "g3t", "g4", "g5"]]
    rows += [f"fen_c{i}" for i in range(1, 10)]
    rows += [f"fen_m{i}" for i in range(1, 7)] + [f"fen_r{i}" for i in range(1, 6)]
    for name in rows:
        assert callable(getattr(fence, name)), name
        assert getattr(fence, name).__doc__.startswith(name.replace("fen_", "FEN-").upper())


def test_a_request_without_a_version_is_the_newest_the_new_coordinator_speaks() -> None:
    assert req().version == 10
    assert req(transactional=True).version == 6
    assert req(api_version=3, transactional=True).version == 3
    assert newest_version(Coordinator.NEW, transactional=True) == 6
    assert newest_version(Coordinator.CLASSIC_2_4, transactional=True) == 4
    assert newest_version(Coordinator.CLASSIC_2_4, transactional=False) == 8
    assert newest_version(Coordinator.PRE_2_1, transactional=True) == 1


def test_is_fenced_says_accepted_fenced_or_cannot_tell() -> None:
    assert is_fenced(decide_relaxed(consumer_group(M1), req())) is False
    assert is_fenced(decide_relaxed(consumer_group(M1), req(member_epoch=6))) is True
    streams = consumer_group(M1, group_type="streams")
    assert is_fenced(decide_relaxed(streams, req(member_epoch=4))) is None
