"""``--delta-writer spark``: the tables written by Delta Lake's own Spark writer, one table per
call (``write_with_spark_delta``), the ``runs`` row last (``publish_run_with_spark``).

For clusters whose tables only Spark may write. Local sessions of job/session.py load Delta
Lake; on a cluster ``delta_spark_available(spark)`` tells whether it can run. The rows are
checked as the delta-rs writer (`sink`) checks them (`delta_schema.RunRows`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from offsets_lib.audit.tables import RUN_ID, TableSpec, table_spec
from offsets_lib.io import catalog, storage
from offsets_lib.io.delta_schema import RunRows, check_frame_schema, check_run_id, check_runs_row

__all__ = [
    "delta_spark_available",
    "publish_run_with_spark",
    "replace_where",
    "write_with_spark_delta",
]

log = logging.getLogger(__name__)

DELTA_EXTENSION = "DeltaSparkSessionExtension"


def delta_spark_available(spark: SparkSession) -> bool:
    """True when the session is configured with Delta Lake's SQL extension (no JVM access)."""
    return DELTA_EXTENSION in (spark.conf.get("spark.sql.extensions", "") or "")


def replace_where(run_id: str) -> str:
    """The ``replaceWhere`` predicate selecting one run's partition."""
    return f"{RUN_ID} = {catalog.sql_string(run_id)}"


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
    spark.sql(catalog.create_table_sql(spec, uri, database=database))
    writer = (
        _checked_with_run_id(df, spec, run_id)
        .write.format("delta")
        .mode("overwrite")
        .option("replaceWhere", replace_where(run_id))
        .option("userMetadata", run_id)
    )
    if database is not None:
        writer.saveAsTable(catalog.table_identifier(name, output=output, database=database))
    else:
        writer.save(uri)
    log.info("committed %s with Spark's Delta writer: run %s", name, run_id)


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
