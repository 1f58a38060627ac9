"""The Kafka source (Spark's Kafka connector, offsets fixed by the driver) against a real
Kafka broker (tests/kafka/conftest.py), plus unit tests of its driver-side parts."""

from __future__ import annotations

import logging
import time
import uuid

import pytest

from offsets_lib.io.sources import InputNotReadable, SourceConfigError
from offsets_lib.io.sources import kafka as ks
from offsets_lib.io.sources.kafka_admin import resolve_read_range
from tests.support.ports import free_port

SECRET = "s3cr3t-Pa55word-never-shown"
PARTITIONS = 3
TOPIC = "offsets-source"  # raw records of this module's own (a client may not write the real one)


# ----------------------------------------------------------------------------------- helpers


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    futures = admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=10)
    for future in futures.values():
        future.result(timeout=10)


def produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None, int]]):
    """Produce (key, value, partition) in order; returns the rows as stored: (key, value,
    partition, offset), from the delivery reports."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "log_level": 0}
    )
    stored = []
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            stored.append((msg.key(), msg.value(), msg.partition(), msg.offset()))

    for key, value, partition in records:
        producer.produce(topic, key=key, value=value, partition=partition, on_delivery=on_delivery)
    assert producer.flush(30) == 0
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
def source_topic(kafka_bootstrap):
    """TOPIC with 3 partitions and known records; returns the stored rows."""
    create_topic(kafka_bootstrap, TOPIC)
    return produce(kafka_bootstrap, TOPIC, sample_records("main", 40))


@pytest.fixture
def fresh_topic(kafka_bootstrap) -> str:
    topic = f"offsets-test-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic)
    return topic


# ------------------------------------------------------------------------- against the broker


@pytest.mark.kafka
def test_end_offsets_match_what_was_produced(kafka_bootstrap, source_topic):
    ends = resolve_read_range({"bootstrap.servers": kafka_bootstrap}, TOPIC)[0]
    assert ends == ends_from(source_topic)
    starts = ks.resolve_start_offsets({"kafka.bootstrap.servers": kafka_bootstrap}, TOPIC)
    assert starts == dict.fromkeys(range(PARTITIONS), 0)


@pytest.mark.kafka
def test_reads_exactly_the_produced_rows(spark, kafka_bootstrap, source_topic):
    options = {"kafka.bootstrap.servers": kafka_bootstrap}
    ends = resolve_read_range(options, TOPIC)[0]
    df = ks.read_kafka(
        spark, kafka_options=options, topic=TOPIC, start_offsets=None, end_offsets=ends
    )
    assert df.schema == ks.KAFKA_SCHEMA
    rows = df.collect()
    assert rows_of(df) == canon(source_topic)
    assert sum(r["value"] is None for r in rows) == sum(v is None for _k, v, _p, _o in source_topic)
    assert {r["topic"] for r in rows} == {TOPIC}
    assert {r["timestampType"] for r in rows} == {0}  # CreateTime
    assert all(r["timestamp"] is not None and r["timestamp"].year >= 2020 for r in rows)


@pytest.mark.kafka
def test_start_offsets_give_an_incremental_read(spark, kafka_bootstrap, fresh_topic):
    options = {"bootstrap.servers": kafka_bootstrap}
    first = produce(kafka_bootstrap, fresh_topic, sample_records("one", 12))
    ends1 = resolve_read_range(options, fresh_topic)[0]
    assert ends1 == ends_from(first)
    df1 = ks.read_kafka(
        spark, kafka_options=options, topic=fresh_topic, start_offsets=None, end_offsets=ends1
    )
    assert rows_of(df1) == canon(first)

    second = produce(kafka_bootstrap, fresh_topic, sample_records("two", 9))
    ends2 = resolve_read_range(options, fresh_topic)[0]
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


def produce_transactions(bootstrap: str, topic: str) -> list[int]:
    """Partition 0: two committed transactions around a plain record; returns the data offsets.

    Each commit marker takes an offset that no reader sees: 0-2 txn, 3 marker, 4 plain,
    5-6 txn, 7 marker. The coordinator writes a marker after it answers the commit: each step
    waits until the partition's end offset is past its marker.
    """
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"tx-{topic}",
            "linger.ms": 0,
            "log_level": 0,
        }
    )
    plain = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "log_level": 0})
    producer.init_transactions(10)
    for batch, end in (((b"t1-a", b"t1-b", b"t1-c"), 4), (None, 5), ((b"t2-a", b"t2-b"), 8)):
        if batch is None:
            plain.produce(topic, key=b"plain", value=b"p", partition=0)
            assert plain.flush(10) == 0
            continue
        producer.begin_transaction()
        for key in batch:
            producer.produce(topic, key=key, value=b"v", partition=0)
            assert producer.flush(10) == 0
        producer.commit_transaction(10)
        deadline = time.monotonic() + 30
        while resolve_read_range({"bootstrap.servers": bootstrap}, topic)[0][0] < end:
            assert time.monotonic() < deadline, f"no commit marker before offset {end}"
            time.sleep(0.1)
    return [0, 1, 2, 4, 5, 6]


@pytest.mark.kafka
def test_transaction_markers_leave_gaps_the_read_goes_past(spark, kafka_bootstrap, fresh_topic):
    """Commit markers are offsets without a record (as are compacted-away records): with
    failOnDataLoss=false the connector reads past them, also when a range starts or ends on one."""
    options = {"bootstrap.servers": kafka_bootstrap}
    data_offsets = produce_transactions(kafka_bootstrap, fresh_topic)
    ends = resolve_read_range(options, fresh_topic)[0]
    assert ends == {0: 8, 1: 0, 2: 0}

    def offsets_read(start: dict[int, int], end: dict[int, int]) -> list[int]:
        df = ks.read_kafka(
            spark, kafka_options=options, topic=fresh_topic, start_offsets=start, end_offsets=end
        )
        return sorted(r["offset"] for r in df.select("offset").collect())

    assert offsets_read({}, ends) == data_offsets
    assert offsets_read({0: 3}, ends) == [4, 5, 6]  # starts on a marker
    assert offsets_read({0: 0}, {0: 4}) == [0, 1, 2]  # ends on a marker
    assert offsets_read({0: 7}, {0: 8}) == []  # only a marker


@pytest.mark.kafka
def test_spark_conf_and_plans_of_a_kafka_read_hold_no_secret(
    spark, kafka_bootstrap, source_topic, monkeypatch, capsys
):
    """The connector's plans (planning asks the broker for the ranges) and Spark's
    configuration hold none of the secret-bearing client settings read_kafka passes through.
    (The connection is PLAINTEXT: the Java client leaves the sasl/ssl settings unused.)"""
    monkeypatch.setattr(ks, "resolve_start_offsets", lambda *a, **k: {0: 0, 1: 0, 2: 0})
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required"
        f' username="auditor" password="{SECRET}";'
    )
    options = {
        "bootstrap.servers": kafka_bootstrap,
        "sasl.mechanism": "PLAIN",
        "sasl.username": "auditor",
        "sasl.password": SECRET,
        "sasl.jaas.config": jaas,
        "ssl.key.password": SECRET,
        "sasl.oauthbearer.client.secret": SECRET,
    }
    df = ks.read_kafka(
        spark, kafka_options=options, topic=TOPIC, start_offsets=None, end_offsets={0: 5, 1: 3}
    )
    filtered = df.filter("partition = 0").select("key", "value")
    texts = []
    for frame in (df, filtered):
        qe = frame._jdf.queryExecution()
        texts += [qe.toString(), qe.simpleString()]
        for mode in ("simple", "extended", "codegen", "cost", "formatted"):
            texts.append(spark._jvm.PythonSQLUtils.explainString(qe, mode))
        for plan in (qe.logical(), qe.analyzed(), qe.optimizedPlan(), qe.executedPlan()):
            texts += [plan.toString(), plan.toJSON()]
        frame.explain(True)
        frame.explain(mode="formatted")
    texts.append(capsys.readouterr().out)
    assert "KafkaRelation" in "\n".join(texts)  # the plans were really produced
    for text in texts:
        assert SECRET not in text
    assert filtered.count() == 5
    assert not [kv for kv in spark.sparkContext.getConf().getAll() if SECRET in kv[1]]
    assert not [kv for kv in spark.conf.getAll.items() if SECRET in str(kv[1])]
    assert SECRET not in spark._jsparkSession.sessionState().conf().getAllConfs().toString()


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
        resolve_read_range(options, ks.DEFAULT_TOPIC)
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
def test_unknown_topic_is_not_readable_and_not_created(kafka_bootstrap):
    options = {"bootstrap.servers": kafka_bootstrap, "sasl.password": SECRET}
    topic = f"no-such-topic-{uuid.uuid4().hex[:6]}"
    started = time.monotonic()
    with pytest.raises(InputNotReadable, match="topic not found") as info:
        resolve_read_range(options, topic)
    assert time.monotonic() - started < 60
    assert topic in str(info.value)
    assert SECRET not in str(info.value)
    from confluent_kafka.admin import AdminClient

    listed = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=5).topics
    assert topic not in listed


@pytest.mark.kafka
def test_start_beyond_end_or_unknown_partition_is_refused(spark, kafka_bootstrap, source_topic):
    options = {"bootstrap.servers": kafka_bootstrap}
    ends = resolve_read_range(options, TOPIC)[0]
    beyond = {0: ends[0] + 5}
    with pytest.raises(InputNotReadable, match="beyond the end offset"):
        ks.read_kafka(
            spark, kafka_options=options, topic=TOPIC, start_offsets=beyond, end_offsets=ends
        )
    with pytest.raises(InputNotReadable, match=r"no partitions \[7\]"):
        ks.read_kafka(
            spark, kafka_options=options, topic=TOPIC, start_offsets=None, end_offsets={7: 3}
        )


class FakeTopicError:
    def __init__(self, code):
        self._code = code

    def code(self):
        return self._code

    def str(self):
        return "fake"


def test_topic_authorization_failure_is_not_readable(monkeypatch):
    """ACL denial's message (the real denial: tests/broker/test_sasl_source.py): metadata
    reports TOPIC_AUTHORIZATION_FAILED."""
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
        resolve_read_range({"bootstrap.servers": "b:9092", "sasl.password": SECRET})
    assert SECRET not in str(info.value) and "\n" not in str(info.value)


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
    given = {"kafka.bootstrap.servers": "b:1", "sasl.mechanism": "PLAIN"}
    # librdkafka's name for the driver's look-ups, the Java client's for the connector
    assert ks.client_config(given) == {"bootstrap.servers": "b:1", "sasl.mechanisms": "PLAIN"}
    assert ks.connector_config(given) == {"bootstrap.servers": "b:1", "sasl.mechanism": "PLAIN"}
    with pytest.raises(SourceConfigError, match=r"bootstrap\.servers"):
        ks.client_config({"kafka.sasl.password": SECRET})
    assert ks.offsets_to_json({2: 7, 0: 5}) == '{"0":5,"2":7}'
    assert ks.offsets_to_json({0: 5}, "t") == '{"t":{"0":5}}'


class FakeReader:
    """Spark's DataFrameReader as `read_kafka` uses it: records the options, fails on load."""

    def __init__(self, failure: Exception | None = None):
        self.format_name = None
        self.options: dict[str, str] = {}
        self.failure = failure

    def format(self, name):
        self.format_name = name
        return self

    def option(self, key, value):
        self.options[key] = value
        return self

    def load(self):
        if self.failure is not None:
            raise self.failure
        return self

    def select(self, *columns):
        self.columns = columns
        return self


def fake_read(monkeypatch, options, *, failure=None, start=None, end=None):
    from types import SimpleNamespace

    monkeypatch.setattr(ks, "resolve_start_offsets", lambda *a, **k: {0: 2, 1: 0})
    monkeypatch.setattr(ks, "check_read_access", lambda *a, **k: None)  # no broker at b:1
    reader = FakeReader(failure)
    ks.read_kafka(
        SimpleNamespace(read=reader),
        kafka_options=options,
        topic="t",
        start_offsets=start,
        end_offsets=end or {0: 9, 1: 4},
    )
    return reader


def test_read_kafka_hands_the_connector_fixed_offsets_and_every_client_setting(monkeypatch):
    reader = fake_read(
        monkeypatch,
        {"kafka.bootstrap.servers": "b:1", "security.protocol": "SSL", "fetch.max.bytes": 5},
        start={1: 3},
    )
    assert reader.format_name == "kafka"
    assert reader.options == {
        "kafka.isolation.level": "read_committed",
        "kafka.fetch.max.wait.ms": "10",
        "kafka.max.poll.records": "1000000",
        "kafka.bootstrap.servers": "b:1",
        "kafka.security.protocol": "SSL",
        "kafka.fetch.max.bytes": "5",
        "assign": '{"t": [0, 1]}',
        "startingOffsets": '{"t":{"0":2,"1":3}}',
        "endingOffsets": '{"t":{"0":9,"1":4}}',
        "includeHeaders": "false",
        "failOnDataLoss": "false",
    }
    assert reader.columns == ks.KAFKA_COLUMNS
    # read_committed is only the default: an explicit setting passes through
    reader = fake_read(
        monkeypatch, {"bootstrap.servers": "b:1", "isolation.level": "read_uncommitted"}
    )
    assert reader.options["kafka.isolation.level"] == "read_uncommitted"
    reader = fake_read(monkeypatch, {"bootstrap.servers": "b:1", "fetch.max.wait.ms": "200"})
    assert reader.options["kafka.fetch.max.wait.ms"] == "200"
    reader = fake_read(monkeypatch, {"bootstrap.servers": "b:1", "max.poll.records": "500"})
    assert reader.options["kafka.max.poll.records"] == "500"


def test_start_below_the_log_start_is_raised_to_it(monkeypatch, caplog):
    reader = fake_read(monkeypatch, {"bootstrap.servers": "b:1"}, start={0: 1, 1: 0})
    assert reader.options["startingOffsets"] == '{"t":{"0":2,"1":0}}'
    assert "start offset 1 is below the log start 2" in caplog.text


def test_connector_failures_are_one_line_without_secret(monkeypatch):
    options = {"bootstrap.servers": "b:1", "sasl.password": SECRET}
    missing = RuntimeError(f"[DATA_SOURCE_NOT_FOUND] Failed to find data source: kafka {SECRET}")
    with pytest.raises(SourceConfigError, match="spark-sql-kafka-0-10") as info:
        fake_read(monkeypatch, options, failure=missing)
    assert SECRET not in str(info.value) and "--kafka-reader" not in str(info.value)
    other = RuntimeError(f"login failed\nwith password {SECRET}")
    with pytest.raises(InputNotReadable) as info:
        fake_read(monkeypatch, options, failure=other)
    assert str(info.value) == (
        "kafka read via Spark's connector failed (bootstrap.servers=b:1): "
        "login failed with password ***"
    )
