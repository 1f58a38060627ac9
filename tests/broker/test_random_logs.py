"""The generator of the differential check (tests/broker/random_logs.py) and the oracle's
reading of the job's tables, without a broker."""

from __future__ import annotations

import uuid
from pathlib import Path

from offsets_lib import wire
from offsets_lib.audit.partition_claims import (
    CLAIM_OVER_EQUAL_OR_HIGHER_EPOCH,
    CLAIM_OVER_LOWER_EPOCH,
)
from offsets_lib.tools.generate.model import partition_for
from offsets_lib.wire.codec import READER_LIMIT_CHECKS
from tests.broker.generated import fails_load
from tests.broker.random_logs import FAILING_QUOTA, generate, group_versions, offset_versions
from tests.broker.world import JobRun, job_view

NOW_MS = 1_800_000_000_000
TOPICS = {"a": (4, None), "b": (3, uuid.UUID(int=7))}


def test_same_seed_same_log() -> None:
    one = generate(5, 200, "4.4.0", 3, TOPICS, NOW_MS)
    two = generate(5, 200, "4.4.0", 3, TOPICS, NOW_MS)
    assert [(s.partition, s.records, s.txn, s.offsets) for s in one.steps] == [
        (s.partition, s.records, s.txn, s.offsets) for s in two.steps
    ]


def test_every_record_decodes_with_a_version_its_era_reads() -> None:
    for version in ("4.4.0", "3.9.1", "2.3.1", "2.0.1"):
        log = generate(3, 300, version, 3, TOPICS, NOW_MS)
        seen = {1: set(), 2: set()}
        for step in log.steps:
            for key, value in step.records:
                record = wire.decode_record(key, value)
                if key[4:11] == b"skipped":
                    continue  # a record of a type the era skips, any bytes
                assert record.error is None, record
                group = record.key.get("group") or record.key["GroupId"]
                assert partition_for(group, 3) == step.partition
                if value is not None and record.record_type in seen:
                    seen[record.record_type].add(record.version)
        assert seen[1] == set(offset_versions(version)), version
        assert seen[2] == set(group_versions(version)), version
        assert {s.txn for s in log.steps} == {None, "commit", "abort", "open"}
        assert log.dropped > 0  # compaction-like gaps


def test_unstable_is_a_pending_offset_beside_a_committed_one(tmp_path: Path) -> None:
    """OffsetFetch(require_stable) of all partitions answers UNSTABLE only where a partition has
    a committed offset and a pending one (found by the differential check on 4.4.0 and 3.9.1:
    an open transaction on partitions without a committed offset leaves the group stable)."""

    def view(pending_beside_committed: bool):
        group = {
            "group_id": "g", "state": "Empty", "group_type": "classic", "protocol_type": "",
            "protocol": None, "has_pending_transactions": True, "generation": 0,
        }  # fmt: skip
        offset = {
            "group_id": "g", "topic": "t", "partition": 0, "committed_offset": 5,
            "leader_epoch": None, "metadata": "",
            "has_pending_transaction": pending_beside_committed,
        }  # fmt: skip
        run = JobRun(tmp_path, "r", {"g": group}, [], [offset], [], {}, [])
        return job_view(run, ["g"], {})["g"]

    assert view(pending_beside_committed=False).unstable is False
    assert view(pending_beside_committed=True).unstable is True


def test_a_simple_group_left_without_offsets_is_gone(tmp_path: Path) -> None:
    """DEL-CLASSIC: a Scala coordinator's cleanup drops a simple group (generation 0) whose
    offsets all expired, without a tombstone; the broker answers Dead (found by the
    differential check on 3.9.1), the job's decision says GENERATION_0_NO_TOMBSTONE."""
    group = {
        "group_id": "g", "state": "Empty", "group_type": "classic", "protocol_type": None,
        "protocol": None, "has_pending_transactions": False, "generation": 0,
    }  # fmt: skip
    decision = {"group_id": "g", "deleted": False, "blocked_by": "GENERATION_0_NO_TOMBSTONE"}
    run = JobRun(tmp_path, "r", {"g": group}, [], [], [], {"g": decision}, [])
    view = job_view(run, ["g"], {})["g"]
    assert (view.listed, view.state, view.exact_state) == (False, "Dead", "Dead")


def test_consumer_groups_in_the_new_coordinators_era() -> None:
    topics = {"a": (4, uuid.UUID(int=1)), "b": (3, uuid.UUID(int=2))}
    log = generate(2, 300, "4.4.0", 3, topics, NOW_MS, breaks={0: "log6"})
    kinds = set(log.groups.values())
    assert kinds == {"classic", "simple", "consumer", "share", "streams", "skipped"}
    types = {
        wire.decode_record(key, value).record_type
        for step in log.steps
        for key, value in step.records
    }
    assert types == {1, 2, *range(3, 15), *range(17, 25), 99}
    older = generate(2, 300, "3.9.1", 3, topics, NOW_MS, breaks={0: "log6"})
    assert set(older.groups.values()) == {"classic", "simple", "skipped"}
    assert set(generate(2, 300, "2.8.2", 3, topics, NOW_MS).groups.values()) == {
        "classic",
        "simple",
    }


def test_damaged_partitions_as_the_broker_replays_them() -> None:
    """Each `breaks` partition's first group of the damage's kind ends damaged (LOG-6, LOG-7,
    DEC-LIMIT on a consumer group, LOG-8 on a classic one: the damage follows a type change),
    the failing ones hold at most FAILING_QUOTA groups; some records are corrupt but
    parseable (bytes after the last field, unknown tags)."""
    topics = {"a": (4, uuid.UUID(int=1)), "b": (3, uuid.UUID(int=2))}
    breaks = {1: "log6", 2: "log7-equal", 3: "dec-limit", 4: "log7-lower", 5: "type-clash"}
    log = generate(4, 700, "4.4.0", 7, topics, NOW_MS, breaks=breaks)
    assert log.undamaged == []
    per_partition = {p: 0 for p in range(7)}
    for group in log.groups:
        if not group.startswith("skipped"):
            per_partition[partition_for(group, 7)] += 1
    assert max(per_partition[p] for p in (1, 2, 3, 5)) <= FAILING_QUOTA
    assert min(per_partition[p] for p in (0, 4, 6)) > 80
    decoded = [wire.decode_record(k, v) for s in log.steps for k, v in s.records]
    assert sum(r.reader_limit is not None for r in decoded) == 1
    assert any(r.trailing_bytes for r in decoded) and any(r.key_trailing_bytes for r in decoded)
    assert any(r.unknown_tags == 1 for r in decoded)
    assert log.corrupt > 0


def test_a_load_failure_counts_where_the_release_refuses_it() -> None:
    """The generated logs' rebalances let a member's assignment claim a partition its previous
    holder still has at the epoch before (as a compacted log can): 4.4.0 loads it, and the
    run's LOG-7 row names the releases that refuse it (found on 4.4.0 at 5,000 groups: every
    offsets partition was counted as predicted to fail)."""
    lower = {"failed_check": CLAIM_OVER_LOWER_EPOCH}
    equal = {"failed_check": CLAIM_OVER_EQUAL_OR_HIGHER_EPOCH}
    tags = {"failed_check": READER_LIMIT_CHECKS[0]}
    tombstone = {"failed_check": "GROUP_TOMBSTONE_WITH_MEMBERS"}
    assert [fails_load(r, "4.4.0") for r in (lower, equal, tags, tombstone)] == [
        False,
        True,
        True,
        True,
    ]
    assert [fails_load(r, "4.1.1") for r in (lower, equal, tags)] == [True, True, False]
    assert [fails_load(r, v) for r in (tags,) for v in ("4.3.1", "4.3.2")] == [False, True]
