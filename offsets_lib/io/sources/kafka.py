"""`--source kafka`: a bounded, read-committed batch read of a Kafka topic.

The records are read by Spark's own Kafka connector (`spark-sql-kafka-0-10`, loaded by
`offsets_lib.job.session` for local sessions; under spark-submit the cluster provides it). The
driver fixes the range first, so that every action on the DataFrame sees the same records:

    ends = resolve_end_offsets(kafka_options, topic)            # {partition: end (exclusive)}
    df = read_kafka(spark, kafka_options=..., topic=topic, start_offsets=checkpoint_or_None,
                    end_offsets=ends)

`kafka_options` are Kafka client settings (`bootstrap.servers`, `security.protocol`, `sasl.*`,
`ssl.*`, ...), with or without the `kafka.` prefix; the driver's offset look-ups go through
confluent-kafka (librdkafka), the read itself through the connector, which gets every setting as
`kafka.<name>`. `isolation.level` is `read_committed` unless the options say otherwise. Offsets
are exclusive ends / inclusive starts, as in Spark's Kafka source.

Failures on the driver raise `InputNotReadable` (unreachable broker, unknown topic, no access;
bounded by `timeout_s`) or `SourceConfigError` (invalid options), each with one line of text.
Secrets never appear in messages or logs: everything goes through `redact` / `scrub`
(kafka_names.py decides which settings are secrets).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
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
from offsets_lib.io.sources import InputNotReadable, SourceConfigError, kafka_names
from offsets_lib.io.sources.kafka_names import redact, scrub

log = logging.getLogger(__name__)
_rdkafka_log = logging.getLogger(__name__ + ".librdkafka")

DEFAULT_TOPIC = "__consumer_offsets"
DEFAULT_TIMEOUT_S = 30.0
UNREACHABLE_GRACE_S = 10.0  # all brokers down for this long -> give up before timeout_s
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

# ------------------------------------------------------------------------------ client config


def _unprefixed(kafka_options: Mapping[str, Any]) -> dict[str, Any]:
    """The settings by their client names (the `kafka.` prefix is optional and dropped)."""
    conf: dict[str, Any] = {}
    for key, value in kafka_options.items():
        key = str(key)
        name = key[len("kafka.") :] if key.lower().startswith("kafka.") else key
        if name:
            conf[name] = value
    if not conf.get("bootstrap.servers"):
        raise SourceConfigError("kafka option bootstrap.servers is required")
    return conf


def client_config(kafka_options: Mapping[str, Any]) -> dict[str, Any]:
    """librdkafka settings from `kafka_options`, given in librdkafka's or the Java client's
    names (`kafka_names`)."""
    return kafka_names.librdkafka_config(_unprefixed(kafka_options))


def connector_config(kafka_options: Mapping[str, Any]) -> dict[str, Any]:
    """The Java client's settings for Spark's connector (without the `kafka.` prefix)."""
    return kafka_names.java_config(_unprefixed(kafka_options))


def _where(conf: Mapping[str, Any]) -> str:
    parts = [f"bootstrap.servers={conf.get('bootstrap.servers')}"]
    if conf.get("security.protocol"):
        parts.append(f"security.protocol={conf['security.protocol']}")
    return ", ".join(parts)


class _ClientEvents:
    """librdkafka error_cb + logger sink: keeps the last errors, logs at DEBUG; all scrubbed."""

    def __init__(self, conf: Mapping[str, Any]):
        self._conf = conf
        self.errors: deque[tuple[int, str, bool]] = deque(maxlen=20)  # (code, text, fatal)
        self.logs: deque[str] = deque(maxlen=20)

    def error_cb(self, err) -> None:
        text = scrub(err.str(), self._conf)
        self.errors.append((err.code(), text, bool(err.fatal())))
        _rdkafka_log.debug("librdkafka error %s: %s", err.name(), text)

    def log(self, level: int, fmt: str, *args: Any) -> None:  # the `logger` protocol
        text = scrub(fmt % args if args else fmt, self._conf)
        if level >= logging.WARNING:
            self.logs.append(text)
        _rdkafka_log.debug("%s", text)

    def has(self, *codes: int) -> tuple[int, str, bool] | None:
        for item in reversed(self.errors):
            if item[0] in codes:
                return item
        return None

    def last_text(self) -> str | None:
        """The most telling recent error: a concrete one rather than "N/M brokers are down"."""
        from confluent_kafka import KafkaError

        concrete = [e for e in self.errors if e[0] != KafkaError._ALL_BROKERS_DOWN]
        if concrete:
            return concrete[-1][1]
        if self.logs:
            return self.logs[-1]
        return self.errors[-1][1] if self.errors else None


def _with_events(conf: Mapping[str, Any], events: _ClientEvents) -> dict[str, Any]:
    full = dict(conf)
    full["error_cb"] = events.error_cb
    full["logger"] = events
    return full


def _config_error(exc: BaseException, conf: Mapping[str, Any]) -> SourceConfigError:
    return SourceConfigError(f"invalid kafka option: {scrub(_exc_text(exc), conf)}")


def _exc_text(exc: BaseException) -> str:
    args = getattr(exc, "args", ())
    if args and hasattr(args[0], "str"):  # KafkaException(KafkaError)
        return args[0].str()
    return str(exc) or type(exc).__name__


# ------------------------------------------------------------------------ driver-side offsets


def resolve_end_offsets(
    kafka_options: Mapping[str, Any],
    topic: str = DEFAULT_TOPIC,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict[int, int]:
    """{partition: end offset} of `topic` now: the last stable offset (read_committed), exclusive.

    Fails within about `timeout_s` seconds (an unreachable broker within ~`UNREACHABLE_GRACE_S`)
    with `InputNotReadable` for an unreachable broker, an unknown topic, or missing access.
    """
    return _list_offsets(kafka_options, topic, "latest", timeout_s)


def resolve_read_range(
    kafka_options: Mapping[str, Any],
    topic: str = DEFAULT_TOPIC,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> tuple[dict[int, int], dict[int, int]]:
    """(end offsets as `resolve_end_offsets`, {partition: records held back}).

    Under read_committed a partition ends at its last stable offset: the first record of its
    oldest open transaction. The records from there to the high watermark (the open
    transaction's offset commits, and every later record, whatever group it belongs to) wait
    for the next run. The high watermarks are asked first, so a transaction that ends between
    the two look-ups holds nothing back, and only partitions with an open transaction appear.
    """
    highs = _list_offsets(kafka_options, topic, "latest", timeout_s, committed=False)
    ends = _list_offsets(kafka_options, topic, "latest", timeout_s)
    return ends, held_back(ends, highs)


def held_back(end_offsets: Mapping[int, int], high_watermarks: Mapping[int, int]) -> dict[int, int]:
    """Records between each partition's read end and its high watermark, where there are any."""
    return {
        p: high_watermarks[p] - end
        for p, end in sorted(end_offsets.items())
        if high_watermarks.get(p, end) > end
    }


def resolve_start_offsets(
    kafka_options: Mapping[str, Any],
    topic: str = DEFAULT_TOPIC,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict[int, int]:
    """{partition: log start offset} of `topic` (the earliest offset still stored)."""
    return _list_offsets(kafka_options, topic, "earliest", timeout_s)


class KafkaAdmin:
    """The driver's Admin client for offset look-ups, the one place that asks Kafka for
    offsets: the settings as librdkafka takes them, a topic asked about is never created,
    librdkafka's errors and logs are kept (`events`) and every text shown is scrubbed."""

    def __init__(self, kafka_options: Mapping[str, Any]) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        self.conf = client_config(kafka_options)
        self.conf["allow.auto.create.topics"] = False  # asking about a topic must not create it
        self.where = _where(self.conf)
        self.events = _ClientEvents(self.conf)
        try:
            self.client = AdminClient(_with_events(self.conf, self.events))
        except (KafkaException, ValueError, TypeError) as exc:
            raise _config_error(exc, self.conf) from None

    def metadata(self, started: float, deadline: float):
        """The cluster's metadata, asked again each second until ``deadline`` (monotonic
        seconds). InputNotReadable in one line: failed authentication or TLS, a fatal client
        error, or every broker down for `UNREACHABLE_GRACE_S` since ``started``."""
        from confluent_kafka import KafkaError, KafkaException

        auth_codes = (KafkaError._AUTHENTICATION, KafkaError._SSL)
        down_codes = (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT, KafkaError._RESOLVE)
        while True:
            now = time.monotonic()
            try:
                metadata = self.client.list_topics(timeout=max(min(1.0, deadline - now), 0.1))
                self.client.poll(0)
                return metadata
            except KafkaException as exc:
                self.client.poll(0)  # serve error_cb / logger
                last = self.events.last_text() or self.error_text(exc)
                failed = self.events.has(*auth_codes)
                if failed is not None:
                    kind = "authentication" if failed[0] == KafkaError._AUTHENTICATION else "TLS"
                    raise InputNotReadable(
                        f"kafka {kind} failed ({self.where}): {failed[1]}"
                    ) from None
                fatal = next((e for e in self.events.errors if e[2]), None)
                if fatal is not None:
                    raise InputNotReadable(
                        f"kafka client failed ({self.where}): {fatal[1]}"
                    ) from None
                now = time.monotonic()
                down_for = now - started
                is_down = self.events.has(*down_codes) and down_for >= UNREACHABLE_GRACE_S
                if now >= deadline or is_down:
                    raise InputNotReadable(
                        f"kafka broker unreachable ({self.where}): no metadata after "
                        f"{down_for:.0f} s; last error: {last}"
                    ) from None

    def error_text(self, exc: BaseException) -> str:
        """An exception of the client as a message may show it (secrets scrubbed)."""
        return scrub(_exc_text(exc), self.conf)

    def list_offsets(
        self,
        partitions: Iterable[tuple[str, int]],
        *,
        timeout_s: float,
        earliest: bool = False,
        committed: bool = True,
    ) -> dict[tuple[str, int], int]:
        """{(topic, partition): offset}: the log start (``earliest``), else the end, which
        under read_committed (``committed``) is the last stable offset and otherwise the high
        watermark. Raises KafkaException: the caller words the failure."""
        from confluent_kafka import IsolationLevel, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        spec = OffsetSpec.earliest() if earliest else OffsetSpec.latest()
        isolation = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
        futures = self.client.list_offsets(
            {TopicPartition(topic, p): spec for topic, p in partitions},
            isolation_level=isolation,
            request_timeout=timeout_s,
        )
        return {(tp.topic, tp.partition): fut.result().offset for tp, fut in futures.items()}


def _list_offsets(
    kafka_options: Mapping[str, Any],
    topic: str,
    which: str,
    timeout_s: float,
    *,
    committed: bool = True,
) -> dict[int, int]:
    """{partition: offset} of every partition of `topic` (`KafkaAdmin.list_offsets`), with
    one-line failures."""
    from confluent_kafka import KafkaError, KafkaException

    started = time.monotonic()
    deadline = started + timeout_s
    admin = KafkaAdmin(kafka_options)
    where = admin.where
    partitions = _topic_partitions(admin, topic, started, deadline)
    remaining = max(deadline - time.monotonic(), 1.0)
    try:
        listed = admin.list_offsets(
            [(topic, p) for p in partitions],
            timeout_s=remaining,
            earliest=which == "earliest",
            committed=committed,
        )
    except KafkaException as exc:
        err = exc.args[0] if exc.args else None
        code = err.code() if err is not None and hasattr(err, "code") else None
        if code in (
            KafkaError.TOPIC_AUTHORIZATION_FAILED,
            KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        ):
            raise InputNotReadable(
                f"kafka: not authorized to read offsets of topic {topic!r} ({where})"
            ) from None
        if code == KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise InputNotReadable(f"kafka topic not found: {topic!r} ({where})") from None
        raise InputNotReadable(
            f"kafka: could not list {which} offsets of topic {topic!r} within {timeout_s:g} s "
            f"({where}): {admin.error_text(exc)}"
        ) from None
    result = {p: offset for (_topic, p), offset in listed.items()}
    log.debug("kafka %s offsets of %s (%s): %s", which, topic, where, result)
    return dict(sorted(result.items()))


def _topic_partitions(
    kafka_admin: KafkaAdmin, topic: str, started: float, deadline: float
) -> list[int]:
    """Partition ids of `topic`, retrying metadata until the deadline; one-line failures."""
    from confluent_kafka import KafkaError, KafkaException

    admin, where = kafka_admin.client, kafka_admin.where
    metadata = kafka_admin.metadata(started, deadline)
    described = metadata.topics.get(topic)
    if described is None:
        # Not listed: absent, or not visible to this principal. Ask for it by name to tell apart.
        try:
            one = admin.list_topics(
                topic=topic, timeout=max(min(5.0, deadline - time.monotonic()), 1)
            )
            described = one.topics.get(topic)
        except KafkaException:
            described = None
    if described is None:
        raise InputNotReadable(f"kafka topic not found: {topic!r} ({where})")
    if described.error is not None:
        code = described.error.code()
        if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
            raise InputNotReadable(f"kafka: not authorized to describe topic {topic!r} ({where})")
        if code in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
            raise InputNotReadable(f"kafka topic not found: {topic!r} ({where})")
        if not described.partitions:
            raise InputNotReadable(
                f"kafka topic {topic!r} not readable ({where}): {described.error.str()}"
            )
    if not described.partitions:
        raise InputNotReadable(f"kafka topic not found: {topic!r} ({where})")
    return sorted(described.partitions)


# ---------------------------------------------------------------------------- offsets options


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
            f"kafka topic {topic!r} has no partitions {unknown} ({_where(conf)})"
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
                f"(topic recreated or wrong checkpoint?) ({_where(conf)})"
            )
        start[p] = s
    return start


def check_read_access(conf: Mapping[str, Any], topic: str, timeout_s: float) -> None:
    """InputNotReadable unless the broker says this login may READ `topic` (the operations it
    authorizes, KIP-430, brokers 2.3+; an older broker's answer has none: not checked). A
    principal that may describe the topic but not read it passes every offset look-up, and
    Spark's connector would fail in its tasks with a Java stack trace instead of one line."""
    from confluent_kafka import KafkaException, TopicCollection
    from confluent_kafka.admin import AclOperation

    admin = KafkaAdmin(conf)
    try:
        futures = admin.client.describe_topics(
            TopicCollection([topic]), include_authorized_operations=True, request_timeout=timeout_s
        )
        allowed = futures[topic].result().authorized_operations
    except KafkaException as exc:  # the offset look-ups described it: the read will tell
        log.debug("kafka: authorized operations of %s not known: %s", topic, admin.error_text(exc))
        return
    if allowed and not {AclOperation.READ, AclOperation.ALL} & set(allowed):
        raise InputNotReadable(f"kafka: not authorized to read topic {topic!r} ({admin.where})")


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

    `end_offsets` (from `resolve_end_offsets`) defines which partitions are read. A partition
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
    java = connector_config(kafka_options)
    defaults = {"isolation.level": "read_committed", "fetch.max.wait.ms": "10"}
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
        text = scrub(_exc_text(exc), {**conf, **java})
        lowered = text.lower()
        if "data_source_not_found" in lowered or "failed to find data source: kafka" in lowered:
            raise SourceConfigError(
                f"--source kafka needs Spark's Kafka connector ({CONNECTOR}) on the classpath; "
                "local sessions load it, under spark-submit add it with --packages"
            ) from None
        raise InputNotReadable(
            f"kafka read via Spark's connector failed ({_where(conf)}): {text}"
        ) from None
    return df.select(*KAFKA_COLUMNS)


def _option_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
