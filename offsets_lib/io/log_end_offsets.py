"""Log-end offsets of the consumed partitions, for the lag table (I/O).

From a CSV or Parquet file with columns ``topic, partition, log_end_offset`` (offline dumps), or
from the cluster: the consumed topics' log-end offsets, Kafka's high watermarks (confluent-kafka;
NOT the offsets of __consumer_offsets).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql import SparkSession
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from offsets_lib.audit.lag import END_OFFSETS_ARROW
from offsets_lib.io.sources import InputNotReadable, first_line

END_OFFSETS_SCHEMA = StructType(
    [
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("log_end_offset", LongType(), True),
    ]
)
END_OFFSETS_COLUMNS = tuple(f.name for f in END_OFFSETS_SCHEMA.fields)


def pyarrow_reaches(path: str) -> bool:
    """Whether pyarrow reads `path` (else Spark's file systems must: `from_file`)."""
    from offsets_lib.io import storage

    try:
        storage.filesystem(storage.location(path))
    except (pa.ArrowException, OSError, ValueError):
        return False
    return True


def from_file(path: str, spark: SparkSession | None = None) -> pa.Table:
    """``topic, partition, log_end_offset`` from a .csv (header row) or .parquet file/folder,
    held by the driver (a few rows per partition of a cluster).

    Read with pyarrow wherever pyarrow reaches (local paths, s3a://, gs://...), so a name that
    starts with ``_`` or ``.`` is read too (Spark's file listing skips such names as hidden and
    finds 0 rows); Spark reads the other file systems. A file that is missing or not such a
    table raises `InputNotReadable` with one line naming it."""
    from offsets_lib.io import storage

    try:
        fs, where = storage.filesystem(storage.location(path))
    except (pa.ArrowException, OSError, ValueError):
        if spark is None:
            raise InputNotReadable(
                f"end offsets file {path}: pyarrow cannot reach this file system"
            ) from None
        return _conformed(_read_with_spark(spark, path), path)
    try:
        info = fs.get_file_info(where)
    except (pa.ArrowException, OSError) as exc:
        raise InputNotReadable(f"end offsets file {path}: {first_line(exc)}") from None
    if info.type == pafs.FileType.NotFound:
        raise InputNotReadable(f"end offsets file not found: {path}")
    try:
        if info.type == pafs.FileType.File and path.lower().endswith(".csv"):
            table = _read_csv(fs, where)
        elif info.type == pafs.FileType.File:
            table = pq.read_table(where, filesystem=fs)
        else:  # a folder of Parquet files (hidden names skipped, as Spark does)
            table = pq.read_table(where, filesystem=fs)
    except (pa.ArrowException, OSError, ValueError) as exc:
        kind = "CSV with a header row" if path.lower().endswith(".csv") else "Parquet"
        raise InputNotReadable(
            f"end offsets file {path}: not {kind} with columns"
            f" {', '.join(END_OFFSETS_COLUMNS)} ({first_line(exc)})"
        ) from None
    return _conformed(table, path)


def _read_csv(fs: pafs.FileSystem, where: str) -> pa.Table:
    """The CSV's columns as text: `_conformed` checks and converts them."""
    from pyarrow import csv

    with fs.open_input_stream(where) as stream:
        return csv.read_csv(
            stream,
            convert_options=csv.ConvertOptions(
                column_types={name: pa.string() for name in END_OFFSETS_COLUMNS}
            ),
        )


def _read_with_spark(spark: SparkSession, path: str) -> pa.Table:
    """The file through Spark (a file system pyarrow does not reach)."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if name.startswith(("_", ".")):
        raise InputNotReadable(
            f"end offsets file {path}: Spark skips names that start with _ or . as hidden;"
            " rename it"
        )
    try:
        if path.lower().endswith(".csv"):
            schema = StructType([StructField(c, StringType()) for c in END_OFFSETS_COLUMNS])
            df = spark.read.option("header", "true").schema(schema).csv(path)
        else:
            df = spark.read.parquet(path)
        return df.toArrow()
    except Exception as exc:  # AnalysisException, Py4JJavaError: not such a file
        raise InputNotReadable(f"end offsets file {path}: {first_line(exc)}") from None


def _conformed(table: pa.Table, path: str) -> pa.Table:
    """The three columns with their types; one line naming the file when they are not there
    or do not hold a topic name, a partition number and an offset."""
    missing = [c for c in END_OFFSETS_COLUMNS if c not in table.column_names]
    if missing:
        found = ", ".join(table.column_names[:6]) or "none"
        raise InputNotReadable(
            f"end offsets file {path}: missing column(s) {', '.join(missing)}"
            f" (found: {found}); expected {', '.join(END_OFFSETS_COLUMNS)}"
        )
    columns = []
    for field in END_OFFSETS_ARROW:
        column = table.column(field.name)
        try:
            if pa.types.is_string(column.type) and not pa.types.is_string(field.type):
                column = pc.utf8_trim_whitespace(column)
            columns.append(column.cast(field.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise InputNotReadable(
                f"end offsets file {path}: column {field.name} is not {field.type}"
                f" ({first_line(exc)})"
            ) from None
    ends = pa.table(columns, schema=END_OFFSETS_ARROW)
    unnamed = (
        ends.num_rows
        - pc.sum(
            pc.and_(pc.is_valid(ends.column("topic")), pc.is_valid(ends.column("partition")))
        ).as_py()
        if ends.num_rows
        else 0
    )
    if unnamed:
        raise InputNotReadable(
            f"end offsets file {path}: {unnamed} row(s) without a topic or partition"
        )
    return ends


def from_cluster(
    kafka_options: Mapping[str, Any],
    topics: Iterable[str] | None = None,
    *,
    timeout_s: float = 30.0,
) -> pa.Table:
    """Log-end offsets (Kafka's high watermarks, read_uncommitted as the consumer-groups tool) of
    ``topics`` (None: of every topic of the cluster). A topic that does not exist (any more) is
    left out: its lag stays null."""
    rows = fetch_log_end_offsets(kafka_options, topics, timeout_s=timeout_s)
    return pa.Table.from_pylist(
        [dict(zip(END_OFFSETS_COLUMNS, row, strict=True)) for row in rows],
        schema=END_OFFSETS_ARROW,
    )


def fetch_log_end_offsets(
    kafka_options: Mapping[str, Any], topics: Iterable[str] | None, *, timeout_s: float = 30.0
) -> list[tuple[str, int, int]]:
    """[(topic, partition, log_end_offset)] for the existing ones of ``topics`` (None: every
    topic the cluster lists)."""
    from confluent_kafka import KafkaException

    from offsets_lib.io.sources.kafka_admin import KafkaAdmin

    wanted = None if topics is None else sorted({t for t in topics if t})
    if wanted == []:
        return []
    admin = KafkaAdmin(kafka_options)
    started = time.monotonic()
    metadata = admin.metadata(started, started + timeout_s)
    request = []
    for topic in sorted(metadata.topics) if wanted is None else wanted:
        described = metadata.topics.get(topic)
        if described is None or described.error is not None:
            continue
        request += [(topic, p) for p in described.partitions]
    if not request:
        return []
    try:
        ends = admin.list_offsets(request, timeout_s=timeout_s, committed=False)
    except KafkaException as exc:
        raise InputNotReadable(
            f"kafka: could not list log-end offsets of the consumed topics ({admin.where}): "
            f"{admin.error_text(exc)}"
        ) from None
    return sorted((topic, p, offset) for (topic, p), offset in ends.items())
