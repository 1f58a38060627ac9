"""One real Apache Kafka broker for the Kafka-source tests, with real consumer groups on it;
and a Spark Connect server whose runs read it (below).

The broker (4.4.0 in KRaft mode, tests/broker/brokers.py, jars from `make broker-jars`) runs on
127.0.0.1 at free ports, one per worker session (tests/conftest.py `work_unit` gives each
tests/kafka file its own unit: a start of ~8 s per file against minutes of tests), with Kafka's
own offsets retention (7 days). `committed_groups` has real clients commit offsets, so that the
broker's coordinator itself writes `__consumer_offsets`.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.broker.brokers import KafkaBroker
from tests.cluster import servers
from tests.cluster.servers import BIN, KAFKA_VERSION, _start, _wait_for, clean_env
from tests.conftest import TEST_CONF
from tests.support.ports import free_port, is_listening

# Kafka's defaults for expiry (the audit's too); three __consumer_offsets partitions
BROKER_SETTINGS = {
    "offsets.retention.minutes": str(7 * 24 * 60),
    "offsets.retention.check.interval.ms": "600000",
    "offsets.topic.num.partitions": "3",
}


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    broker = KafkaBroker(KAFKA_VERSION, tmp_path_factory.mktemp("kafka"), BROKER_SETTINGS)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_broker: KafkaBroker) -> str:
    """`bootstrap.servers` of the session's broker."""
    return kafka_broker.bootstrap


# ---- real consumer groups: the coordinator writes __consumer_offsets -----------------------

# A group id may be any string (a topic name stops at 249 characters)
CLASSIC_GROUP = "audit-classic"  # subscribed, consumed, committed, left (classic protocol)
CONSUMER_GROUP = "audit-consumer"  # the same with the consumer protocol (KIP-848)
NON_ASCII_GROUP = "audit-ünïcødé-グループ"  # offsets only (a simple group), with metadata
LONG_GROUP = "audit-long-" + "g" * 500  # offsets only
CONSUMED_PER_PARTITION = (5, 3, 2)


@dataclass(frozen=True)
class CommittedGroups:
    topic: str  # the topic the groups consumed
    # (group, topic, partition) -> (offset, leader epoch or None, metadata), as committed
    offsets: dict[tuple[str, str, int], tuple[int, int | None, str]]


def _consume_and_commit(conf: dict, group: str, topic: str, protocol: str) -> None:
    """Subscribe, read every record, commit what was read (with its leader epoch), leave."""
    from confluent_kafka import Consumer

    settings = {**conf, "group.id": group, "group.protocol": protocol}
    settings |= {"auto.offset.reset": "earliest", "enable.auto.commit": False}
    consumer = Consumer(settings)
    consumer.subscribe([topic])
    read, deadline = 0, time.monotonic() + 60
    while read < sum(CONSUMED_PER_PARTITION):
        assert time.monotonic() < deadline, f"{group} read {read} records"
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            read += 1
    consumer.commit(asynchronous=False)
    consumer.close()


def _commit(conf: dict, group: str, offsets: list) -> None:
    """Commit `offsets` (TopicPartitions) for `group` without joining it (a simple group)."""
    from confluent_kafka import Consumer

    consumer = Consumer({**conf, "group.id": group})
    consumer.commit(offsets=offsets, asynchronous=False)
    consumer.close()


@pytest.fixture(scope="session")
def committed_groups(kafka_broker: KafkaBroker) -> CommittedGroups:
    """A topic of three partitions; two groups that consumed all of it (classic and consumer
    protocol) and two simple groups (a non-ASCII id with metadata, a 511-character id)."""
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    conf = kafka_broker.client_conf
    topic = f"consumed-{uuid.uuid4().hex[:8]}"
    new = NewTopic(topic, len(CONSUMED_PER_PARTITION), 1)
    admin = AdminClient(conf)  # kept while its future runs
    admin.create_topics([new])[topic].result(timeout=30)
    producer = Producer({**conf, "enable.idempotence": True})
    for partition, count in enumerate(CONSUMED_PER_PARTITION):
        for i in range(count):
            producer.produce(topic, key=b"k", value=f"v{i}".encode(), partition=partition)
    assert producer.flush(30) == 0
    for group, protocol in ((CLASSIC_GROUP, "classic"), (CONSUMER_GROUP, "consumer")):
        _consume_and_commit(conf, group, topic, protocol)
    metadata = "committed by hand: ünï"
    stored = metadata + "\0"  # confluent-kafka commits the C string's terminator too
    _commit(
        conf,
        NON_ASCII_GROUP,
        [TopicPartition(topic, 0, 4, metadata, 0), TopicPartition(topic, 1, 1, metadata)],
    )
    _commit(conf, LONG_GROUP, [TopicPartition(topic, 2, 2)])
    consumed = {
        (group, topic, p): (count, 0, "")
        for group in (CLASSIC_GROUP, CONSUMER_GROUP)
        for p, count in enumerate(CONSUMED_PER_PARTITION)
    }
    by_hand = {
        (NON_ASCII_GROUP, topic, 0): (4, 0, stored),
        (NON_ASCII_GROUP, topic, 1): (1, None, stored),
        (LONG_GROUP, topic, 2): (2, None, ""),
    }
    return CommittedGroups(topic, consumed | by_hand)


def _listed_groups(admin) -> list:
    admin.list_topics(timeout=10)  # ListGroups asks the brokers the client knows
    listing = admin.list_consumer_groups(request_timeout=10).result(timeout=30)
    assert not listing.errors, listing.errors
    return listing.valid


def broker_groups(broker: KafkaBroker) -> dict[str, tuple[str, str]]:
    """Every listed group's (type, state) as the broker answers ListGroups, in `groups`' words."""
    from confluent_kafka.admin import AdminClient

    listed = _listed_groups(AdminClient(broker.client_conf))
    return {g.group_id: (g.type.name.lower(), g.state.name.title()) for g in listed}


def broker_offsets(broker: KafkaBroker) -> dict[tuple[str, str, int], tuple[int, int | None, str]]:
    """Every listed group's committed offsets as Kafka's Java Admin client fetches them (the
    exact metadata: librdkafka reads it as a C string)."""
    from confluent_kafka.admin import AdminClient

    from tests.broker.situations import java_admin

    groups = [g.group_id for g in _listed_groups(AdminClient(broker.client_conf))]
    fetched = java_admin(broker.bootstrap, "offsets", groups)
    assert not [row for row in fetched if "error" in row], fetched
    return {
        (row["group"], row["topic"], row["partition"]): (
            row["offset"], row["leader_epoch"], row["metadata"],
        )
        for row in fetched
    }  # fmt: skip


# ---- a Spark Connect server (tests/kafka/test_connect.py) ------------------------------------
# Spark 4.2's, from the installed pyspark, one per test session: its driver runs local[2] with
# the Delta and Kafka connector jars and the settings the classic test session gets
# (tests/conftest.py TEST_CONF), on 127.0.0.1 at a free port. Its clients run in subprocesses
# (`offsets run` with SPARK_REMOTE): a Connect session in the pytest process would switch
# pyspark's functions to Connect for every later classic test (SPARK_CONNECT_MODE_ENABLED is
# process-wide).

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


@dataclass(frozen=True)
class ConnectServer:
    url: str  # sc://127.0.0.1:PORT
    log: Path

    def client_env(self) -> dict[str, str]:
        """A client process's environment: SPARK_REMOTE, and no PYTHONPATH of this worktree
        for the server's workers to rely on (the package reaches them as an artifact)."""
        return {**os.environ, "SPARK_REMOTE": self.url}


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    from offsets_lib.job import session

    root = tmp_path_factory.mktemp("spark-connect")
    port = free_port()
    plan = session.new_session(
        master="local[2]",
        show_progress=False,
        extra_conf={**TEST_CONF, "spark.sql.warehouse.dir": str(root / "warehouse")},
    )
    conf = {
        **plan.conf,
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
    }
    # the platform's server, not a session of ours: its workers fork from PySpark's own daemon
    # (ours, local tuning, would import the package before the session's artifact arrives)
    conf.pop("spark.python.daemon.module")
    command = [str(BIN / "spark-submit"), "--class", SERVER_CLASS, "--master", plan.master]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    env = clean_env({"SPARK_WORKER_DIR": str(root / "work")})
    env.pop("PYTHONPATH", None)  # the workers import the package from the session's artifact
    log = root / "server.log"
    process = _start([*command, "spark-internal"], log, env)
    try:
        _wait_for("Spark Connect server", lambda: is_listening(port), process, log)
        yield ConnectServer(f"sc://127.0.0.1:{port}", log)
    finally:
        servers._stop(process)
