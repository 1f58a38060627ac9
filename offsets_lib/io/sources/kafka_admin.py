"""The driver's offset look-ups for `--source kafka` and lag (confluent-kafka's Admin client).

`KafkaAdmin` is the one place that asks Kafka for offsets (`io.log_end_offsets` asks it for the
consumed topics' log-end offsets): the client settings as librdkafka takes them (`kafka_names`
translates the Java client's names), librdkafka's errors kept and scrubbed, and every failure in
one line (`InputNotReadable`, `SourceConfigError`). `io.sources.kafka` reads the range these
look-ups fix with Spark's connector.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from offsets_lib.io.sources import InputNotReadable, SourceConfigError, kafka_names
from offsets_lib.io.sources.kafka_names import scrub

log = logging.getLogger(__name__)
_rdkafka_log = logging.getLogger(__name__ + ".librdkafka")

DEFAULT_TOPIC = "__consumer_offsets"
DEFAULT_TIMEOUT_S = 30.0
UNREACHABLE_GRACE_S = 10.0  # all brokers down for this long -> give up before timeout_s


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


def cluster_text(conf: Mapping[str, Any]) -> str:
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
    return SourceConfigError(f"invalid kafka option: {scrub(exception_text(exc), conf)}")


def exception_text(exc: BaseException) -> str:
    args = getattr(exc, "args", ())
    if args and hasattr(args[0], "str"):  # KafkaException(KafkaError)
        return args[0].str()
    return str(exc) or type(exc).__name__


def resolve_read_range(
    kafka_options: Mapping[str, Any],
    topic: str = DEFAULT_TOPIC,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> tuple[dict[int, int], dict[int, int]]:
    """({partition: end offset} of `topic` now: the last stable offset (read_committed),
    exclusive; {partition: records held back}). Fails within about `timeout_s` seconds (an
    unreachable broker within ~`UNREACHABLE_GRACE_S`) with `InputNotReadable` for an
    unreachable broker, an unknown topic, or missing access.

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
        self.where = cluster_text(self.conf)
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
        return scrub(exception_text(exc), self.conf)

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
