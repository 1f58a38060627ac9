"""Delta sink: executors write Parquet, the driver commits one delta-rs transaction per table.

No Delta JVM classes are needed (see shared/notes/feasibility.md section 2). For every table:

1. driver: the DataFrame's columns and types must equal the
   :class:`~offsets_lib.audit.tables.TableSpec`
   (extra columns are dropped, a missing column or another type fails), and an existing table's
   schema must equal the spec too; delta-rs itself does not check schemas on commit;
2. executors: Spark's own Parquet writer appends the spec's columns (partition column dropped,
   timestamps as INT64 micros) to ``<output>/<table>/run_id=<quoted run_id>/``; a row of another
   run or a null in a non-nullable column fails the write (``raise_error``), before any commit;
3. driver: reads the footers of the files that write added (Delta stats: numRecords, min/max,
   null counts) and commits ONE transaction: a new table is created with the files; an existing
   one gets an ``overwrite`` restricted to ``run_id = <run_id>``, so a rerun replaces that run's
   rows and adds none, and other runs stay untouched. (``write_rows``, for a few driver-side
   rows, writes its file with pyarrow.)

Column comments travel as Arrow field metadata ``{"comment": ...}`` into the Delta schema (they
round-trip through delta-rs 1.6); the table comment (row grain) is the Delta table description.
Every commit carries ``run_id``, ``table``, ``num_records`` and ``num_files`` (and
``userMetadata`` = run id, shown by Spark's ``DESCRIBE HISTORY``) in its commitInfo.

Public API::

    versions = write_run_tables({"offsets": df, ...}, output="/data/audit", run_id="2024-06-01")
    publish_run({"run_id": "2024-06-01", "status": "succeeded", ...}, output="/data/audit")
    read_table("/data/audit", "offsets", run_id="2024-06-01")          # -> pyarrow.Table
    write_frame(df, spec, output=..., run_id=...)  # any TableSpec (e.g. the internal _kept)

``write_run_tables`` refuses ``runs``: that row is committed last with :func:`publish_run`, so a
``runs`` row means the run's tables are complete. Files of failed or speculative task attempts
are never referenced by the log; ``DeltaTable.vacuum`` removes them.

Catalog tables (``--database``) are written the same way, at their folder (``catalog.run_root``:
where the catalog has them, else ``--output``, else the database's folder);
``catalog.register_tables`` then registers the ones the catalog lacks (``CREATE TABLE ... USING
delta LOCATION``). The schemas and row checks are in `delta_schema`, the file stats in
`delta_stats`, Delta's own Spark writer (``--delta-writer spark``) in `spark_writer`.
``choose_writer`` is the one place that picks the writer (why: see there).

Limits: the output must be a path both the driver and the executors can reach (local, or any
URI that Spark's Hadoop file systems, pyarrow and delta-rs all understand: local, and
``s3a://`` through io/storage.py, tested against an S3-compatible server).
"""

from __future__ import annotations

import json
import logging
import urllib.parse
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Literal, get_args

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, Schema
from deltalake.transaction import AddAction, create_table_with_add_actions
from pyspark.sql import DataFrame, SparkSession

from offsets_lib.audit.tables import RUN_ID, TableSpec, table_spec
from offsets_lib.io import spark_settings, storage
from offsets_lib.io.delta_checksum import write_version_checksum
from offsets_lib.io.delta_schema import (
    RunRows,
    arrow_schema,
    check_frame_schema,
    check_run_id,
    check_runs_row,
    check_table_schema,
    file_schema,
)
from offsets_lib.io.delta_stats import stats_of_file

__all__ = [
    "DEFAULT_WRITER",
    "DELTA_WRITERS",
    "DeltaWriter",
    "add_action",
    "choose_writer",
    "commit_files",
    "publish_run",
    "read_table",
    "table_uri",
    "write_files",
    "write_frame",
    "write_rows",
    "write_run_tables",
    "write_task_files",
]

log = logging.getLogger(__name__)

MAX_ROWS_PER_FILE = 2_097_152  # larger table writes split into several files


# ---- locations -------------------------------------------------------------------------------

table_uri = storage.table_uri  # where each table is: storage names every location


def _partition_dir(run_id: str) -> str:
    # On-disk name, already escaped. delta-rs escapes AddAction.path again in the log and
    # unescapes it on read, so the action must carry this raw relative path.
    return f"{RUN_ID}={urllib.parse.quote(run_id, safe='')}"


def _open_table(uri: str) -> DeltaTable | None:
    return storage.delta_table(uri) if storage.is_delta_table(uri) else None


# ---- executor side: Parquet files + file rows ------------------------------------------------


def write_task_files(
    table: pa.Table,
    spec: TableSpec,
    *,
    output: str,
    run_id: str,
    metadata: Mapping[bytes, bytes] | None = None,
) -> list[dict[str, Any]]:
    """Executor side: a table's rows as Parquet files in the run's partition folder (no
    commit), checked like every write (run_id, NOT NULL columns), with `metadata` in each
    footer. Returns what the driver's add actions need (`add_action`), the Delta stats read
    from each file's own footer."""
    schema = file_schema(spec)
    if metadata:
        schema = schema.with_metadata({**(schema.metadata or {}), **metadata})
    checked = RunRows.of(spec, run_id).arrow(table, schema)
    fs, root = _partition_folder(output, spec, run_id)
    written = []
    for start in range(0, checked.num_rows, MAX_ROWS_PER_FILE):
        fs.create_dir(root, recursive=True)
        name = f"part-{uuid.uuid4()}-c000.snappy.parquet"
        part = checked.slice(start, MAX_ROWS_PER_FILE)
        pq.write_table(part, f"{root}/{name}", filesystem=fs, compression="snappy")
        info = fs.get_file_info(f"{root}/{name}")
        written.append(
            {
                "path": f"{_partition_dir(run_id)}/{name}",
                "num_rows": part.num_rows,
                "size": info.size,
                "modification_time": info.mtime_ns // 1_000_000,
                "stats": stats_of_file(fs, info.path, schema),
            }
        )
    return written


def add_action(written: Mapping[str, Any], run_id: str) -> AddAction:
    """The Delta add action of a file from :func:`write_task_files`."""
    return AddAction(
        path=written["path"],
        size=written["size"],
        partition_values={RUN_ID: run_id},
        modification_time=written["modification_time"],
        data_change=True,
        stats=written["stats"],
    )


# ---- driver side -----------------------------------------------------------------------------


def _commit(spec: TableSpec, uri: str, actions: list[AddAction], *, run_id: str) -> int:
    """One transaction: create the table, or replace the run's partition; returns its version."""
    rows = sum(json.loads(a.stats)["numRecords"] for a in actions)
    props = CommitProperties(
        custom_metadata={
            "run_id": run_id,
            "userMetadata": run_id,
            "table": spec.name,
            "num_records": str(rows),
            "num_files": str(len(actions)),
        }
    )
    schema = arrow_schema(spec)
    dt = _open_table(uri)
    if dt is None:
        create_table_with_add_actions(
            storage.arrow_uri(uri),
            Schema.from_arrow(schema),
            actions,
            mode="error",
            partition_by=list(spec.partition_by),
            name=spec.name,
            description=spec.comment,
            storage_options=storage.delta_options(uri) or None,
            commit_properties=props,
        )
    else:
        check_table_schema(dt, spec)  # again: the table may have been created meanwhile
        dt.create_write_transaction(
            actions,
            "overwrite",
            schema,
            partition_by=list(spec.partition_by),
            partition_filters=[(RUN_ID, "=", run_id)],
            commit_properties=props,
        )
    committed = storage.delta_table(uri)
    write_version_checksum(uri, committed)
    version = committed.version()
    log.info(
        "committed %s v%d: run %s, %d rows, %d files",
        spec.name,
        version,
        run_id,
        rows,
        len(actions),
    )
    return version


WRITE_JOBS = 4  # concurrent table-writing Spark jobs in write_run_tables


def write_run_tables(
    frames: Mapping[str, DataFrame | list[AddAction]],
    *,
    output: str,
    run_id: str,
    on_commit: Callable[[str], None] | None = None,
) -> dict[str, int]:
    """Write one run's DataFrames into their Delta tables, replacing that run's earlier rows.

    All schemas are checked before anything is written; then each DataFrame is written by the
    executors and committed in one delta-rs transaction per table, in the order of ``frames``.

    Args:
        frames: table name (a key of ``offsets_lib.audit.tables.TABLES``, not ``runs``) -> DataFrame
            holding at least the table's columns, with ``run_id`` equal to ``run_id``; or the
            add actions of the files the executors already wrote (:func:`write_task_files`).
        output: root folder (or URI) of the tables.
        run_id: the run's id; rows of other runs are never touched.
        on_commit: called with the table name after each table's commit.

    Returns:
        The committed Delta version of each table.
    """
    check_run_id(run_id)
    specs = {name: table_spec(name) for name in frames}
    if "runs" in specs:
        raise ValueError("the runs row is committed last, with publish_run(), not here")
    pending = {name: df for name, df in frames.items() if isinstance(df, DataFrame)}
    for name in frames:
        if name in pending:
            check_frame_schema(pending[name], specs[name])
        dt = _open_table(table_uri(output, name))
        if dt is not None:
            check_table_schema(dt, specs[name])
    # The tables' Spark jobs run concurrently (small ones fill the cores while big ones finish);
    # nothing is committed before every file of every table is written.
    spark = next(iter(pending.values())).sparkSession if pending else None
    with _micros_timestamps(spark), ThreadPoolExecutor(max_workers=WRITE_JOBS) as pool:
        futures = {
            name: pool.submit(write_files, df, specs[name], output=output, run_id=run_id)
            for name, df in pending.items()
        }
        files = {name: future.result() for name, future in futures.items()}
    versions = {}
    for name, frame in frames.items():
        actions = files[name] if name in pending else list(frame)
        versions[name] = commit_files(specs[name], actions, output=output, run_id=run_id)
        if on_commit is not None:
            on_commit(name)  # e.g. the crash-safety test's fault injection
    return versions


def publish_run(runs_row: Mapping[str, Any], *, output: str) -> int:
    """Commit the ``runs`` row of a run (replacing an earlier one with the same run_id).

    Call it after :func:`write_run_tables`. Missing optional keys become null; unknown keys
    fail. Timestamps are ``datetime`` objects (naive ones are taken as UTC). Returns the version.
    """
    spec = table_spec("runs")
    run_id = check_runs_row(runs_row)
    uri = table_uri(output, spec.name)
    dt = _open_table(uri)
    if dt is not None:
        check_table_schema(dt, spec)
    return write_rows([runs_row], spec, output=output, run_id=run_id)


def write_files(df: DataFrame, spec: TableSpec, *, output: str, run_id: str) -> list[AddAction]:
    """Spark's own Parquet writer writes the frame into the table's run_id partition folder
    (no commit); the driver then reads the new files' footers for the Delta stats.

    No row goes through Python: at 10M records this wrote the three largest tables in 2.8-3.7 s
    against 4.8-5.0 s for Arrow batches written by Python workers. A row with another run_id,
    or a null in a non-nullable column, fails the write (before anything is committed).
    """
    fs, root = _partition_folder(output, spec, run_id)
    before = _data_files(fs, root)
    RunRows.of(spec, run_id).spark(df, spec).write.mode("append").option(
        "maxRecordsPerFile", MAX_ROWS_PER_FILE
    ).parquet(f"{table_uri(output, spec.name)}/{_partition_dir(run_id)}")
    return _add_actions(
        fs, root, sorted(_data_files(fs, root).keys() - before.keys()), spec, run_id
    )


def _partition_folder(output: str, spec: TableSpec, run_id: str) -> tuple[pafs.FileSystem, str]:
    return storage.filesystem(f"{table_uri(output, spec.name)}/{_partition_dir(run_id)}")


def _add_actions(
    fs: pafs.FileSystem, root: str, names: list[str], spec: TableSpec, run_id: str
) -> list[AddAction]:
    """Delta add actions for new files of the run's partition folder, stats from their footers."""
    schema = file_schema(spec)
    actions = []
    for name in names:
        info = fs.get_file_info(f"{root}/{name}")
        actions.append(
            AddAction(
                path=f"{_partition_dir(run_id)}/{name}",
                size=info.size,
                partition_values={RUN_ID: run_id},
                modification_time=info.mtime_ns // 1_000_000,
                data_change=True,
                stats=stats_of_file(fs, info.path, schema),
            )
        )
    return actions


def _data_files(fs: pafs.FileSystem, root: str) -> dict[str, pafs.FileInfo]:
    """The Parquet files directly in a partition folder (not Spark's _SUCCESS or _temporary)."""
    if fs.get_file_info(root).type == pafs.FileType.NotFound:
        return {}
    found = fs.get_file_info(pafs.FileSelector(root, recursive=False))
    return {
        i.base_name: i
        for i in found
        if i.type == pafs.FileType.File and i.base_name.endswith(".parquet")
    }


def commit_files(spec: TableSpec, actions: list[AddAction], *, output: str, run_id: str) -> int:
    """One Delta transaction: the files replace the run_id partition; returns the version."""
    return _commit(spec, table_uri(output, spec.name), actions, run_id=run_id)


def write_frame(df: DataFrame, spec: TableSpec, *, output: str, run_id: str) -> int:
    """Write and commit one frame into any table declared by a TableSpec (e.g. internal ones)."""
    with _micros_timestamps(df.sparkSession):
        actions = write_files(df, spec, output=output, run_id=run_id)
    return commit_files(spec, actions, output=output, run_id=run_id)


_TIMESTAMP_TYPE = "spark.sql.parquet.outputTimestampType"


def _micros_timestamps(spark: SparkSession | None) -> AbstractContextManager[None]:
    """Spark writes timestamps as INT64 micros while the tables are written (its INT96 default
    has no Parquet statistics, so the Delta stats would lack them); the setting is restored."""
    if spark is None:
        return nullcontext()
    return spark_settings.setting(spark, _TIMESTAMP_TYPE, "TIMESTAMP_MICROS")


def write_rows(rows: list[Mapping[str, Any]], spec: TableSpec, *, output: str, run_id: str) -> int:
    """Write and commit a few driver-side rows (one Parquet file, written with pyarrow)."""
    table_rows = [{c: row.get(c) for c in spec.columns} for row in rows]
    batch = pa.RecordBatch.from_pylist(table_rows, schema=arrow_schema(spec, with_comments=False))
    schema = file_schema(spec)
    checked = RunRows.of(spec, run_id).arrow(batch, schema)
    fs, root = _partition_folder(output, spec, run_id)
    names = []
    if checked.num_rows:
        fs.create_dir(root, recursive=True)
        names.append(f"part-00000-{uuid.uuid4()}-c000.snappy.parquet")
        table = pa.Table.from_batches([checked])
        pq.write_table(table, f"{root}/{names[0]}", filesystem=fs, compression="snappy")
    actions = _add_actions(fs, root, names, spec, run_id)
    return commit_files(spec, actions, output=output, run_id=run_id)


def read_table(
    output: str, name: str, *, run_id: str | None = None, columns: list[str] | None = None
) -> pa.Table:
    """Read a table (one run's partition when ``run_id`` is given) as the readers do
    (`storage.delta_dataset`: no Python file system left running at interpreter exit)."""
    import pyarrow.dataset as ds

    dataset = storage.delta_dataset(table_uri(output, name))
    condition = ds.field(RUN_ID) == run_id if run_id is not None else None
    return dataset.to_table(filter=condition, columns=columns)


# ---- the writer of a run ---------------------------------------------------------------------

# The one place that chooses the writer: delta-rs, for tables at a path and catalog tables
# alike (a catalog run writes the tables at their folder as a path run does, then registers
# the ones the catalog lacks: register_tables). Measured on the `make run` sample (200k
# records; FIGURES).
# Delta's Spark writer stays for --delta-writer spark (e.g. a catalog whose tables only Spark
# may write); it writes every table in a Spark job of its own after the audit.
DeltaWriter = Literal["delta-rs", "spark"]  # the run options' type (job/options.py)
DELTA_WRITERS: tuple[str, ...] = get_args(DeltaWriter)
DEFAULT_WRITER: DeltaWriter = "delta-rs"


def choose_writer(requested: str | None) -> str:
    """The writer of a run: ``--delta-writer`` when given, else delta-rs (with or without
    ``--database``)."""
    if requested is not None and requested not in DELTA_WRITERS:
        raise ValueError(f"--delta-writer {requested!r}: expected one of {DELTA_WRITERS}")
    return requested or DEFAULT_WRITER
