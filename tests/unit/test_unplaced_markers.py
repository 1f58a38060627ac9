"""A read without batch metadata (Spark's Kafka source, read_committed) has no transaction
markers: under a Scala coordinator, an offset deleted soon after its last commit may be one the
loader re-creates (a transactional commit whose COMMIT marker followed the tombstone,
semantics.md 1.3). The run cannot tell: the tombstone wins in its tables, as the records read,
and the table unread_marker_offsets lists those offsets with their last value
(TXN-MARKER-UNREAD, `compaction.is_behind_unread_marker`); the summary counts them."""

from __future__ import annotations

import pyarrow as pa
import pytest

from offsets_lib import wire
from offsets_lib.audit import task_audit, task_input
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.rules import Params
from offsets_lib.cli.run_summary import unplaced_marker_line
from tests.log_builder import Record, batch, classic_group_value, commit, marker, tombstone

MINUTE_MS = 60_000
SCALA = [Coordinator.CLASSIC_2_4, Coordinator.CLASSIC_2_1, Coordinator.PRE_2_1]
UNREAD = "TXN-MARKER-UNREAD"


def read_committed(records: list[dict], minutes: list[int]) -> pa.RecordBatch:
    """The records as Spark's Kafka source returns them: no producer ids, no markers (the
    control records are not returned), written at the given minutes."""
    kept = [r for r in records if not r.get("is_control")]
    offsets = [i for i, r in enumerate(records) if not r.get("is_control")]
    raw = batch(kept).to_pylist()
    for row, offset, minute in zip(raw, offsets, minutes, strict=True):
        row.update(log_offset=offset, log_timestamp_ms=minute * MINUTE_MS)
        row.update(producer_id=None, producer_epoch=None, is_transactional=None, is_control=None)
    return pa.RecordBatch.from_pylist(raw, schema=task_input.RAW_ARROW)


def unplaced(raw: pa.RecordBatch, coordinator: Coordinator) -> int:
    stats = task_audit.audit_records([raw], coordinator=coordinator)[task_audit.STATS]
    return stats.column("unplaced_marker_deletes").to_pylist()[0]


# a transaction's offset (P = 7), an OffsetDelete of it, then the COMMIT marker: the Scala loader
# re-creates offset 50; the Kafka source sees the offset and the tombstone only
TXN_DELETED_BEFORE_MARKER = [commit(50, 7), tombstone(), marker(7)]


@pytest.mark.parametrize("coordinator", SCALA)
def test_a_delete_soon_after_a_commit_is_counted(coordinator) -> None:
    assert unplaced(read_committed(TXN_DELETED_BEFORE_MARKER, [0, 1]), coordinator) == 1


def test_the_new_coordinator_removes_it_wherever_the_marker_is() -> None:
    """TXN-4: the tombstone wipes the pending offset too, so the marker's position is moot."""
    raw = read_committed(TXN_DELETED_BEFORE_MARKER, [0, 1])
    assert unplaced(raw, Coordinator.NEW) == 0
    tables = task_audit.audit_records([raw], coordinator=Coordinator.NEW)
    assert tables[task_audit.OFFSET].num_rows == 0


def test_only_deletes_within_the_transaction_timeout_count() -> None:
    """Kafka's default transaction.max.timeout.ms is 15 min: a delete 16 min after the commit
    (an expiry, say) cannot sit between that commit and its marker."""
    records = [
        commit(50, group="a"),
        commit(60, group="b"),
        tombstone(group="a"),  # 15 min after its commit: counts
        tombstone(group="b"),  # 16 min after: does not
        commit(70, group="c"),  # c's offset is live
        commit(80, group="d"),
        tombstone(group="d"),
        commit(81, group="d"),  # d's offset was re-committed after the delete: live
    ]
    raw = read_committed(records, [0, 0, 15, 16, 16, 16, 16, 16])
    assert unplaced(raw, Coordinator.CLASSIC_2_4) == 1


def test_a_read_with_batch_metadata_places_the_marker() -> None:
    raw = batch(TXN_DELETED_BEFORE_MARKER)
    tables = task_audit.audit_records([raw], coordinator=Coordinator.CLASSIC_2_4)
    assert tables[task_audit.STATS].column("unplaced_marker_deletes").to_pylist() == [0]
    assert tables[task_audit.OFFSET].column("committed_offset").to_pylist() == [50]
    assert tables[task_audit.GROUP].column("unread_marker_offsets").to_pylist() == [[]]


# ---- the rows a run writes -------------------------------------------------------------------

RETENTION_MS = 10 * MINUTE_MS
PARAMS = Params(retention_ms=RETENTION_MS, as_of_ms=21 * MINUTE_MS)


def group_metadata(group: str, members: int) -> Record:
    """A classic `connect` group's metadata: Stable with members, Empty without."""
    value = classic_group_value(
        members, protocol_type="connect", protocol="p", generation=2, state_ms=12 * MINUTE_MS
    )
    return {"key": wire.encode_key(2, {"group": group}), "value": value, "producer_id": -1}


def committed(
    minute: int, offset: int, group: str, producer: int = -1, partition: int = 0
) -> tuple[int, Record]:
    """(log minute, an offset commit of `group` with that commit time)."""
    return minute, commit(
        offset, producer, group=group, partition=partition, commit_ms=minute * MINUTE_MS
    )


def deleted(minute: int, group: str, partition: int = 0) -> tuple[int, Record]:
    return minute, tombstone(group=group, partition=partition)


# (log minute, record); retention 10 min, as_of minute 21
LOG = [
    # txn: a plain commit, a transaction's commit, an OffsetDelete, the marker: uncertain
    committed(13, 2, "txn"),
    committed(14, 30, "txn", producer=7),
    deleted(15, "txn"),
    (15, marker(7)),
    # late: deleted 16 min after its commit, after any transaction's timeout: deleted
    committed(0, 40, "late"),
    deleted(16, "late"),
    # expired: 11 min after its commit, past commit time + retention: the cleanup's expiry
    committed(0, 50, "expired"),
    deleted(11, "expired"),
    # again: re-committed after the delete: live and certain
    committed(14, 60, "again"),
    deleted(15, "again"),
    committed(16, 61, "again"),
    # stable: an uncertain offset of a Stable group; the group itself does not depend on it
    (12, group_metadata("stable", members=1)),
    committed(14, 70, "stable"),
    deleted(15, "stable"),
    # empty: an Empty group with a protocol, whose deletion depends on its uncertain offset
    (12, group_metadata("empty", members=0)),
    committed(14, 80, "empty"),
    deleted(15, "empty"),
    # mixed: a certain offset beside the uncertain one, both expiring at minute 24: the group
    # exists, and is deleted when, either way
    committed(14, 90, "mixed", partition=1),
    committed(14, 91, "mixed"),
    deleted(15, "mixed"),
    # later: the certain offset expires at minute 22, the uncertain one at 24: the group exists
    # either way, but when it is deleted depends on the uncertain one
    committed(12, 100, "later", partition=1),
    committed(14, 101, "later"),
    deleted(15, "later"),
]


def decided_rows(coordinator: Coordinator) -> dict[str, list[dict]]:
    records = [r for _, r in LOG]
    raw = read_committed(records, [m for m, r in LOG if not r.get("is_control")])
    tables = task_audit.task_tables(iter([raw]), coordinator=coordinator, params=PARAMS)
    kinds = (task_audit.OFFSET, task_audit.GROUP, task_audit.STATS)
    return {kind: tables[kind].to_pylist() for kind in kinds}


def unread_rows(tables: dict[str, list[dict]]) -> list[tuple]:
    """The unread_marker_offsets rows (table_rows explodes the groups' lists the same way)."""
    return sorted(
        (
            g["group_id"],
            g["is_group_in_doubt"],
            u["topic"],
            u["partition"],
            u["committed_offset"],
            u["commit_timestamp_ms"],
            u["expire_timestamp_ms"],
            u["log_offset"],
            u["log_timestamp_ms"],
            u["rule"],
        )
        for g in tables[task_audit.GROUP]
        for u in g["unread_marker_offsets"]
    )


def test_the_listed_offsets_under_a_scala_coordinator() -> None:
    """The tombstone wins in offsets and groups; the offsets it may be wrong for are listed, and
    a group is in doubt where the run has it gone (Dead, or deleted at as_of)."""
    tables = decided_rows(Coordinator.CLASSIC_2_4)
    m = MINUTE_MS
    assert unread_rows(tables) == [
        ("empty", True, "orders", 0, 80, 14 * m, None, 16, 15 * m, UNREAD),
        ("later", False, "orders", 0, 101, 14 * m, None, 22, 15 * m, UNREAD),
        ("mixed", False, "orders", 0, 91, 14 * m, None, 19, 15 * m, UNREAD),
        ("stable", False, "orders", 0, 70, 14 * m, None, 13, 15 * m, UNREAD),
        ("txn", True, "orders", 0, 30, 14 * m, None, 2, 15 * m, UNREAD),
    ]
    offsets = sorted((r["group_id"], r["committed_offset"]) for r in tables[task_audit.OFFSET])
    assert offsets == [("again", 61), ("later", 100), ("mixed", 90)]
    groups = sorted(
        (r["group_id"], r["state"], r["offset_count"], r["deleted"])
        for r in tables[task_audit.GROUP]
    )
    assert groups == [
        ("again", "Empty", 1, False),
        ("empty", "Empty", 0, True),
        ("expired", "Dead", 0, False),
        ("late", "Dead", 0, False),
        ("later", "Empty", 1, False),
        ("mixed", "Empty", 1, False),
        ("stable", "Stable", 0, False),
        ("txn", "Dead", 0, False),
    ]
    assert [r["unplaced_marker_deletes"] for r in tables[task_audit.STATS]] == [5]


def test_the_new_coordinator_lists_nothing() -> None:
    tables = decided_rows(Coordinator.NEW)
    assert unread_rows(tables) == []
    assert {r["is_group_in_doubt"] for r in tables[task_audit.GROUP]} == {False}
    offsets = sorted((r["group_id"], r["committed_offset"]) for r in tables[task_audit.OFFSET])
    assert offsets == [("again", 61), ("later", 100), ("mixed", 90)]


def test_the_summary_line() -> None:
    assert unplaced_marker_line(2) == (
        "transaction markers not read: 2 offsets deleted within 15 min of their last commit,"
        " before it expired, are reported deleted and listed in unread_marker_offsets"
        " (TXN-MARKER-UNREAD, with is_group_in_doubt for the groups whose existence depends on"
        " them); this read has no control records (read_committed): if a transaction wrote that"
        " commit and its COMMIT marker came after the delete, the Scala coordinator's loader"
        " re-creates the offset (semantics.md 1.3); a Parquet dump with batch metadata decides"
    )
