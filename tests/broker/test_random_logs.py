"""The generator of the differential check (tests/broker/random_logs.py) and the oracle's
reading of the job's tables, without a broker."""

from __future__ import annotations

import uuid
from pathlib import Path

from offsets_lib import wire
from offsets_lib.tools.generate.model import partition_for
from tests.broker.random_logs import generate, group_versions, offset_versions
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
                assert record.error is None, record
                assert partition_for(record.key["group"], 3) == step.partition
                if value is not None:
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
    log = generate(2, 300, "4.4.0", 3, topics, NOW_MS, broken_partitions=(0,))
    kinds = set(log.groups.values())
    assert kinds == {"classic", "simple", "consumer"}
    types = {
        wire.decode_record(key, value).record_type
        for step in log.steps
        for key, value in step.records
    }
    assert types == {1, 2, 3, 4, 5, 6, 7, 8}
    older = generate(2, 300, "3.9.1", 3, topics, NOW_MS, broken_partitions=(0,))
    assert set(older.groups.values()) == {"classic", "simple"}
