"""Task results of one run, staged as Parquet files next to the tables (I/O; shell side).

The audit tasks (exchange.audit_pieces) produce a few tables each: live offsets with their
groups' facts, groups, rejects, metric partials and one stats row. Handing them back to Spark as
rows and caching them converted 1.3M wide rows Arrow -> JVM rows -> cache at 10M records; a task
writing them as Parquet itself and Spark reading them back with its vectorized reader is ~5 s
faster there, and nothing is cached. Each task returns a manifest (one row per file it wrote,
plus its stats row); the driver reads exactly the listed files, so the files of a failed or
speculative task attempt, which no manifest names, are never read. Most tasks' results are
the tables' own files (`TableFiles`); what is staged is the rest (the meters' partial counts).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from offsets_lib.audit.tables import RUN_ID
from offsets_lib.audit.task_audit import KEPT, KIND_ARROW, METRIC, STATS
from offsets_lib.engine.exchange import kept_task_metadata
from offsets_lib.io import storage

if TYPE_CHECKING:
    from deltalake.transaction import AddAction

TABLE_FILE = "table_file"  # manifest kind of a table file written by the task (TableFiles)
MANIFEST_ARROW = pa.schema(
    [
        ("kind", pa.string()),
        ("path", pa.string()),  # null on the stats row; a table file's path in its table
        ("num_rows", pa.int64()),
        *KIND_ARROW[STATS],
        # table files only: what the Delta add action needs
        ("table", pa.string()),
        ("size", pa.int64()),
        ("modification_time", pa.int64()),
        ("stats", pa.string()),
    ]
)
STAGING_DIR = "_staging"


@dataclass(frozen=True)
class Staging:
    """One run's staging folder (`uri`); `emit` runs in the executors, the rest in the driver."""

    uri: str

    @classmethod
    def fresh(cls, output: str, run_id: str) -> Staging:
        """A new folder below the output root (shared storage on a cluster, like the tables).

        Whatever an earlier run left there (it was killed before cleaning up) is removed first;
        the caller holds the output's lock, so no other run is using it.
        """
        root = cls.root(output)
        _remove(root)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)
        return cls(f"{root}/{safe}-{uuid.uuid4().hex[:12]}")

    @staticmethod
    def root(output: str) -> str:
        """The folder of every run's staging folder under `output` (a local path made
        absolute: pyarrow's file systems take no relative path)."""
        return storage.table_uri(output, STAGING_DIR)

    @property
    def schema(self) -> pa.Schema:
        return MANIFEST_ARROW

    def __call__(self, tables: Mapping[str, pa.Table]) -> Iterator[pa.RecordBatch]:
        """Write each non-empty result table as one Parquet file; yield the manifest rows."""
        fs, root = storage.filesystem(self.uri)
        rows: list[dict[str, Any]] = []
        for kind, table in tables.items():
            if kind == STATS:
                rows.extend({"kind": STATS, **row} for row in table.to_pylist())
            elif table.num_rows:
                fs.create_dir(f"{root}/{kind}", recursive=True)
                name = f"{kind}/part-{uuid.uuid4().hex}.parquet"
                storage.write_parquet(table, f"{root}/{name}", fs)
                rows.append(
                    {"kind": kind, "path": f"{self.uri}/{name}", "num_rows": table.num_rows}
                )
        yield pa.RecordBatch.from_pylist(rows, schema=MANIFEST_ARROW)

    def metric_sums(self, manifest: Sequence[Mapping[str, Any]]) -> pa.Table:
        """The `metrics` counts of the run (audit.metrics.hourly_sums) from the tasks' staged
        partial counts, read here with pyarrow file by file. Why not Spark: its aggregate and
        write of these few rows (a few per hour and partition per task) took 1.4 s of a 16 s
        hourly Kafka run (two jobs and their planning, 2 cores)."""
        from offsets_lib.audit.metrics import hourly_sums

        def partials() -> Iterator[pa.Table]:
            for row in manifest:
                if row["kind"] == METRIC:
                    fs, path = storage.filesystem(row["path"])
                    yield pq.read_table(path, filesystem=fs)

        return hourly_sums(partials())

    def remove(self) -> None:
        """Delete the folder (after the tables are written, or when the run failed), and the
        staging root once empty: nothing is left beside the tables."""
        _remove(self.uri)
        fs, root = storage.filesystem(self.uri.rsplit("/", 1)[0])
        found = fs.get_file_info(pafs.FileSelector(root, allow_not_found=True))
        if not found:  # on an object store an empty folder is no object: nothing to delete
            with contextlib.suppress(OSError):
                fs.delete_dir(root)


@dataclass(frozen=True)
class TableFiles:
    """Stages a task's results like `staging`, and also writes the files of `tables` (some of
    table_rows.DIRECT_TABLES) into the run's partition of those tables, for the driver to commit
    (`written_files`). Needs the evaluation time before the audit runs (the map stage tells it), and
    for the lag table the run's log-end offsets, staged as one Parquet file (`end_offsets_uri`,
    written by `stage_end_offsets`; None: every end is unknown)."""

    staging: Staging
    output: str
    run_id: str
    as_of_ms: int
    tables: tuple[str, ...]
    end_offsets_uri: str | None = None

    @property
    def schema(self) -> pa.Schema:
        return MANIFEST_ARROW

    def written_kinds(self) -> set[str]:
        """The result kinds that every table of is written here: not staged (nothing reads
        them back; at 10M records they were ~0.6 CPU-s of Parquet writes)."""
        from offsets_lib.audit.table_rows import TABLES_OF_KIND

        return {kind for kind, names in TABLES_OF_KIND.items() if set(names) <= set(self.tables)}

    def __call__(self, tables: Mapping[str, pa.Table]) -> Iterator[pa.RecordBatch]:
        from offsets_lib.audit.table_rows import table_rows
        from offsets_lib.audit.tables import table_spec
        from offsets_lib.io import delta_schema, sink

        written = self.written_kinds()
        yield from self.staging({kind: t for kind, t in tables.items() if kind not in written})
        rows: list[dict[str, Any]] = []
        end_offsets = None
        if self.end_offsets_uri is not None and "lag" in self.tables:
            fs, path = storage.filesystem(self.end_offsets_uri)
            end_offsets = pq.read_table(path, filesystem=fs)
        for name in self.tables:
            spec = table_spec(name)
            table = table_rows(
                name,
                tables,
                run_id=self.run_id,
                as_of_ms=self.as_of_ms,
                schema=delta_schema.arrow_schema(spec, with_comments=False),
                end_offsets=end_offsets,
            )
            for written in sink.write_task_files(
                table, spec, output=self.output, run_id=self.run_id
            ):
                rows.append({"kind": TABLE_FILE, "table": name, **written})
        if rows:
            yield pa.RecordBatch.from_pylist(rows, schema=MANIFEST_ARROW)


@dataclass(frozen=True)
class KeptFiles:
    """Hands a task's results to `emit`, and writes its kept records (task_audit.KEPT, raw) as
    files of the incremental run's kept-records table, partition `kept_id`, for the driver to commit
    once every audit table has committed (`written_files(..., [KEPT_TABLE], kept_id)`). A file
    whose records all go to one audit task says which (exchange.kept_task_metadata): the next
    run hands it to that task without mapping it again.

    A transaction marker that several tasks keep is stored once by each of them; the next run's
    audit tasks read it once (task_audit.task_tables). Measured over a 10M-record topic on 2 cores:
    choosing and storing the kept records in a second pass over the records took
    13-16 s of each incremental run."""

    emit: Any  # a pipeline.TaskEmitter whose schema is MANIFEST_ARROW
    output: str
    kept_id: str
    tasks: int  # audit tasks of the run: the files say which one their records go to

    @property
    def schema(self) -> pa.Schema:
        return MANIFEST_ARROW

    def __call__(self, tables: Mapping[str, pa.Table]) -> Iterator[pa.RecordBatch]:
        from offsets_lib.io import incremental, sink

        yield from self.emit({kind: t for kind, t in tables.items() if kind != KEPT})
        kept = tables.get(KEPT)
        if kept is None or not kept.num_rows:
            return
        metadata = kept_task_metadata(kept, self.tasks)
        kept = kept.append_column(RUN_ID, pa.array([self.kept_id] * kept.num_rows, pa.string()))
        written = sink.write_task_files(
            kept, incremental.KEPT_SPEC, output=self.output, run_id=self.kept_id, metadata=metadata
        )
        rows = [{"kind": TABLE_FILE, "table": incremental.KEPT_TABLE, **w} for w in written]
        yield pa.RecordBatch.from_pylist(rows, schema=MANIFEST_ARROW)


def stage_end_offsets(staging: Staging, end_offsets: pa.Table) -> str:
    """The run's log-end offsets (lag.latest_end_offsets: one row per partition) as one Parquet
    file under the staging folder, for the audit tasks' lag rows (`TableFiles`); its URI.
    Written by the driver, which holds them (a Spark write was the first Parquet job of a
    Kafka run's JVM: 0.7-2 s)."""
    from offsets_lib.audit.lag import latest_end_offsets

    uri = storage.arrow_uri(f"{staging.uri}/end_offsets.parquet")
    fs, path = storage.filesystem(uri)
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    pq.write_table(latest_end_offsets(end_offsets), path, filesystem=fs)
    return uri


def written_files(
    manifest: Sequence[Mapping[str, Any]], tables: Sequence[str], run_id: str
) -> dict[str, list[AddAction]]:
    """Add actions of the table files the tasks wrote (TableFiles), by table (every one of
    `tables`, with no file when no task had rows for it)."""
    from offsets_lib.io.sink import add_action

    files: dict[str, list[AddAction]] = {name: [] for name in tables}
    for row in manifest:
        if row["kind"] == TABLE_FILE and row["table"] in files:
            files[row["table"]].append(add_action(row, run_id))
    return files


def _remove(uri: str) -> None:
    fs, root = storage.filesystem(uri)
    if fs.get_file_info(root).type != pafs.FileType.NotFound:
        fs.delete_dir(root)
