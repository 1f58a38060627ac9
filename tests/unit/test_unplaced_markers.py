"""A read without batch metadata (Spark's Kafka source, read_committed) has no transaction
markers: under a Scala coordinator, an offset deleted soon after its last commit may be one the
loader re-creates (a transactional commit whose COMMIT marker followed the tombstone,
semantics.md 1.3). The run cannot tell, and counts them for its summary."""

from __future__ import annotations

import pyarrow as pa
import pytest

from offsets_lib.audit import task_audit
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.cli.run_command import unplaced_marker_line
from tests.log_builder import batch, commit, marker, tombstone

MINUTE_MS = 60_000
SCALA = [Coordinator.CLASSIC_2_4, Coordinator.CLASSIC_2_1, Coordinator.PRE_2_1]


def read_committed(records: list[dict], minutes: list[int]) -> pa.RecordBatch:
    """The records as Spark's Kafka source returns them: no producer ids, no markers (the
    control records are not returned), written at the given minutes."""
    kept = [r for r in records if not r.get("is_control")]
    offsets = [i for i, r in enumerate(records) if not r.get("is_control")]
    raw = batch(kept).to_pylist()
    for row, offset, minute in zip(raw, offsets, minutes, strict=True):
        row.update(log_offset=offset, log_timestamp_ms=minute * MINUTE_MS)
        row.update(producer_id=None, producer_epoch=None, is_transactional=None, is_control=None)
    return pa.RecordBatch.from_pylist(raw, schema=task_audit.RAW_ARROW)


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


def test_the_summary_line() -> None:
    assert unplaced_marker_line(2) == (
        "transaction markers not read: 2 offsets deleted within 15 min of their last commit;"
        " this read has no control records (read_committed), so if a transaction wrote that"
        " commit and its COMMIT marker came after the delete, the Scala coordinator's loader"
        " re-creates the offset this run reports deleted (semantics.md 1.3); a Parquet dump"
        " with batch metadata decides"
    )
