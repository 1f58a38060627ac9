"""`incremental.store` on an output that holds the checkpoints of two topics: advancing one
topic's checkpoint drops only kept partitions no current checkpoint names.

Tables are written with delta-rs (no Spark), as tests/unit/test_prune.py does.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from deltalake import DeltaTable

from offsets_lib.io import incremental, sink

NOW = datetime(2026, 11, 28, tzinfo=UTC)


def write_kept(root: Path, kept_id: str) -> None:
    """One raw record (an offset commit's key and value bytes do not matter here)."""
    record = {
        "log_partition": 0,
        "log_offset": 1,
        "log_timestamp_ms": 0,
        "key": b"k",
        "value": b"v",
        "producer_id": -1,
        "producer_epoch": -1,
        "is_transactional": False,
        "is_control": False,
        "run_id": kept_id,
    }
    sink.write_rows([record], incremental.KEPT_SPEC, output=str(root), run_id=kept_id)


def write_checkpoint(root: Path, topic: str, run_id: str, sequence: int) -> None:
    row = {
        "topic": topic,
        "partition": 0,
        "next_offset": 10 * sequence,
        "sequence": sequence,
        "state_id": f"{run_id}@{sequence}",
        "committed_at": NOW,
        "run_id": run_id,
    }
    sink.write_rows([row], incremental.CHECKPOINT_SPEC, output=str(root), run_id=run_id)


def kept_ids(root: Path) -> list[str]:
    table = DeltaTable(str(root / incremental.KEPT_TABLE)).to_pyarrow_table(columns=["run_id"])
    return sorted(set(table.column(0).to_pylist()))


def test_advancing_one_topic_keeps_the_other_topics_kept_records(tmp_path: Path) -> None:
    write_kept(tmp_path, "a1@1")
    write_checkpoint(tmp_path, "__consumer_offsets", "a1", 1)
    write_kept(tmp_path, "b1@1")
    write_checkpoint(tmp_path, "mirror.__consumer_offsets", "b1", 1)
    previous = incremental.read_checkpoint(str(tmp_path), "mirror.__consumer_offsets")
    increment = incremental.Increment(
        topic="mirror.__consumer_offsets", end_offsets={0: 20}, previous=previous, sequence=1
    )

    kept_id = incremental.store([], increment, output=str(tmp_path), run_id="b2")

    assert kept_id == "b2@2"
    assert kept_ids(tmp_path) == ["a1@1"]  # b1@1 is no checkpoint's any more; a1@1 still is
    checkpoint = incremental.read_checkpoint(str(tmp_path), "__consumer_offsets")
    assert checkpoint == incremental.Checkpoint(
        topic="__consumer_offsets", next_offsets={0: 10}, sequence=1, kept_id="a1@1"
    )
    mirror = incremental.read_checkpoint(str(tmp_path), "mirror.__consumer_offsets")
    assert (mirror.sequence, mirror.kept_id, mirror.next_offsets) == (2, "b2@2", {0: 20})
