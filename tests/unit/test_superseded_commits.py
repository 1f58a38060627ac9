"""The map's dropped commit values (audit.superseded_commits, through piece_files.cut) change no
table of the audit: every task audited from its reduced pieces plus the counts equals the same
task audited from all of its records (no Spark)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from offsets_lib.audit import task_audit
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.metrics import hourly_sums
from offsets_lib.audit.rules import DAY_MS, Params
from offsets_lib.engine import exchange, piece_files, routing
from offsets_lib.tools.generate import generate_dump

TASKS = 3
_ORDER = {
    "offset": ["log_partition", "group_id", "topic", "partition"],
    "group": ["log_partition", "group_id"],
    "reject": ["log_partition", "log_offset"],
    "kept": ["log_partition", "log_offset"],
}


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> pa.Table:
    """Transactions, markers, deletions of every group kind, and one group at 30 % of the
    commits."""
    root = str(tmp_path_factory.mktemp("superseded") / "dump")
    generate_dump(root, groups=120, records=12_000, seed=3, dominant_group_share=0.3)
    return routing.positioned_table(ds.dataset(root, format="parquet").to_table())


def _tasks(table: pa.Table, batch: int, reduce_large: bool):
    parts: dict[int, list[pa.RecordBatch]] = {t: [] for t in (routing.MARKERS, *range(TASKS))}
    pieces = []
    for start in range(0, table.num_rows, batch):
        for piece in piece_files.cut([table.slice(start, batch)], TASKS, reduce_large=reduce_large):
            parts[piece.task].append(piece.records)
            counts = piece.superseded.to_pylist() if piece.superseded is not None else None
            pieces.append({"task": piece.task, "superseded": counts})
    return parts, exchange.superseded_by_task(pieces, TASKS)


@pytest.mark.parametrize("shuffled", [False, True])
@pytest.mark.parametrize("coordinator", [Coordinator.NEW, Coordinator.CLASSIC_2_1])
def test_every_task_audits_the_same_from_its_reduced_pieces(
    records: pa.Table, coordinator: Coordinator, shuffled: bool, monkeypatch
) -> None:
    """Every task reduced (LARGE_IN_BATCH 0), in batches of 1,000 records; shuffled, no batch
    holds a partition's offsets whole, which the groups_created meter needs."""
    monkeypatch.setattr(piece_files, "LARGE_IN_BATCH", 0.0)
    if shuffled:
        order = np.random.default_rng(1).permutation(records.num_rows)
        records = records.take(pa.array(order))
    newest = int(records.column("log_timestamp_ms").to_numpy().max())
    params = Params(retention_ms=7 * DAY_MS, as_of_ms=newest + 1)
    whole, _ = _tasks(records, 1_000, reduce_large=False)
    reduced, counts = _tasks(records, 1_000, reduce_large=True)
    assert sum(c is not None for c in counts) >= (1 if shuffled else TASKS)
    for task in range(TASKS):
        expected, got = (
            task_audit.task_tables(
                iter(parts[task] + parts[routing.MARKERS]),
                coordinator=coordinator,
                params=params,
                keep=True,
                superseded=superseded,
            )
            for parts, superseded in ((whole, None), (reduced, counts[task]))
        )
        assert sum(len(b) for b in reduced[task]) < sum(len(b) for b in whole[task])
        for kind, table in expected.items():
            other = got[kind]
            if kind == task_audit.METRIC:
                table, other = hourly_sums([table]), hourly_sums([other])
            elif kind in _ORDER:
                by = [(c, "ascending") for c in _ORDER[kind]]
                table, other = table.sort_by(by), other.sort_by(by)
            assert other.equals(table), (task, kind)
