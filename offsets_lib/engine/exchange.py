"""`--shuffle files`: a Parquet dump's records reach their audit tasks through staged Arrow files.

The Spark shuffle (pipeline.audit_raw) hands every raw record from the JVM to Python after the
exchange: at 10M records that conversion and the shuffle cost ~14 s of the run's ~28 s audit.
Here Python tasks read the dump with pyarrow (no JVM rows), cut each chunk of records by audit
task (routing.task_buckets) and write the pieces to one Arrow IPC file per map task under the
run's staging folder. The pieces' manifest (a few rows per chunk, with the newest record time of
each piece) comes back to the driver, so the evaluation time is known before the audit stage;
the manifest rows go to the audit tasks, which read their pieces and run the same audit as the
Spark path (task_audit.task_tables). Spark still schedules and retries both stages: a
retried or speculative map attempt writes new files, and only the manifest rows of the attempt
Spark kept are read. A Kafka run's records are cut the same way as Spark's connector reads them
(`map_records`), and an incremental run's kept records, stored one file per audit task, reach
their task whole (`stored_pieces`).

It needs the input files and the output folder reachable by pyarrow from every executor (local
paths, file://, s3://, gs://, hdfs:// with libhdfs). For input pyarrow cannot read `plan` returns
None and the run uses the Spark shuffle; an output it cannot write fails either shuffle, whose
audit tasks stage their results there too (I/O module: shell side).
"""

from __future__ import annotations

import json
import logging
import math
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

from offsets_lib.audit import task_audit
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.rules import Params
from offsets_lib.audit.schemas import spark_schema
from offsets_lib.engine import routing
from offsets_lib.engine.pipeline import TaskEmitter
from offsets_lib.io import storage
from offsets_lib.wire.decoded import POSITIONED_ARROW

log = logging.getLogger(__name__)

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


TARGET_SPLIT_BYTES = 128 * 1024 * 1024  # like spark.sql.files.maxPartitionBytes
_READ_COLUMNS = (
    "key", "value", "partition", "offset", "timestamp",
    "producer_id", "producer_epoch", "is_transactional", "is_control",
)  # fmt: skip

MAP_ARROW = pa.schema(
    [
        ("path", pa.string()),
        ("batch", pa.int32()),
        ("bucket", pa.int32()),  # routing.MARKERS for transaction markers
        ("num_rows", pa.int64()),
        ("max_timestamp_ms", pa.int64()),  # newest record of the piece (as_of "latest")
        # a remapped piece the split audit's first step has nothing to do with (group-level
        # records of an oversized task): it goes to the per-group audit task `bucket` directly
        ("is_direct", pa.bool_()),
        # a piece of a task the map found large holds one section of its records for the
        # split audit's first step (routing.first_step_sections); null: not cut so
        ("section", pa.int32()),
        # the piece's Arrow bytes: what its audit task's time goes by (`largest_first`); null
        # for a stored file of kept records
        ("num_bytes", pa.int64()),
    ]
)
# A task whose records in one map batch are more than this many times the batch's average task
# has them cut by first-step section (`section`), a piece each, so that the split audit's first
# step can read a dominant group's commits by offset key from the map's own pieces. Below the
# run's SKEWED_TASK (2.0), so that a task the whole dump makes oversized is cut in (nearly)
# every batch; the pieces that are not go through `remap_pieces`. A piece per section, not one
# ordered piece per task that each first-step task reads its part of: measured on a 10M-record
# dump with one group holding 30 % of the commits (2 cores), every first-step task then read
# every such piece whole (7.7 s of first-step tasks instead of 4.3 s; an object store sends
# whole pieces).
LARGE_IN_BATCH = 1.5
# Pieces on a remote file system are LZ4 frames: the pieces of 10M records are ~570 MB instead
# of ~1.6 GB to send and fetch. On a local disk they stay uncompressed: compressing and
# decompressing cost ~0.15 CPU-s per million records, which the page cache does not pay back.
_REMOTE_PIECE_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4")
_LOCAL_PIECE_OPTIONS = pa.ipc.IpcWriteOptions()
MAX_FOOTERS = 256  # dump files whose footers the driver reads to count the records


@dataclass(frozen=True)
class Unit:
    """A whole dump file (row_groups None) or some of its row groups, read by one map task.

    A dump file has the Kafka source's columns (key, value, partition, offset, timestamp, ...);
    `is_positioned` files already have the positioned columns (POSITIONED_ARROW: records a Kafka
    run staged, and the kept records of an incremental run, which are `is_history`)."""

    path: str
    size: int
    row_groups: tuple[int, ...] | None = None
    is_positioned: bool = False
    is_history: bool = False
    rows: int | None = None  # records, from the file's footer (None: not read)


arrow_uri = storage.arrow_uri  # the name pieces and tests use


def plan(
    files: list[str],
    *,
    map_tasks: int,
    positioned: tuple[str, ...] = (),
    history: tuple[str, ...] = (),
) -> list[list[Unit]] | None:
    """The dump's files (URIs, as Spark lists them) split into map tasks of similar size, or
    None when pyarrow cannot reach a file (then the Spark shuffle runs).
    Files also in `positioned` have the positioned columns, those in `history` are history
    (Unit)."""
    if not files:
        return None
    try:
        located = [(uri, *storage.filesystem(uri)) for uri in files]
        fs = located[0][1]
        if all(other.equals(fs) for _uri, other, _path in located):  # one listing call
            infos = fs.get_file_info([path for _uri, _fs, path in located])
        else:
            infos = [other.get_file_info(path) for _uri, other, path in located]
    except (pa.ArrowException, OSError, ValueError) as exc:
        log.info("pyarrow cannot read the input (%s)", exc)
        return None
    if any(i.type != pafs.FileType.File for i in infos):
        return None
    total = sum(i.size for i in infos)
    tasks = max(map_tasks, math.ceil(total / TARGET_SPLIT_BYTES), 1)
    target = total / tasks
    all_footers = len(located) <= MAX_FOOTERS  # else only those of the files split below
    try:
        footers = _footers(
            [
                (file_fs, path) if all_footers or info.size > 1.5 * target else None
                for (_uri, file_fs, path), info in zip(located, infos, strict=True)
            ]
        )
    except (pa.ArrowException, OSError, ValueError) as exc:
        log.info("pyarrow cannot read the input's footers (%s)", exc)
        return None
    units: list[Unit] = []
    for (uri, _fs, _path), info, meta in zip(located, infos, footers, strict=True):
        form = {"is_positioned": uri in positioned, "is_history": uri in history}
        if info.size > 1.5 * target:  # a big file is split by row groups
            units.extend(_row_group_units(uri, meta, target, form))
        else:
            rows = meta.num_rows if meta is not None else None
            units.append(Unit(uri, info.size, rows=rows, **form))
    # largest first onto the least loaded task
    loads = [0] * min(tasks, len(units))
    assigned: list[list[Unit]] = [[] for _ in loads]
    for unit in sorted(units, key=lambda u: -u.size):
        i = loads.index(min(loads))
        assigned[i].append(unit)
        loads[i] += unit.size
    return [units_of_task for units_of_task in assigned if units_of_task]


def _footers(
    files: list[tuple[pafs.FileSystem, str] | None],
) -> list[pq.FileMetaData | None]:
    """The Parquet footers of `files` (None where None), read by a few threads (an object store
    answers each in tens of ms). They give the record count (the run's number of audit tasks)
    without Spark's count job (1.6 s of a 1M-record run from the command line); a
    dump of more than MAX_FOOTERS files is counted by Spark, in parallel."""
    from concurrent.futures import ThreadPoolExecutor

    def footer(located: tuple[pafs.FileSystem, str] | None) -> pq.FileMetaData | None:
        if located is None:
            return None
        fs, path = located
        with fs.open_input_file(path) as handle:
            return pq.ParquetFile(handle).metadata

    if len(files) == 1:
        return [footer(files[0])]
    with ThreadPoolExecutor(max_workers=min(16, len(files))) as pool:
        return list(pool.map(footer, files))


def _row_group_units(
    uri: str, meta: pq.FileMetaData, target: float, form: dict[str, bool]
) -> list[Unit]:
    units, current, size, rows = [], [], 0, 0
    for i in range(meta.num_row_groups):
        current.append(i)
        group = meta.row_group(i)
        size += sum(group.column(j).total_compressed_size for j in range(group.num_columns))
        rows += group.num_rows
        if size >= target:
            units.append(Unit(uri, size, tuple(current), rows=rows, **form))
            current, size, rows = [], 0, 0
    if current:
        units.append(Unit(uri, size, tuple(current), rows=rows, **form))
    return units


def map_pieces(
    spark: SparkSession,
    assigned: list[list[Unit]],
    *,
    staging_uri: str,
    tasks: int,
    by_section: bool = False,
) -> list[dict[str, Any]]:
    """The map stage (one Spark job): the dump files `assigned` to map tasks, cut into pieces
    per audit task (routing.task_buckets; `by_section`: large tasks' records cut by first-step
    section too, LARGE_IN_BATCH);
    returns the pieces' manifest (MAP_ARROW rows, one per audit task per `batch_rows` records)."""
    pieces_uri = arrow_uri(f"{staging_uri}/pieces")

    def write_pieces(ids: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        tables = (
            table
            for batch in ids
            for map_task in batch.column("id").to_pylist()
            for unit in assigned[map_task]
            for table in _read_unit(
                unit.path,
                list(unit.row_groups) if unit.row_groups is not None else None,
                unit.is_positioned,
                unit.is_history,
                rows=batch_rows(tasks),
            )
        )
        yield write_piece_file(cut(tables, tasks, by_section=by_section), pieces_uri)

    mapped = task_ids(spark, len(assigned)).mapInArrow(write_pieces, spark_schema(MAP_ARROW))
    return [r.asDict() for r in mapped.collect()]


def map_records(
    records: DataFrame,
    *,
    staging_uri: str,
    tasks: int,
    by_section: bool = False,
) -> list[dict[str, Any]]:
    """`map_pieces` over records Spark reads (a Kafka run's: positioned columns, e.g.
    decode.positioned of Spark's Kafka source): each Spark task cuts what it reads into pieces
    per audit task, `batch_rows` records at a time, in one job. Measured (2 cores):
    writing a Kafka run's 10k new records as Parquet first and mapping that took two jobs and
    4-5 s of a 23 s hourly run."""
    pieces_uri = arrow_uri(f"{staging_uri}/pieces")
    rows = batch_rows(tasks)

    def write_pieces(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        tables = (_raw_records(table, is_history=False) for table in _rebatched(batches, rows))
        yield write_piece_file(cut(tables, tasks, by_section=by_section), pieces_uri)

    mapped = records.select(*POSITIONED_ARROW.names).mapInArrow(
        write_pieces, spark_schema(MAP_ARROW)
    )
    return [r.asDict() for r in mapped.collect()]


def _rebatched(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """Spark's Arrow batches (10k records by default) gathered into tables of about `rows`."""
    pending: list[pa.RecordBatch] = []
    held = 0
    for batch in batches:
        pending.append(batch)
        held += batch.num_rows
        if held >= rows:
            yield pa.Table.from_batches(pending)
            pending, held = [], 0
    if held:
        yield pa.Table.from_batches(pending)


def _raw_records(positioned: pa.Table, *, is_history: bool) -> pa.Table:
    """Records with the positioned columns as RAW_ARROW rows, history or not."""
    history = pa.array(np.full(positioned.num_rows, is_history))
    columns = positioned.select(POSITIONED_ARROW.names).cast(POSITIONED_ARROW)
    return columns.append_column("is_history", history).cast(task_audit.RAW_ARROW)


def task_sizes(pieces: list[dict[str, Any]], tasks: int) -> np.ndarray:
    """Records each audit task receives from these pieces (a marker piece goes to every task):
    what the bench and the tests check the task sizes with."""
    sizes = np.zeros(tasks, dtype=np.int64)
    for piece in pieces:
        if piece["bucket"] == routing.MARKERS:
            sizes += piece["num_rows"]
        else:
            sizes[piece["bucket"]] += piece["num_rows"]
    return sizes


def latest_timestamp_ms(pieces: list[dict[str, Any]]) -> int | None:
    """The newest record timestamp of the mapped records (as_of "latest"), None if none."""
    stamps = [p["max_timestamp_ms"] for p in pieces if p["max_timestamp_ms"] is not None]
    return max(stamps) if stamps else None


def audit_pieces(
    spark: SparkSession,
    pieces: list[dict[str, Any]],
    *,
    coordinator: Coordinator,
    params: Params,
    tasks: int,
    emit: TaskEmitter,
    keep: bool = False,
) -> DataFrame:
    """The audit stage over `map_pieces`' manifest, decided at `params` -> `emit`'s rows (with
    `keep`, the tasks' kept records too: task_audit.task_tables)."""

    routed = routed_pieces(pieces, tasks=tasks)
    routes = [routed[task] for task in largest_first(pieces, tasks=tasks)]

    def audit(ids: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for records in task_pieces(ids, routes, copies_as_history=True):
            yield from emit(
                task_audit.task_tables(
                    iter(records), coordinator=coordinator, params=params, keep=keep
                )
            )

    return task_ids(spark, tasks).mapInArrow(audit, spark_schema(emit.schema))


class Piece(NamedTuple):
    """Records a map or re-map task cut for one audit task (`bucket`), and their first-step
    section (MAP_ARROW's `section`)."""

    bucket: int
    records: pa.RecordBatch
    section: int | None = None


class Route(NamedTuple):
    """A piece a task reads: batch `batch` of the file `path`, and its copy number (copies 1..
    of a marker piece are flagged)."""

    path: str
    batch: int
    copy: int = 0


def routed_pieces(pieces: list[dict[str, Any]], *, tasks: int) -> list[list[Route]]:
    """Each task's pieces: a piece goes to its task, a marker piece to every task (copy t to
    task t; copies 1.. flagged). A piece marked `is_context` reaches its tasks as copies only
    (copy 0 included): records that resolve and delimit in the split audit's first step, which
    another step audits and counts."""
    routes: list[list[Route]] = [[] for _ in range(tasks)]
    for piece in pieces:
        context = int(bool(piece.get("is_context")))
        if piece["bucket"] == routing.MARKERS:
            for task, routed in enumerate(routes):
                routed.append(Route(piece["path"], piece["batch"], task + context))
        else:
            routes[piece["bucket"]].append(Route(piece["path"], piece["batch"], context))
    return routes


def largest_first(pieces: list[dict[str, Any]], *, tasks: int) -> list[int]:
    """The audit tasks by their pieces' bytes (by their records when a piece's bytes are not
    known), most first, stable: Spark launches a stage's tasks in partition order, and a long
    task launched last runs alone at the end of the stage. Bytes, as a group's large metadata
    records take a task's time more than its many small commits: measured (2 cores,
    10M records, one group 30 % of the commits) that group's audit task held the fewest records
    after the split audit's first step and ran 1.4-1.6 s against 0.7 s for the others."""
    owned = [p for p in pieces if p["bucket"] != routing.MARKERS]  # markers go to every task
    by_bytes = all(p.get("num_bytes") is not None for p in owned)
    size = np.zeros(tasks, dtype=np.int64)
    for piece in owned:
        size[piece["bucket"]] += piece["num_bytes"] if by_bytes else piece["num_rows"]
    return np.argsort(-size, kind="stable").tolist()


def task_ids(spark: SparkSession, tasks: int) -> DataFrame:
    """One row per task (`id` 0..tasks-1), each in a partition of its own: a stage whose tasks
    find their work by id in a list the function holds (`routed_pieces`, the map's units, the
    re-map's shares).
    Measured (2 cores): the shuffle that sent listed work to its task cost a job of
    ~1 s in a fresh JVM (a command-line run), twice per run."""
    return spark.range(0, tasks, 1, tasks)


def remap_pieces(
    spark: SparkSession, pieces: list[dict[str, Any]], *, staging_uri: str, tasks: int
) -> list[dict[str, Any]]:
    """Pieces cut again by offset key (routing.task_buckets with `by_offset_key`): the records
    of the audit tasks that the per-group routing left oversized, for the split audit's first
    step, without reading the dump again (one Spark job, routing.tasks_for: 325k records of 25
    pieces took 0.9 s in 20 tasks, 0.3 s in 2; 2 cores) -> MAP_ARROW rows. The records that
    step only forwards (routing.decoded_by_key_split: group-level records) keep their audit
    task, in pieces marked `is_direct`. Measured on a 10M-record dump with one group holding
    30 % of the commits (2 cores): that group's metadata records, in one first-step task, made
    it a 2.7 s straggler of a 4.6 s stage."""
    if not pieces:
        return []
    pieces_uri = arrow_uri(f"{staging_uri}/remapped")
    remap_tasks = routing.tasks_for(
        sum(p["num_rows"] for p in pieces),
        cores=spark.sparkContext.defaultParallelism,
        at_most=min(len(pieces), tasks),
    )
    shares = [
        [(Route(p["path"], p["batch"]), p["bucket"]) for p in pieces[i::remap_tasks]]
        for i in range(remap_tasks)
    ]

    def remap(ids: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for task in (t for batch in ids for t in batch.column("id").to_pylist()):
            yield from cut_again(shares[task])

    def cut_again(share: list[tuple[Route, int]]) -> Iterator[pa.RecordBatch]:
        direct: list[Piece] = []

        def first_step_records() -> Iterator[pa.Table]:
            read = _read_pieces([route for route, _bucket in share])
            for (_route, bucket), piece in zip(share, read, strict=True):
                table = pa.Table.from_batches([piece])
                is_first_step = routing.decoded_by_key_split(table)
                if not is_first_step.all():
                    rest = table.filter(pa.array(~is_first_step)).combine_chunks()
                    direct.extend(Piece(bucket, batch) for batch in rest.to_batches())
                yield table.filter(pa.array(is_first_step))

        yield write_piece_file(cut(first_step_records(), tasks, by_offset_key=True), pieces_uri)
        if direct:
            yield write_piece_file(direct, pieces_uri, is_direct=True)

    remapped = task_ids(spark, remap_tasks).mapInArrow(remap, spark_schema(MAP_ARROW)).collect()
    return [r.asDict() for r in remapped]


def _read_pieces(routes: list[Route]) -> Iterator[pa.RecordBatch]:
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


# An incremental run's kept records (staging.KeptFiles) are written by the audit task that chose
# them; a file holding one task's records says so in its footer (KEPT_TASK_METADATA), and a next
# run with as many audit tasks, or a divisor of that number, hands it whole to the task its
# records go to, as a piece of its own (STORED_FILE), instead of reading and cutting it again in
# the map stage (routing.task_buckets is stable across runs, and a record of task t of n is a
# record of task t % m of m for every m that divides n). Measured (2 cores): the map
# of the 1.7M kept records of a 10M-record state took 3.3 s of a 23 s hourly run that read 10k
# new records.
STORED_FILE = -1  # the `batch` of a piece that is a whole Parquet file of kept records
KEPT_TASK_METADATA = b"kafka-offsets-audit.kept-task"


@dataclass(frozen=True)
class StoredCut:
    """A file of kept records that belongs to one audit task of `tasks` (footer metadata)."""

    path: str
    task: int
    tasks: int
    rows: int
    max_timestamp_ms: int | None


def kept_task_metadata(kept: pa.Table, tasks: int) -> dict[bytes, bytes]:
    """Footer metadata for a file of the kept records `kept`: the audit task of `tasks` that
    their records go to, when that is one task (transaction markers aside, which every task
    keeps for its own records), with the routing's version and their newest time; else none."""
    buckets = routing.task_buckets(kept, tasks)
    owned = np.unique(buckets[buckets != routing.MARKERS])
    if len(owned) != 1:
        return {}
    newest = pc.max(kept.column("log_timestamp_ms")).as_py()
    cut = {"task": int(owned[0]), "tasks": tasks, "routing": routing.ROUTING_VERSION}
    return {KEPT_TASK_METADATA: json.dumps({**cut, "max_timestamp_ms": newest}).encode()}


def stored_cuts(files: Sequence[str]) -> list[StoredCut | None]:
    """The audit task of each file of kept records (None: written without one, or by another
    routing), from the files' footers."""
    footers = _footers([storage.filesystem(uri) for uri in files])
    cuts: list[StoredCut | None] = []
    for uri, footer in zip(files, footers, strict=True):
        tagged = (footer.metadata or {}).get(KEPT_TASK_METADATA) if footer is not None else None
        cut = json.loads(tagged) if tagged else None
        if cut is None or cut.get("routing") != routing.ROUTING_VERSION:
            cuts.append(None)
            continue
        cuts.append(
            StoredCut(uri, cut["task"], cut["tasks"], footer.num_rows, cut["max_timestamp_ms"])
        )
    return cuts


def stored_pieces(cuts: Iterable[StoredCut], tasks: int) -> list[dict[str, Any]]:
    """MAP_ARROW rows of whole files of kept records, each to its audit task of `tasks` (which
    divides the number each file was cut for)."""
    return [
        {
            "path": cut.path,
            "batch": STORED_FILE,
            "bucket": cut.task % tasks,
            "num_rows": cut.rows,
            "max_timestamp_ms": cut.max_timestamp_ms,
            "is_direct": False,
            "section": None,
            "num_bytes": None,
        }
        for cut in cuts
    ]


def _stored_batch(uri: str) -> pa.RecordBatch:
    """A file of kept records as one RAW_ARROW batch of history records."""
    tables = _read_unit(uri, None, is_positioned=True, is_history=True, rows=MAX_BATCH_ROWS)
    table = pa.concat_tables([task_audit.RAW_ARROW.empty_table(), *tables]).combine_chunks()
    batches = table.to_batches()
    return batches[0] if batches else pa.RecordBatch.from_pylist([], schema=table.schema)


def cut(
    tables: Iterable[pa.Table],
    tasks: int,
    *,
    by_offset_key: bool = False,
    by_section: bool = False,
) -> Iterator[Piece]:
    """RAW_ARROW tables, each cut by audit task (routing.task_buckets): a piece per task (with
    `by_section`, a large task's a piece per first-step section: LARGE_IN_BATCH)."""
    for table in tables:
        yield from _pieces(table, tasks, by_offset_key=by_offset_key, by_section=by_section)


def write_piece_file(
    pieces: Iterable[Piece],
    pieces_uri: str,
    *,
    is_direct: bool = False,
) -> pa.RecordBatch:
    """Write the pieces (`cut`) into one new IPC file under `pieces_uri`, a record batch each;
    returns their MAP_ARROW rows (after the file is complete)."""
    fs, root = storage.filesystem(pieces_uri)
    fs.create_dir(root, recursive=True)
    name = f"{uuid.uuid4().hex}.arrow"
    out: dict[str, list] = {name: [] for name in MAP_ARROW.names}
    with (
        fs.open_output_stream(f"{root}/{name}") as stream,
        pa.ipc.new_file(stream, task_audit.RAW_ARROW, options=piece_options(fs)) as writer,
    ):
        for piece in pieces:
            out["path"].append(f"{pieces_uri}/{name}")
            out["batch"].append(len(out["batch"]))
            out["bucket"].append(piece.bucket)
            out["num_rows"].append(piece.records.num_rows)
            newest = pc.max(piece.records.column("log_timestamp_ms")).as_py()
            out["max_timestamp_ms"].append(newest)
            out["is_direct"].append(is_direct)
            out["section"].append(piece.section)
            out["num_bytes"].append(piece.records.nbytes)
            writer.write_batch(piece.records)
    return pa.RecordBatch.from_pydict(out, schema=MAP_ARROW)


def piece_options(fs: pafs.FileSystem) -> pa.ipc.IpcWriteOptions:
    """How pieces are written on `fs`: LZ4 unless it is the local file system."""
    return _LOCAL_PIECE_OPTIONS if isinstance(fs, pafs.LocalFileSystem) else _REMOTE_PIECE_OPTIONS


def _read_unit(
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
        # one thread: the map's tasks already fill the cores. Measured (2 cores, 6M records):
        # pyarrow's decoding threads took 1.7 CPU-s instead of 1.2 for 0.1 s less wall time.
        for batch in parquet.iter_batches(
            batch_size=rows, row_groups=list(groups), columns=present, use_threads=False
        ):
            table = pa.Table.from_batches([batch])
            if not is_positioned:
                yield routing.positioned_table(table)
            else:
                yield _raw_records(table, is_history=is_history)


def _pieces(
    records: pa.Table, tasks: int, *, by_offset_key: bool, by_section: bool
) -> Iterator[Piece]:
    """A piece for every task with records in this table (`cut`)."""
    if records.num_rows == 0:
        return
    buckets = routing.task_buckets(records, tasks, by_offset_key=by_offset_key)
    large = set(_large_tasks(buckets, tasks).tolist()) if by_section else set()
    if large:
        section = np.zeros(len(buckets), dtype=np.int64)
        rows = np.flatnonzero(np.isin(buckets, list(large)))
        section[rows] = routing.first_step_sections(records, tasks, rows)
        within = routing.FIRST_STEP_TASK + tasks  # sections per task
        order = np.argsort(buckets.astype(np.int64) * within + section, kind="stable")
        section = section[order]
    else:
        order = np.argsort(buckets, kind="stable")
    ordered = records.take(pa.array(order)).combine_chunks()
    buckets = buckets[order]
    starts = np.flatnonzero(np.r_[True, buckets[1:] != buckets[:-1]]) if len(buckets) else []
    ends = [*np.asarray(starts)[1:].tolist(), len(buckets)]
    for start, end in zip(np.asarray(starts).tolist(), ends, strict=True):
        bucket = int(buckets[start])
        if bucket not in large:
            yield from (Piece(bucket, p) for p in ordered.slice(start, end - start).to_batches())
            continue
        cuts = np.flatnonzero(np.r_[True, section[start + 1 : end] != section[start : end - 1]])
        for first, stop in pairwise([*(start + cuts).tolist(), end]):
            for piece in ordered.slice(first, stop - first).to_batches():
                yield Piece(bucket, piece, int(section[first]))


def _large_tasks(buckets: np.ndarray, tasks: int) -> np.ndarray:
    """The tasks holding more than LARGE_IN_BATCH times the average task's records of a batch."""
    owned = buckets[buckets != routing.MARKERS]
    if tasks < 2 or not len(owned):
        return np.zeros(0, np.int32)
    sizes = np.bincount(owned, minlength=tasks)
    return np.flatnonzero(sizes > LARGE_IN_BATCH * sizes.mean()).astype(np.int32)


def task_pieces(
    ids: Iterator[pa.RecordBatch], routes: list[list[Route]], *, copies_as_history: bool
) -> Iterator[list[pa.RecordBatch]]:
    """The records (RAW_ARROW batches) of each task of `task_ids` (one per Spark task), read
    from its `routed_pieces`; none for a task no piece went to (fewer groups than tasks). The
    copies of a marker piece are history (audited, not counted), or with `copies_as_history`
    False are flagged in an added `is_copy` column instead (the split audit's first step)."""
    for task in (t for batch in ids for t in batch.column("id").to_pylist()):
        entries = routes[task]
        if not entries:
            continue
        records = []
        for route, piece in zip(entries, _read_pieces(entries), strict=True):
            flags = pa.array(np.full(piece.num_rows, bool(route.copy)))
            if not copies_as_history:
                piece = pa.RecordBatch.from_arrays(
                    [*piece.columns, flags], names=[*piece.schema.names, "is_copy"]
                )
            elif route.copy:
                piece = piece.set_column(
                    piece.schema.get_field_index("is_history"), "is_history", flags
                )
            records.append(piece)
        yield records
