"""`--source parquet`: files, folders or globs of raw records (Spark's Kafka-source schema).

Required columns: key binary, value binary, topic string, partition int, offset long,
timestamp timestamp, timestampType int.  Optional batch-metadata columns (kept when present):
producer_id long, producer_epoch int, is_transactional boolean, is_control boolean.
Anything else (`headers`, ...) is dropped.  Integral columns stored with another integer width
(e.g. partition as int64) are cast; any other type mismatch is an `InputNotReadable`.
"""

from __future__ import annotations

import glob
import os
import re
from urllib.parse import urlparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from offsets_lib.io.sources import InputNotReadable

REQUIRED_COLUMNS: tuple[tuple[str, T.DataType], ...] = (
    ("key", T.BinaryType()),
    ("value", T.BinaryType()),
    ("topic", T.StringType()),
    ("partition", T.IntegerType()),
    ("offset", T.LongType()),
    ("timestamp", T.TimestampType()),
    ("timestampType", T.IntegerType()),
)
BATCH_METADATA_COLUMNS: tuple[tuple[str, T.DataType], ...] = (
    ("producer_id", T.LongType()),
    ("producer_epoch", T.IntegerType()),
    ("is_transactional", T.BooleanType()),
    ("is_control", T.BooleanType()),
)
_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_GLOB_CHARS = re.compile(r"[*?\[{]")


def read_parquet_dump(spark: SparkSession, paths: list[str]) -> DataFrame:
    """Read raw records from Parquet `paths` (files, folders or globs; local paths or URIs).

    Raises `InputNotReadable` when a path matches nothing, when no Parquet data is found, or when
    a required column is missing or has an incompatible type.
    """
    if isinstance(paths, str):
        paths = [paths]
    paths = [str(p) for p in paths]
    if not paths:
        raise InputNotReadable("parquet input not found: no path given")
    for path in paths:
        _check_exists(spark, path)
    try:
        df = spark.read.parquet(*paths)
    except Exception as exc:  # AnalysisException: empty folder, not Parquet, race with deletion
        raise InputNotReadable(
            f"parquet input not readable: {', '.join(paths)}: {_first_line(exc)}"
        ) from None
    return _select_raw_columns(df, paths)


def _select_raw_columns(df: DataFrame, paths: list[str]) -> DataFrame:
    fields = {f.name: f.dataType for f in df.schema.fields}
    where = ", ".join(paths)
    columns = []
    for name, wanted in REQUIRED_COLUMNS:
        if name not in fields:
            raise InputNotReadable(f"parquet input lacks required column {name!r}: {where}")
        columns.append(_conform(name, fields[name], wanted, where))
    for name, wanted in BATCH_METADATA_COLUMNS:
        if name in fields:
            columns.append(_conform(name, fields[name], wanted, where))
    return df.select(*columns)


def _conform(name: str, actual: T.DataType, wanted: T.DataType, where: str):
    if actual == wanted:
        return F.col(name)
    if isinstance(actual, _INTEGRAL) and isinstance(wanted, _INTEGRAL):
        return F.col(name).cast(wanted).alias(name)
    raise InputNotReadable(
        f"parquet input column {name!r} has type {actual.simpleString()}, "
        f"expected {wanted.simpleString()}: {where}"
    )


def check_local_inputs(paths: list[str]) -> None:
    """Fail with `InputNotReadable` when a local path (or glob) matches nothing; needs no Spark,
    so the command line can report it before the JVM starts. Remote URIs are left to Spark."""
    for path in paths:
        _check_local(path)


def _check_local(path: str) -> bool:
    """True when `path` is local and exists; raises when local and missing; False if remote."""
    scheme = urlparse(path).scheme
    if scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt"):
        local = path[len("file://") :] if path.startswith("file://") else path
        local = local[len("file:") :] if local.startswith("file:") else local
        found = glob.glob(local) if _GLOB_CHARS.search(local) else os.path.exists(local)
        if not found:
            raise InputNotReadable(f"parquet input not found: {path}")
        return True
    return False


def _check_exists(spark: SparkSession, path: str) -> None:
    if _check_local(path):
        return
    # Remote (s3a://, abfss://, hdfs://, ...): ask Hadoop's FileSystem through the JVM when we can.
    try:
        jvm = spark._jvm  # absent under Spark Connect
        hpath = jvm.org.apache.hadoop.fs.Path(path)
        fs = hpath.getFileSystem(spark._jsc.hadoopConfiguration())
        statuses = fs.globStatus(hpath)
    except Exception:
        return  # cannot check here; spark.read reports the problem
    if statuses is None or len(statuses) == 0:
        raise InputNotReadable(f"parquet input not found: {path}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
