"""The Kafka source against a real Kafka-protocol broker (Tansu), plus unit tests of its parts."""

from __future__ import annotations

import logging
import math
import time
import uuid

import pytest

from offsets_lib.io.sources import InputNotReadable, SourceConfigError, unwrap_input_not_readable
from offsets_lib.io.sources import kafka as ks
from tests.kafka.conftest import free_port

SECRET = "s3cr3t-Pa55word-never-shown"
PARTITIONS = 3


# ----------------------------------------------------------------------------------- helpers


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    futures = admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=10)
    for future in futures.values():
        future.result(timeout=10)


def produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None, int]]):
    """Produce (key, value, partition) one by one (Tansu quirk: flush per record).

    Returns the rows as stored: (key, value, partition, offset), from the delivery reports.
    """
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "log_level": 0})
    stored = []
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            stored.append((msg.key(), msg.value(), msg.partition(), msg.offset()))

    for key, value, partition in records:
        producer.produce(topic, key=key, value=value, partition=partition, on_delivery=on_delivery)
        assert producer.flush(10) == 0
    assert not errors, errors
    return stored


def sample_records(tag: str, n: int) -> list[tuple[bytes | None, bytes | None, int]]:
    """Keyed records over PARTITIONS partitions; every 4th is a tombstone, one has a null key."""
    records = []
    for i in range(n):
        key = f"{tag}-key-{i % 7}".encode()
        value = None if i % 4 == 3 else f"{tag}-value-{i}".encode() + bytes([0, 255, i % 256])
        records.append((key, value, i % PARTITIONS))
    records.append((None, f"{tag}-null-key".encode(), 0))
    return records


def ends_from(stored) -> dict[int, int]:
    ends: dict[int, int] = {}
    for _k, _v, partition, offset in stored:
        ends[partition] = max(ends.get(partition, 0), offset + 1)
    return ends


def rows_of(df) -> list[tuple]:
    rows = [(r["key"], r["value"], r["partition"], r["offset"]) for r in df.collect()]
    return canon(rows)


def canon(stored) -> list[tuple]:
    return sorted(stored, key=lambda r: (r[2], r[3]))


@pytest.fixture(scope="module")
def offsets_topic(tansu_bootstrap):
    """`__consumer_offsets` with 3 partitions and known records; returns the stored rows."""
    create_topic(tansu_bootstrap, ks.DEFAULT_TOPIC)
    return produce(tansu_bootstrap, ks.DEFAULT_TOPIC, sample_records("main", 40))


@pytest.fixture
def fresh_topic(tansu_bootstrap) -> str:
    topic = f"offsets-test-{uuid.uuid4().hex[:8]}"
    create_topic(tansu_bootstrap, topic)
    return topic


# ------------------------------------------------------------------------- against the broker


@pytest.mark.kafka
def test_end_offsets_match_what_was_produced(tansu_bootstrap, offsets_topic):
    ends = ks.resolve_end_offsets({"bootstrap.servers": tansu_bootstrap}, ks.DEFAULT_TOPIC)
    assert ends == ends_from(offsets_topic)
    starts = ks.resolve_start_offsets({"kafka.bootstrap.servers": tansu_bootstrap})
    assert starts == dict.fromkeys(range(PARTITIONS), 0)


@pytest.mark.kafka
def test_reads_exactly_the_produced_rows(spark, tansu_bootstrap, offsets_topic):
    options = {"kafka.bootstrap.servers": tansu_bootstrap}
    ends = ks.resolve_end_offsets(options, ks.DEFAULT_TOPIC)
    df = ks.read_kafka(spark, kafka_options=options, start_offsets=None, end_offsets=ends)
    assert df.schema == ks.KAFKA_SCHEMA
    rows = df.collect()
    assert rows_of(df) == canon(offsets_topic)
    assert sum(r["value"] is None for r in rows) == sum(
        v is None for _k, v, _p, _o in offsets_topic
    )
    assert {r["topic"] for r in rows} == {ks.DEFAULT_TOPIC}
    assert {r["timestampType"] for r in rows} == {0}  # CreateTime
    assert all(r["timestamp"] is not None and r["timestamp"].year >= 2020 for r in rows)
    # The Arrow batches Spark got match the schema exactly (else Spark raises on read).
    table = df.toArrow()
    assert table.num_rows == len(offsets_topic)


@pytest.mark.kafka
def test_start_offsets_give_an_incremental_read(spark, tansu_bootstrap, fresh_topic):
    options = {"bootstrap.servers": tansu_bootstrap}
    first = produce(tansu_bootstrap, fresh_topic, sample_records("one", 12))
    ends1 = ks.resolve_end_offsets(options, fresh_topic)
    assert ends1 == ends_from(first)
    df1 = ks.read_kafka(
        spark, kafka_options=options, topic=fresh_topic, start_offsets=None, end_offsets=ends1
    )
    assert rows_of(df1) == canon(first)

    second = produce(tansu_bootstrap, fresh_topic, sample_records("two", 9))
    ends2 = ks.resolve_end_offsets(options, fresh_topic)
    assert ends2 == ends_from(first + second)
    # The first DataFrame is pinned to its end offsets: new records do not leak into it.
    assert df1.count() == len(first)
    df2 = ks.read_kafka(
        spark, kafka_options=options, topic=fresh_topic, start_offsets=ends1, end_offsets=ends2
    )
    assert rows_of(df2) == canon(second)
    # A partition missing from start_offsets starts at the log start.
    partial = {p: o for p, o in ends1.items() if p != 1}
    df3 = ks.read_kafka(
        spark, kafka_options=options, topic=fresh_topic, start_offsets=partial, end_offsets=ends2
    )
    expected = [r for r in first if r[2] == 1] + second
    assert rows_of(df3) == canon(expected)
    # Nothing new: an empty, well-typed DataFrame.
    empty = ks.read_kafka(
        spark, kafka_options=options, topic=fresh_topic, start_offsets=ends2, end_offsets=ends2
    )
    assert empty.count() == 0
    assert empty.schema == ks.KAFKA_SCHEMA


@pytest.mark.kafka
def test_chunking_gives_the_same_rows(spark, tansu_bootstrap, offsets_topic):
    options = {"bootstrap.servers": tansu_bootstrap}
    ends = ks.resolve_end_offsets(options)
    chunk = 4
    df = ks.read_kafka(
        spark,
        kafka_options=options,
        start_offsets={0: 1},
        end_offsets=ends,
        max_records_per_partition=chunk,
    )
    expected_chunks = math.ceil((ends[0] - 1) / chunk) + sum(
        math.ceil(ends[p] / chunk) for p in ends if p != 0
    )
    assert df.rdd.getNumPartitions() == expected_chunks
    expected = [r for r in offsets_topic if not (r[2] == 0 and r[3] < 1)]
    assert rows_of(df) == canon(expected)


@pytest.mark.kafka
def test_data_source_options_directly(spark, tansu_bootstrap, offsets_topic):
    """`format("offsets_kafka")` by hand: Spark's {"topic": {...}} JSON and endingOffsets=latest."""
    ks.register(spark)
    df = (
        spark.read.format(ks.DATA_SOURCE_NAME)
        .option("kafka.bootstrap.servers", tansu_bootstrap)
        .option("startingOffsets", ks.offsets_to_json({0: 2, 1: -2, 2: -2}, ks.DEFAULT_TOPIC))
        .option("endingOffsets", "latest")
        .load()
    )
    expected = [r for r in offsets_topic if not (r[2] == 0 and r[3] < 2)]
    assert rows_of(df) == canon(expected)


@pytest.mark.kafka
def test_unreachable_broker_fails_fast_with_one_line_and_no_secret(caplog, capfd):
    port = free_port()  # nothing listens here
    options = {
        "kafka.bootstrap.servers": f"127.0.0.1:{port}",
        "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": "PLAIN",
        "kafka.sasl.username": "auditor",
        "kafka.sasl.password": SECRET,
    }
    caplog.set_level(logging.DEBUG, logger="offsets_lib")
    started = time.monotonic()
    with pytest.raises(InputNotReadable) as info:
        ks.resolve_end_offsets(options, ks.DEFAULT_TOPIC)
    elapsed = time.monotonic() - started
    message = str(info.value)
    print(f"broker down: failed after {elapsed:.1f} s: {message}")
    assert elapsed < 60
    assert "\n" not in message
    assert f"127.0.0.1:{port}" in message
    assert "unreachable" in message
    assert SECRET not in message
    assert SECRET not in caplog.text
    out, err = capfd.readouterr()
    assert SECRET not in out + err


@pytest.mark.kafka
def test_failed_authentication_is_not_readable_without_secret(tansu_auth_bootstrap, caplog):
    options = {
        "bootstrap.servers": tansu_auth_bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "auditor",
        "sasl.password": SECRET,
    }
    caplog.set_level(logging.DEBUG, logger="offsets_lib")
    started = time.monotonic()
    with pytest.raises(InputNotReadable, match="authentication failed") as info:
        ks.resolve_end_offsets(options, ks.DEFAULT_TOPIC)
    elapsed = time.monotonic() - started
    print(f"bad credentials: failed after {elapsed:.1f} s: {info.value}")
    assert elapsed < 60
    assert "\n" not in str(info.value)
    assert tansu_auth_bootstrap in str(info.value)
    assert SECRET not in str(info.value) and SECRET not in caplog.text


@pytest.mark.kafka
def test_broker_lost_during_read_fails_the_task_with_a_recoverable_one_liner(spark):
    """Offsets fixed, then the broker is gone: the executor gives up after stallTimeoutSeconds."""
    ks.register(spark)
    df = (
        spark.read.format(ks.DATA_SOURCE_NAME)
        .option("kafka.bootstrap.servers", f"127.0.0.1:{free_port()}")
        .option("kafka.sasl.password", SECRET)
        .option("startingOffsets", '{"0": 0}')
        .option("endingOffsets", '{"0": 5}')
        .option("stallTimeoutSeconds", "2")
        .load()
    )
    started = time.monotonic()
    with pytest.raises(Exception) as info:  # PythonException / Py4JJavaError from Spark
        df.count()
    assert time.monotonic() - started < 60
    error = unwrap_input_not_readable(info.value)
    assert error is not None, str(info.value)[:2000]
    assert "made no progress for 2 s at offset 0" in str(error)
    assert "\n" not in str(error)
    assert SECRET not in str(error) and SECRET not in str(info.value)


@pytest.mark.kafka
def test_unknown_topic_is_not_readable_and_not_created(tansu_bootstrap):
    options = {"bootstrap.servers": tansu_bootstrap, "sasl.password": SECRET}
    topic = f"no-such-topic-{uuid.uuid4().hex[:6]}"
    started = time.monotonic()
    with pytest.raises(InputNotReadable, match="topic not found") as info:
        ks.resolve_end_offsets(options, topic)
    assert time.monotonic() - started < 60
    assert topic in str(info.value)
    assert SECRET not in str(info.value)
    from confluent_kafka.admin import AdminClient

    listed = AdminClient({"bootstrap.servers": tansu_bootstrap}).list_topics(timeout=5).topics
    assert topic not in listed


@pytest.mark.kafka
def test_start_beyond_end_or_unknown_partition_is_refused(spark, tansu_bootstrap, offsets_topic):
    options = {"bootstrap.servers": tansu_bootstrap}
    ends = ks.resolve_end_offsets(options)
    with pytest.raises(InputNotReadable, match="beyond the end offset"):
        ks.read_kafka(
            spark, kafka_options=options, start_offsets={0: ends[0] + 5}, end_offsets=ends
        )
    with pytest.raises(InputNotReadable, match=r"no partitions \[7\]"):
        ks.read_kafka(spark, kafka_options=options, start_offsets=None, end_offsets={7: 3})


class FakeTopicError:
    def __init__(self, code):
        self._code = code

    def code(self):
        return self._code

    def str(self):
        return "fake"


def test_topic_authorization_failure_is_not_readable(monkeypatch):
    """ACL denial (Tansu has no ACLs): metadata reports TOPIC_AUTHORIZATION_FAILED."""
    from types import SimpleNamespace

    import confluent_kafka.admin
    from confluent_kafka import KafkaError

    class DeniedAdmin:
        def __init__(self, conf):
            self.conf = conf

        def list_topics(self, topic=None, timeout=None):
            described = SimpleNamespace(
                error=FakeTopicError(KafkaError.TOPIC_AUTHORIZATION_FAILED), partitions={}
            )
            return SimpleNamespace(topics={"__consumer_offsets": described})

        def poll(self, timeout):
            return 0

    monkeypatch.setattr(confluent_kafka.admin, "AdminClient", DeniedAdmin)
    with pytest.raises(InputNotReadable, match="not authorized") as info:
        ks.resolve_end_offsets({"bootstrap.servers": "b:9092", "sasl.password": SECRET})
    assert SECRET not in str(info.value) and "\n" not in str(info.value)


@pytest.mark.kafka
def test_spark_connector_reader(spark, tansu_bootstrap, offsets_topic):
    options = {"bootstrap.servers": tansu_bootstrap}
    ends = ks.resolve_end_offsets(options)
    try:
        df = ks.read_kafka_with_spark_connector(
            spark, kafka_options=options, start_offsets=None, end_offsets=ends
        )
    except SourceConfigError as exc:
        assert "spark-sql-kafka-0-10" in str(exc)
        pytest.skip(
            "Spark's Kafka connector (spark-sql-kafka-0-10) is not on this Spark's classpath "
            "and cannot be fetched here; --kafka-reader spark is for clusters that ship it"
        )
    assert df.schema == ks.KAFKA_SCHEMA
    assert rows_of(df) == canon(offsets_topic)


# ------------------------------------------------------------------------------- unit tests


def test_redact_and_scrub():
    options = {
        "kafka.bootstrap.servers": "b:9092",
        "kafka.sasl.password": SECRET,
        "sasl.jaas.config": "x required password=abc",
        "ssl.key.password": "kp",
        "ssl.key.pem": "-----BEGIN-----",
        "sasl.oauthbearer.client.secret": "cs",
        "sasl.username": "auditor",
    }
    red = ks.redact(options)
    assert red["kafka.bootstrap.servers"] == "b:9092"
    assert red["sasl.username"] == "auditor"
    for key in (
        "kafka.sasl.password",
        "sasl.jaas.config",
        "ssl.key.password",
        "ssl.key.pem",
        "sasl.oauthbearer.client.secret",
    ):
        assert red[key] == "***", key
    text = ks.scrub(f"failed with {SECRET}\nand kp and cs", options)
    assert SECRET not in text and "\n" not in text
    assert text == "failed with *** and *** and ***"


def test_client_config_and_offsets_options():
    conf = ks.client_config({"kafka.bootstrap.servers": "b:1", "sasl.mechanism": "PLAIN"})
    assert conf == {"bootstrap.servers": "b:1", "sasl.mechanism": "PLAIN"}
    with pytest.raises(SourceConfigError, match=r"bootstrap\.servers"):
        ks.client_config({"kafka.sasl.password": SECRET})
    assert ks.parse_offsets("earliest", "t") == "earliest"
    assert ks.parse_offsets('{"0": 5, "2": 7}', "t") == {0: 5, 2: 7}
    assert ks.parse_offsets('{"t": {"1": -2}}', "t") == {1: -2}
    assert ks.parse_offsets(None, "t") is None
    with pytest.raises(SourceConfigError):
        ks.parse_offsets('{"other": {"1": 3}}', "t")
    with pytest.raises(SourceConfigError):
        ks.parse_offsets("[1, 2]", "t")
    assert ks.offsets_to_json({2: 7, 0: 5}) == '{"0":5,"2":7}'
    assert ks.offsets_to_json({0: 5}, "t") == '{"t":{"0":5}}'


def test_plan_ranges_chunks():
    assert ks.plan_ranges({0: 0, 1: 5, 2: 3}, {0: 10, 1: 5, 2: 4}, 4) == [
        (0, 0, 4),
        (0, 4, 8),
        (0, 8, 10),
        (2, 3, 4),
    ]
    with pytest.raises(SourceConfigError, match="beyond"):
        ks.plan_ranges({0: 6}, {0: 5}, 4)
    with pytest.raises(SourceConfigError):
        ks.plan_ranges({0: 0}, {0: 5}, 0)


def test_arrow_schema_is_what_spark_expects():
    from pyspark.sql.pandas.types import to_arrow_schema

    assert ks.ARROW_SCHEMA.equals(to_arrow_schema(ks.KAFKA_SCHEMA, timezone="UTC"))


# A fake confluent_kafka.Consumer: a read_committed broker hands out committed records only
# (aborted ones and control markers leave offset gaps) and reports end-of-partition.


class FakeError:
    def __init__(self, code, text="fake error", fatal=False):
        self._code, self._text, self._fatal = code, text, fatal

    def code(self):
        return self._code

    def str(self):
        return self._text

    def fatal(self):
        return self._fatal

    def retriable(self):
        return False

    def name(self):
        return str(self._code)


class FakeMessage:
    def __init__(self, offset, key=b"k", value=b"v", error=None, partition=0):
        self._offset, self._key, self._value, self._error = offset, key, value, error
        self._partition = partition

    def error(self):
        return self._error

    def offset(self):
        return self._offset

    def key(self):
        return self._key

    def value(self):
        return self._value

    def partition(self):
        return self._partition

    def timestamp(self):
        return (1, 1_700_000_000_000 + self._offset)


class FakeConsumer:
    """Serves `log` (offset -> (key, value)) from the assigned offset, then EOF at `hwm`.

    `stall_after`: stop serving anything (no EOF either) once that many polls happened.
    """

    def __init__(self, log, hwm, *, stall=False, error=None):
        self.log, self.hwm, self.stall, self.error = log, hwm, stall, error
        self.config = None
        self.position_offset = None
        self.closed = False

    def __call__(self, config):
        self.config = config
        return self

    def assign(self, tps):
        (tp,) = tps
        self.position_offset = tp.offset

    def consume(self, num_messages, timeout):
        if self.error is not None:
            error, self.error = self.error, None
            return [FakeMessage(None, error=error)]
        if self.stall:
            return []
        out = []
        pos = self.position_offset
        while pos < self.hwm and len(out) < num_messages:
            if pos in self.log:
                key, value = self.log[pos]
                out.append(FakeMessage(pos, key, value))
            pos += 1  # aborted record or control marker: skipped, offset consumed
        self.position_offset = pos
        if pos >= self.hwm:
            from confluent_kafka import KafkaError

            out.append(FakeMessage(pos, error=FakeError(KafkaError._PARTITION_EOF)))
        return out

    def position(self, tps):
        from confluent_kafka import TopicPartition

        return [TopicPartition(tps[0].topic, tps[0].partition, self.position_offset)]

    def close(self):
        self.closed = True


def _read(fake, start, end, **kw):
    batches = list(
        ks.read_range(
            {"bootstrap.servers": "fake:1", "sasl.password": SECRET},
            "t",
            0,
            start,
            end,
            consumer_factory=fake,
            **kw,
        )
    )
    rows = [r for b in batches for r in b.to_pylist()]
    for b in batches:
        assert b.schema.equals(ks.ARROW_SCHEMA)
    return rows


def test_read_range_skips_transaction_gaps_and_stops_at_end():
    # offsets 0-2 committed txn data, 3 commit marker, 4-5 aborted, 6 abort marker, 7-9 plain.
    log = {
        0: (b"a", b"1"),
        1: (b"b", None),
        2: (b"c", b"3"),
        7: (b"d", b"7"),
        8: (b"e", b"8"),
        9: (b"f", b"9"),
    }
    fake = FakeConsumer(log, hwm=10)
    rows = _read(fake, 0, 10)
    assert [r["offset"] for r in rows] == [0, 1, 2, 7, 8, 9]
    assert rows[1]["value"] is None
    assert rows[0]["timestampType"] == 0 and rows[0]["topic"] == "t"
    assert fake.config["isolation.level"] == "read_committed"
    assert fake.config["enable.auto.commit"] is False
    assert fake.closed
    # A range ending on markers / aborted records terminates (EOF or position past the end).
    assert [r["offset"] for r in _read(FakeConsumer(log, hwm=7), 2, 7)] == [2]
    assert [r["offset"] for r in _read(FakeConsumer(log, hwm=10), 3, 7)] == []
    # Records at or past the end are not returned even if the broker has them.
    assert [r["offset"] for r in _read(FakeConsumer(log, hwm=10), 0, 8)] == [0, 1, 2, 7]


def test_read_range_cannot_weaken_read_committed():
    fake = FakeConsumer({0: (b"a", b"1")}, hwm=1)
    list(
        ks.read_range(
            {
                "bootstrap.servers": "fake:1",
                "isolation.level": "read_uncommitted",
                "enable.auto.commit": True,
            },
            "t",
            0,
            0,
            1,
            consumer_factory=fake,
        )
    )
    assert fake.config["isolation.level"] == "read_committed"
    assert fake.config["enable.auto.commit"] is False


def test_read_range_stall_and_fatal_errors_fail_with_one_line_without_secret():
    from confluent_kafka import KafkaError

    fake = FakeConsumer({}, hwm=5, stall=True)
    with pytest.raises(InputNotReadable, match="no progress") as info:
        _read(fake, 0, 5, stall_timeout_s=0.5)
    assert "\n" not in str(info.value) and SECRET not in str(info.value)
    fake = FakeConsumer(
        {},
        hwm=5,
        error=FakeError(KafkaError.TOPIC_AUTHORIZATION_FAILED, f"denied {SECRET}"),
    )
    with pytest.raises(InputNotReadable, match="denied") as info:
        _read(fake, 0, 5)
    assert SECRET not in str(info.value)
