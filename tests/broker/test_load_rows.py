"""The load rows against released brokers: which offsets partitions a real coordinator fails to
load (LOG-7), and the job's `load_failures` prediction for that release.

A log written as the coordinator never writes it cannot come from clients, so the records are
produced raw to ``__consumer_offsets`` by a producer whose ``client.id`` is ``__admin_client``
(Kafka lets it append to internal topics); the broker restarts and its coordinator replays
them. One broker per release, three offsets partitions, one group on each:

- ``log7-lower`` (partition 2): member b's assignment claims partition 1 of a topic that member
  a holds at a lower epoch (a's release compacted away): 4.1.1 fails the load, 4.4.0 overwrites;
- ``two-owners-equal`` (partition 1): the same claim at a's epoch: every 4.x fails the load;
- ``loads`` (partition 0): the same group written as the coordinator writes it: it loads.

Each group also has a committed offset: a partition that loaded answers it (OffsetFetch), one
that failed answers an error. Loads are not situations of the shared world (world.py): a
partition that fails to load would take the world's other groups on it along, so each release
here gets a short-lived broker of its own (started once, stopped after).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient

from offsets_lib import wire
from offsets_lib.audit.partition_claims import CLAIM_OVER_LOWER_EPOCH
from offsets_lib.cli import main as offsets_cli
from tests.broker import segments
from tests.broker.brokers import KafkaBroker
from tests.broker.recorder import Recorder
from tests.broker.situations import java_admin
from tests.reference.releases import refuses_lower_epoch_claims

RELEASES = ("4.1.1", "4.4.0")
SITUATION = "load-log7"
OFFSETS_PARTITIONS = 3
TOPIC_ID = uuid.UUID("3f1c9a2e-5b7d-4e10-9a3b-0c2d4e6f8a01")
# group -> (offsets partition, epoch of a, epoch of b's claim); names chosen by Kafka's
# partitioner (`java_hash`), "loads" beside the broker's readiness probe
GROUPS = {"loads": (0, 3, 3), "two-owners-equal": (1, 3, 3), "log7-lower": (2, 2, 3)}
CLEAN = "loads"
COMMITTED = 17


def release_of(version: str) -> tuple[int, int, int]:
    major, minor, patch = (int(x) for x in version.split("."))
    return major, minor, patch


def java_hash(group: str) -> int:
    """The group's offsets partition key: `Utils.abs(groupId.hashCode())`."""
    h = 0
    for c in group:
        h = (31 * h + ord(c)) & 0xFFFFFFFF
    signed = h - 2**32 if h >= 2**31 else h
    return 0 if signed == -(2**31) else abs(signed)


def _assignment(epoch: int, partitions: list[int]) -> dict:
    return {
        "MemberEpoch": epoch,
        "PreviousMemberEpoch": epoch - 1,
        "State": 0,
        "AssignedPartitions": [{"TopicId": TOPIC_ID, "Partitions": partitions}],
    }


def group_records(group: str, epoch_a: int, epoch_b: int) -> list[tuple[bytes, bytes | None]]:
    """A consumer group of members a and b; b's assignment takes partition 1 of a's, which a
    released first only in the clean group."""
    epoch = max(epoch_a, epoch_b)

    def record(kind: int, value: dict | None, **key: str) -> tuple[bytes, bytes | None]:
        encoded = None if value is None else wire.encode_value(kind, 0, value)
        return wire.encode_key(kind, {"GroupId": group, **key}), encoded

    member = {"ClientId": "c", "ClientHost": "/127.0.0.1", "SubscribedTopicNames": ["orders"],
              "RebalanceTimeoutMs": 300000, "ServerAssignor": "uniform"}  # fmt: skip
    records = [
        record(3, {"Epoch": epoch}),
        record(6, {"AssignmentEpoch": epoch}),
        record(5, member, MemberId="a"),
        record(5, member, MemberId="b"),
        record(8, _assignment(epoch_a, [0, 1]), MemberId="a"),
    ]
    if group == CLEAN:  # a gives partition 1 up before b claims it
        records.append(record(8, _assignment(epoch_a, [0]), MemberId="a"))
    records.append(record(8, _assignment(epoch_b, [1, 2]), MemberId="b"))
    commit = {"offset": COMMITTED, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 0}
    commit["commitTimestamp"] = int(time.time() * 1000)
    key = wire.encode_key(1, {"group": group, "topic": "orders", "partition": 0})
    records.append((key, wire.encode_value(1, 3, commit)))
    return records


def _offsets_topic_ready(bootstrap: str, partitions: int = OFFSETS_PARTITIONS) -> None:
    """FindCoordinator creates __consumer_offsets (asked by Kafka's Java Admin client: librdkafka
    2.16's group calls crashed with SIGSEGV on a 4.1.1 broker while the topic was being made);
    wait for every partition's leader."""
    java_admin(bootstrap, "offsets", [CLEAN])
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    deadline = time.monotonic() + 60
    while True:
        topic = admin.list_topics(timeout=5).topics.get("__consumer_offsets")
        leaders = topic.partitions.values() if topic and topic.error is None else []
        if len(leaders) == partitions and all(p.leader >= 0 for p in leaders):
            return
        if time.monotonic() > deadline:
            raise TimeoutError("__consumer_offsets was not created")
        time.sleep(0.5)


def write_raw(bootstrap: str, records: dict[int, list] | None = None) -> None:
    """Append records to offsets partitions (default: every group's of GROUPS to its own), as
    `__admin_client`."""
    if records is None:
        records = {}
        for group, (partition, epoch_a, epoch_b) in GROUPS.items():
            assert java_hash(group) % OFFSETS_PARTITIONS == partition, group
            records[partition] = group_records(group, epoch_a, epoch_b)
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "__admin_client",
                         "acks": "all", "linger.ms": 0})  # fmt: skip
    errors: list[str] = []
    for partition, written in records.items():
        for key, value in written:
            producer.produce(
                "__consumer_offsets", key=key, value=value, partition=partition,
                on_delivery=lambda err, _msg: errors.append(str(err)) if err else None,
            )  # fmt: skip
    assert producer.flush(30) == 0
    assert errors == [], errors


_FETCH = """
import sys
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient
admin = AdminClient({"bootstrap.servers": sys.argv[1], "log_level": 0})
request = ConsumerGroupTopicPartitions(sys.argv[2], [TopicPartition("orders", 0)])
answer = admin.list_consumer_group_offsets([request], request_timeout=10)[sys.argv[2]].result()
print(answer.topic_partitions[0].offset)
"""


def committed(bootstrap: str, group: str, failed: Callable[[], bool] = lambda: False) -> int | None:
    """The group's committed offset of orders-0 as the broker answers (OffsetFetch), or None
    once `failed()` says its partition failed to load or 120 s passed. A partition that failed
    has no coordinator and the client retries NOT_COORDINATOR (so each ask runs apart for at most
    20 s: librdkafka does not give up by itself); a loaded one may still answer late on a busy
    machine (CI's first ask after the restart took over 20 s), so asking repeats."""
    command = [sys.executable, "-c", _FETCH, bootstrap, group]
    deadline = time.monotonic() + 120
    while True:
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=20, check=False)
            if done.returncode == 0 and done.stdout.strip():
                return int(done.stdout.strip())
        except subprocess.TimeoutExpired:
            pass
        if failed() or time.monotonic() > deadline:
            return None
        time.sleep(1)


def failed_loads(log: str) -> dict[int, str]:
    """Offsets partition -> the coordinator's load failure line (the new coordinator's
    `CoordinatorRuntime` logs "Failed to load metadata from __consumer_offsets-N ...")."""
    out: dict[int, str] = {}
    for line in log.splitlines():
        if "Failed to load metadata from __consumer_offsets-" in line:
            partition = int(line.split("__consumer_offsets-")[1].split()[0])
            out[partition] = line
    return out


class _Reloading(KafkaBroker):
    """A broker whose restart waits for the offsets topic's leaders only: a partition that
    fails to load never answers the readiness probe's ListGroups."""

    def _wait_ready(self, deadline: float) -> None:
        admin = AdminClient(self.client_conf)
        while True:
            with contextlib.suppress(KafkaException):  # a 2.x broker before it registered
                topic = admin.list_topics(timeout=2.0).topics.get("__consumer_offsets")
                if topic is None or all(p.leader >= 0 for p in topic.partitions.values()):
                    return
            if time.monotonic() > deadline:
                raise TimeoutError("__consumer_offsets has a partition without a leader")
            time.sleep(0.2)


def job_failures(dump: Path, tables: Path, release: str) -> dict[int, list[dict]]:
    """The job's load_failures rows that fail the load on `release`, per offsets partition."""
    from deltalake import DeltaTable

    args = ["run", "--source", "parquet", "--input", str(dump), "--output", str(tables)]
    args += ["--run-id", "load", "--coordinator", "new"]
    result = CliRunner().invoke(offsets_cli, args)
    assert result.exit_code == 0, result.output
    rows = DeltaTable(str(tables / "load_failures")).to_pyarrow_table().to_pylist()
    refused = refuses_lower_epoch_claims(release_of(release))
    out: dict[int, list[dict]] = {p: [] for p in range(OFFSETS_PARTITIONS)}
    for r in rows:
        if r["failed_check"] != CLAIM_OVER_LOWER_EPOCH or refused:
            out[r["offsets_partition"]].append(r)
    return out


def observe(release: str, work: Path) -> dict:
    """Start `release`'s broker, write the groups raw, restart it, take its answers, stop it:
    {"failed": {partition: line}, "answers": {group: offset or None}}."""
    broker = _Reloading(
        release, work / "broker", settings={"offsets.topic.num.partitions": str(OFFSETS_PARTITIONS)}
    )
    broker.start()
    try:
        _offsets_topic_ready(broker.bootstrap)
        write_raw(broker.bootstrap)
        failed, answers = reloaded(broker, {g: partition for g, (partition, *_) in GROUPS.items()})
    finally:
        broker.stop()
    return {"failed": failed, "answers": answers}


def reloaded(broker: KafkaBroker, groups: dict[str, int]) -> tuple[dict[int, str], dict]:
    """Restart `broker` and take its answers: (the load failure line by offsets partition, each
    group's committed offset or None) for `groups` (group -> offsets partition). The clean
    group first: its partition loads beside the others. A group whose partition the log shows
    failed is not asked (it would not answer)."""
    out = broker.work_dir / "broker.out"
    before = len(out.read_bytes())
    broker.restart()

    def failures() -> dict[int, str]:
        return failed_loads(out.read_bytes()[before:].decode(errors="replace"))

    answers = {}
    for group in sorted(groups, key=lambda g: g != CLEAN):
        partition = groups[group]
        answers[group] = None if partition in failures() else committed(
            broker.bootstrap, group, lambda p=partition: p in failures()
        )  # fmt: skip
    return failures(), answers  # all the failures, once every group answered


_DONE: dict[str, dict] = {}


def observed_and_predicted(
    module: str, release: str, work: Path, predict: Callable[[Path, Path, str], dict]
) -> dict:
    """The broker's loads and answers, observed by `python -m module release work` in a process
    of its own (librdkafka's clients of a broker that restarts crashed the test process with
    SIGSEGV when they lived in it), beside `predict`'s failures from the broker's own segments."""
    command = [sys.executable, "-m", module, release, str(work)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads((work / "observed.json").read_text())
    failed = {int(p): line for p, line in seen["failed"].items()}
    segments.write_dump(work / "broker" / "data", work / "dump")
    predicted = predict(work / "dump", work / "tables", release)
    return {"failed": failed, "answers": seen["answers"], "predicted": predicted}


@pytest.fixture(scope="module")
def loads(tmp_path_factory) -> Iterator[Callable[[str], dict]]:
    """Per release, once: the broker's loads and answers beside the job's prediction."""

    def load(release: str) -> dict:
        if release not in _DONE:
            work = tmp_path_factory.mktemp(f"load-{release}")
            _DONE[release] = observed_and_predicted(
                "tests.broker.test_load_rows", release, work, job_failures
            )
        return _DONE[release]

    yield load


@pytest.mark.broker
@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("release", RELEASES)
def test_two_owners_fail_the_load_as_the_release_does(
    loads, broker_recorder: Recorder, release: str
) -> None:
    seen = loads(release)
    failed, answers, predicted = seen["failed"], seen["answers"], seen["predicted"]
    for group, (partition, _, _) in GROUPS.items():
        broker_loads = partition not in failed and answers[group] is not None
        broker_recorder.compare(
            release, SITUATION, "reload", f"{group} offsets partition {partition} loads",
            broker_loads, not predicted[partition],
        )  # fmt: skip
        broker_recorder.compare(
            release, SITUATION, "reload", f"{group} orders/0 committed_offset",
            answers[group], COMMITTED if not predicted[partition] else None,
        )  # fmt: skip
        for row in predicted[partition]:  # the claim the job names is the one the broker refused
            assert (
                f"ConsumerGroupCurrentMemberAssignmentKey(groupId='{group}', memberId='b')"
                in (failed[partition])
            )
            assert row["member_id"] == "b"
    bad = broker_recorder.disagreements(release, SITUATION)
    assert not bad, "\n".join(
        [f"{c.what}: broker={c.broker!r} job={c.job!r}" for c in bad]
        + [f"the broker's load failures: {failed}"]
    )
    refusing = {GROUPS["two-owners-equal"][0]}
    if refuses_lower_epoch_claims(release_of(release)):
        refusing.add(GROUPS["log7-lower"][0])
    assert set(failed) == refusing


def main(argv: list[str]) -> int:
    release, work = argv
    observed = observe(release, Path(work))
    (Path(work) / "observed.json").write_text(json.dumps(observed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
