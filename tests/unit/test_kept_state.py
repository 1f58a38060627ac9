"""An incremental run's kept records (kept_records.kept_records) over a realistic dump.

Every group type (classic, KIP-848 consumer with regexes, streams, share), transactions and
undecodable records, from `offsets generate`: a chain of runs, each auditing the records kept by
the one before plus the next part of the log, gives the offsets and groups of the whole log, and
keeps fewer records of the modern groups than their history (replay.needed_records).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from offsets_lib.audit import task_audit, task_input
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.rules import Params
from offsets_lib.engine.routing import positioned_table
from offsets_lib.tools.generate import generate_dump

CUTS = (0.3, 0.55, 0.8)  # shares of each partition's records that each run has read


def _log(tmp_path) -> pa.Table:
    generate_dump(str(tmp_path), groups=120, records=24_000, seed=23, partitions=3)
    files = sorted(tmp_path.glob("*.parquet"))
    table = positioned_table(pa.concat_tables(pq.read_table(f) for f in files))
    order = pc.sort_indices(table, [("log_partition", "ascending"), ("log_offset", "ascending")])
    return table.take(order)


def _audited(records: pa.Table, params: Params, *, keep: bool) -> dict[str, pa.Table]:
    return task_audit.task_tables(
        iter(records.cast(task_input.RAW_ARROW).to_batches()),
        coordinator=Coordinator.NEW,
        params=params,
        keep=keep,
    )


def _without_modern_groups(log: pa.Table) -> pa.Table:
    """The log without KIP-848, streams and share records (record types 3 and up)."""
    keys = log.column("key").to_pylist()
    is_modern = [k is not None and int.from_bytes(k[:2], "big") >= 3 for k in keys]
    return log.filter(pa.array([not m for m in is_modern]))


def _rows(table: pa.Table) -> list[str]:
    return sorted(map(repr, table.to_pylist()))


def _with_history(records: pa.Table, is_history: bool) -> pa.Table:
    columns = records.select(task_input.RAW_ARROW.names[:-1])
    flags = pa.array(np.full(records.num_rows, is_history))
    return columns.append_column("is_history", flags).cast(task_input.RAW_ARROW)


def test_a_chain_of_kept_states_audits_like_the_whole_log(tmp_path):
    log = _log(tmp_path)
    newest = pc.max(log.column("log_timestamp_ms")).as_py()
    params = Params(retention_ms=7 * 86_400_000, as_of_ms=newest)
    whole = _audited(_with_history(log, False), params, keep=False)
    assert whole[task_audit.GROUP].num_rows > 100
    assert set(whole[task_audit.GROUP].column("group_type").to_pylist()) == {
        "classic", "consumer", "streams", "share",
    }  # fmt: skip

    partition = log.column("log_partition").to_numpy()
    position = np.zeros(log.num_rows)  # each record's place in its partition, 0..1
    for p in np.unique(partition):
        rows = np.flatnonzero(partition == p)
        position[rows] = np.arange(len(rows)) / len(rows)
    kept = None
    low = 0.0
    for cut in (*CUTS, 1.01):
        part = _with_history(log.filter(pa.array((position >= low) & (position < cut))), False)
        records = part if kept is None else pa.concat_tables([_with_history(kept, True), part])
        out = _audited(records, params, keep=True)
        kept, low = out[task_audit.KEPT], cut
    for kind in (task_audit.OFFSET, task_audit.GROUP):
        assert _rows(out[kind]) == _rows(whole[kind]), kind

    # the modern groups' records: fewer kept than written
    record_type = np.array([int.from_bytes(k[:2], "big") for k in log.column("key").to_pylist()])
    kept_type = np.array([int.from_bytes(k[:2], "big") for k in kept.column("key").to_pylist()])
    assert 0 < (kept_type >= 3).sum() < (record_type >= 3).sum() / 2


def test_a_chain_of_kept_states_of_classic_groups_only_audits_like_the_whole_log(tmp_path):
    """No modern group in any task: nothing of the modern groups' choice to make."""
    log = _without_modern_groups(_log(tmp_path))
    params = Params(retention_ms=7 * 86_400_000, as_of_ms=pc.max(log["log_timestamp_ms"]).as_py())
    whole = _audited(_with_history(log, False), params, keep=False)
    half = log.num_rows // 2
    first = _audited(_with_history(log.slice(0, half), False), params, keep=True)
    kept = _with_history(first[task_audit.KEPT], True)
    rest = _with_history(log.slice(half), False)
    out = _audited(pa.concat_tables([kept, rest]), params, keep=True)
    for kind in (task_audit.OFFSET, task_audit.GROUP):
        assert _rows(out[kind]) == _rows(whole[kind]), kind
