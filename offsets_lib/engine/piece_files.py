"""Pieces: a task's records cut by audit task, written as Arrow IPC files under the run's
staging folder (one file per map task, a record batch per piece), and read back by the task each
piece is routed to (`routed_pieces`, `task_records`). A whole Parquet file of an incremental
run's kept records is a piece too (`STORED_FILE`). The stages that write and read them are in
`exchange`; this module is what their tasks run.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from offsets_lib.audit import superseded_commits
from offsets_lib.audit.task_input import RAW_ARROW
from offsets_lib.engine import routing
from offsets_lib.io import storage
from offsets_lib.wire.decoded import POSITIONED_ARROW

BATCH_ROWS = 262_144  # records read, cut by task and written at a time by a map task


# ... and, with many audit tasks, enough for ~8k records per piece (at most 2M records, ~330 MB
# of a map task's memory). Measured at 100M records, 200 audit tasks, 2 cores: 262k-record
# batches made 76k pieces of ~1,300 records; per-piece costs took the map stage to 42 s (15x
# the 10M map's 2.8 s) and the audit tasks read ~400 pieces each.
PIECE_ROWS = 8_192


MAX_BATCH_ROWS = 2_097_152


def batch_rows(tasks: int) -> int:
    """Records a map task reads, cuts and writes at a time, for `tasks` audit tasks."""
    return min(max(BATCH_ROWS, tasks * PIECE_ROWS), MAX_BATCH_ROWS)


_READ_COLUMNS = (
    "key", "value", "partition", "offset", "timestamp",
    "producer_id", "producer_epoch", "is_transactional", "is_control",
)  # fmt: skip


MAP_ARROW = pa.schema(
    [
        ("path", pa.string()),
        ("batch", pa.int32()),
        ("task", pa.int32()),  # routing.MARKERS for transaction markers
        ("num_rows", pa.int64()),
        ("max_timestamp_ms", pa.int64()),  # newest record of the piece (as_of "latest")
        # the offset-commit values of the piece's task that the map dropped, counted
        # (superseded_commits.SUPERSEDED_ARROW rows; null: none)
        ("superseded", pa.list_(pa.struct(list(superseded_commits.SUPERSEDED_ARROW)))),
        # the piece's Arrow bytes: what its audit task's time goes by (`largest_first`); null
        # for a stored file of kept records
        ("num_bytes", pa.int64()),
    ]
)


# A task whose records in one map batch are more than this many times the batch's average task
# (a dominant group's) has the offset-commit values that a later value of the same key replaces
# dropped there (superseded_commits), and counted: its audit task then holds a few records per
# offset key and batch instead of every commit of the group (10M records, one group at 30 % of
# the commits: the largest task 3.3M -> 484k records). A task still oversized after that (its
# group's commits transactional, or each of another key) is audited whole: a step that cut such
# tasks again by offset key cost ~2 s of task time at 10M against ~1.2 s saved, and was removed.
# Dropping them for every task instead (threshold 0) removed 12.6 % of the unskewed 10M dump's
# records for 2.7x the map's CPU (4.7 -> 13 CPU-s, 2 cores).
LARGE_IN_BATCH = 1.5


# Pieces on a remote file system are LZ4 frames: the pieces of 10M records are ~570 MB instead
# of ~1.6 GB to send and fetch. On a local disk they stay uncompressed while the page cache
# holds them: compressing and decompressing cost ~0.15 CPU-s per million records, which it does
# not pay back (10M, 2 cores: pieces 1,383 -> 433 MB, the map +2.1 CPU-s, the kernel's
# page-cache writes -0.5 to -1.5 s, the audit tasks' reads +0.75 s; again later: the run 11.2 ->
# 12.0 s). A run of more records has them compressed on a local disk too: ~14 GB of pieces at
# 100M records outgrow what the kernel keeps unwritten (vm.dirty_background_ratio, 10 % of
# memory), and copying them into the page cache took the workers 46.5 s of system CPU (perf:
# copy_folio_from_iter_atomic) against 11.7 s compressed; the run 143.5 -> 127.3 s (2 cores,
# 24 GB). Between the two sizes the figure below is a judgement (~2.5 GB of pieces), not a
# measured crossover.
LOCAL_LZ4_ABOVE_RECORDS = 18_000_000


_REMOTE_PIECE_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4")


_LOCAL_PIECE_OPTIONS = pa.ipc.IpcWriteOptions()


arrow_uri = storage.arrow_uri  # the name pieces and tests use


class Piece(NamedTuple):
    """Records a map task cut for one audit task (`task`), and the counts of the
    records of that task the map dropped (superseded_commits.SUPERSEDED_ARROW, or None)."""

    task: int
    records: pa.RecordBatch
    superseded: pa.Table | None = None


class Route(NamedTuple):
    """A piece a task reads: batch `batch` of the file `path`, and its copy number (copies 1..
    of a marker piece are flagged)."""

    path: str
    batch: int
    copy: int = 0


def cut(tables: Iterable[pa.Table], tasks: int, *, reduce_large: bool = False) -> Iterator[Piece]:
    """RAW_ARROW tables, each cut by audit task (routing.audit_tasks_of): a piece per task (with
    `reduce_large`, a large task's superseded offset-commit values dropped: LARGE_IN_BATCH)."""
    for table in tables:
        yield from _pieces(table, tasks, reduce_large=reduce_large)


def _pieces(records: pa.Table, tasks: int, *, reduce_large: bool) -> Iterator[Piece]:
    """A piece for every task with records in this table (`cut`)."""
    if records.num_rows == 0:
        return
    task_ids = routing.audit_tasks_of(records, tasks)
    counts: dict[int, pa.Table] = {}
    large = _large_tasks(task_ids, tasks) if reduce_large else np.zeros(0, np.int32)
    if len(large):
        dropped = superseded_commits.superseded(records, np.flatnonzero(np.isin(task_ids, large)))
        if dropped.any():
            for task in np.unique(task_ids[dropped]).tolist():
                gone = records.filter(pa.array(dropped & (task_ids == task)))
                counts[task] = superseded_commits.superseded_counts(gone)
            records = records.filter(pa.array(~dropped))
            task_ids = task_ids[~dropped]
    # int16 when it fits: numpy sorts it by radix (a 262k-record batch: 0.6 ms against 8.6)
    small = tasks < np.iinfo(np.int16).max
    order = np.argsort(task_ids.astype(np.int16) if small else task_ids, kind="stable")
    ordered = records.take(pa.array(order)).combine_chunks()
    task_ids = task_ids[order]
    starts = np.flatnonzero(np.r_[True, task_ids[1:] != task_ids[:-1]]) if len(task_ids) else []
    ends = [*np.asarray(starts)[1:].tolist(), len(task_ids)]
    for start, end in zip(np.asarray(starts).tolist(), ends, strict=True):
        task = int(task_ids[start])
        for i, piece in enumerate(ordered.slice(start, end - start).to_batches()):
            yield Piece(task, piece, counts.pop(task, None) if i == 0 else None)


def _large_tasks(task_ids: np.ndarray, tasks: int) -> np.ndarray:
    """The tasks holding more than LARGE_IN_BATCH times the average task's records of a batch."""
    owned = task_ids[task_ids != routing.MARKERS]
    if tasks < 2 or not len(owned):
        return np.zeros(0, np.int32)
    sizes = np.bincount(owned, minlength=tasks)
    return np.flatnonzero(sizes > LARGE_IN_BATCH * sizes.mean()).astype(np.int32)


def write_piece_file(pieces: Iterable[Piece], pieces_uri: str, run_records: int) -> pa.RecordBatch:
    """Write the pieces (`cut`) into one new IPC file under `pieces_uri`, a record batch each,
    compressed as `piece_options` says for a run mapping `run_records`; returns their MAP_ARROW
    rows (after the file is complete)."""
    fs, root = storage.filesystem(pieces_uri)
    fs.create_dir(root, recursive=True)
    name = f"{uuid.uuid4().hex}.arrow"
    out: dict[str, list] = {name: [] for name in MAP_ARROW.names}
    with (
        fs.open_output_stream(f"{root}/{name}") as stream,
        pa.ipc.new_file(stream, RAW_ARROW, options=piece_options(fs, run_records)) as writer,
    ):
        for piece in pieces:
            out["path"].append(f"{pieces_uri}/{name}")
            out["batch"].append(len(out["batch"]))
            out["task"].append(piece.task)
            out["num_rows"].append(piece.records.num_rows)
            stamps = [piece.records.column("log_timestamp_ms")]
            if piece.superseded is not None:
                stamps.append(piece.superseded.column("newest_ms").combine_chunks())
            out["max_timestamp_ms"].append(pc.max(pa.chunked_array(stamps)).as_py())
            out["superseded"].append(
                piece.superseded.to_pylist() if piece.superseded is not None else None
            )
            out["num_bytes"].append(piece.records.nbytes)
            writer.write_batch(piece.records)
    return pa.RecordBatch.from_pydict(out, schema=MAP_ARROW)


def piece_options(fs: pafs.FileSystem, run_records: int) -> pa.ipc.IpcWriteOptions:
    """How pieces are written on `fs` by a run mapping `run_records`: LZ4 unless it is the local
    file system and the run at most LOCAL_LZ4_ABOVE_RECORDS."""
    is_local = isinstance(fs, pafs.LocalFileSystem)
    if is_local and run_records <= LOCAL_LZ4_ABOVE_RECORDS:
        return _LOCAL_PIECE_OPTIONS
    return _REMOTE_PIECE_OPTIONS


def routed_pieces(pieces: list[dict[str, Any]], *, tasks: int) -> list[list[Route]]:
    """Each task's pieces: a piece goes to its task, a marker piece to every task (copy t to
    task t; copies 1.. flagged)."""
    routes: list[list[Route]] = [[] for _ in range(tasks)]
    for piece in pieces:
        if piece["task"] == routing.MARKERS:
            for task, routed in enumerate(routes):
                routed.append(Route(piece["path"], piece["batch"], task))
        else:
            routes[piece["task"]].append(Route(piece["path"], piece["batch"]))
    return routes


def task_records(routes: list[Route]) -> list[pa.RecordBatch]:
    """The records (RAW_ARROW batches) of one task, read from its `routed_pieces`; none for a
    task no piece went to (fewer groups than tasks). The copies of a marker piece are history
    (audited, not counted)."""
    records = []
    for route, piece in zip(routes, read_pieces(routes), strict=True):
        if route.copy:
            history = pa.array(np.ones(piece.num_rows, dtype=bool))
            piece = piece.set_column(
                piece.schema.get_field_index("is_history"), "is_history", history
            )
        records.append(piece)
    return records


def read_pieces(routes: list[Route]) -> Iterator[pa.RecordBatch]:
    """The RAW_ARROW records of the routed pieces, one batch per piece, each file opened once
    (a STORED_FILE piece: all of a Parquet file of kept records, as history)."""
    readers: dict[str, pa.ipc.RecordBatchFileReader] = {}
    handles = []
    try:
        for route in routes:
            if route.batch == STORED_FILE:
                yield _stored_batch(route.path)
                continue
            if route.path not in readers:
                fs, local = storage.filesystem(route.path)
                is_local = isinstance(fs, pafs.LocalFileSystem)
                handles.append(pa.memory_map(local) if is_local else fs.open_input_file(local))
                readers[route.path] = pa.ipc.open_file(handles[-1])
            yield readers[route.path].get_batch(route.batch)
    finally:
        for handle in handles:
            handle.close()


STORED_FILE = -1  # the `batch` of a piece that is a whole Parquet file of kept records


def _stored_batch(uri: str) -> pa.RecordBatch:
    """A file of kept records as one RAW_ARROW batch of history records."""
    tables = read_unit(uri, None, is_positioned=True, is_history=True, rows=MAX_BATCH_ROWS)
    table = pa.concat_tables([RAW_ARROW.empty_table(), *tables]).combine_chunks()
    batches = table.to_batches()
    return batches[0] if batches else pa.RecordBatch.from_pylist([], schema=table.schema)


def read_unit(
    path: str,
    row_groups: list[int] | None,
    is_positioned: bool,
    is_history: bool,
    rows: int = BATCH_ROWS,
) -> Iterator[pa.Table]:
    """A unit's records as RAW_ARROW tables of up to `rows` rows."""
    fs, local = storage.filesystem(path)
    with fs.open_input_file(local) as handle:
        parquet = pq.ParquetFile(handle)
        wanted = POSITIONED_ARROW.names if is_positioned else _READ_COLUMNS
        present = [c for c in wanted if c in parquet.schema_arrow.names]
        groups = row_groups if row_groups is not None else range(parquet.num_row_groups)
        sizes = [parquet.metadata.row_group(g).num_rows for g in groups]
        for run in _row_group_runs(list(groups), sizes, rows):
            # one thread: the map's tasks already fill the cores. Measured (2 cores, 6M
            # records): pyarrow's decoding threads took 1.7 CPU-s instead of 1.2 for 0.1 s less
            # wall time.
            for batch in parquet.iter_batches(
                batch_size=max(1, min(rows, run.rows)), row_groups=run.groups, columns=present,
                use_threads=False,
            ):  # fmt: skip
                table = pa.Table.from_batches([batch])
                if not is_positioned:
                    yield routing.positioned_table(table)
                else:
                    yield raw_records(table, is_history=is_history)


class _Run(NamedTuple):
    groups: list[int]
    rows: int


def _row_group_runs(groups: list[int], sizes: list[int], rows: int) -> list[_Run]:
    """Consecutive row groups read as one batch while they hold at most `rows` records together
    (a larger group alone, in batches of `rows`). Why whole groups: a batch that ends inside a
    row group costs pyarrow more to read. Measured (the 10M bench dump's 254k-record groups,
    two files): 0.91-0.95 CPU-s in batches of 262,144 records, 0.85-0.87 group by group."""
    runs: list[_Run] = []
    for group, size in zip(groups, sizes, strict=True):
        if runs and runs[-1].rows + size <= rows:
            runs[-1] = _Run([*runs[-1].groups, group], runs[-1].rows + size)
        else:
            runs.append(_Run([group], size))
    return runs


def raw_records(positioned: pa.Table, *, is_history: bool) -> pa.Table:
    """Records with the positioned columns as RAW_ARROW rows, history or not."""
    history = pa.array(np.full(positioned.num_rows, is_history))
    columns = positioned.select(POSITIONED_ARROW.names).cast(POSITIONED_ARROW)
    return columns.append_column("is_history", history).cast(RAW_ARROW)
