"""`--source kafka`: a bounded, read-committed batch read of a Kafka topic.

Two readers with the same options and the same schema as Spark's Kafka source
(`key binary, value binary, topic string, partition int, offset long, timestamp timestamp,
timestampType int`):

- `read_kafka` (default, `--kafka-reader python`): the Spark Python data source `offsets_kafka`
  defined here, over confluent-kafka (librdkafka). Needs no JVM connector.
- `read_kafka_with_spark_connector` (`--kafka-reader spark`): Spark's own `format("kafka")`,
  for clusters that ship `spark-sql-kafka-0-10`.

Driver-side flow of a run (the job driver, not the data source, fixes the range so that every
action on the DataFrame sees the same records):

    ends = resolve_end_offsets(kafka_options, topic)            # {partition: end (exclusive)}
    df = read_kafka(spark, kafka_options=..., topic=topic, start_offsets=checkpoint_or_None,
                    end_offsets=ends)

`kafka_options` are librdkafka settings (`bootstrap.servers`, `security.protocol`, `sasl.*`,
`ssl.*`, ...), with or without the `kafka.` prefix. `isolation.level` is always
`read_committed`. Offsets are exclusive ends / inclusive starts, as in Spark's Kafka source.

Failures on the driver raise `InputNotReadable` (unreachable broker, unknown topic, no access;
bounded by `timeout_s`) or `SourceConfigError` (invalid options), each with one line of text.
Secrets never appear in messages or logs: everything goes through `redact` / `scrub`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from offsets_lib.io.sources import InputNotReadable, SourceConfigError

log = logging.getLogger(__name__)
_rdkafka_log = logging.getLogger(__name__ + ".librdkafka")

DATA_SOURCE_NAME = "offsets_kafka"
DEFAULT_TOPIC = "__consumer_offsets"
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_RECORDS_PER_PARTITION = 1_000_000  # a chunk costs ~1 s of consumer start-up
DEFAULT_STALL_TIMEOUT_S = 120.0  # executor: no progress for this long -> the task fails
UNREACHABLE_GRACE_S = 10.0  # all brokers down for this long -> give up before timeout_s
CONSUME_BATCH = 10_000

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
# What Spark expects from read() for KAFKA_SCHEMA (timestamps: microseconds, UTC).
ARROW_SCHEMA = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestampType", pa.int32()),
    ]
)
# librdkafka timestamp type (0 not available, 1 create time, 2 log-append time) -> Spark's
# (Java TimestampType.id: -1 none, 0 create time, 1 log-append time).
_TIMESTAMP_TYPE = {0: -1, 1: 0, 2: 1}

# Settings we own: users cannot weaken them through kafka.* options. (librdkafka needs a group.id
# even for assign(); nothing is committed. Override it with kafka.group.id if ACLs demand.)
_FORCED_CONSUMER = {
    "isolation.level": "read_committed",
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "enable.partition.eof": True,
    "auto.offset.reset": "earliest",  # an offset below the log start (deleted) -> log start
}

# ----------------------------------------------------------------------------------- secrets

_SECRET_KEY = re.compile(
    r"password|secret|jaas|token|credential|private|\.pem$|ssl\.key\.|keystore|sasl\.oauthbearer\.config",
    re.IGNORECASE,
)
REDACTED = "***"


def is_secret_option(key: str) -> bool:
    """True for option names whose values must never be shown (passwords, keys, tokens...)."""
    return bool(_SECRET_KEY.search(key))


def redact(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `options` with every secret value replaced by `***`; safe to log or raise."""
    return {k: (REDACTED if is_secret_option(str(k)) else v) for k, v in options.items()}


def scrub(text: str, options: Mapping[str, Any]) -> str:
    """`text` with any secret value of `options` replaced by `***`, folded onto one line."""
    for key, value in options.items():
        if is_secret_option(str(key)) and value is not None and str(value):
            text = text.replace(str(value), REDACTED)
    return " ".join(str(text).split())


# ------------------------------------------------------------------------------ client config


def client_config(kafka_options: Mapping[str, Any]) -> dict[str, Any]:
    """librdkafka settings from `kafka_options` (the `kafka.` prefix is optional and dropped)."""
    conf: dict[str, Any] = {}
    for key, value in kafka_options.items():
        key = str(key)
        name = key[len("kafka.") :] if key.lower().startswith("kafka.") else key
        if not name:
            continue
        conf[name] = value
    if not conf.get("bootstrap.servers"):
        raise SourceConfigError("kafka option bootstrap.servers is required")
    return conf


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


def resolve_start_offsets(
    kafka_options: Mapping[str, Any],
    topic: str = DEFAULT_TOPIC,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict[int, int]:
    """{partition: log start offset} of `topic` (the earliest offset still stored)."""
    return _list_offsets(kafka_options, topic, "earliest", timeout_s)


def _list_offsets(
    kafka_options: Mapping[str, Any], topic: str, which: str, timeout_s: float
) -> dict[int, int]:
    from confluent_kafka import IsolationLevel, KafkaError, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    conf = client_config(kafka_options)
    conf["allow.auto.create.topics"] = False  # asking about a topic must not create it
    where = _where(conf)
    events = _ClientEvents(conf)
    started = time.monotonic()
    deadline = started + timeout_s
    try:
        admin = AdminClient(_with_events(conf, events))
    except (KafkaException, ValueError, TypeError) as exc:
        raise _config_error(exc, conf) from None

    partitions = _topic_partitions(admin, topic, conf, where, events, started, deadline)
    remaining = max(deadline - time.monotonic(), 1.0)
    spec = OffsetSpec.latest() if which == "latest" else OffsetSpec.earliest()
    request = {TopicPartition(topic, p): spec for p in partitions}
    try:
        futures = admin.list_offsets(
            request, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=remaining
        )
        result = {tp.partition: fut.result().offset for tp, fut in futures.items()}
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
            f"({where}): {scrub(_exc_text(exc), conf)}"
        ) from None
    log.debug("kafka %s offsets of %s (%s): %s", which, topic, where, result)
    return dict(sorted(result.items()))


def _topic_partitions(admin, topic, conf, where, events, started, deadline) -> list[int]:
    """Partition ids of `topic`, retrying metadata until the deadline; one-line failures."""
    from confluent_kafka import KafkaError, KafkaException

    auth_codes = (KafkaError._AUTHENTICATION, KafkaError._SSL)
    down_codes = (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT, KafkaError._RESOLVE)
    metadata = None
    while metadata is None:
        now = time.monotonic()
        try:
            metadata = admin.list_topics(timeout=max(min(1.0, deadline - now), 0.1))
        except KafkaException as exc:
            admin.poll(0)  # serve error_cb / logger
            last = events.last_text() or scrub(_exc_text(exc), conf)
            failed = events.has(*auth_codes)
            if failed is not None:
                kind = "authentication" if failed[0] == KafkaError._AUTHENTICATION else "TLS"
                raise InputNotReadable(f"kafka {kind} failed ({where}): {failed[1]}") from None
            fatal = next((e for e in events.errors if e[2]), None)
            if fatal is not None:
                raise InputNotReadable(f"kafka client failed ({where}): {fatal[1]}") from None
            now = time.monotonic()
            down_for = now - started
            if now >= deadline or (events.has(*down_codes) and down_for >= UNREACHABLE_GRACE_S):
                raise InputNotReadable(
                    f"kafka broker unreachable ({where}): no metadata after {down_for:.0f} s; "
                    f"last error: {last}"
                ) from None
    admin.poll(0)
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


def parse_offsets(text: str | None, topic: str) -> dict[int, int] | str | None:
    """Parse a startingOffsets / endingOffsets option.

    Accepts `earliest` / `latest`, `{"0": 5, "1": 7}` or Spark's `{"<topic>": {"0": 5}}`.
    Returns the keyword, a {partition: offset} dict (Spark's -2 = earliest, -1 = latest are
    kept as is), or None when `text` is empty.
    """
    if text is None or not str(text).strip():
        return None
    text = str(text).strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceConfigError(f"offsets option is not JSON or earliest/latest: {exc}") from None
    if not isinstance(data, dict):
        raise SourceConfigError("offsets option must be a JSON object {partition: offset}")
    if len(data) == 1 and isinstance(next(iter(data.values())), dict):
        ((name, inner),) = data.items()
        if name != topic:
            raise SourceConfigError(f"offsets option names topic {name!r}, reading {topic!r}")
        data = inner
    try:
        return {int(p): int(o) for p, o in data.items()}
    except (TypeError, ValueError):
        raise SourceConfigError("offsets option must map partition numbers to integers") from None


def plan_ranges(
    start: Mapping[int, int], end: Mapping[int, int], max_records: int
) -> list[tuple[int, int, int]]:
    """(partition, start, end) chunks of at most `max_records` offsets; empty ranges dropped."""
    if max_records <= 0:
        raise SourceConfigError("maxRecordsPerPartition must be positive")
    chunks = []
    for partition in sorted(end):
        lo, hi = int(start[partition]), int(end[partition])
        if lo > hi:
            raise SourceConfigError(
                f"partition {partition}: start offset {lo} is beyond end offset {hi}"
            )
        while lo < hi:
            chunks.append((partition, lo, min(lo + max_records, hi)))
            lo += max_records
    return chunks


# ----------------------------------------------------------------------------- the data source


@dataclass(frozen=True)
class KafkaRange(InputPartition):
    """One input partition: offsets [start, end) of one topic-partition."""

    topic: str
    partition: int
    start: int
    end: int


class OffsetsKafkaDataSource(DataSource):
    """`spark.read.format("offsets_kafka")`: a bounded batch read of one Kafka topic.

    Options: `kafka.*` (librdkafka settings), `topic` (default `__consumer_offsets`),
    `startingOffsets` (`earliest` (default) or JSON {"partition": offset}),
    `endingOffsets` (JSON; `latest` (default) resolves once when the DataFrame is analysed),
    `maxRecordsPerPartition` (chunk size, default 1,000,000), `stallTimeoutSeconds` (executor:
    fail a task that makes no progress for this long, default 120), `timeoutSeconds` (offset
    look-ups, default 30).
    """

    @classmethod
    def name(cls) -> str:
        return DATA_SOURCE_NAME

    def schema(self) -> StructType:
        return KAFKA_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return OffsetsKafkaReader({str(k).lower(): v for k, v in dict(self.options).items()})


class OffsetsKafkaReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str]):
        # Spark hands option keys lower-cased; librdkafka settings are lower-case anyway.
        self.topic = options.get("topic") or DEFAULT_TOPIC
        kafka_options = {k: v for k, v in options.items() if k.startswith("kafka.")}
        self.conf = client_config(kafka_options)
        self.max_records = int(
            options.get("maxrecordsperpartition") or DEFAULT_MAX_RECORDS_PER_PARTITION
        )
        self.stall_timeout_s = float(options.get("stalltimeoutseconds") or DEFAULT_STALL_TIMEOUT_S)
        timeout_s = float(options.get("timeoutseconds") or DEFAULT_TIMEOUT_S)
        start = parse_offsets(options.get("startingoffsets"), self.topic) or "earliest"
        end = parse_offsets(options.get("endingoffsets"), self.topic) or "latest"
        if start == "latest":
            raise SourceConfigError("startingOffsets=latest makes no sense for a batch read")
        if end == "earliest":
            raise SourceConfigError("endingOffsets=earliest makes no sense for a batch read")
        if end == "latest" or (isinstance(end, dict) and -1 in end.values()):
            latest = resolve_end_offsets(self.conf, self.topic, timeout_s)
            end = (
                latest
                if end == "latest"
                else {p: latest[p] if o == -1 else o for p, o in end.items()}
            )
        if start == "earliest" or -2 in start.values():
            earliest = resolve_start_offsets(self.conf, self.topic, timeout_s)
            given = {} if start == "earliest" else start
            start = {p: earliest.get(p, 0) if given.get(p, -2) == -2 else given[p] for p in end}
        missing = sorted(set(end) - set(start))
        if missing:
            raise SourceConfigError(
                f"startingOffsets has no offset for partitions {missing} of {self.topic!r}"
            )
        self.ranges = plan_ranges(start, end, self.max_records)

    def partitions(self) -> list[KafkaRange]:
        parts = [KafkaRange(self.topic, p, s, e) for p, s, e in self.ranges]
        # Spark wants at least one input partition; an empty range reads nothing.
        return parts or [KafkaRange(self.topic, 0, 0, 0)]

    def read(self, partition: KafkaRange) -> Iterator[pa.RecordBatch]:
        if partition.start >= partition.end:
            return iter(())
        return read_range(
            self.conf,
            partition.topic,
            partition.partition,
            partition.start,
            partition.end,
            stall_timeout_s=self.stall_timeout_s,
        )


def _consumer_config(conf: Mapping[str, Any]) -> dict[str, Any]:
    full = {"group.id": "offsets-audit-reader", "client.id": "offsets-audit-reader"}
    full.update(conf)
    full.update(_FORCED_CONSUMER)
    return full


def read_range(
    conf: Mapping[str, Any],
    topic: str,
    partition: int,
    start: int,
    end: int,
    *,
    stall_timeout_s: float = DEFAULT_STALL_TIMEOUT_S,
    batch_size: int = CONSUME_BATCH,
    consumer_factory=None,
) -> Iterator[pa.RecordBatch]:
    """Yield the records of `topic`/`partition` with offsets in [start, end) as Arrow batches.

    read_committed: the broker withholds aborted records and control markers, so offsets may
    have gaps; the range is complete once a record at or past `end` arrives, the consumer's
    position reaches `end`, or end-of-partition is reported at or past `end`. A range that makes
    no progress for `stall_timeout_s` fails with a one-line InputNotReadable (secrets scrubbed);
    Spark wraps it, `offsets_lib.io.sources.unwrap_input_not_readable` recovers it on the driver.
    `consumer_factory(config)` replaces confluent_kafka.Consumer in unit tests.
    """
    from confluent_kafka import KafkaError, TopicPartition

    if consumer_factory is None:
        from confluent_kafka import Consumer as consumer_factory
    events = _ClientEvents(conf)
    consumer = consumer_factory(_with_events(_consumer_config(conf), events))
    where = f"{topic}-{partition} [{start}, {end}) ({_where(conf)})"
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        keys: list = []
        values: list = []
        offsets: list[int] = []
        stamps: list[int] = []
        types: list[int] = []
        position = start
        last_progress = time.monotonic()
        done = False
        while not done:
            # Ask for exactly what is left: librdkafka's batch consume waits for the full
            # timeout when fewer messages exist, so over-asking costs a timeout per range.
            wanted = max(1, min(batch_size, end - position))
            messages = consumer.consume(num_messages=wanted, timeout=0.5)
            for msg in messages:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        if msg.offset() is not None and msg.offset() >= end:
                            done = True
                            break
                        continue
                    if err.fatal() or err.code() in _FATAL_FETCH_CODES:
                        raise InputNotReadable(
                            f"kafka read of {where} failed: {scrub(err.str(), conf)}"
                        )
                    continue  # transient; librdkafka retries
                offset = msg.offset()
                if offset >= end:
                    done = True
                    break
                if offset < position:
                    continue  # duplicate after a retry
                ts_type, ts = msg.timestamp()
                keys.append(msg.key())
                values.append(msg.value())
                offsets.append(offset)
                stamps.append(ts)
                types.append(_TIMESTAMP_TYPE.get(ts_type, -1))
                position = offset + 1
                last_progress = time.monotonic()
            if not done and position < end:
                # Aborted records / a commit marker at the end of the range leave no message:
                # the consumer's position tells us we are past them.
                try:
                    (tp,) = consumer.position([TopicPartition(topic, partition)])
                    if tp.offset is not None and tp.offset >= end:
                        done = True
                    elif tp.offset is not None and tp.offset > position:
                        position = tp.offset
                        last_progress = time.monotonic()
                except Exception:  # position is a best-effort hint
                    pass
            if position >= end:
                done = True
            if len(offsets) >= batch_size or (done and offsets):
                yield _to_batch(keys, values, topic, partition, offsets, stamps, types)
                keys, values, offsets, stamps, types = [], [], [], [], []
            if not done and time.monotonic() - last_progress > stall_timeout_s:
                last = events.last_text()
                raise InputNotReadable(
                    f"kafka read of {where} made no progress for {stall_timeout_s:g} s at offset "
                    f"{position}" + (f"; last error: {last}" if last else "")
                )
    finally:
        with contextlib.suppress(Exception):
            consumer.close()


def _fatal_fetch_codes() -> frozenset[int]:
    from confluent_kafka import KafkaError

    return frozenset(
        {
            KafkaError.TOPIC_AUTHORIZATION_FAILED,
            KafkaError.CLUSTER_AUTHORIZATION_FAILED,
            KafkaError.UNKNOWN_TOPIC_OR_PART,
            KafkaError._UNKNOWN_TOPIC,
            KafkaError._UNKNOWN_PARTITION,
            KafkaError._AUTHENTICATION,
            KafkaError._SSL,
        }
    )


try:
    _FATAL_FETCH_CODES = _fatal_fetch_codes()
except ImportError:  # confluent-kafka missing: the module still imports (parquet-only installs)
    _FATAL_FETCH_CODES = frozenset()


def _to_batch(keys, values, topic, partition, offsets, stamps, types) -> pa.RecordBatch:
    n = len(offsets)
    return pa.RecordBatch.from_arrays(
        [
            pa.array(keys, pa.binary()),
            pa.array(values, pa.binary()),
            pa.array([topic] * n, pa.string()),
            pa.array([partition] * n, pa.int32()),
            pa.array(offsets, pa.int64()),
            pa.array(stamps, pa.timestamp("ms", tz="UTC")).cast(pa.timestamp("us", tz="UTC")),
            pa.array(types, pa.int32()),
        ],
        schema=ARROW_SCHEMA,
    )


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


def register(spark: SparkSession) -> None:
    """Register the `offsets_kafka` data source with `spark` (idempotent)."""
    spark.dataSource.register(OffsetsKafkaDataSource)


def read_kafka(
    spark: SparkSession,
    *,
    kafka_options: Mapping[str, Any],
    topic: str = DEFAULT_TOPIC,
    start_offsets: Mapping[int, int] | None,
    end_offsets: Mapping[int, int],
    max_records_per_partition: int = DEFAULT_MAX_RECORDS_PER_PARTITION,
    stall_timeout_s: float = DEFAULT_STALL_TIMEOUT_S,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> DataFrame:
    """Raw records of `topic` in [start, end) per partition, through `offsets_kafka`.

    `end_offsets` (from `resolve_end_offsets`) defines which partitions are read. A partition
    missing from `start_offsets` (or `start_offsets=None`) starts at its log start; a start
    below the log start (records deleted) is raised to it, with a warning. A start beyond the
    end raises InputNotReadable (topic recreated? wrong checkpoint?).
    """
    conf = client_config(kafka_options)
    start = checked_start_offsets(conf, topic, start_offsets, end_offsets, timeout_s)
    register(spark)
    reader = spark.read.format(DATA_SOURCE_NAME)
    for key, value in conf.items():
        reader = reader.option(f"kafka.{key}", _option_value(value))
    log.info("reading kafka %s (%s) from %s to %s", topic, redact(conf), start, dict(end_offsets))
    return (
        reader.option("topic", topic)
        .option("startingOffsets", offsets_to_json(start))
        .option("endingOffsets", offsets_to_json(end_offsets))
        .option("maxRecordsPerPartition", str(int(max_records_per_partition)))
        .option("stallTimeoutSeconds", str(stall_timeout_s))
        .option("timeoutSeconds", str(timeout_s))
        .load()
    )


def read_kafka_with_spark_connector(
    spark: SparkSession,
    *,
    kafka_options: Mapping[str, Any],
    topic: str = DEFAULT_TOPIC,
    start_offsets: Mapping[int, int] | None,
    end_offsets: Mapping[int, int],
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> DataFrame:
    """The same read through Spark's own Kafka connector (`--kafka-reader spark`).

    Needs `org.apache.spark:spark-sql-kafka-0-10_2.13` on the cluster; without it raises
    SourceConfigError. Same options, offsets and output columns as `read_kafka`.
    """
    conf = client_config(kafka_options)
    start = checked_start_offsets(conf, topic, start_offsets, end_offsets, timeout_s)
    reader = spark.read.format("kafka")
    # every client setting passes through; read_committed unless the options say otherwise
    for key, value in {"isolation.level": "read_committed", **conf}.items():
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
        text = scrub(_exc_text(exc), conf)
        lowered = text.lower()
        if "data_source_not_found" in lowered or "failed to find data source: kafka" in lowered:
            raise SourceConfigError(
                "--kafka-reader spark needs Spark's Kafka connector "
                "(org.apache.spark:spark-sql-kafka-0-10_2.13) on the cluster's classpath; "
                "it is not there: use --kafka-reader python"
            ) from None
        raise InputNotReadable(
            f"kafka read via Spark's connector failed ({_where(conf)}): {text}"
        ) from None
    return df.select(*KAFKA_COLUMNS)


def _option_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
