"""`--source kafka`: a bounded, read-committed batch read of a Kafka topic.

The records are read by Spark's own Kafka connector (`spark-sql-kafka-0-10`, loaded by
`offsets_lib.job.session` for local sessions; under spark-submit the cluster provides it). The
driver fixes the range first, so that every action on the DataFrame sees the same records:

    ends, _ = resolve_read_range(kafka_options, topic)          # {partition: end (exclusive)}
    df = read_kafka(spark, kafka_options=..., topic=topic, start_offsets=checkpoint_or_None,
                    end_offsets=ends)

`kafka_options` are Kafka client settings (`bootstrap.servers`, `security.protocol`, `sasl.*`,
`ssl.*`, ...), with or without the `kafka.` prefix; the driver's offset look-ups go through
confluent-kafka (librdkafka; `kafka_admin`), the read itself through the connector, which gets
every setting as `kafka.<name>`. `isolation.level` is `read_committed` unless the options say
otherwise. Offsets are exclusive ends / inclusive starts, as in Spark's Kafka source.

Failures on the driver raise `InputNotReadable` (unreachable broker, unknown topic, no access;
bounded by `timeout_s`) or `SourceConfigError` (invalid options), each with one line of text.
Secrets never appear in messages or logs: everything goes through `redact` / `scrub`
(kafka_names.py decides which settings are secrets).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterator, Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from offsets_lib.io import spark_settings
from offsets_lib.io.sources import InputNotReadable, SourceConfigError
from offsets_lib.io.sources.kafka_admin import (
    DEFAULT_TIMEOUT_S,
    DEFAULT_TOPIC,
    check_read_access,
    client_config,
    cluster_text,
    connector_config,
    exception_text,
    resolve_start_offsets,
)
from offsets_lib.io.sources.kafka_names import FILE_SETTINGS, NOT_A_FILE, redact, scrub

# the source's public face: the driver's look-ups (kafka_admin) with the connector's read
log = logging.getLogger(__name__)

CONNECTOR = "org.apache.spark:spark-sql-kafka-0-10_2.13"

# The columns of Spark's Kafka source that the job reads (headers are not requested).
KAFKA_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
)
KAFKA_COLUMNS = tuple(f.name for f in KAFKA_SCHEMA.fields)

# ---------------------------------------------------------------------------- offsets options


def with_absolute_files(kafka_options: Mapping[str, str]) -> dict[str, str]:
    """The settings with every file they name (`kafka_names.FILE_SETTINGS`) as an absolute
    path, checked here on the driver before any Spark work: the executors read a relative path
    in their own working folders (`NoSuchFileException` in a Java stack, exit 1).
    InputNotReadable names a missing file in one line."""
    settings = dict(kafka_options)
    for key in sorted(FILE_SETTINGS & settings.keys()):
        value = settings[key]
        if value in NOT_A_FILE or "://" in value:
            continue
        path = os.path.abspath(os.path.expanduser(value))
        if not os.path.isfile(path):
            raise InputNotReadable(f"--kafka-option {key}={value}: no such file ({path})")
        settings[key] = path
    return settings


def offsets_to_json(offsets: Mapping[int, int], topic: str | None = None) -> str:
    """`{"0": 12, ...}`, or Spark's `{"topic": {"0": 12, ...}}` when `topic` is given."""
    flat = {str(int(p)): int(o) for p, o in sorted(offsets.items())}
    return json.dumps({topic: flat} if topic is not None else flat, separators=(",", ":"))


# -------------------------------------------------------------------------- driver entry points


def checked_start_offsets(
    conf: Mapping[str, Any],
    topic: str,
    start_offsets: Mapping[int, int] | None,
    end_offsets: Mapping[int, int],
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict[int, int]:
    """The start of every partition of `end_offsets`, fixed by the driver: the stored
    checkpoint, else the log start; a start below the log start (records deleted) is raised to
    it with a warning, a start beyond the end or an unknown partition is InputNotReadable."""
    if not end_offsets:
        raise SourceConfigError(f"no end offsets given for topic {topic!r}")
    earliest = resolve_start_offsets(conf, topic, timeout_s)
    unknown = sorted(set(end_offsets) - set(earliest))
    if unknown:
        raise InputNotReadable(
            f"kafka topic {topic!r} has no partitions {unknown} ({cluster_text(conf)})"
        )
    given = dict(start_offsets or {})
    start: dict[int, int] = {}
    for p in sorted(end_offsets):
        s = int(given.get(p, earliest[p]))
        if s < earliest[p]:
            log.warning(
                "kafka %s-%d: start offset %d is below the log start %d (records deleted); "
                "reading from %d",
                topic,
                p,
                s,
                earliest[p],
                earliest[p],
            )
            s = earliest[p]
        if s > end_offsets[p]:
            raise InputNotReadable(
                f"kafka {topic}-{p}: start offset {s} is beyond the end offset {end_offsets[p]} "
                f"(topic recreated or wrong checkpoint?) ({cluster_text(conf)})"
            )
        start[p] = s
    return start


# Spark's Kafka connector resolves a batch's partitions with the Admin client by default, and
# that reader leaves out internal topics: for __consumer_offsets it finds no partition and the
# read fails ("Partitions specified for Kafka start offsets don't match what are assigned ...
# Assigned: Set()"). The consumer-based reader, chosen by this documented SQL setting (Spark's
# Kafka integration guide), assigns the partitions it is given, internal or not. The setting is
# read when Spark plans the scan, so it holds for the whole run and is then put back
# (`connector_reads_internal_topics`).
OFFSET_READER_CONF = "spark.sql.streaming.kafka.useDeprecatedOffsetFetching"


@contextlib.contextmanager
def connector_reads_internal_topics(spark: SparkSession) -> Iterator[None]:
    """Within the block Spark's Kafka connector can read internal topics such as
    __consumer_offsets; the session's own setting is restored after it."""
    with spark_settings.setting(spark, OFFSET_READER_CONF, "true"):
        yield


def read_kafka(
    spark: SparkSession,
    *,
    kafka_options: Mapping[str, Any],
    topic: str = DEFAULT_TOPIC,
    start_offsets: Mapping[int, int] | None,
    end_offsets: Mapping[int, int],
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> DataFrame:
    """Raw records of `topic` in [start, end) per partition, through Spark's Kafka connector.

    Actions on the frame must run within `connector_reads_internal_topics` when `topic` is
    internal (the default, __consumer_offsets).

    `end_offsets` (from `resolve_read_range`) defines which partitions are read. A partition
    missing from `start_offsets` (or `start_offsets=None`) starts at its log start; a start
    below the log start (records deleted) is raised to it, with a warning. A start beyond the
    end or an unknown partition raises InputNotReadable (topic recreated? wrong checkpoint?).
    Without the connector on the classpath raises SourceConfigError.
    """
    conf = client_config(kafka_options)
    start = checked_start_offsets(conf, topic, start_offsets, end_offsets, timeout_s)
    check_read_access(conf, topic, timeout_s)
    reader = spark.read.format("kafka")
    # every client setting passes through; read_committed unless the options say otherwise.
    # fetch.max.wait.ms: the connector's consumer ends each partition's range with a fetch that
    # the broker holds for this long when no record is left (Java default 500 ms). Measured
    # with Kafka 4.4.0 on 2 cores: 10k records of 50 partitions read in 14-18 s with
    # the default, 1.5 s with 10 ms; a fetch with records waiting returns at once either way.
    # max.poll.records: after every poll the connector asks the broker for the partition's
    # earliest and latest offsets (two ListOffsets requests), and the Java default hands out
    # 500 fetched records a poll: 4,000 requests for 1M records. A poll returns only what
    # the consumer has fetched already (max.partition.fetch.bytes), so the larger limit costs
    # no memory. Measured, the bench's production line (1M records, 50 partitions, SASL_SSL,
    # 2 cores): 68.9-74.5 s -> 65.1-66.1 s a submit, the broker's CPU 6.5-7.9 -> 5.0-5.3 s.
    java = connector_config(kafka_options)
    defaults = {
        "isolation.level": "read_committed",
        "fetch.max.wait.ms": "10",
        "max.poll.records": "1000000",
    }
    for key, value in {**defaults, **java}.items():
        reader = reader.option(f"kafka.{key}", _option_value(value))
    log.info("reading kafka %s (%s) from %s to %s", topic, redact(conf), start, dict(end_offsets))
    reader = (
        reader.option("assign", json.dumps({topic: sorted(int(p) for p in end_offsets)}))
        .option("startingOffsets", offsets_to_json(start, topic))
        .option("endingOffsets", offsets_to_json(end_offsets, topic))
        .option("includeHeaders", "false")
        # __consumer_offsets is compacted and transactional: offset gaps are normal.
        .option("failOnDataLoss", "false")
    )
    try:
        df = reader.load()
    except Exception as exc:
        text = scrub(exception_text(exc), {**conf, **java})
        lowered = text.lower()
        if "data_source_not_found" in lowered or "failed to find data source: kafka" in lowered:
            raise SourceConfigError(
                f"--source kafka needs Spark's Kafka connector ({CONNECTOR}) on the classpath; "
                "local sessions load it, under spark-submit add it with --packages"
            ) from None
        raise InputNotReadable(
            f"kafka read via Spark's connector failed ({cluster_text(conf)}): {text}"
        ) from None
    return df.select(*KAFKA_COLUMNS)


def _option_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
