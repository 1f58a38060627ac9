"""Situations driven by real clients (confluent-kafka) against a real coordinator.

Each situation owns its topics and groups (named after it) and leaves the broker in a state
that stays put until the test session ends: members that should stay are kept alive by the
`Driver`'s poll thread, the others leave before the first snapshot. `offset_deletes` lists the
OffsetDelete requests issued after the first snapshot (the job predicts their error codes).
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker import kafka_dist
from tests.broker.eras import Version, coordinator_for, version_tuple

JOIN_TIMEOUT_S = 30.0
STATIC_SESSION_TIMEOUT_MS = 120_000  # above the reload phase's reads (30 s was not on CI)
HERE = Path(__file__).parent
JAVA_ADMIN_VERSION = "4.4.0"  # its Admin client shows epochs and exact states of every broker


_CLASSES: dict[str, str] = {}


def java_classpath(source: str, jars: Path) -> str:
    """`source` compiled once per session (javac), ahead of `jars`: a classpath for `java`."""
    if source not in _CLASSES:
        classes = tempfile.mkdtemp(prefix=f"{Path(source).stem}-")
        command = ["javac", "-nowarn", "-d", classes, "-cp", f"{jars}/*", str(HERE / source)]
        subprocess.run(command, check=True, capture_output=True, timeout=120)
        _CLASSES[source] = f"{classes}:{jars}/*"
    return _CLASSES[source]


def java_lines(source: str, args: list[str]) -> list[dict]:
    """Run a program of tests/broker on Kafka 4.4's client jars; its JSON lines."""
    classpath = java_classpath(source, kafka_dist.resolve(JAVA_ADMIN_VERSION))
    command = ["java", "-XX:TieredStopAtLevel=1", "-cp", classpath, Path(source).stem, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def java_admin(bootstrap: str, command: str, items: list[str]) -> list[dict]:
    """Run tests/broker/KafkaAdmin.java (Kafka's Java Admin client); its JSON lines."""
    if not items:
        return []
    return java_lines("KafkaAdmin.java", [command, bootstrap, *items])


@dataclass
class Outcome:
    """What a situation leaves: its groups and the OffsetDelete requests to issue later."""

    groups: list[str]
    offset_deletes: list[tuple[str, list[tuple[str, int]]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # TxnOffsetCommit requests sent by Kafka's Java producer and the broker's answers (one dict
    # per partition: group, member_id, member_epoch, topic, partition, error, case), compared
    # with `offsets fence-check --transactional`
    txn_commits: list[dict] = field(default_factory=list)
    # OffsetFetch by topic id from Kafka's Java consumer (one dict per partition: group, client,
    # topic, partition, offset (None: none), topic_id (the id it named), old_topic_id (the id of
    # the topic deleted before), offset_while_deleted (OffsetFetch by name between the deletion
    # and the re-creation: -1)), compared with `offsets fetch --topic-id`
    topic_id_fetches: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class Situation:
    name: str
    drive: Callable[[Driver, str], Outcome]
    min_major: int = 3  # the oldest broker major version that has the feature
    # Its groups keep members until the end: no offset of it expires, so it runs first and the
    # situations whose offsets expire one retention after their commit run last (all of them
    # must still be there at the first snapshot).
    keeps_members: bool = False
    # Driven just before the broker restarts; compared in the reload phase only.
    late: bool = False
    # major -> (what the live broker shows, why): documented behaviour a dump cannot show.
    documented_live: dict = field(default_factory=dict)
    # The oldest release line (major, minor) whose broker can produce it, when older than
    # `min_major`: what ZooKeeper-era (2.x) brokers run. `before`: the first line that does not.
    since: Version | None = None
    before: Version | None = None
    # Groups (name suffixes) with an offset deleted within the transaction timeout of its last
    # commit, before it expired, from release line `unread_marker_since` on: read with `--source
    # kafka` (no transaction markers) under a Scala coordinator, the job must report their
    # values unknown (TXN-MARKER-UNREAD), and no other values.
    unread_marker_groups: tuple[str, ...] = ()
    unread_marker_since: Version = (0, 0)

    def runs_on(self, version: str) -> bool:
        line = version_tuple(version)
        oldest = self.since or (self.min_major, 0)
        return oldest <= line and (self.before is None or line < self.before)

    def unknown_on_kafka_read(self, version: str) -> set[str]:
        """The groups whose values a `--source kafka` run on this broker reports unknown."""
        if coordinator_for(version) == "new" or version_tuple(version) < self.unread_marker_since:
            return set()
        return {f"{self.name}-{suffix}" for suffix in self.unread_marker_groups}


SITUATIONS: list[Situation] = []


def situation(
    name: str,
    *,
    min_major: int = 3,
    keeps_members: bool = False,
    late: bool = False,
    documented_live: dict | None = None,
    since: Version | None = None,
    before: Version | None = None,
    unread_marker_groups: tuple[str, ...] = (),
    unread_marker_since: Version = (0, 0),
):
    def register(fn: Callable[[Driver, str], Outcome]) -> Callable[[Driver, str], Outcome]:
        SITUATIONS.append(
            Situation(
                name,
                fn,
                min_major,
                keeps_members,
                late,
                documented_live or {},
                since,
                before,
                unread_marker_groups,
                unread_marker_since,
            )
        )
        return fn

    return register


class Driver:
    """Clients against one broker; keeps live members polling until `close`."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        self._alive: list[Consumer] = []
        self._producers: list[Producer] = []
        self._java: list[subprocess.Popen] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._pump = threading.Thread(target=self._poll_forever, daemon=True)
        self._pump.start()

    def _poll_forever(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                alive = list(self._alive)
            for consumer in alive:
                with contextlib.suppress(Exception):
                    consumer.poll(0)
            time.sleep(0.05)

    def topic(self, name: str, partitions: int = 2) -> str:
        futures = self.admin.create_topics([NewTopic(name, partitions, 1)])
        futures[name].result()
        deadline = time.monotonic() + 10
        while len(self.admin.list_topics(name, timeout=5).topics[name].partitions) < partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {name} not ready")
            time.sleep(0.1)
        return name

    def topic_id(self, name: str) -> str:
        """The topic's id in Kafka's 22-character form (URL-safe base64; librdkafka's str() of a
        Uuid is standard base64, with '+' and '/')."""
        from confluent_kafka import TopicCollection

        topic_id = self.admin.describe_topics(TopicCollection([name]))[name].result().topic_id
        high = topic_id.get_most_significant_bits() % 2**64
        low = topic_id.get_least_significant_bits() % 2**64
        return base64.urlsafe_b64encode(((high << 64) | low).to_bytes(16, "big")).decode()[:22]

    def produce(self, topic: str, partitions: int, count: int) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 0})
        for partition in range(partitions):
            for i in range(count):
                producer.produce(topic, value=b"v%d" % i, partition=partition)
        producer.flush(10)

    def consumer(self, group: str, protocol: str = "classic", **conf: object) -> Consumer:
        settings: dict[str, object] = {
            "bootstrap.servers": self.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "log_level": 0,
        }
        if protocol == "consumer":
            settings["group.protocol"] = "consumer"
        else:
            settings.update({"session.timeout.ms": 30000, "heartbeat.interval.ms": 500})
        settings.update({k.replace("_", "."): v for k, v in conf.items()})
        return Consumer(settings)

    def join(self, consumers: list[Consumer], topics: list[str] | None = None) -> None:
        """Subscribe (when `topics`) and poll until every consumer has an assignment."""
        if topics is not None:
            for consumer in consumers:
                consumer.subscribe(topics)
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        while True:
            for consumer in consumers:
                consumer.poll(0.05)
            if all(c.assignment() for c in consumers):
                break
            if time.monotonic() > deadline:
                raise TimeoutError("consumers did not get an assignment")
        # one more round so every member has acknowledged its assignment
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            for consumer in consumers:
                consumer.poll(0.05)

    def keep_alive(self, *consumers: Consumer) -> None:
        with self._lock:
            self._alive.extend(consumers)

    def leave(self, consumer: Consumer) -> None:
        with self._lock:
            if consumer in self._alive:
                self._alive.remove(consumer)
        consumer.close()

    @staticmethod
    def commit(consumer: Consumer, offsets: dict[tuple[str, int], int], **kw: object) -> None:
        tps = [TopicPartition(t, p, o, **kw) for (t, p), o in offsets.items()]
        consumer.commit(offsets=tps, asynchronous=False)

    def transactional(self, txn_id: str) -> Producer:
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "transactional.id": txn_id,
                "transaction.timeout.ms": 600000,
                "log_level": 0,
            }
        )
        producer.init_transactions(20)
        self._producers.append(producer)
        return producer

    def java_member(self, *args: str, keep: bool) -> None:
        """A Streams or share-group member (tests/broker/JavaGroups.java); READY = working."""
        jars = kafka_dist.resolve_streams()
        self._java_process("JavaGroups.java", jars, [*args, "keep" if keep else "once"], keep)

    def txn_offset_commits(self, group: str, topic: str, client_prefix: str) -> list[dict]:
        """tests/broker/TxnOffsetCommits.java: Kafka 4.4's transactional producer commits for a
        consumer-protocol member of `group` that stays until `close`; its JSON lines."""
        jars = kafka_dist.resolve(JAVA_ADMIN_VERSION)
        args = [self.bootstrap, group, topic, client_prefix, "keep"]
        lines = self._java_process("TxnOffsetCommits.java", jars, args, keep=True)
        return [json.loads(line) for line in lines]

    def _java_process(self, source: str, jars: Path, args: list[str], keep: bool) -> list[str]:
        """Run `source`'s class with `args`; the lines it prints before READY (it is working)."""
        classpath = java_classpath(source, jars)
        command = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", classpath]
        command += [Path(source).stem, *args]
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self._java.append(proc)
        lines = []
        for line in proc.stdout:  # blocks until READY or exit
            if line.strip() == "READY":
                break
            lines.append(line.strip())
        else:
            proc.kill()
            raise RuntimeError(f"{source} did not start: {lines[-3:]!r}")
        if not keep:
            proc.wait(timeout=60)
        return lines

    def close(self) -> None:
        for proc in self._java:
            with contextlib.suppress(Exception):
                proc.stdin.close()
                proc.wait(timeout=30)
            if proc.poll() is None:
                proc.kill()
        self._java.clear()
        self._stop.set()
        self._pump.join(timeout=5)
        for consumer in self._alive:
            with contextlib.suppress(KafkaException):
                consumer.close()
        self._alive.clear()
        for producer in self._producers:
            with contextlib.suppress(Exception):
                producer.abort_transaction(5)


def _tps(topic: str, *partitions: int) -> list[tuple[str, int]]:
    return [(topic, p) for p in partitions]


# ---- classic groups --------------------------------------------------------------------------


@situation("simple-assign", since=(2, 0))
def simple_assign(d: Driver, name: str) -> Outcome:
    """assign() + commit (generation -1, no member): a simple group; metadata and leader epoch."""
    topic = d.topic(f"{name}-t", 3)
    group = f"{name}-g"
    consumer = d.consumer(group)
    consumer.assign([TopicPartition(topic, p) for p in range(3)])
    d.commit(consumer, {(topic, 0): 5, (topic, 1): 7}, metadata="m-1")
    d.commit(consumer, {(topic, 2): 11})
    d.commit(consumer, {(topic, 1): 8})  # a later commit replaces the first one
    consumer.close()
    return Outcome([group])


@situation("classic-eager-two-members", keeps_members=True, since=(2, 0))
def classic_eager(d: Driver, name: str) -> Outcome:
    topic = d.topic(f"{name}-t", 4)
    group = f"{name}-g"
    members = [d.consumer(group, client_id=f"{name}-c{i}") for i in range(2)]
    d.join(members, [topic])
    for consumer in members:
        d.commit(consumer, {(t.topic, t.partition): 3 for t in consumer.assignment()})
    d.keep_alive(*members)
    return Outcome([group])


@situation("classic-cooperative-member-left", keeps_members=True, since=(2, 0))
def classic_cooperative(d: Driver, name: str) -> Outcome:
    topic = d.topic(f"{name}-t", 4)
    group = f"{name}-g"
    conf = {"partition.assignment.strategy": "cooperative-sticky"}
    members = [d.consumer(group, client_id=f"{name}-c{i}", **conf) for i in range(3)]
    d.join(members, [topic])
    for consumer in members:
        d.commit(consumer, {(t.topic, t.partition): 2 for t in consumer.assignment()})
    members[2].close()
    d.join(members[:2])
    d.keep_alive(*members[:2])
    return Outcome([group])


@situation("classic-subscription-changes", keeps_members=True, since=(2, 0))
def classic_subscription(d: Driver, name: str) -> Outcome:
    first, second = d.topic(f"{name}-a", 2), d.topic(f"{name}-b", 2)
    group = f"{name}-g"
    consumer = d.consumer(group, client_id=f"{name}-c")
    d.join([consumer], [first])
    d.commit(consumer, {(first, 0): 1, (first, 1): 1})
    consumer.subscribe([first, second])
    deadline = time.monotonic() + JOIN_TIMEOUT_S
    while len(consumer.assignment()) < 4 and time.monotonic() < deadline:
        consumer.poll(0.05)
    d.join([consumer])
    d.commit(consumer, {(second, 0): 4})
    d.keep_alive(consumer)
    return Outcome([group])


@situation("classic-static-member", keeps_members=True, since=(2, 3))  # KIP-345
def classic_static(d: Driver, name: str) -> Outcome:
    topic = d.topic(f"{name}-t", 2)
    group = f"{name}-g"
    # a static member does not leave on close: the broker keeps it a session timeout after
    # each load, long enough for the reload's reads on a slow machine
    consumer = d.consumer(
        group,
        client_id=f"{name}-c",
        group_instance_id=f"{name}-i1",
        session_timeout_ms=STATIC_SESSION_TIMEOUT_MS,
    )
    d.join([consumer], [topic])
    d.commit(consumer, {(topic, 0): 9, (topic, 1): 10})
    d.keep_alive(consumer)
    return Outcome([group])


@situation("classic-emptied", since=(2, 0))
def classic_emptied(d: Driver, name: str) -> Outcome:
    """Members commit then leave: an Empty consumer group whose offsets expire."""
    topic = d.topic(f"{name}-t", 2)
    group = f"{name}-g"
    consumer = d.consumer(group, client_id=f"{name}-c")
    d.join([consumer], [topic])
    d.commit(consumer, {(topic, 0): 4, (topic, 1): 6})
    consumer.close()
    return Outcome([group])


@situation("classic-emptied-then-rejoined", keeps_members=True, since=(2, 0))
def classic_rejoined(d: Driver, name: str) -> Outcome:
    topic = d.topic(f"{name}-t", 2)
    group = f"{name}-g"
    first = d.consumer(group, client_id=f"{name}-c1")
    d.join([first], [topic])
    d.commit(first, {(topic, 0): 4, (topic, 1): 6})
    first.close()
    second = d.consumer(group, client_id=f"{name}-c2")
    d.join([second], [topic])
    d.commit(second, {(topic, 1): 8})
    d.keep_alive(second)
    return Outcome([group])


@situation(  # before 2.4: UNSUPPORTED_VERSION
    "offset-delete",
    since=(2, 0),
    unread_marker_groups=("empty", "stable"),
    unread_marker_since=(2, 4),
)
def offset_delete(d: Driver, name: str) -> Outcome:
    """OffsetDelete on an Empty group, on a group subscribed to the topic, on a missing group."""
    topic, other = d.topic(f"{name}-t", 2), d.topic(f"{name}-o", 1)
    empty, stable = f"{name}-empty", f"{name}-stable"
    consumer = d.consumer(empty)
    consumer.assign([TopicPartition(topic, 0)])
    d.commit(consumer, {(topic, 0): 3, (topic, 1): 4, (other, 0): 5})
    consumer.close()
    member = d.consumer(stable, client_id=f"{name}-c")
    d.join([member], [topic])
    d.commit(member, {(topic, 0): 1, (topic, 1): 1, (other, 0): 2})  # `other`: not subscribed
    d.keep_alive(member)
    deletes = [
        (empty, _tps(topic, 0, 1)),
        (stable, [*_tps(topic, 0), *_tps(other, 0)]),
        (f"{name}-missing", _tps(topic, 0)),
    ]
    return Outcome([empty, stable], offset_deletes=deletes)


@situation("delete-groups", since=(2, 0), unread_marker_groups=("gone",))
def delete_groups(d: Driver, name: str) -> Outcome:
    topic = d.topic(f"{name}-t", 1)
    gone, kept = f"{name}-gone", f"{name}-kept"
    for group in (gone, kept):
        consumer = d.consumer(group)
        consumer.assign([TopicPartition(topic, 0)])
        d.commit(consumer, {(topic, 0): 2})
        consumer.close()
    d.admin.delete_consumer_groups([gone])[gone].result()
    return Outcome([gone, kept])


@situation("admin-offset-reset", since=(2, 0))
def offset_reset(d: Driver, name: str) -> Outcome:
    from confluent_kafka import ConsumerGroupTopicPartitions

    topic = d.topic(f"{name}-t", 2)
    group = f"{name}-g"
    consumer = d.consumer(group, client_id=f"{name}-c")
    d.join([consumer], [topic])
    d.commit(consumer, {(topic, 0): 10, (topic, 1): 10})
    consumer.close()
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 1)])
    d.admin.alter_consumer_group_offsets([request])[group].result()
    return Outcome([group])


@situation("topic-deleted", since=(2, 0), unread_marker_groups=("g",))
def topic_deleted(d: Driver, name: str) -> Outcome:
    topic, kept = d.topic(f"{name}-t", 2), d.topic(f"{name}-k", 1)
    group = f"{name}-g"
    consumer = d.consumer(group)
    consumer.assign([TopicPartition(topic, 0)])
    d.commit(consumer, {(topic, 0): 3, (topic, 1): 3, (kept, 0): 3})
    consumer.close()
    d.admin.delete_topics([topic])[topic].result()
    time.sleep(1.0)  # the coordinator removes the offsets when the metadata update reaches it
    return Outcome([group])


def _kafka_string(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">h", len(data)) + data


def commit_with_retention(
    bootstrap: str, group: str, topic: str, partition: int, offset: int, retention_ms: int
) -> int:
    """OffsetCommit v2 with `retention_time_ms` for a simple group (generation -1, no member),
    sent on a plain socket: versions 2-4 of the request carry the retention (every broker here
    takes v2, 4.x included), and neither Kafka's Java consumer nor librdkafka ever sets it
    (both send -1, the broker's retention). The partition's error code (0 = stored)."""
    host, port = bootstrap.rsplit(":", 1)
    body = _kafka_string(group) + struct.pack(">i", -1) + _kafka_string("")
    body += struct.pack(">qi", retention_ms, 1) + _kafka_string(topic)
    body += struct.pack(">iiq", 1, partition, offset) + _kafka_string("")
    request = struct.pack(">hhi", 8, 2, 1) + _kafka_string("offsets-retention") + body
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", _read_exactly(sock, 4))[0]
        response = _read_exactly(sock, size)
    # correlation id, topics [name, partitions [partition, error]]: one topic, one partition
    name_length = struct.unpack_from(">h", response, 8)[0]
    return struct.unpack_from(">h", response, 8 + 2 + name_length + 4 + 4)[0]


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        data += chunk
    return data


@situation("explicit-retention", since=(2, 0))
def explicit_retention(d: Driver, name: str) -> Outcome:
    """A simple group's commits with their own retention (expireTimestamp in the value): 45 s,
    which expires before the 1-minute retention (and after the first snapshot: the situations
    driven after it take less), and 10 minutes, which outlives it."""
    topic = d.topic(f"{name}-t", 2)
    group = f"{name}-g"
    for partition, offset, retention_ms in ((0, 3, 45_000), (1, 4, 600_000)):
        deadline = time.monotonic() + 20
        while True:
            error = commit_with_retention(
                d.bootstrap, group, topic, partition, offset, retention_ms
            )
            if error == 0:
                break
            if error not in (14, 15, 16) or time.monotonic() > deadline:  # coordinator not ready
                raise RuntimeError(f"OffsetCommit v2 answered error {error}")
            time.sleep(0.2)
    return Outcome([group])


@situation("topic-recreated", min_major=4, keeps_members=True)
def topic_recreated(d: Driver, name: str) -> Outcome:
    """A topic deleted and re-created under its name: the offset committed before is deleted
    with the topic (the 4.x coordinator tombstones a deleted topic's offsets stored with its id
    or none, `onTopicsDeleted`), a commit while the topic is absent is refused, the offset a
    member commits after is stored with the new id; Kafka's Java consumer fetches it by that id
    (OffsetFetch v10, FETCH-OK). FETCH-TOPICID (an offset stored with another id) cannot be made
    by a client: the 4.4 broker resolves every committed topic against its current metadata
    (UNKNOWN_TOPIC_OR_PARTITION by name, checked here; UNKNOWN_TOPIC_ID by id, in KafkaApis)."""
    topic = d.topic(f"{name}-t", 1)
    old_id = d.topic_id(topic)
    group = f"{name}-g"
    consumer = d.consumer(group)
    d.commit(consumer, {(topic, 0): 3})
    d.admin.delete_topics([topic])[topic].result()
    time.sleep(1.0)  # the coordinator tombstones the offsets when the metadata update reaches it
    try:
        d.commit(consumer, {(topic, 0): 4})
        refused = None
    except KafkaException as exc:
        refused = exc.args[0].name()
    if refused != "UNKNOWN_TOPIC_OR_PART":
        raise RuntimeError(f"a commit for the deleted topic answered {refused}")
    request = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])]
    answer = d.admin.list_consumer_group_offsets(request)[group].result().topic_partitions[0]
    while_deleted = max(answer.offset, -1)  # librdkafka's "none" is -1001
    consumer.close()
    d.topic(topic, 1)
    new_id = d.topic_id(topic)
    # a member that stays: the offset does not expire while the slower situations run
    member = d.consumer(group, client_id=f"{name}-c")
    d.join([member], [topic])
    d.commit(member, {(topic, 0): 7})
    d.keep_alive(member)
    client = f"{name}-by-id"
    fetched = java_lines("TopicIdFetch.java", [d.bootstrap, group, client, f"{topic}:0"])
    fetches = [
        {**row, "group": group, "client": client, "topic_id": new_id}
        | {"old_topic_id": old_id, "offset_while_deleted": while_deleted}
        for row in fetched
    ]
    return Outcome([group], topic_id_fetches=fetches)


# ---- transactional offsets -------------------------------------------------------------------


def _txn_offsets(d: Driver, producer: Producer, group: str, offsets: dict) -> None:
    metadata_source = d.consumer(group)
    producer.begin_transaction()
    tps = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
    producer.send_offsets_to_transaction(tps, metadata_source.consumer_group_metadata(), 20)
    metadata_source.close()


@situation("txn-committed", since=(2, 0))
def txn_committed(d: Driver, name: str) -> Outcome:
    topic = d.topic(f"{name}-t", 2)
    group = f"{name}-g"
    producer = d.transactional(f"{name}-txn")
    _txn_offsets(d, producer, group, {(topic, 0): 12, (topic, 1): 13})
    producer.commit_transaction(20)
    return Outcome([group])


@situation("txn-aborted", since=(2, 0))
def txn_aborted(d: Driver, name: str) -> Outcome:
    topic = d.topic(f"{name}-t", 2)
    group = f"{name}-g"
    consumer = d.consumer(group)
    consumer.assign([TopicPartition(topic, 0)])
    d.commit(consumer, {(topic, 0): 2})
    consumer.close()
    producer = d.transactional(f"{name}-txn")
    _txn_offsets(d, producer, group, {(topic, 0): 20, (topic, 1): 21})
    producer.abort_transaction(20)
    return Outcome([group])


@situation("txn-pending", since=(2, 0))
def txn_pending(d: Driver, name: str) -> Outcome:
    """Offsets staged by a transaction left open: OffsetFetch(require_stable) says unstable."""
    topic = d.topic(f"{name}-t", 2)
    group = f"{name}-g"
    consumer = d.consumer(group)
    consumer.assign([TopicPartition(topic, 0)])
    d.commit(consumer, {(topic, 0): 2})
    consumer.close()
    producer = d.transactional(f"{name}-txn")
    _txn_offsets(d, producer, group, {(topic, 0): 30, (topic, 1): 31})
    return Outcome([group])


@situation("txn-plain-commit-before-marker", since=(2, 0))
def txn_commit_between(d: Driver, name: str) -> Outcome:
    """A plain commit lands between a transaction's offsets and its COMMIT marker."""
    topic = d.topic(f"{name}-t", 2)
    group = f"{name}-g"
    producer = d.transactional(f"{name}-txn")
    _txn_offsets(d, producer, group, {(topic, 0): 40, (topic, 1): 41})
    consumer = d.consumer(group)
    consumer.assign([TopicPartition(topic, 0)])
    d.commit(consumer, {(topic, 0): 50})
    consumer.close()
    producer.commit_transaction(20)
    return Outcome([group])


@situation("txn-offset-commit-v6", since=(4, 4), keeps_members=True)
def txn_offset_commit_v6(d: Driver, name: str) -> Outcome:
    """TxnOffsetCommit v6 (KIP-1319), which only Kafka's Java producer sends: a consumer-protocol
    member's offsets committed with its current epoch, then a stale epoch (STALE_MEMBER_EPOCH,
    v0-v5: ILLEGAL_GENERATION) and an absent group (GROUP_ID_NOT_FOUND, v0-v5:
    ILLEGAL_GENERATION), FEN-G3T and FEN-M5 / 8.4."""
    topic = d.topic(f"{name}-t", 2)
    group = f"{name}-g"
    commits = d.txn_offset_commits(group, topic, name)
    return Outcome([group], txn_commits=commits)


# ---- KIP-848 consumer groups (the new coordinator) -------------------------------------------


@situation("consumer-regex", min_major=4, keeps_members=True)
def consumer_regex(d: Driver, name: str) -> Outcome:
    topics = [d.topic(f"{name}-a", 2), d.topic(f"{name}-b", 1)]
    group = f"{name}-g"
    members = [d.consumer(group, "consumer", client_id=f"{name}-c{i}") for i in range(2)]
    d.join(members, [f"^{name}-.*"])
    deadline = time.monotonic() + JOIN_TIMEOUT_S
    while sum(len(m.assignment()) for m in members) < 3 and time.monotonic() < deadline:
        for m in members:
            m.poll(0.05)
    for consumer in members:
        d.commit(consumer, {(t.topic, t.partition): 6 for t in consumer.assignment()})
    d.keep_alive(*members)
    return Outcome([group], notes=[f"topics {topics}"])


@situation("consumer-emptied", min_major=4)
def consumer_emptied(d: Driver, name: str) -> Outcome:
    topic = d.topic(f"{name}-t", 2)
    group = f"{name}-g"
    consumer = d.consumer(group, "consumer", client_id=f"{name}-c")
    d.join([consumer], [topic])
    d.commit(consumer, {(topic, 0): 8, (topic, 1): 9})
    consumer.close()
    return Outcome([group])


@situation("consumer-static-member-stays", min_major=4, keeps_members=True)
def consumer_static(d: Driver, name: str) -> Outcome:
    topic = d.topic(f"{name}-t", 2)
    group = f"{name}-g"
    members = [
        d.consumer(group, "consumer", client_id=f"{name}-c{i}", group_instance_id=f"{name}-i{i}")
        for i in range(2)
    ]
    d.join(members, [topic])
    for consumer in members:
        d.commit(consumer, {(t.topic, t.partition): 4 for t in consumer.assignment()})
    d.keep_alive(*members)
    return Outcome([group])


@situation("classic-upgraded-to-consumer", min_major=4, keeps_members=True)
def classic_upgrade(d: Driver, name: str) -> Outcome:
    """An Empty classic group with offsets becomes a consumer group when a KIP-848 member joins."""
    topic = d.topic(f"{name}-t", 2)
    group = f"{name}-g"
    classic = d.consumer(group, client_id=f"{name}-classic")
    d.join([classic], [topic])
    d.commit(classic, {(topic, 0): 5, (topic, 1): 5})
    classic.close()
    modern = d.consumer(group, "consumer", client_id=f"{name}-modern")
    d.join([modern], [topic])
    d.commit(modern, {(topic, 0): 6})
    d.keep_alive(modern)
    return Outcome([group])


_TXN4_SCALA = (
    {},
    "offsets: the live Scala coordinator drops the pending transactional offset with the"
    " committed one (removeOffsets); its loader keeps it (semantics.md section 1.3)",
)


@situation(
    "txn-offset-delete-before-marker",
    late=True,
    documented_live={3: _TXN4_SCALA, 2: _TXN4_SCALA},
    since=(2, 4),  # OffsetDelete
    unread_marker_groups=("g",),
)
def txn_tombstone_between(d: Driver, name: str) -> Outcome:
    """An OffsetDelete tombstone lands between a transaction's offsets and its COMMIT marker.

    The live coordinators drop the pending offset with the committed one (TXN-4); the Scala
    loader does not, so after a restart a 3.x broker shows the transaction's offset
    (semantics.md section 1.3).
    """
    topic = d.topic(f"{name}-t", 1)
    group = f"{name}-g"
    consumer = d.consumer(group)
    consumer.assign([TopicPartition(topic, 0)])
    d.commit(consumer, {(topic, 0): 2})
    consumer.close()
    producer = d.transactional(f"{name}-txn")
    _txn_offsets(d, producer, group, {(topic, 0): 30})
    java_admin(d.bootstrap, "delete-offsets", [f"{group}/{topic}:0"])
    producer.commit_transaction(20)
    return Outcome([group])


# ---- groups of Kafka's Java clients: Streams (KIP-1071) and share groups (KIP-932) ------------


def _streams(d: Driver, name: str, keep: bool) -> Outcome:
    source, sink = d.topic(f"{name}-in", 2), d.topic(f"{name}-out", 2)
    d.produce(source, 2, 3)
    state_dir = tempfile.mkdtemp(prefix=f"{name}-")
    d.java_member("streams", d.bootstrap, f"{name}-app", source, sink, state_dir, keep=keep)
    return Outcome([f"{name}-app"])


@situation("streams-running", min_major=4, keeps_members=True)
def streams_running(d: Driver, name: str) -> Outcome:
    return _streams(d, name, keep=True)


@situation("streams-closed", min_major=4)
def streams_closed(d: Driver, name: str) -> Outcome:
    return _streams(d, name, keep=False)


@situation("share-group", min_major=4, keeps_members=True)
def share_group(d: Driver, name: str) -> Outcome:
    """A share group (KIP-932): records in __consumer_offsets, never offsets, never deleted."""
    topic = d.topic(f"{name}-t", 1)
    d.produce(topic, 1, 3)
    d.java_member("share", d.bootstrap, f"{name}-g", topic, keep=True)
    return Outcome([f"{name}-g"])
