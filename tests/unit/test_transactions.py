"""Transactional offset commits through one task's audit (semantics.md 1.3, TXN rows).

Logs are built from real record bytes with batch metadata (producer ids, control markers), audited
by `task_audit.audit_records` per coordinator, and the offsets and groups it keeps are compared
with what the broker's loader holds after reading the same log.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from offsets_lib.audit import compaction, task_audit
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.kept_records import kept_records
from offsets_lib.audit.rules import Params
from tests.log_builder import batch, commit, marker, tombstone

SCALA = [Coordinator.CLASSIC_2_4, Coordinator.CLASSIC_2_1, Coordinator.PRE_2_1]
P, Q = 7, 8  # producer ids
PARAMS = Params(retention_ms=7 * 86_400_000, as_of_ms=10**13)


def audit(records: list[dict], coordinator: Coordinator) -> tuple[dict, dict]:
    """{(group, partition): committed offset} and {group: (state, has pending transactions)}."""
    tables = task_audit.audit_records([batch(records)], coordinator=coordinator)
    offsets = {
        (r["group_id"], r["partition"]): r["committed_offset"]
        for r in tables[task_audit.OFFSET].to_pylist()
    }
    groups = {
        r["group_id"]: (r["state"], r["has_pending_transactions"])
        for r in tables[task_audit.GROUP].to_pylist()
    }
    return offsets, groups


# ---- a plain tombstone between a transaction's offsets and its commit marker (TXN-4) ---------


def test_new_coordinator_tombstone_wipes_the_pending_offset() -> None:
    """TXN-4: the tombstone removes every pending offset of the partition; the marker finds none."""
    offsets, groups = audit([commit(50, P), tombstone(), marker(P)], Coordinator.NEW)
    assert offsets == {}
    assert groups == {"g": ("Empty", False)}  # G-S1: the simple group stays


@pytest.mark.parametrize("coordinator", SCALA)
def test_scala_loader_recreates_the_offset_when_the_transaction_commits(coordinator) -> None:
    """semantics.md 1.3: the Scala loader's tombstone removes only the committed offset; the
    commit marker then finds no committed offset and materialises the transaction's (TXN-2)."""
    offsets, groups = audit([commit(50, P), tombstone(), marker(P)], coordinator)
    assert offsets == {("g", 0): 50}
    assert groups == {"g": ("Empty", False)}


@pytest.mark.parametrize("coordinator", SCALA)
def test_scala_loader_tombstone_after_the_marker_removes_the_offset(coordinator) -> None:
    offsets, _ = audit([commit(50, P), marker(P), tombstone()], coordinator)
    assert offsets == {}


@pytest.mark.parametrize("coordinator", SCALA)
def test_scala_loader_recreates_over_an_older_plain_commit(coordinator) -> None:
    """Plain commit after the transaction's record, then a tombstone, then the marker: the
    tombstone removed the plain commit, so the (older) transactional offset comes back."""
    records = [commit(50, P), commit(60), tombstone(), marker(P)]
    assert audit(records, coordinator)[0] == {("g", 0): 50}
    assert audit(records, Coordinator.NEW)[0] == {}


@pytest.mark.parametrize("coordinator", SCALA)
def test_scala_loader_plain_commit_after_the_tombstone_stays(coordinator) -> None:
    """A plain commit between the tombstone and the marker is newer than the transaction's
    record: the marker does not replace it (`olderThan`)."""
    records = [commit(50, P), tombstone(), commit(60), marker(P)]
    assert audit(records, coordinator)[0] == {("g", 0): 60}
    assert audit(records, Coordinator.NEW)[0] == {("g", 0): 60}


@pytest.mark.parametrize("coordinator", SCALA)
def test_scala_loader_newest_of_two_recreating_transactions_wins(coordinator) -> None:
    records = [commit(50, P), commit(70, Q), tombstone(), marker(Q), marker(P)]
    assert audit(records, coordinator)[0] == {("g", 0): 70}


@pytest.mark.parametrize("coordinator", SCALA)
def test_scala_loader_aborted_transaction_is_not_recreated(coordinator) -> None:
    records = [commit(40), commit(50, P), tombstone(), marker(P, "abort")]
    assert audit(records, coordinator)[0] == {}


@pytest.mark.parametrize("coordinator", [Coordinator.NEW, *SCALA])
def test_pending_offset_before_a_tombstone(coordinator) -> None:
    """New coordinator: wiped (TXN-4). Scala loader: still pending after the load, so the
    partition keeps the group alive (DEL-CLASSIC: no pending transactional offsets)."""
    offsets, groups = audit([commit(50, P), tombstone()], coordinator)
    assert offsets == {}
    if coordinator.is_scala:
        assert groups == {"g": ("Empty", True)}  # G-S2: pending offsets make a simple group
    else:
        assert groups == {"g": ("Empty", False)}


# ---- a committed transaction replaces the current offset only if its record is later
# (apache/kafka #15183)


@pytest.mark.parametrize("coordinator", [Coordinator.NEW, *SCALA])
def test_committed_transaction_replaces_only_an_older_record(coordinator) -> None:
    """TXN-2 (apache/kafka #15183): partition 0's plain commit (log offset 1) is newer than the
    transaction's record (0), so it stays; partition 1's transactional record (3) is newer than
    the plain commit (2), so it wins."""
    records = [
        commit(50, P, partition=0), commit(60, partition=0),
        commit(5, partition=1), commit(7, P, partition=1), marker(P),
    ]  # fmt: skip
    assert audit(records, coordinator)[0] == {("g", 0): 60, ("g", 1): 7}


# ---- the incremental state keeps what either transaction rule needs -------------------------


def test_kept_records_keep_the_offset_the_scala_loader_recreates() -> None:
    """After the cut, the Scala winner (the transactional record) must still be in the kept
    state, with its marker, even though a newer tombstone exists."""
    records = [commit(50, P), commit(60), tombstone(), marker(P)]
    kept = kept_records(iter([batch(records)]))
    assert sorted(kept.column("log_offset").to_pylist()) == [0, 1, 2, 3]
    again = kept.append_column("is_history", pa.array([True] * kept.num_rows)).combine_chunks()
    tables = task_audit.audit_records(again.to_batches(), coordinator=Coordinator.CLASSIC_2_4)
    assert tables[task_audit.OFFSET].column("committed_offset").to_pylist() == [50]


def test_a_stored_marker_kept_by_several_tasks_is_audited_once() -> None:
    """Every task that keeps a marker stores it; the next run's task gets each stored copy and
    audits (and keeps) the marker once: the same tables as with one copy."""
    first = [commit(50, P), commit(60, Q, partition=1), marker(P)]  # Q's stays pending
    kept = kept_records(iter([batch(first)]))
    stored = kept.append_column("is_history", pa.array([True] * kept.num_rows))
    marker_row = stored.filter(pa.array(stored.column("is_control").to_pylist()))
    assert marker_row.num_rows == 1
    new = pa.Table.from_batches([batch([commit(70, partition=2), marker(Q)])])
    new = new.select(stored.column_names[:-1])
    new = new.set_column(1, "log_offset", pa.array([10, 11], pa.int64()))  # after the cut
    new = new.append_column("is_history", pa.array([False] * new.num_rows))

    def tables(stored_copies: pa.Table) -> dict[str, list]:
        records = pa.concat_tables([stored_copies, new]).combine_chunks().to_batches()
        out = task_audit.task_tables(
            iter(records), coordinator=Coordinator.NEW, params=PARAMS, keep=True
        )
        return {kind: table.to_pylist() for kind, table in out.items()}

    once = tables(stored)
    assert once == tables(pa.concat_tables([stored, marker_row, marker_row]))
    kept_again = once[task_audit.KEPT]
    assert sorted(r["log_offset"] for r in kept_again) == [0, 1, 2, 10, 11]
    assert {r["log_offset"]: r["is_control"] for r in kept_again}[2] is True


def test_latest_per_key_on_no_rows() -> None:
    empty = pa.table(
        {
            **{c: pa.array([], pa.int32()) for c in ("log_partition", "partition")},
            **{c: pa.array([], pa.string()) for c in ("group_id", "topic", "txn_status")},
            **{c: pa.array([], pa.int64()) for c in ("log_offset", "marker_offset", "group_code")},
            "is_tombstone": pa.array([], pa.bool_()),
            **{
                c: pa.array([], pa.int64())
                for c in compaction.RECORD_COLUMNS
                if c not in ("log_offset", "is_tombstone")
            },
        }
    )
    for coordinator in (Coordinator.NEW, Coordinator.CLASSIC_2_4):
        assert compaction.latest_per_key(empty, coordinator=coordinator).num_rows == 0
    assert not np.any(compaction.kept_rows(empty))
