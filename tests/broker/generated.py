"""The differential check: generated logs (tests/broker/random_logs.py) loaded by a real broker.

One broker per version, its own (several offsets partitions, the default 7-day retention,
cleanup every second): topics are created, the generated records are produced raw to
``__consumer_offsets`` (a producer whose client.id is ``__admin_client`` may append to internal
topics, KafkaApis ``internalTopicsAllowed``; transactions through a transactional producer of
the same client id, their markers written by the broker), the broker restarts and its
coordinator loads them. The log segments are dumped and audited with ``offsets run`` as of the
moment the broker's answers are taken; every group's offsets, state, type and members are
compared (world.py's views), and each offsets partition's load success with the run's
``load_failures``.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from offsets_lib.audit.partition_claims import CLAIM_OVER_LOWER_EPOCH, rule_of
from offsets_lib.cli import main as offsets_cli
from offsets_lib.tools.generate.model import partition_for
from tests.broker import segments
from tests.broker.brokers import KafkaBroker
from tests.broker.eras import coordinator_for, version_tuple
from tests.broker.random_logs import RETENTION_MS, GeneratedLog, generate
from tests.broker.recorder import Recorder
from tests.broker.situations import java_admin
from tests.broker.world import (
    JobRun,
    _end_offsets,
    _rows,
    _topic_names,
    broker_view,
    compare_views,
    job_view,
    tombstones_after,
)
from tests.reference.releases import refuses_lower_epoch_claims, refuses_reader_limits

SITUATION = "generated"
PHASE = "load"
PARTITIONS = 3  # offsets partitions of a Scala coordinator's era
# the new coordinator's: three clean, one per damage (random_logs.BREAKS); not 3, where the
# broker's readiness probe group lives (brokers.py)
PARTITIONS_4X = 8
BREAKS_4X = {1: "log6", 2: "log7-equal", 4: "dec-limit", 5: "log7-lower", 6: "type-clash"}
CLEANUP_INTERVAL_MS = 1000
# groups per era: `make test` checks a few hundred, `make verify-broker` sets more
DEFAULT_GROUPS = 150
TOPICS = {"gen-orders": 4, "gen-payments": 3, "gen-audit": 2, "gen-clicks": 6}
SETTINGS = {
    "offsets.topic.num.partitions": str(PARTITIONS),
    "offsets.retention.minutes": str(RETENTION_MS // 60_000),
    "offsets.retention.check.interval.ms": str(CLEANUP_INTERVAL_MS),
    "group.max.session.timeout.ms": "3600000",
    "transaction.max.timeout.ms": "3600000",
    # 4.x: consumer-group members loaded from the log are not fenced while the check runs
    "group.consumer.session.timeout.ms": "1800000",
    "group.consumer.max.session.timeout.ms": "1800000",
    "group.share.session.timeout.ms": "1800000",
    "group.share.max.session.timeout.ms": "1800000",
    "group.streams.session.timeout.ms": "1800000",
    "group.streams.max.session.timeout.ms": "1800000",
}
MAX_TRANSACTIONS_4X = 100


def partitions_for(version: str) -> int:
    return PARTITIONS_4X if version_tuple(version) >= (4, 0) else PARTITIONS


def fails_load(row: dict, version: str) -> bool:
    """A load_failures row fails `version`'s load: LOG-6 on every 4.x, LOG-7's lower-epoch
    claim and DEC-LIMIT's counts only on the releases that refuse them."""
    release = tuple(int(x) for x in version.split(".")[:3])
    rule = rule_of(row["failed_check"])
    if row["failed_check"] == CLAIM_OVER_LOWER_EPOCH:
        return refuses_lower_epoch_claims(release)
    return refuses_reader_limits(release) if rule == "DEC-LIMIT" else True


def group_count() -> int:
    return int(os.environ.get("BROKER_GENERATED_GROUPS", DEFAULT_GROUPS))


@dataclass
class GeneratedRun:
    version: str
    log: GeneratedLog
    failed: set[int]  # offsets partitions the broker did not load
    predicted: set[int]  # offsets partitions in the run's load_failures
    timings: dict[str, float]


def _create_topics(admin: AdminClient) -> dict[str, tuple[int, uuid.UUID | None]]:
    futures = admin.create_topics([NewTopic(t, n, 1) for t, n in TOPICS.items()])
    for future in futures.values():
        future.result()
    ids = {name: tid for tid, name in _topic_names(admin).items()}
    return {t: (n, uuid.UUID(ids[t]) if t in ids else None) for t, n in TOPICS.items()}


def _offsets_topic(bootstrap: str, admin: AdminClient, count: int) -> None:
    """Create ``__consumer_offsets`` as a client does (FindCoordinator) and wait for its leaders."""
    java_admin(bootstrap, "describe", list(_probe_names(count).values()))
    deadline = time.monotonic() + 60
    while True:
        topic = admin.list_topics(timeout=5).topics.get("__consumer_offsets")
        partitions = {} if topic is None else topic.partitions
        if len(partitions) == count and all(p.leader >= 0 for p in partitions.values()):
            return
        if time.monotonic() > deadline:
            raise TimeoutError("__consumer_offsets has no leader")
        time.sleep(0.2)


def _producer(bootstrap: str, **conf: object) -> Producer:
    settings = {
        "bootstrap.servers": bootstrap,
        "client.id": "__admin_client",
        "linger.ms": 5,
        "enable.idempotence": "transactional.id" in conf,
        "max.in.flight.requests.per.connection": 1,
        "compression.type": "none",
        "log_level": 0,
    }
    if "transactional.id" in conf:  # an open transaction stays open until the check is done
        settings["transaction.timeout.ms"] = 3_000_000
    return Producer({**settings, **conf})


def produce(bootstrap: str, log: GeneratedLog, seed: int) -> list[Producer]:
    """The steps in order; returns the producers whose transactions stay open (keep them
    referenced until the check is done)."""
    plain = _producer(bootstrap)
    txn = None
    fresh = refused = 0
    opened: list[Producer] = []
    errors: list[str] = []

    def delivered(err, _msg) -> None:
        if err is not None:
            errors.append(str(err))

    for step in log.steps:
        if step.txn is None:
            for key, value in step.records:
                plain.produce(
                    "__consumer_offsets",
                    value,
                    key,
                    partition=step.partition,
                    on_delivery=delivered,
                )
                plain.poll(0)
            continue
        plain.flush(30)
        if step.txn == "open":
            producer = _producer(
                bootstrap, **{"transactional.id": f"gen-{seed}-open-{len(opened)}"}
            )
            producer.init_transactions(30)
            opened.append(producer)
            with contextlib.suppress(KafkaException):  # refused: the log shows what was written
                _txn_offsets(bootstrap, producer, step)
            continue
        try:
            if txn is None:  # a new id: a fenced one would wait for its old transaction's end
                fresh += 1
                txn = _producer(bootstrap, **{"transactional.id": f"gen-{seed}-txn-{fresh}"})
                txn.init_transactions(60)
            _txn_offsets(bootstrap, txn, step)
            if step.txn == "commit":
                txn.commit_transaction(30)
            else:
                txn.abort_transaction(30)
        except KafkaException:
            # a TxnOffsetCommit the coordinator refuses: the log shows the outcome
            refused += 1
            with contextlib.suppress(KafkaException):
                txn.abort_transaction(30)
            txn = None
    plain.flush(30)
    assert not errors, errors[:5]
    if refused:
        print(f"{refused} transactions refused by the coordinator")
    return opened


def _txn_offsets(bootstrap: str, producer: Producer, step) -> None:
    """A transaction's TxnOffsetCommit for `step.group` (generation -1: a simple commit)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": step.group, "log_level": 0})
    try:
        producer.begin_transaction()
        offsets = [TopicPartition(t, p, o, metadata=m) for t, p, o, m in step.offsets]
        producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 30)
    finally:
        consumer.close()


def _probe_names(partitions: int) -> dict[int, str]:
    """A group id per offsets partition that no generated group uses."""
    names: dict[int, str] = {}
    n = 0
    while len(names) < partitions:
        name = f"probe-{n}"
        names.setdefault(partition_for(name, partitions), name)
        n += 1
    return names


def failed_partitions(admin: AdminClient, partitions: int) -> set[int]:
    """Offsets partitions whose coordinator does not answer DescribeGroups (a group of its own
    in each) within 10 s: a loaded one answers at once (Dead, or GROUP_ID_NOT_FOUND)."""
    probes = _probe_names(partitions)
    failed = set()
    asked = admin.describe_consumer_groups(list(probes.values()), request_timeout=10)
    for partition, name in probes.items():
        try:
            asked[name].result()
        except KafkaException as exc:
            if exc.args[0].name() != "GROUP_ID_NOT_FOUND":
                failed.add(partition)
    return failed


def _log_ends(consumer: Consumer, partitions: int) -> list[int]:
    """Each offsets partition's log-end offset."""
    return [
        consumer.get_watermark_offsets(TopicPartition("__consumer_offsets", p), 10)[1]
        for p in range(partitions)
    ]


def _first_cleanup_done(
    consumer: Consumer, partitions: int, loaded_ends: dict[int, int], quiet_s: float = 3.0
) -> None:
    """Wait until the first cleanup pass after the load has written its tombstones: some
    append past the loaded log's end (`loaded_ends`), then none for `quiet_s` (three cleanup
    intervals). Quiet alone is not enough: 2.0.1's first pass began 3 s after its load ended and
    took 10 s at 5,000 groups, and a view taken in it listed 14 groups it then removed. A log
    with nothing to expire appends nothing: after 60 s the wait ends anyway."""
    loaded = [loaded_ends.get(p, 0) for p in range(partitions)]
    ends, since, started = None, time.monotonic(), time.monotonic()
    while time.monotonic() - started < 300:
        now = _log_ends(consumer, partitions)
        if now != ends:
            ends, since = now, time.monotonic()
        cleaned = now != loaded or time.monotonic() - started > 60
        if cleaned and time.monotonic() - since >= quiet_s:
            return
        time.sleep(0.5)


def _quiet_view(
    bootstrap: str, partitions: int, loaded_ends: dict[int, int], take_view, attempts: int = 3
):
    """`take_view()` after the first cleanup pass, taken again when the log grew while it ran
    (a later pass was writing tombstones: the view may hold groups that pass then removed)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe-0", "log_level": 0})
    try:
        for _ in range(attempts):
            _first_cleanup_done(consumer, partitions, loaded_ends)
            before = _log_ends(consumer, partitions)
            as_of_ms = int(time.time() * 1000)
            view = take_view()
            if _log_ends(consumer, partitions) == before:
                break
        return as_of_ms, view
    finally:
        consumer.close()


def _compare_cleanup(
    recorder: Recorder,
    version: str,
    run: JobRun,
    loaded: set[str],
    offset_stones: dict,
    group_stones: set[str],
) -> None:
    """The offset and group tombstones the broker's cleanup wrote after the load are the
    run's expired offsets and deleted groups (every deadline is at least `MARGIN_MS` before
    the load or after the check, so each was decided at the first cleanup pass)."""
    decided = {(d["group_id"], d["topic"], d["partition"]): d for d in run.offset_decisions}
    for key in sorted(set(decided) | set(offset_stones)):
        if key[0] in loaded:
            what = f"{key[0]} {key[1]}/{key[2]} expired (tombstone written)"
            expired = key in decided and bool(decided[key]["expired"])
            recorder.compare(version, SITUATION, "expiry", what, key in offset_stones, expired)
    for group in sorted((set(run.group_decisions) | group_stones) & loaded):
        deleted = bool((run.group_decisions.get(group) or {}).get("deleted"))
        what = f"{group} deleted (tombstone written)"
        recorder.compare(version, SITUATION, "expiry", what, group in group_stones, deleted)


def run_job(dump: Path, tables: Path, as_of_ms: int, coordinator: str) -> None:
    args = ["run", "--source", "parquet", "--input", str(dump), "--output", str(tables)]
    args += ["--run-id", SITUATION, "--retention", f"{RETENTION_MS // 60_000}m"]
    args += ["--as-of", str(as_of_ms), "--coordinator", coordinator]
    # the records of types the era skips that the reader cannot decode (random_logs) are
    # rejected, up to about 1% of a log
    args += ["--max-reject-ratio", "0.05"]
    result = CliRunner().invoke(offsets_cli, args)
    assert result.exit_code == 0, result.output


def check_version(version: str, work: Path, recorder: Recorder, groups: int, seed: int = 1):
    """Generate, produce, reload, audit and compare on a broker of `version`."""
    timings: dict[str, float] = {}
    started = time.monotonic()
    count = partitions_for(version)
    settings = {**SETTINGS, "offsets.topic.num.partitions": str(count)}
    broker = KafkaBroker(version, work / "broker", settings)
    coordinator = coordinator_for(version)
    opened: list[Producer] = []
    try:
        broker.start()
        admin = AdminClient(broker.client_conf)
        topics = _create_topics(admin)
        _offsets_topic(broker.bootstrap, admin, count)
        now_ms = int(time.time() * 1000)
        # a 4.x coordinator whose partition was appended to behind its back reloads it and
        # fails writes meanwhile: its transactions come first, and fewer
        new = version_tuple(version) >= (4, 0)
        most = MAX_TRANSACTIONS_4X if new else None
        log = generate(seed, groups, version, count, topics, now_ms, BREAKS_4X, most, new)
        timings["start+generate"] = time.monotonic() - started
        opened = produce(broker.bootstrap, log, seed)
        timings["produce"] = time.monotonic() - started
        time.sleep(1.0)
        broker.stop()
        ends = _end_offsets(segments.write_dump(broker.log_dir, work / "dump"))
        broker.start()
        time.sleep(3 * CLEANUP_INTERVAL_MS / 1000)
        timings["reload"] = time.monotonic() - started
        fresh = AdminClient(broker.client_conf)
        failed = failed_partitions(fresh, count)
        names = _topic_names(fresh)
        loaded = [g for g in log.groups if partition_for(g, count) not in failed]
        as_of_ms, seen = _quiet_view(
            broker.bootstrap, count, ends, lambda: broker_view(fresh, loaded, broker.bootstrap)
        )
        timings["broker view"] = time.monotonic() - started
        # the teardown aborts the open transactions, and the cleanup may then delete their
        # groups (found on 2.3.1): tombstones are counted up to here
        checked_ms = int(time.time() * 1000)
    finally:
        for producer in opened:
            with contextlib.suppress(Exception):
                producer.abort_transaction(1)
        broker.stop()
        broker.kill()
    # what the broker's cleanup wrote after the load
    stones = tombstones_after(segments.read_log_dir(broker.log_dir), ends, checked_ms)
    tables = work / "tables"
    run_job(work / "dump", tables, as_of_ms, coordinator)
    timings["audit"] = time.monotonic() - started
    failures = _rows(tables, "load_failures", SITUATION)
    predicted = {r["offsets_partition"] for r in failures if fails_load(r, version)}
    run = JobRun(
        tables,
        SITUATION,
        {r["group_id"]: r for r in _rows(tables, "groups", SITUATION)},
        _rows(tables, "members", SITUATION),
        _rows(tables, "offsets", SITUATION),
        _rows(tables, "offset_decisions", SITUATION),
        {r["group_id"]: r for r in _rows(tables, "group_decisions", SITUATION)},
        _rows(tables, "unread_marker_offsets", SITUATION),
    )
    mine = job_view(run, loaded, names)
    compare_views(recorder, version, SITUATION, PHASE, seen, mine)
    _compare_cleanup(recorder, version, run, set(loaded), *stones)
    for p in range(count):
        recorder.compare(
            version,
            SITUATION,
            PHASE,
            f"offsets partition {p} loads",
            p not in failed,
            p not in predicted,
        )
    recorder.generated[version] = {
        "groups": len(log.groups),
        "logs": count,
        "records": log.records,
        "failed": len(failed),
        "predicted": len(predicted),
    }
    timings["total"] = time.monotonic() - started
    return GeneratedRun(version, log, failed, predicted, timings)
