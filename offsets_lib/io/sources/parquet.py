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

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from offsets_lib.io import storage
from offsets_lib.io.sources import InputNotReadable, first_line

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
        reason = first_line(exc)
        if "UNABLE_TO_INFER_SCHEMA" in reason:
            reason = "no Parquet data files found"
        raise InputNotReadable(
            f"parquet input not readable: {', '.join(paths)}: {reason}"
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
    """Fail with `InputNotReadable` when a local path (or glob) matches nothing, when a folder
    holds no data file, or when a data file is not Parquet (Spark reads every file of a folder
    whose name does not start with _ or .); needs no Spark, so the command line reports it
    before the JVM starts, in one line naming the file. Remote URIs are left to Spark."""
    for path in paths:
        if _check_local(path):
            for data_file in _data_files(path):
                _check_parquet_file(data_file)


def _data_files(path: str) -> list[str]:
    """The files Spark would read for a local path or glob (hidden names skipped, as Spark
    skips them); a folder without any fails."""
    local = storage.local_path(path) or path
    matches = sorted(glob.glob(local)) if _GLOB_CHARS.search(local) else [local]
    found = []
    for match in matches:
        if not os.path.isdir(match):
            found.append(match)
            continue
        in_folder = []
        for folder, dirs, files in os.walk(match):
            dirs[:] = sorted(d for d in dirs if not _hidden(d))
            in_folder += [os.path.join(folder, f) for f in sorted(files) if not _hidden(f)]
        if not in_folder:
            raise InputNotReadable(f"parquet input has no data files: {match} (an empty folder)")
        found += in_folder
    return found


def _hidden(name: str) -> bool:
    """Names Spark's file listing skips (_SUCCESS, _delta_log, .crc files...)."""
    return name.startswith(("_", "."))


_MAGIC = b"PAR1"


def _check_parquet_file(path: str) -> None:
    """A Parquet file starts and ends with PAR1; anything else fails Spark's read with a Java
    stack that does not name the file."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(4)
            f.seek(max(size - 4, 0))
            tail = f.read(4)
    except OSError as exc:
        raise InputNotReadable(f"parquet input not readable: {path}: {exc.strerror}") from None
    if size < 12 or head != _MAGIC or tail != _MAGIC:
        what = "an empty file" if size == 0 else "not a Parquet file"
        raise InputNotReadable(f"parquet input file is {what}: {path}")


def _check_local(path: str) -> bool:
    """True when `path` is local and exists; raises when local and missing; False if remote."""
    local = storage.local_path(path)
    if local is not None:
        found = glob.glob(local) if _GLOB_CHARS.search(local) else os.path.exists(local)
        if not found:
            raise InputNotReadable(f"parquet input not found: {path}")
        return True
    return False


def _check_exists(spark: SparkSession, path: str) -> None:
    _check_local(path)  # a remote path (s3a://, abfss://, ...): spark.read reports it
