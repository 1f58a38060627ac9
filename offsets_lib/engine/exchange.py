"""The file shuffle: every record reaches its audit task through staged Arrow files.

The one data path from input to tables. Spark's shuffle (a hash repartition of the
positioned records, removed) handed every raw record from the JVM to Python after the exchange:
at 10M records that conversion and the shuffle cost ~14 s of the run's ~28 s audit, and it was
slower at every size measured locally and on the cluster (docs/design.md, "Which shuffle:
measured"). Here Python tasks read the dump with pyarrow (no JVM rows), cut each chunk of
records by audit task (routing.audit_tasks_of) and write the pieces to one Arrow IPC file per
map task under the run's staging folder. The pieces' manifest (a few rows per chunk, with the
newest record time of each piece) comes back to the driver, so the evaluation time is known
before the audit stage; the manifest rows go to the audit tasks, which read their pieces and
audit them (task_audit.task_tables). Spark still schedules and retries both stages: a retried
or speculative map attempt writes new files, and only the manifest rows of the attempt Spark
kept are read. Records Spark reads (a Kafka run's, and a dump pyarrow cannot reach: `plan`
returns None) are cut the same way in the Spark tasks that read them (`map_records`), and an
incremental run's kept records, stored one file per audit task, reach their task whole
(`stored_pieces`).

The staging folder is on the output's file system, written with pyarrow from every executor
(local paths, file://, s3://, gs://, hdfs:// with libhdfs): an output pyarrow cannot write fails
the run when it starts (staging.Staging.fresh; I/O module: shell side).

The pieces' files (cutting, writing, reading back by route) are in `piece_files`; each stage's
tasks are work items (`MapUnits`, `AuditTask`) run by `task_runner.run_tasks`.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

from offsets_lib.audit import superseded_commits, task_audit
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.rules import Params
from offsets_lib.audit.schemas import spark_schema
from offsets_lib.engine import routing
from offsets_lib.engine.piece_files import (
    MAP_ARROW,
    STORED_FILE,
    Route,
    arrow_uri,
    batch_rows,
    cut,
    read_unit,
    routed_pieces,
    task_records,
    write_piece_file,
)
from offsets_lib.engine.pipeline import TaskEmitter
from offsets_lib.engine.task_runner import freeze_worker_heap, run_tasks
from offsets_lib.io import storage

log = logging.getLogger(__name__)

TARGET_SPLIT_BYTES = 128 * 1024 * 1024  # like spark.sql.files.maxPartitionBytes
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


def plan(
    files: list[str],
    *,
    map_tasks: int,
    positioned: tuple[str, ...] = (),
    history: tuple[str, ...] = (),
) -> list[list[Unit]] | None:
    """The dump's files (URIs, as Spark lists them) split into map tasks of similar size, or
    None when pyarrow cannot reach a file (then Spark reads the records: `map_records`).
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


@dataclass(frozen=True)
class MapUnits:
    """Map task t: the dump files `assigned[t]`, cut into pieces per audit task, into one piece
    file under `pieces_uri` (as a run mapping `run_records` writes them) -> its MAP_ARROW rows."""

    assigned: list[list[Unit]]
    pieces_uri: str
    tasks: int
    reduce_large: bool
    run_records: int
    schema: ClassVar[pa.Schema] = MAP_ARROW

    def __call__(self, task: int) -> Iterator[pa.RecordBatch]:
        rows = batch_rows(self.tasks)
        tables = (
            table
            for unit in self.assigned[task]
            for table in read_unit(
                unit.path,
                list(unit.row_groups) if unit.row_groups is not None else None,
                unit.is_positioned,
                unit.is_history,
                rows=rows,
            )
        )
        pieces = cut(tables, self.tasks, reduce_large=self.reduce_large)
        yield write_piece_file(pieces, self.pieces_uri, self.run_records)


def map_pieces(
    spark: SparkSession,
    assigned: list[list[Unit]],
    *,
    staging_uri: str,
    tasks: int,
    reduce_large: bool = False,
    run_records: int = 0,
) -> list[dict[str, Any]]:
    """The map stage (one Spark job): the dump files `assigned` to map tasks, cut into pieces
    per audit task (routing.audit_tasks_of; `reduce_large`: a large task's superseded
    offset-commit values dropped and counted, piece_files.LARGE_IN_BATCH), written as a run
    mapping `run_records` writes them (piece_files.piece_options);
    returns the pieces' manifest (MAP_ARROW rows, one per audit task per `batch_rows` records)."""
    pieces_uri = arrow_uri(f"{staging_uri}/pieces")
    work = MapUnits(assigned, pieces_uri, tasks, reduce_large, run_records)
    return [_manifest_row(r) for r in run_tasks(spark, work, len(assigned)).collect()]


def _manifest_row(row: Any) -> dict[str, Any]:
    """A MAP_ARROW row from Spark as a dict (its superseded counts as dicts too)."""
    out = row.asDict()
    if out.get("superseded") is not None:
        out["superseded"] = [s.asDict() for s in out["superseded"]]
    return out


def map_records(
    records: DataFrame,
    *,
    staging_uri: str,
    tasks: int,
    reduce_large: bool = False,
    run_records: int = 0,
) -> list[dict[str, Any]]:
    """`map_pieces` over records Spark reads (Spark's Kafka-source columns, optional batch
    metadata: a Kafka run's records, or a dump pyarrow cannot reach): each Spark task positions
    what it reads (routing.positioned_table) and cuts it into pieces per audit task,
    `batch_rows` records at a time, in one job. Measured (2 cores): writing a Kafka run's 10k
    new records as Parquet first and mapping that took two jobs and 4-5 s of a 23 s hourly
    run."""
    pieces_uri = arrow_uri(f"{staging_uri}/pieces")
    rows = batch_rows(tasks)

    def write_pieces(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_worker_heap()
        tables = (routing.positioned_table(table) for table in _rebatched(batches, rows))
        pieces = cut(tables, tasks, reduce_large=reduce_large)
        yield write_piece_file(pieces, pieces_uri, run_records)

    read = [name for name in routing.RAW_COLUMNS if name in records.columns]
    mapped = records.select(*read).mapInArrow(write_pieces, spark_schema(MAP_ARROW))
    return [_manifest_row(r) for r in mapped.collect()]


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


def task_sizes(pieces: list[dict[str, Any]], tasks: int) -> np.ndarray:
    """Records each audit task receives from these pieces (a marker piece goes to every task):
    what the bench and the tests check the task sizes with."""
    sizes = np.zeros(tasks, dtype=np.int64)
    for piece in pieces:
        if piece["task"] == routing.MARKERS:
            sizes += piece["num_rows"]
        else:
            sizes[piece["task"]] += piece["num_rows"]
    return sizes


def latest_timestamp_ms(pieces: list[dict[str, Any]]) -> int | None:
    """The newest record timestamp of the mapped records (as_of "latest"), None if none."""
    stamps = [p["max_timestamp_ms"] for p in pieces if p["max_timestamp_ms"] is not None]
    return max(stamps) if stamps else None


@dataclass(frozen=True)
class AuditTask:
    """Audit task t: the records of its routed pieces (`routes[t]`), audited at `params` ->
    `emit`'s rows (with `keep`, the task's kept records too: task_audit.task_tables)."""

    routes: list[list[Route]]
    coordinator: Coordinator
    params: Params
    emit: TaskEmitter
    keep: bool
    superseded: list[pa.Table | None]  # the counts of what the map dropped, by route

    @property
    def schema(self) -> pa.Schema:
        return self.emit.schema

    def __call__(self, task: int) -> Iterator[pa.RecordBatch]:
        if not self.routes[task]:  # fewer groups than tasks
            return
        records = task_records(self.routes[task])
        yield from self.emit(
            task_audit.task_tables(
                iter(records),
                coordinator=self.coordinator,
                params=self.params,
                keep=self.keep,
                superseded=self.superseded[task],
            )
        )


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
    `keep`, the tasks' kept records too: task_audit.task_tables), with the counts of the
    records the map dropped (`superseded_by_task`). The largest tasks first (`largest_first`)."""
    routed = routed_pieces(pieces, tasks=tasks)
    counts = superseded_by_task(pieces, tasks)
    order = largest_first(pieces, tasks=tasks)
    work = AuditTask(
        [routed[t] for t in order], coordinator, params, emit, keep, [counts[t] for t in order]
    )
    return run_tasks(spark, work, tasks)


def superseded_by_task(pieces: list[dict[str, Any]], tasks: int) -> list[pa.Table | None]:
    """Each audit task's counts of the records the map dropped (superseded_commits), from its
    pieces' MAP_ARROW rows; None for a task without any."""
    rows: list[list[dict[str, Any]]] = [[] for _ in range(tasks)]
    for piece in pieces:
        if piece.get("superseded"):
            rows[piece["task"]] += piece["superseded"]
    schema = superseded_commits.SUPERSEDED_ARROW
    return [pa.Table.from_pylist(r, schema=schema) if r else None for r in rows]


def largest_first(pieces: list[dict[str, Any]], *, tasks: int) -> list[int]:
    """The audit tasks by their pieces' bytes (by their records when a piece's bytes are not
    known), most first, stable: Spark launches a stage's tasks in partition order, and a long
    task launched last runs alone at the end of the stage. Bytes, as a group's large metadata
    records take a task's time more than its many small commits: measured (2 cores,
    10M records, one group 30 % of the commits) that group's audit task held the fewest records
    once its commits were reduced per offset key and ran 1.4-1.6 s against 0.7 s for the
    others."""
    owned = [p for p in pieces if p["task"] != routing.MARKERS]  # markers go to every task
    by_bytes = all(p.get("num_bytes") is not None for p in owned)
    size = np.zeros(tasks, dtype=np.int64)
    for piece in owned:
        size[piece["task"]] += piece["num_bytes"] if by_bytes else piece["num_rows"]
    return np.argsort(-size, kind="stable").tolist()


# An incremental run's kept records (staging.KeptFiles) are written by the audit task that chose
# them; a file holding one task's records says so in its footer (KEPT_TASK_METADATA), and a next
# run with as many audit tasks, or a divisor of that number, hands it whole to the task its
# records go to, as a piece of its own (STORED_FILE), instead of reading and cutting it again in
# the map stage (routing.audit_tasks_of is stable across runs, and a record of task t of n is a
# record of task t % m of m for every m that divides n). Measured (2 cores): the map
# of the 1.7M kept records of a 10M-record topic took 3.3 s of a 23 s hourly run that read 10k
# new records.
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
    task_ids = routing.audit_tasks_of(kept, tasks)
    owned = np.unique(task_ids[task_ids != routing.MARKERS])
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
            "task": cut.task % tasks,
            "num_rows": cut.rows,
            "max_timestamp_ms": cut.max_timestamp_ms,
            "superseded": None,
            "num_bytes": None,
        }
        for cut in cuts
    ]
