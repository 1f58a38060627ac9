"""Log-end offsets of the consumed partitions, for the lag table (I/O).

From a CSV or Parquet file with columns ``topic, partition, log_end_offset`` (offline dumps), or
from the cluster's high watermarks of the consumed topics (confluent-kafka; NOT the offsets of
__consumer_offsets).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from offsets_lib.audit.lag import END_OFFSETS_ARROW
from offsets_lib.io.sources import InputNotReadable, SourceConfigError

END_OFFSETS_SCHEMA = StructType(
    [
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("log_end_offset", LongType(), True),
    ]
)
END_OFFSETS_COLUMNS = tuple(f.name for f in END_OFFSETS_SCHEMA.fields)


def end_offsets_from_file(spark: SparkSession, path: str) -> pa.Table:
    """``topic, partition, log_end_offset`` from a .csv (header row) or .parquet file/folder,
    read by Spark (any file system the session reaches), held by the driver: a few rows per
    partition of a cluster."""
    import os

    if "://" not in path and not os.path.exists(path):
        raise InputNotReadable(f"end offsets file not found: {path}")
    if path.lower().endswith(".csv"):
        df = spark.read.option("header", "true").schema(END_OFFSETS_SCHEMA).csv(path)
    else:
        df = spark.read.parquet(path)
    missing = [c for c in END_OFFSETS_COLUMNS if c not in df.columns]
    if missing:
        raise SourceConfigError(f"end offsets file {path}: missing column(s) {missing}")
    return df.select(
        F.col("topic").cast("string"),
        F.col("partition").cast("int"),
        F.col("log_end_offset").cast("long"),
    ).toArrow()


def end_offsets_from_cluster(
    kafka_options: Mapping[str, Any],
    topics: Iterable[str] | None = None,
    *,
    timeout_s: float = 30.0,
) -> pa.Table:
    """High watermarks (log-end offsets, read_uncommitted as the consumer-groups tool) of
    ``topics`` (None: of every topic of the cluster). A topic that does not exist (any more) is
    left out: its lag stays null."""
    rows = fetch_watermarks(kafka_options, topics, timeout_s=timeout_s)
    return pa.Table.from_pylist(
        [dict(zip(END_OFFSETS_COLUMNS, row, strict=True)) for row in rows],
        schema=END_OFFSETS_ARROW,
    )


def fetch_watermarks(
    kafka_options: Mapping[str, Any], topics: Iterable[str] | None, *, timeout_s: float = 30.0
) -> list[tuple[str, int, int]]:
    """[(topic, partition, log_end_offset)] for the existing ones of ``topics`` (None: every
    topic the cluster lists)."""
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    from offsets_lib.io.sources import kafka

    wanted = None if topics is None else sorted({t for t in topics if t})
    if wanted == []:
        return []
    conf = kafka.client_config(kafka_options)
    conf["allow.auto.create.topics"] = False
    where = kafka._where(conf)
    try:
        admin = AdminClient(conf)
    except (KafkaException, ValueError, TypeError) as exc:
        raise SourceConfigError(f"invalid kafka option: {kafka.scrub(str(exc), conf)}") from None
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        raise InputNotReadable(
            f"kafka: no metadata for the consumed topics within {timeout_s:g} s ({where}): "
            f"{kafka.scrub(kafka._exc_text(exc), conf)}"
        ) from None
    request = {}
    for topic in sorted(metadata.topics) if wanted is None else wanted:
        described = metadata.topics.get(topic)
        if described is None or described.error is not None:
            continue
        for p in described.partitions:
            request[TopicPartition(topic, p)] = OffsetSpec.latest()
    if not request:
        return []
    try:
        futures = admin.list_offsets(request, request_timeout=timeout_s)
        return sorted((tp.topic, tp.partition, fut.result().offset) for tp, fut in futures.items())
    except KafkaException as exc:
        raise InputNotReadable(
            f"kafka: could not list log-end offsets of the consumed topics ({where}): "
            f"{kafka.scrub(kafka._exc_text(exc), conf)}"
        ) from None
