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
    write_frame(df, spec, output=..., run_id=...)  # any TableSpec (e.g. internal _state)

``write_run_tables`` refuses ``runs``: that row is committed last with :func:`publish_run`, so a
``runs`` row means the run's tables are complete. Files of failed or speculative task attempts
are never referenced by the log; ``DeltaTable.vacuum`` removes them.

Catalog tables (``--database``) are written the same way, at their folder (``run_root``: where
the catalog has them, else ``--output``, else the database's folder); ``register_tables`` then
registers the ones the catalog lacks (``CREATE TABLE ... USING delta LOCATION``).

``write_with_spark_delta(spark, df, name, output=..., run_id=..., database=...)`` writes through
Delta's own Spark writer (``--delta-writer spark``), one table per call,
``publish_run_with_spark`` the runs row; local sessions of job/session.py load Delta Lake, on a
cluster ``delta_spark_available(spark)`` tells whether it can run. ``choose_writer`` is the one
place that picks the writer (why: see there).

Limits: the output must be a path both the driver and the executors can reach (local, or any
URI that Spark's Hadoop file systems, pyarrow and delta-rs all understand: local, and
``s3a://`` through io/storage.py, tested against an S3-compatible server).
"""

from __future__ import annotations

import json
import logging
import math
import urllib.parse
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, Schema
from deltalake.transaction import AddAction, create_table_with_add_actions
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from offsets_lib.audit.tables import RUN_ID, TABLES, TableSpec, table_spec
from offsets_lib.io import catalog, storage

__all__ = [
    "SchemaMismatchError",
    "add_action",
    "arrow_schema",
    "check_frame_schema",
    "check_table_schema",
    "commit_files",
    "create_table_sql",
    "delta_spark_available",
    "publish_run",
    "read_table",
    "register_tables",
    "replace_where",
    "run_root",
    "table_uri",
    "write_files",
    "write_frame",
    "write_rows",
    "write_run_tables",
    "write_task_files",
    "write_with_spark_delta",
]

log = logging.getLogger(__name__)

MAX_ROWS_PER_FILE = 2_097_152  # larger table writes split into several files
STATS_STRING_PREFIX = 32  # string min/max length: Delta-Spark's dataSkippingStringPrefixLength
_ASCII_MAX, _UNICODE_MAX = "\x7f", "\U0010ffff"  # its tie-breakers after a cut max
DELTA_EXTENSION = "DeltaSparkSessionExtension"


class SchemaMismatchError(ValueError):
    """A DataFrame or an existing Delta table does not have the table's declared schema."""


# ---- schemas ---------------------------------------------------------------------------------

_ARROW_ATOMIC: dict[type[T.DataType], pa.DataType] = {
    T.StringType: pa.string(),
    T.BinaryType: pa.binary(),
    T.BooleanType: pa.bool_(),
    T.ShortType: pa.int16(),
    T.IntegerType: pa.int32(),
    T.LongType: pa.int64(),
    T.DoubleType: pa.float64(),
    T.TimestampType: pa.timestamp("us", tz="UTC"),
}


def _arrow_field(field: T.StructField, *, with_comments: bool) -> pa.Field:
    comment = field.metadata.get("comment") if with_comments else None
    metadata = {"comment": comment} if comment else None
    return pa.field(
        field.name, _arrow_type(field.dataType, with_comments), field.nullable, metadata
    )


def _arrow_type(dtype: T.DataType, with_comments: bool) -> pa.DataType:
    if type(dtype) in _ARROW_ATOMIC:
        return _ARROW_ATOMIC[type(dtype)]
    if isinstance(dtype, T.ArrayType):
        item = _arrow_type(dtype.elementType, with_comments)
        return pa.list_(pa.field("element", item, dtype.containsNull))
    if isinstance(dtype, T.StructType):
        return pa.struct([_arrow_field(f, with_comments=with_comments) for f in dtype.fields])
    raise TypeError(f"no Delta mapping for Spark type {dtype.simpleString()}")


def arrow_schema(spec: TableSpec, *, with_comments: bool = True) -> pa.Schema:
    """Arrow schema of a table, column comments as field metadata ``{"comment": ...}``."""
    return pa.schema([_arrow_field(f, with_comments=with_comments) for f in spec.schema.fields])


def _file_schema(spec: TableSpec) -> pa.Schema:
    """Schema of the Parquet files: no partition columns, no comments, everything nullable."""
    fields = [f for f in arrow_schema(spec, with_comments=False) if f.name not in spec.partition_by]
    return pa.schema([f.with_nullable(True) for f in fields])


def _normalise(dtype: pa.DataType) -> str:
    """Type signature that ignores representation details readers do not care about."""
    if pa.types.is_large_string(dtype) or pa.types.is_string_view(dtype):
        return "string"
    if pa.types.is_large_binary(dtype) or pa.types.is_binary_view(dtype):
        return "binary"
    if pa.types.is_timestamp(dtype):
        return "timestamp" if dtype.tz else "timestamp_ntz"
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_list_view(dtype):
        return f"array<{_normalise(dtype.value_type)}>"
    if pa.types.is_struct(dtype):
        inner = ",".join(f"{f.name}:{_normalise(f.type)}" for f in dtype)
        return f"struct<{inner}>"
    return str(dtype)


def _schema_diff(expected: list[tuple[str, str]], actual: list[tuple[str, str]]) -> list[str]:
    want, got = dict(expected), dict(actual)
    problems = [f"missing column {n} {t}" for n, t in expected if n not in got]
    problems += [f"unexpected column {n} {t}" for n, t in actual if n not in want]
    problems += [
        f"column {n}: expected {t}, got {got[n]}" for n, t in expected if n in got and got[n] != t
    ]
    if not problems and [n for n, _ in expected] != [n for n, _ in actual]:
        problems.append(f"column order differs: expected {[n for n, _ in expected]}")
    return problems


def check_frame_schema(df: DataFrame, spec: TableSpec) -> None:
    """Fail unless ``df`` has every column of ``spec`` with the declared type (nullability and
    metadata ignored; extra columns are allowed and not written)."""
    by_name = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    expected = [(f.name, f.dataType.simpleString()) for f in spec.schema.fields]
    actual = [(n, by_name[n]) for n, _ in expected if n in by_name]
    problems = _schema_diff(expected, actual)
    if problems:
        raise SchemaMismatchError(
            f"DataFrame for Delta table {spec.name!r} does not match its schema: "
            + "; ".join(problems)
        )


def check_table_schema(dt: DeltaTable, spec: TableSpec) -> None:
    """Fail unless the existing Delta table has the spec's columns, types and partitioning."""
    existing = pa.schema(dt.schema().to_arrow())
    expected = [(f.name, _normalise(f.type)) for f in arrow_schema(spec)]
    problems = _schema_diff(expected, [(f.name, _normalise(f.type)) for f in existing])
    partitions = list(dt.metadata().partition_columns)
    if partitions != list(spec.partition_by):
        problems.append(f"partitioned by {partitions}, expected {list(spec.partition_by)}")
    if problems:
        raise SchemaMismatchError(
            f"existing Delta table {spec.name!r} at {dt.table_uri} has another schema than "
            "offsets_lib.audit.tables declares (migrate or write elsewhere): " + "; ".join(problems)
        )


# ---- locations -------------------------------------------------------------------------------

table_uri = storage.table_uri  # where each table is: storage names every location


def _partition_dir(run_id: str) -> str:
    # On-disk name, already escaped. delta-rs escapes AddAction.path again in the log and
    # unescapes it on read, so the action must carry this raw relative path.
    return f"{RUN_ID}={urllib.parse.quote(run_id, safe='')}"


def _check_run_id(run_id: object) -> str:
    if not isinstance(run_id, str) or not run_id:
        raise ValueError(f"run_id must be a non-empty string (Delta stores '' as null): {run_id!r}")
    return run_id


@dataclass(frozen=True)
class _RunRows:
    """The rows one write may hold: every row is of the run written (``run_id``) and no
    NOT NULL column holds a null; checked before anything is committed. One rule, read in
    Arrow (driver rows, executor tasks) and in Spark (its own Parquet writer: no row goes
    through Python there)."""

    run_id: str
    not_null: tuple[str, ...]

    @classmethod
    def of(cls, spec: TableSpec, run_id: str) -> _RunRows:
        return cls(
            run_id, tuple(f.name for f in spec.schema.fields if not f.nullable and f.name != RUN_ID)
        )

    def wrong_run(self, others: str) -> str:
        return f"rows with run_id {others} in a write for run_id {self.run_id!r}"

    def nulls(self, columns: list[str]) -> str:
        return f"null values in non-nullable columns {columns}"

    def arrow(
        self, batch: pa.RecordBatch | pa.Table, schema: pa.Schema
    ) -> pa.RecordBatch | pa.Table:
        """The checked batch in the file schema (partition column dropped); ValueError else."""
        run_ids = batch.column(RUN_ID)
        if run_ids.null_count or (len(run_ids) and run_ids.unique().to_pylist() != [self.run_id]):
            others = [v for v in run_ids.unique().to_pylist() if v != self.run_id][:3]
            raise ValueError(self.wrong_run(str(others)))
        nulls = [c for c in self.not_null if batch.column(c).null_count]
        if nulls:
            raise ValueError(self.nulls(nulls))
        return batch.select(schema.names).cast(schema)

    def spark(self, df: DataFrame, spec: TableSpec) -> DataFrame:
        """The table's file columns (no run_id), failing on a wrong row while Spark writes."""
        # the message around the offending run id, which only Spark knows (NUL marks its place:
        # the repr of a run id escapes it)
        head, tail = self.wrong_run("['\0']").split("\0")
        wrong_run = F.col(RUN_ID).isNull() | (F.col(RUN_ID) != F.lit(self.run_id))
        wrong_run_error = F.raise_error(
            F.concat(F.lit(head), F.coalesce(F.col(RUN_ID), F.lit("None")), F.lit(tail))
        )
        columns = []
        for i, f in enumerate(f for f in spec.schema.fields if f.name != RUN_ID):
            column = F.col(f.name)
            if f.name in self.not_null:
                error = F.raise_error(F.lit(self.nulls([f.name])))
                column = F.when(column.isNull(), error).otherwise(column)
            if i == 0:
                column = F.when(wrong_run, wrong_run_error).otherwise(column)
            columns.append(column.cast(f.dataType).alias(f.name))
        return df.select(*columns)


def _open_table(uri: str) -> DeltaTable | None:
    return storage.delta_table(uri) if storage.is_delta_table(uri) else None


# ---- executor side: Parquet files + file rows ------------------------------------------------


def _string_min(value: str) -> str:
    """A lower bound of at most 32 characters: the value's prefix."""
    return value[:STATS_STRING_PREFIX]


def _string_max(value: str) -> str:
    """An upper bound of a string, short where possible, built as Delta-Spark's
    ``truncateMaxStringAgg`` builds it: a prefix of 32 to 64 characters, then U+007F or
    U+10FFFF, whichever is greater than the character cut there; the whole value when no such
    prefix exists (Delta-Spark leaves the max out then, which delta-rs' pyarrow dataset reads as
    "no row can match"). Readers compare strings by their UTF-8 bytes, that is by code points,
    as Python does."""
    if len(value) <= STATS_STRING_PREFIX:
        return value
    for cut in range(STATS_STRING_PREFIX, min(len(value), 2 * STATS_STRING_PREFIX + 1)):
        if value[cut] < _ASCII_MAX:
            return value[:cut] + _ASCII_MAX
        if value[cut] < _UNICODE_MAX:
            return value[:cut] + _UNICODE_MAX
    return value


def _stat_value(value: Any, dtype: pa.DataType, *, upper: bool) -> Any:
    """A column's min (or max, ``upper``) as Delta stats JSON, or None when it must be left out
    (binary columns: no reader skips on them; non-finite floats: JSON has no such number).
    A timestamp comes as epoch milliseconds (`_epoch_ms`)."""
    if value is None:
        return None
    if pa.types.is_timestamp(dtype):
        return _delta_timestamp(value)
    if pa.types.is_boolean(dtype):
        return bool(value)
    if pa.types.is_integer(dtype):
        return int(value)
    if pa.types.is_floating(dtype):
        return float(value) if math.isfinite(value) else None
    if pa.types.is_string(dtype) and isinstance(value, str):
        return _string_max(value) if upper else _string_min(value)
    return None


_MS_PER_DAY = 86_400_000
_UNITS_PER_MS = {"ms": 1, "us": 1_000, "ns": 1_000_000}


def _epoch_ms(raw: int, unit: str, *, upper: bool) -> int:
    """A timestamp bound in `unit` as epoch milliseconds, rounded outwards (floor for a min,
    ceiling for a max) so that it stays a bound."""
    if unit == "s":
        return raw * 1000
    per_ms = _UNITS_PER_MS[unit]
    return -(-raw // per_ms) if upper else raw // per_ms


def _delta_timestamp(epoch_ms: int) -> str:
    """UTC ISO-8601 with milliseconds, as Delta-Spark writes a timestamp bound: proleptic
    Gregorian, a year past 9999 with '+', one before year 0 with '-' (java.time's ISO format).
    Integer arithmetic: Python's datetime stops at year 9999, Kafka's timestamps do not."""
    days, ms = divmod(epoch_ms, _MS_PER_DAY)
    # days since 1970-01-01 to a civil date (the era algorithm of Howard Hinnant's chrono notes)
    z = days + 719_468
    era = z // 146_097
    day_of_era = z - era * 146_097
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36_524 - day_of_era // 146_096
    ) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    month_index = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * month_index + 2) // 5 + 1
    month = month_index + 3 if month_index < 10 else month_index - 9
    year = year_of_era + era * 400 + (month <= 2)
    sign = "+" if year > 9999 else "-" if year < 0 else ""
    seconds, millis = divmod(ms, 1000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return (
        f"{sign}{abs(year):04d}-{month:02d}-{day:02d}"
        f"T{hour:02d}:{minute:02d}:{second:02d}.{millis:03d}Z"
    )


def _file_stats(
    md: pq.FileMetaData, schema: pa.Schema, read_column: Callable[[str], pa.ChunkedArray]
) -> str:
    """Delta ``stats`` JSON (numRecords, minValues, maxValues, nullCount) from the footer.

    Every column a reader may skip on gets a min and a max whenever it has a non-null value:
    delta-rs (1.6) turns a missing one into a fragment guarantee that no row can match, so a
    filter on that column would skip the file. A footer without them for a row group with
    values (Parquet writers drop min/max of more than 4 KiB) costs a read of that column.
    """
    flat = {f.name: f.type for f in schema if not pa.types.is_nested(f.type)}
    stored = md.schema.to_arrow_schema()
    units = {  # timestamps are compared raw: a year past 9999 is no Python datetime
        name: stored.field(name).type.unit
        for name, dtype in flat.items()
        if pa.types.is_timestamp(dtype) and stored.get_field_index(name) >= 0
    }
    lows: dict[str, Any] = {}
    highs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    bad: set[str] = set()  # no null count in some row group: no stats at all
    unbounded: set[str] = set()  # values in a row group without min/max: read the column
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        for j in range(rg.num_columns):
            col = rg.column(j)
            name, s = col.path_in_schema, col.statistics
            if name not in flat:
                continue
            if s is None or not s.has_null_count:
                bad.add(name)
                continue
            nulls[name] = nulls.get(name, 0) + s.null_count
            if not s.has_min_max:
                if s.null_count < rg.num_rows:
                    unbounded.add(name)
                continue  # else an all-null row group: no bound to add
            low, high = (s.min_raw, s.max_raw) if name in units else (s.min, s.max)
            lows[name] = low if name not in lows else min(lows[name], low)
            highs[name] = high if name not in highs else max(highs[name], high)
    for name in sorted(unbounded - bad):
        column = read_column(name)
        bounds = pc.min_max(column.cast(pa.int64()) if name in units else column)
        lows[name], highs[name] = bounds["min"].as_py(), bounds["max"].as_py()
    for name, unit in units.items():  # raw integers in the file's unit
        if name in lows:
            lows[name] = _epoch_ms(lows[name], unit, upper=False)
            highs[name] = _epoch_ms(highs[name], unit, upper=True)
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    for name in [n for n in lows if n not in bad]:
        lo = _stat_value(lows[name], flat[name], upper=False)
        hi = _stat_value(highs[name], flat[name], upper=True)
        if lo is not None and hi is not None:
            mins[name], maxs[name] = lo, hi
    stats = {
        "numRecords": md.num_rows,
        "minValues": mins,
        "maxValues": maxs,
        "nullCount": {k: v for k, v in nulls.items() if k not in bad},
    }
    return json.dumps(stats, separators=(",", ":"))


def _stats_of_file(fs: pafs.FileSystem, path: str, schema: pa.Schema) -> str:
    """The Delta stats of a written Parquet file (`_file_stats`)."""

    def read_column(name: str) -> pa.ChunkedArray:
        return pq.read_table(path, columns=[name], filesystem=fs).column(0)

    return _file_stats(pq.read_metadata(path, filesystem=fs), schema, read_column)


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
    schema = _file_schema(spec)
    if metadata:
        schema = schema.with_metadata({**(schema.metadata or {}), **metadata})
    checked = _RunRows.of(spec, run_id).arrow(table, schema)
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
                "stats": _stats_of_file(fs, info.path, schema),
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
    version = storage.delta_table(uri).version()
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
    _check_run_id(run_id)
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
    unknown = sorted(set(runs_row) - set(spec.columns))
    if unknown:
        raise SchemaMismatchError(f"runs row has unknown columns {unknown}")
    run_id = _check_run_id(runs_row.get(RUN_ID))
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
    _RunRows.of(spec, run_id).spark(df, spec).write.mode("append").option(
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
    schema = _file_schema(spec)
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
                stats=_stats_of_file(fs, info.path, schema),
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


@contextmanager
def _micros_timestamps(spark: SparkSession | None) -> Iterator[None]:
    """Spark writes timestamps as INT64 micros while the tables are written (its INT96 default
    has no Parquet statistics, so the Delta stats would lack them); the setting is restored."""
    if spark is None:
        yield
        return
    previous = spark.conf.get(_TIMESTAMP_TYPE, None)
    spark.conf.set(_TIMESTAMP_TYPE, "TIMESTAMP_MICROS")
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(_TIMESTAMP_TYPE)
        else:
            spark.conf.set(_TIMESTAMP_TYPE, previous)


def write_rows(rows: list[Mapping[str, Any]], spec: TableSpec, *, output: str, run_id: str) -> int:
    """Write and commit a few driver-side rows (one Parquet file, written with pyarrow)."""
    table_rows = [{c: row.get(c) for c in spec.columns} for row in rows]
    batch = pa.RecordBatch.from_pylist(table_rows, schema=arrow_schema(spec, with_comments=False))
    schema = _file_schema(spec)
    checked = _RunRows.of(spec, run_id).arrow(batch, schema)
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


# ---- optional: Spark's own Delta writer (clusters with delta-spark) --------------------------


def delta_spark_available(spark: SparkSession) -> bool:
    """True when the session is configured with Delta Lake's SQL extension (no JVM access)."""
    return DELTA_EXTENSION in (spark.conf.get("spark.sql.extensions", "") or "")


_sql_string = catalog.sql_string
_identifier = catalog.identifier


def replace_where(run_id: str) -> str:
    """The ``replaceWhere`` predicate selecting one run's partition."""
    return f"{RUN_ID} = {_sql_string(run_id)}"


# The one place that chooses the writer: delta-rs, for tables at a path and catalog tables
# alike (a catalog run writes the tables at their folder as a path run does, then registers
# the ones the catalog lacks: register_tables). Measured on the `make run` sample (200k
# records; FIGURES).
# Delta's Spark writer stays for --delta-writer spark (e.g. a catalog whose tables only Spark
# may write); it writes every table in a Spark job of its own after the audit.
DELTA_WRITERS = ("spark", "delta-rs")
DEFAULT_WRITER = "delta-rs"


def choose_writer(requested: str | None) -> str:
    """The writer of a run: ``--delta-writer`` when given, else delta-rs (with or without
    ``--database``)."""
    if requested is not None and requested not in DELTA_WRITERS:
        raise ValueError(f"--delta-writer {requested!r}: expected one of {DELTA_WRITERS}")
    return requested or DEFAULT_WRITER


def table_identifier(name: str, *, output: str | None, database: str | None) -> str:
    """How Spark SQL names the table: ``db.table`` in the catalog, else ``delta.`<uri>```."""
    if database is not None:
        return f"{_identifier(database)}.{_identifier(name)}"
    if output is None:
        raise ValueError("a table needs an --output path or a --database")
    return f"delta.{_identifier(table_uri(output, name))}"


def create_table_sql(spec: TableSpec, uri: str | None, *, database: str | None = None) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for the Spark Delta path, with every column comment.

    With ``database`` the table is registered in the catalog as ``database.<table>``: external
    at ``uri`` when given, else managed (in the database's folder)."""

    def column(f: T.StructField) -> str:
        not_null = "" if f.nullable else " NOT NULL"
        comment = _sql_string(f.metadata["comment"])
        return f"{_identifier(f.name)} {_ddl_type(f.dataType)}{not_null} COMMENT {comment}"

    columns = ",\n  ".join(column(f) for f in spec.schema.fields)
    partitions = ", ".join(_identifier(c) for c in spec.partition_by)
    if database is not None:
        target = f"{_identifier(database)}.{_identifier(spec.name)}"
        location = f"\nLOCATION {_sql_string(uri)}" if uri is not None else ""
    else:
        if uri is None:
            raise ValueError("a path table needs its location")
        target, location = f"delta.{_identifier(uri)}", ""
    return (
        f"CREATE TABLE IF NOT EXISTS {target} (\n  {columns}\n) USING delta\n"
        f"PARTITIONED BY ({partitions})\nCOMMENT {_sql_string(spec.comment)}{location}"
    )


def _ddl_type(dtype: T.DataType) -> str:
    """A column type in Spark SQL, with the comments of nested struct fields (which
    ``simpleString`` drops, and delta-rs keeps)."""
    if isinstance(dtype, T.ArrayType):
        return f"array<{_ddl_type(dtype.elementType)}>"
    if isinstance(dtype, T.StructType):
        fields = []
        for f in dtype.fields:
            not_null = "" if f.nullable else " NOT NULL"
            comment = f.metadata.get("comment")
            suffix = f" COMMENT {_sql_string(comment)}" if comment else ""
            fields.append(f"{_identifier(f.name)}: {_ddl_type(f.dataType)}{not_null}{suffix}")
        return f"struct<{', '.join(fields)}>"
    return dtype.simpleString()


def ensure_database(spark: SparkSession, database: str) -> str:
    """Create the catalog database unless it exists; returns its location (the root of its
    managed tables, and of the job's internal tables when no --output is given)."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {_identifier(database)}")
    return storage.location(spark.catalog.getDatabase(database).locationUri)


def run_root(spark: SparkSession, database: str, output: str | None) -> str:
    """Where a run writes the tables of catalog ``database`` (created unless it exists): where
    the catalog has them already, else ``output``, else the database's folder. Fails
    (ValueError) when ``output`` is given and the catalog has one of them elsewhere."""
    location = ensure_database(spark, database)
    registered = {
        name: uri
        for name, uri in catalog.table_locations(spark, database).items()
        if name in TABLES
    }
    root = output if output is not None else location
    if registered and output is None:
        root = catalog.tables_root(database, registered)
    elsewhere = {
        name: uri
        for name, uri in registered.items()
        if uri.rstrip("/") != table_uri(root, name).rstrip("/")
    }
    if elsewhere:
        raise ValueError(
            f"database {database!r} has tables of another folder than {root}:"
            f" {dict(sorted(elsewhere.items()))}; give that folder as --output, or another"
            " --database"
        )
    return root


def register_tables(
    spark: SparkSession, names: Iterable[str], *, output: str, database: str
) -> list[str]:
    """Register the Delta tables ``names`` under ``output`` that the catalog lacks, as
    ``database.<name>``, external at their folder (``CREATE TABLE ... USING delta
    LOCATION``: Delta takes the schema, comments, description and partitioning from the
    table's log). Returns the names registered now; a table registered already costs nothing
    more than the one metastore query."""
    registered = catalog.table_locations(spark, database)
    missing = {
        name: table_uri(output, name)
        for name in names
        if name not in registered and storage.is_delta_table(table_uri(output, name))
    }

    def register(name: str) -> None:
        target = f"{_identifier(database)}.{_identifier(name)}"
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS {target} USING delta LOCATION {_sql_string(missing[name])}"
        )

    # Delta reads each table's log in Spark jobs of its own: concurrent, they fill the cores
    # (the metastore's calls are serialised by Spark itself)
    with ThreadPoolExecutor(max_workers=WRITE_JOBS) as pool:
        list(pool.map(register, missing))
    if missing:
        log.info("registered in %s: %s", database, ", ".join(missing))
    return list(missing)


def write_with_spark_delta(
    spark: SparkSession,
    df: DataFrame,
    name: str,
    *,
    output: str | None,
    run_id: str,
    database: str | None = None,
) -> None:
    """``--delta-writer spark``: write one table with Delta's own Spark writer.

    Needs a session configured with Delta Lake (jars + ``DeltaSparkSessionExtension``; local
    sessions of ``job/session.py`` are). Same contract as :func:`write_run_tables` for one
    table, except that ``runs`` is accepted (write it last). The table is created first with
    every column comment, the table comment and ``run_id`` partitioning (``CREATE TABLE IF NOT
    EXISTS``); then the run's rows replace its partition (``replaceWhere``), so a rerun replaces
    them and other runs stay. With ``database`` the table is ``database.<name>`` in the
    catalog (external at ``output`` when given, else managed).
    """
    _check_run_id(run_id)
    spec = table_spec(name)
    check_frame_schema(df, spec)
    if not delta_spark_available(spark):
        raise RuntimeError(
            "--delta-writer spark needs a session with spark.sql.extensions="
            "io.delta.sql.DeltaSparkSessionExtension and the delta-spark jars"
        )
    uri = table_uri(output, name) if output is not None else None
    spark.sql(create_table_sql(spec, uri, database=database))
    writer = (
        _checked_with_run_id(df, spec, run_id)
        .write.format("delta")
        .mode("overwrite")
        .option("replaceWhere", replace_where(run_id))
        .option("userMetadata", run_id)
    )
    if database is not None:
        writer.saveAsTable(table_identifier(name, output=output, database=database))
    else:
        writer.save(uri)
    log.info("committed %s with Spark's Delta writer: run %s", name, run_id)


def _checked_with_run_id(df: DataFrame, spec: TableSpec, run_id: str) -> DataFrame:
    """The spec's columns in order, checked like the delta-rs path (`_RunRows`)."""
    checked = _RunRows.of(spec, run_id).spark(df, spec)
    return checked.withColumn(RUN_ID, F.lit(run_id)).select(*spec.columns)


def publish_run_with_spark(
    spark: SparkSession,
    runs_row: Mapping[str, Any],
    *,
    output: str | None,
    database: str | None = None,
) -> None:
    """:func:`publish_run` through Spark's Delta writer (same row, same checks)."""
    spec = table_spec("runs")
    unknown = sorted(set(runs_row) - set(spec.columns))
    if unknown:
        raise SchemaMismatchError(f"runs row has unknown columns {unknown}")
    run_id = _check_run_id(runs_row.get(RUN_ID))
    row = tuple(runs_row.get(c) for c in spec.columns)
    df = spark.createDataFrame([row], schema=_nullable(spec.schema))
    write_with_spark_delta(spark, df, "runs", output=output, run_id=run_id, database=database)


def _nullable(schema: T.StructType) -> T.StructType:
    """The schema with every field nullable (NOT NULL is checked while writing)."""
    return T.StructType([T.StructField(f.name, f.dataType, True, f.metadata) for f in schema])
