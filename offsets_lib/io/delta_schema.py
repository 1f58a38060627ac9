"""Delta table schemas and the checks of a write: the Arrow schema of a `TableSpec`; that a
DataFrame or an existing Delta table has it (delta-rs does not check schemas on commit, so the
writers do); and the rows one write may hold (`RunRows`), read by both writers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from offsets_lib.audit.tables import RUN_ID, TableSpec, table_spec


class SchemaMismatchError(ValueError):
    """A DataFrame or an existing Delta table does not have the table's declared schema."""


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


def file_schema(spec: TableSpec) -> pa.Schema:
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


# ---- the rows of a write ---------------------------------------------------------------------


def check_run_id(run_id: object) -> str:
    """The run id of a write: a non-empty string; ValueError else."""
    if not isinstance(run_id, str) or not run_id:
        raise ValueError(f"run_id must be a non-empty string (Delta stores '' as null): {run_id!r}")
    return run_id


@dataclass(frozen=True)
class RunRows:
    """The rows one write may hold: every row is of the run written (``run_id``) and no
    NOT NULL column holds a null; checked before anything is committed. One rule, read in
    Arrow (driver rows, executor tasks) and in Spark (its own Parquet writer: no row goes
    through Python there)."""

    run_id: str
    not_null: tuple[str, ...]

    @classmethod
    def of(cls, spec: TableSpec, run_id: str) -> RunRows:
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


def check_runs_row(runs_row: Mapping[str, Any]) -> str:
    """The run id of a ``runs`` row whose keys are all columns of ``runs``; fails else."""
    unknown = sorted(set(runs_row) - set(table_spec("runs").columns))
    if unknown:
        raise SchemaMismatchError(f"runs row has unknown columns {unknown}")
    return check_run_id(runs_row.get(RUN_ID))
