"""``--delta-writer spark``: the tables written by Delta Lake's own Spark writer, one table per
call (``write_with_spark_delta``) over the files the audit tasks wrote (``files_frame``), the
``runs`` row last (``publish_run_with_spark``).

For clusters whose tables only Spark may write. Local sessions of job/session.py load Delta
Lake; on a cluster ``delta_spark_available(spark)`` tells whether it can run. The rows are
checked as the delta-rs writer (`sink`) checks them (`delta_schema.RunRows`). The tables' DDL
(`create_table_sql`) is here because only this writer creates tables in Spark SQL: a delta-rs
run registers its tables by location, their schema taken from the Delta log (`catalog`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from deltalake.transaction import AddAction
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from offsets_lib.audit.tables import RUN_ID, TableSpec, table_spec
from offsets_lib.io import storage
from offsets_lib.io.catalog import identifier, sql_string
from offsets_lib.io.delta_schema import RunRows, check_frame_schema, check_run_id, check_runs_row
from offsets_lib.io.sink import table_files

log = logging.getLogger(__name__)

DELTA_EXTENSION = "DeltaSparkSessionExtension"


def delta_spark_available(spark: SparkSession) -> bool:
    """True when the session is configured with Delta Lake's SQL extension (no JVM access)."""
    return DELTA_EXTENSION in (spark.conf.get("spark.sql.extensions", "") or "")


def files_frame(
    spark: SparkSession, name: str, actions: list[AddAction], *, root: str, run_id: str
) -> DataFrame:
    """One frame over a table's files of run `run_id` written under ``root`` (by the audit
    tasks: `sink.write_task_files`, whose add actions `staging.written_files` made): the rows
    delta-rs would commit, in the table's columns, for Delta's Spark writer to write."""
    spec = table_spec(name)
    schema = T.StructType([f for f in spec.schema.fields if f.name not in spec.partition_by])
    paths = table_files(root, name, actions)
    files = spark.read.schema(schema).parquet(*paths) if paths else None
    frame = files if files is not None else spark.createDataFrame([], schema)
    return frame.withColumn(RUN_ID, F.lit(run_id)).select(*spec.columns)


def replace_where(run_id: str) -> str:
    """The ``replaceWhere`` predicate selecting one run's partition."""
    return f"{RUN_ID} = {sql_string(run_id)}"


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
    check_run_id(run_id)
    spec = table_spec(name)
    check_frame_schema(df, spec)
    if not delta_spark_available(spark):
        raise RuntimeError(
            "--delta-writer spark needs a session with spark.sql.extensions="
            "io.delta.sql.DeltaSparkSessionExtension and the delta-spark jars"
        )
    uri = storage.table_uri(output, name) if output is not None else None
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


# ---- the tables' DDL: their columns, comments and partitioning in Spark SQL ------------------


def table_identifier(name: str, *, output: str | None, database: str | None) -> str:
    """How Spark SQL names the table: ``db.table`` in the catalog, else ``delta.`<uri>```."""
    if database is not None:
        return f"{identifier(database)}.{identifier(name)}"
    if output is None:
        raise ValueError("a table needs an --output path or a --database")
    return f"delta.{identifier(storage.table_uri(output, name))}"


def create_table_sql(spec: TableSpec, uri: str | None, *, database: str | None = None) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for the Spark Delta path, with every column comment.

    With ``database`` the table is registered in the catalog as ``database.<table>``: external
    at ``uri`` when given, else managed (in the database's folder)."""

    def column(f: T.StructField) -> str:
        not_null = "" if f.nullable else " NOT NULL"
        comment = sql_string(f.metadata["comment"])
        return f"{identifier(f.name)} {_ddl_type(f.dataType)}{not_null} COMMENT {comment}"

    columns = ",\n  ".join(column(f) for f in spec.schema.fields)
    partitions = ", ".join(identifier(c) for c in spec.partition_by)
    if database is not None:
        target = f"{identifier(database)}.{identifier(spec.name)}"
        location = f"\nLOCATION {sql_string(uri)}" if uri is not None else ""
    else:
        if uri is None:
            raise ValueError("a path table needs its location")
        target, location = f"delta.{identifier(uri)}", ""
    return (
        f"CREATE TABLE IF NOT EXISTS {target} (\n  {columns}\n) USING delta\n"
        f"PARTITIONED BY ({partitions})\nCOMMENT {sql_string(spec.comment)}{location}"
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
            suffix = f" COMMENT {sql_string(comment)}" if comment else ""
            fields.append(f"{identifier(f.name)}: {_ddl_type(f.dataType)}{not_null}{suffix}")
        return f"struct<{', '.join(fields)}>"
    return dtype.simpleString()


def _checked_with_run_id(df: DataFrame, spec: TableSpec, run_id: str) -> DataFrame:
    """The spec's columns in order, checked like the delta-rs path (`RunRows`)."""
    checked = RunRows.of(spec, run_id).spark(df, spec)
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
    run_id = check_runs_row(runs_row)
    row = tuple(runs_row.get(c) for c in spec.columns)
    df = spark.createDataFrame([row], schema=_nullable(spec.schema))
    write_with_spark_delta(spark, df, "runs", output=output, run_id=run_id, database=database)


def _nullable(schema: T.StructType) -> T.StructType:
    """The schema with every field nullable (NOT NULL is checked while writing)."""
    return T.StructType([T.StructField(f.name, f.dataType, True, f.metadata) for f in schema])
