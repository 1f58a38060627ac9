"""Delta sink: the audit tasks write Parquet, the driver commits one delta-rs transaction per table.

No Delta JVM classes are needed (see shared/notes/feasibility.md section 2). For every table:

1. executors (`engine.staging.TableFiles`): each audit task writes its rows of the table
   (`write_task_files`: the spec's columns, partition column dropped, timestamps as INT64
   micros) into ``<output>/<table>/run_id=<quoted run_id>/``, checked like every write (a row of
   another run or a null in a non-nullable column fails the task, before any commit), with the
   Delta stats read from each file's own footer;
2. driver: an existing table's schema must equal the
   :class:`~offsets_lib.audit.tables.TableSpec` (delta-rs itself does not check schemas on
   commit), then ONE transaction: a new table is created with the files; an existing one gets
   an ``overwrite`` restricted to ``run_id = <run_id>``, so a rerun replaces that run's rows and
   adds none, and other runs stay untouched. (``write_rows``, for a few driver-side rows,
   writes its file with pyarrow.)

Column comments travel as Arrow field metadata ``{"comment": ...}`` into the Delta schema (they
round-trip through delta-rs 1.6); the table comment (row grain) is the Delta table description.
Every commit carries ``run_id``, ``table``, ``num_records`` and ``num_files`` (and
``userMetadata`` = run id, shown by Spark's ``DESCRIBE HISTORY``) in its commitInfo.

Public API::

    written = write_task_files(rows, spec, output="/data/audit", run_id="2024-06-01")  # a task
    versions = write_run_tables({"offsets": [add_action(w, "2024-06-01") for w in written]},
                                output="/data/audit", run_id="2024-06-01")
    publish_run({"run_id": "2024-06-01", "status": "succeeded", ...}, output="/data/audit")
    read_table("/data/audit", "offsets", run_id="2024-06-01")          # -> pyarrow.Table

``write_run_tables`` refuses ``runs``: that row is committed last with :func:`publish_run`, so a
``runs`` row means the run's tables are complete. Files of failed or speculative task attempts
are never referenced by the log; ``DeltaTable.vacuum`` removes them.

Catalog tables (``--database``) are written the same way, at their folder (where the catalog
has them, else ``--output``, else the database's folder: ``catalog.run_root_of``);
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
from collections.abc import Mapping
from typing import Any, Literal, get_args

import pyarrow as pa
import pyarrow.fs as pafs
from deltalake import CommitProperties, DeltaTable, Schema
from deltalake.transaction import AddAction, create_table_with_add_actions

from offsets_lib.audit.tables import RUN_ID, TableSpec, table_spec
from offsets_lib.io import storage
from offsets_lib.io.delta_checksum import write_version_checksum
from offsets_lib.io.delta_schema import (
    RunRows,
    arrow_schema,
    check_run_id,
    check_runs_row,
    check_table_schema,
    file_schema,
)
from offsets_lib.io.delta_stats import stats_of_file

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
        storage.write_parquet(part, f"{root}/{name}", fs)
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


def write_run_tables(
    files: Mapping[str, list[AddAction]],
    *,
    output: str,
    run_id: str,
) -> dict[str, int]:
    """Commit one run's table files (written by :func:`write_task_files`) into their Delta
    tables, replacing that run's earlier rows: one delta-rs transaction per table, in the order
    of ``files`` (table name -> add actions, never ``runs``), once every existing table's
    schema is checked; other runs' rows are never touched. Returns each table's Delta version.
    """
    check_run_id(run_id)
    specs = {name: table_spec(name) for name in files}
    if "runs" in specs:
        raise ValueError("the runs row is committed last, with publish_run(), not here")
    for name in files:
        dt = _open_table(table_uri(output, name))
        if dt is not None:
            check_table_schema(dt, specs[name])
    versions = {}
    for name, actions in files.items():
        versions[name] = commit_files(specs[name], list(actions), output=output, run_id=run_id)
    return versions


def create_missing_tables(specs: list[TableSpec], *, output: str, run_id: str) -> list[str]:
    """Create, empty, each table of ``specs`` that has no Delta log under ``output`` (its
    schema, partitioning and description, as a first commit makes them; the commit carries
    ``run_id``): a catalog registers a table only once its log exists. Returns their names."""
    created = []
    for spec in specs:
        uri = table_uri(output, spec.name)
        if not storage.is_delta_table(uri):
            _commit(spec, uri, [], run_id=run_id)
            created.append(spec.name)
    return created


def table_files(root: str, name: str, actions: list[AddAction]) -> list[str]:
    """The URIs of a table's files written under ``root`` (their add actions' paths, which are
    relative to the table's folder)."""
    return [f"{table_uri(root, name)}/{action.path}" for action in actions]


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


def commit_files(spec: TableSpec, actions: list[AddAction], *, output: str, run_id: str) -> int:
    """One Delta transaction: the files replace the run_id partition; returns the version."""
    return _commit(spec, table_uri(output, spec.name), actions, run_id=run_id)


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
        storage.write_parquet(table, f"{root}/{names[0]}", fs)
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
# may write); it writes the rows of the audit tasks' files in a Spark job per table.
DeltaWriter = Literal["delta-rs", "spark"]  # the run options' type (job/options.py)
DELTA_WRITERS: tuple[str, ...] = get_args(DeltaWriter)
DEFAULT_WRITER: DeltaWriter = "delta-rs"


def choose_writer(requested: str | None) -> str:
    """The writer of a run: ``--delta-writer`` when given, else delta-rs (with or without
    ``--database``)."""
    if requested is not None and requested not in DELTA_WRITERS:
        raise ValueError(f"--delta-writer {requested!r}: expected one of {DELTA_WRITERS}")
    return requested or DEFAULT_WRITER
