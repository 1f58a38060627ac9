"""LOG-7's one sort over many groups' member updates (`partition_claims.failed_claims`) against
the loader's walk partition by partition (tests/reference/claims.py), with the values as dicts
and as the columns the task reads them into."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

from offsets_lib.audit.partition_claims import (
    CLAIM_OVER_EQUAL_OR_HIGHER_EPOCH,
    CLAIM_OVER_LOWER_EPOCH,
    MemberUpdate,
    ReadAssignment,
    failed_claims,
)
from offsets_lib.wire import RECORD_TYPES
from offsets_lib.wire.layout_read import arrow_type
from offsets_lib.wire.layouts import current_value
from tests.reference.claims import walked_claims

TOPICS = ("5b0e3f0c-7a55-4cb6-9d7b-6a3c1f0e9a01", "c1d2e3f4-0000-4000-8000-0000000000aa")
ASSIGNMENT = arrow_type(current_value(RECORD_TYPES[8]).fields)


def assignment(rng: random.Random) -> dict[str, Any] | None:
    """A current assignment of a few partitions (some both assigned and pending), or none."""
    if rng.random() < 0.1:
        return None
    if rng.random() < 0.1:
        return {"MemberEpoch": -1, "PreviousMemberEpoch": -1, "State": 0}
    lists = {}
    for name in ("AssignedPartitions", "PartitionsPendingRevocation"):
        lists[name] = [
            {"TopicId": topic, "Partitions": rng.sample(range(6), rng.randint(0, 3)),
             "AssignmentEpochs": None}
            for topic in TOPICS if rng.random() < 0.6
        ]  # fmt: skip
    return {"MemberEpoch": rng.randint(0, 4), "PreviousMemberEpoch": 0, "State": 0, **lists}


def random_updates(seed: int) -> list[MemberUpdate]:
    """Updates of a few groups (some replaced by a new one of the same id), each member's old
    assignment its previous new one, as the replay gives them."""
    rng = random.Random(seed)
    groups = [object() for _ in range(rng.randint(1, 4))]
    current: dict[tuple[int, str], dict[str, Any] | None] = {}
    updates = []
    for _ in range(rng.randint(0, 40)):
        group = rng.randrange(len(groups))
        if rng.random() < 0.05:  # the group is removed and created again
            groups[group] = object()
            current = {k: v for k, v in current.items() if k[0] != group}
        member = rng.choice("abc")
        old = current.get((group, member))
        new = old if rng.random() < 0.2 else assignment(rng)  # member metadata keeps it
        current[(group, member)] = new
        updates.append(MemberUpdate(groups[group], old, new))
    return updates


def as_columns(updates: list[MemberUpdate]) -> list[MemberUpdate]:
    """The same updates, each value with partitions read as the task reads it (one row each)."""
    values = {id(v): v for u in updates for v in (u.old, u.new) if v and "AssignedPartitions" in v}
    read = ReadAssignment.of(pa.array(list(values.values()), ASSIGNMENT))
    row = {key: read[i] for i, key in enumerate(values)}

    def read_as(value: Any) -> Any:
        return row.get(id(value), value)

    return [MemberUpdate(u.held, read_as(u.old), read_as(u.new)) for u in updates]


@pytest.mark.parametrize("seeds", [range(0, 200), range(200, 400)])
def test_one_sort_fails_the_claims_the_walk_fails(seeds: range) -> None:
    failing = 0
    for seed in seeds:
        updates = random_updates(seed)
        expected = walked_claims(updates)
        assert failed_claims(updates) == expected, seed
        assert failed_claims(as_columns(updates)) == expected, seed
        failing += bool(expected)
    assert failing > len(seeds) // 4  # the cases exercise failures, not only clean logs


def test_a_release_frees_only_the_epoch_it_names() -> None:
    """b claims 1 over a's 2 (lower: 4.0.1-); a's release at 2 then frees nothing, so a's new
    claim at 3 fails over b's 3 (equal); a claim twice in one value fails once."""
    group = object()

    def value(epoch: int, *partitions: int, pending: tuple[int, ...] = ()) -> dict[str, Any]:
        return {
            "MemberEpoch": epoch,
            "AssignedPartitions": [{"TopicId": "t", "Partitions": list(partitions)}],
            "PartitionsPendingRevocation": [{"TopicId": "t", "Partitions": list(pending)}],
        }

    a2, b3, a3 = value(2, 1), value(3, 1), value(3, 1, 2, pending=(2,))
    updates = [
        MemberUpdate(group, None, a2),
        MemberUpdate(group, None, b3),
        MemberUpdate(group, a2, a3),
    ]
    assert failed_claims(updates) == {
        1: [(CLAIM_OVER_LOWER_EPOCH, "t-1 claimed at epoch 3, held at epoch 2")],
        2: [
            (CLAIM_OVER_EQUAL_OR_HIGHER_EPOCH, "t-1 claimed at epoch 3, held at epoch 3"),
            (CLAIM_OVER_EQUAL_OR_HIGHER_EPOCH, "t-2 claimed at epoch 3, held at epoch 3"),
        ],
    }
    assert failed_claims(updates) == walked_claims(updates)


def test_a_value_read_as_columns_reads_as_its_dict() -> None:
    """What the replay and the member rows read of a current assignment kept as columns."""
    rng = random.Random(7)
    values = [v for v in (assignment(rng) for _ in range(50)) if v]
    read = ReadAssignment.of(pa.array(values, ASSIGNMENT))
    as_dicts = pa.array(values, ASSIGNMENT).to_pylist()
    for kept, value in zip(read, as_dicts, strict=True):
        for name in [*value, "Missing"]:
            assert kept.get(name) == value.get(name)
            assert kept.get(name, 5) == value.get(name, 5)
