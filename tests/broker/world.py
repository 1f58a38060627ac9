"""One broker's world: drive every situation, snapshot the broker, audit its log, compare.

Phases (one broker start, one retention wait per version):

1. *live*: every situation runs; the broker's answers (ListGroups, DescribeGroups,
   OffsetFetch with and without require_stable) are taken, its log segments dumped and audited
   with ``offsets run --as-of <now>``; the two views are compared per group, and the answers
   to Kafka's Java clients (TxnOffsetCommit v6, OffsetFetch by topic id, their versions from
   the 4.x broker's request log) with ``offsets fence-check`` and ``offsets fetch --topic-id``
   on the live run's tables. *live (kafka)*:
   the same with ``--source kafka`` on the live topic (groups an open transaction holds back
   and the OffsetDeletes' groups left out).
2. *offset-delete*: the job's ``delete_error`` of each requested partition (sent right after
   the dump) is compared with the error code of the real OffsetDelete.
3. *expiry*: the log is dumped again and audited ``--as-of T`` (T after the 1-minute retention);
   the broker's cleanup passes T; the offset and group tombstones it wrote must be exactly the
   predicted ones, each written within one cleanup interval after the predicted ``expires_at``.
4. *reload*: the broker restarts on the same log dir; its answers are compared with an audit of
   the final log, and (*reload (kafka)*) with the next incremental ``--source kafka`` run.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import struct
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
from confluent_kafka.admin import AdminClient

from offsets_lib.cli import main as offsets_cli
from offsets_lib.job.options import parse_retention
from tests.broker import segments
from tests.broker.brokers import KafkaBroker
from tests.broker.eras import (
    coordinator_for,
    describes_instance_ids,
    has_require_stable,
    lists_group_types,
)
from tests.broker.recorder import Recorder
from tests.broker.situations import SITUATIONS, Driver, Outcome, Situation, java_admin

RETENTION = "1m"
RETENTION_MS = parse_retention(RETENTION)
CLEANUP_INTERVAL_MS = 500
EXPIRY_SLACK_MS = 1500  # a cleanup pass that starts late still writes within this
# Record types whose tombstone deletes a group: classic, consumer, share, streams metadata
# (records.md section 2).
GROUP_METADATA_KEY_TYPES = (2, 3, 11, 17)


# ---- the two views of a group ------------------------------------------------------------


@dataclass
class GroupView:
    listed: bool = False
    state: str | None = None
    group_type: str | None = None
    simple: bool | None = None
    protocol: str | None = None
    members: list[tuple] = field(default_factory=list)
    offsets: dict[tuple[str, int], tuple] = field(default_factory=dict)
    unstable: bool = False
    exact_state: str | None = None  # Kafka's Java Admin client
    epochs: tuple | None = None  # consumer groups: (group epoch, target assignment epoch)
    member_epochs: dict[str, int] | None = None
    modern_only: bool = False  # a streams or share group: members compared by id only
    # the job's unread_marker_offsets (TXN-MARKER-UNREAD): the group's existence (a row with
    # is_group_in_doubt) and these offsets, listed: reported unknown, not compared
    uncertain: bool = False
    uncertain_offsets: set[tuple[str, int]] = field(default_factory=set)


_STATES = {
    "EMPTY": "Empty",
    "STABLE": "Stable",
    "PREPARING_REBALANCE": "PreparingRebalance",
    "COMPLETING_REBALANCE": "CompletingRebalance",
    "DEAD": "Dead",
    "UNKNOWN": "Unknown",
}


def _state_name(state: Any) -> str:
    name = getattr(state, "name", str(state))
    return _STATES.get(name, name.title().replace("_", ""))


def broker_view(admin, groups: Iterable[str], bootstrap: str) -> dict[str, GroupView]:
    groups = list(groups)
    views = {g: GroupView() for g in groups}
    # a new client asks ListGroups of the brokers it knows: none before its first metadata
    admin.list_topics(timeout=10)
    listing = admin.list_consumer_groups(request_timeout=10).result()
    assert not listing.errors, listing.errors
    for item in listing.valid:
        if item.group_id in views:
            views[item.group_id].listed = True
            views[item.group_id].group_type = item.type.name.lower()
    for exact in _java_admin_chunks(bootstrap, "describe", groups):
        view = views[exact["group"]]
        if exact.get("error"):
            view.exact_state = "Dead" if exact["error"] == "GROUP_ID_NOT_FOUND" else exact["error"]
            continue
        view.exact_state = exact["state"]
        if exact["type"] != "Classic":
            view.epochs = (exact["group_epoch"], exact["target_assignment_epoch"])
            view.member_epochs = {m["member_id"]: m["member_epoch"] for m in exact["members"]}
        if exact["type"] in ("Streams", "Share"):  # librdkafka knows neither: Java's view only
            view.listed, view.group_type = True, exact["type"].lower()
            view.state = _librdkafka_state(exact["state"])
            view.members = sorted((m["member_id"],) for m in exact["members"])
            view.modern_only = True
    for row in _java_admin_chunks(bootstrap, "offsets", groups):
        if row.get("error") is None:  # a share group has no offsets to fetch
            key = (row["topic"], row["partition"])
            offset = (row["offset"], row["leader_epoch"], row["metadata"])
            views[row["group"]].offsets[key] = offset
    classic = [g for g in groups if not views[g].modern_only]
    all_described = _describe_all(admin, classic)
    for group in classic:
        view = views[group]
        described = all_described[group]
        if described is None:
            view.state = "Dead"
            continue
        view.state = _state_name(described.state)
        view.simple = described.is_simple_consumer_group
        view.protocol = described.partition_assignor or None
        view.members = sorted(
            (
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.host,
                sorted((tp.topic, tp.partition) for tp in (m.assignment.topic_partitions or [])),
            )
            for m in described.members
        )
    # every group's OffsetFetch(require_stable) in flight at once, then their answers
    asked = {
        group: admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], require_stable=True, request_timeout=30
        )[group]
        for group in groups
    }
    for group, future in asked.items():
        try:
            stable = future.result()
            views[group].unstable = any(tp.error is not None for tp in stable.topic_partitions)
        except KafkaException as exc:
            views[group].unstable = "UNSTABLE" in str(exc)
    return views


JAVA_ADMIN_CHUNK = 300  # groups per run of KafkaAdmin.java (one request per group, 2 min limit)


def _java_admin_chunks(bootstrap: str, command: str, groups: list[str]) -> list[dict]:
    """KafkaAdmin.java's answers for `groups`, asked in chunks (thousands of generated groups)."""
    return [
        line
        for at in range(0, len(groups), JAVA_ADMIN_CHUNK)
        for line in java_admin(bootstrap, command, groups[at : at + JAVA_ADMIN_CHUNK])
    ]


# groups per DescribeGroups call: 3.9.1 under load did not answer 5,000 in one within 30 s
DESCRIBE_CHUNK = 500


def _describe_all(admin, groups: list[str]) -> dict:
    """DescribeGroups of every group, `DESCRIBE_CHUNK` per call (the client batches them per
    coordinator); a group answered with another error than GROUP_ID_NOT_FOUND is asked again
    alone (`_describe`: retried while the coordinator loads). None = GROUP_ID_NOT_FOUND."""
    out = {}
    for at in range(0, len(groups), DESCRIBE_CHUNK):
        chunk = groups[at : at + DESCRIBE_CHUNK]
        for group, future in admin.describe_consumer_groups(chunk, request_timeout=60).items():
            try:
                out[group] = future.result()
            except KafkaException as exc:
                if exc.args[0].name() == "GROUP_ID_NOT_FOUND":
                    out[group] = None
                else:
                    out[group] = _describe(admin, group)
    return out


def _describe(admin, group: str):
    """DescribeGroups, retried while the coordinator loads or is slow to answer; None =
    GROUP_ID_NOT_FOUND. A client-side timeout is retried too: 3.9.1's first cleanup pass over
    5,000 generated groups held a describe past a 10 s timeout."""
    deadline = time.monotonic() + 120
    while True:
        try:
            return admin.describe_consumer_groups([group], request_timeout=60)[group].result()
        except KafkaException as exc:
            error = exc.args[0]
            if error.name() == "GROUP_ID_NOT_FOUND":
                return None
            again = error.retriable() or "LOAD" in error.name() or error.name() == "_TIMED_OUT"
            if not again or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _rows(tables: Path, name: str, run_id: str) -> list[dict]:
    from deltalake import DeltaTable

    table = DeltaTable(str(tables / name)).to_pyarrow_table(filters=[("run_id", "=", run_id)])
    return table.to_pylist()


@dataclass
class JobRun:
    tables: Path
    run_id: str
    groups: dict[str, dict]
    members: list[dict]
    offsets: list[dict]
    offset_decisions: list[dict]
    group_decisions: dict[str, dict]
    # what a read without transaction markers cannot decide (TXN-MARKER-UNREAD)
    unread_marker_offsets: list[dict]


def run_job(
    spark, dump: Path, tables: Path, run_id: str, as_of_ms: int, coordinator: str
) -> JobRun:
    del spark  # the session fixture is what the CLI's session builder reuses
    args = ["run", "--source", "parquet", "--input", str(dump), "--output", str(tables)]
    args += ["--run-id", run_id, "--retention", RETENTION, "--as-of", str(as_of_ms)]
    args += ["--coordinator", coordinator]
    result = CliRunner().invoke(offsets_cli, args)
    assert result.exit_code == 0, result.output
    return JobRun(
        tables,
        run_id,
        {r["group_id"]: r for r in _rows(tables, "groups", run_id)},
        _rows(tables, "members", run_id),
        _rows(tables, "offsets", run_id),
        _rows(tables, "offset_decisions", run_id),
        {r["group_id"]: r for r in _rows(tables, "group_decisions", run_id)},
        _rows(tables, "unread_marker_offsets", run_id),
    )


def run_kafka_job(
    bootstrap: str, tables: Path, run_id: str, as_of_ms: int, coordinator: str
) -> tuple[JobRun, dict[int, int]]:
    """The job as a user runs it on the live topic: `--source kafka` reads the broker's own
    (internal) __consumer_offsets through Spark's connector, incrementally after the first run.
    Returns the run's tables and the records it said open transactions held back."""
    args = ["run", "--source", "kafka", "--bootstrap-servers", bootstrap]
    args += ["--output", str(tables), "--run-id", run_id, "--retention", RETENTION]
    args += ["--as-of", str(as_of_ms), "--coordinator", coordinator]
    result = CliRunner().invoke(offsets_cli, args)
    assert result.exit_code == 0, result.output
    held: dict[int, int] = {}
    for line in result.output.splitlines():
        if line.startswith("not read yet:"):
            spans = line.split("partitions", 1)[1].split(";", 1)[0]
            held = {int(p): int(n) for p, n in re.findall(r"(\d+) \((\d+)\)", spans)}
        if line.startswith("transaction markers not read:"):
            print(f"{run_id}: {line}")  # what the run could not place (a Scala coordinator)
    return JobRun(
        tables,
        run_id,
        {r["group_id"]: r for r in _rows(tables, "groups", run_id)},
        _rows(tables, "members", run_id),
        _rows(tables, "offsets", run_id),
        _rows(tables, "offset_decisions", run_id),
        {r["group_id"]: r for r in _rows(tables, "group_decisions", run_id)},
        _rows(tables, "unread_marker_offsets", run_id),
    ), held


def groups_after_open_transactions(dump) -> dict[str, int]:
    """Groups (-> their offsets partition) with a record at or after the first offset of a
    transaction still open in `dump`, Kafka's last stable offset: a read_committed reader
    sees none of them until the transaction ends."""
    rows = dump.select(
        ["partition", "offset", "key", "producer_id", "is_transactional", "is_control"]
    ).to_pylist()
    open_from: dict[tuple[int, int], int] = {}  # (partition, producer id) -> first offset
    for row in sorted(rows, key=lambda r: (r["partition"], r["offset"])):
        producer = (row["partition"], row["producer_id"])
        if row["is_control"]:
            open_from.pop(producer, None)
        elif row["is_transactional"]:
            open_from.setdefault(producer, row["offset"])
    stable_end: dict[int, int] = {}
    for (partition, _), offset in open_from.items():
        stable_end[partition] = min(stable_end.get(partition, offset), offset)
    return {
        _key_group(row["key"])[1]: row["partition"]
        for row in rows
        if not row["is_control"] and row["offset"] >= stable_end.get(row["partition"], 1 << 62)
    }


def compare_kafka_read(
    recorder: Recorder,
    version: str,
    phase: str,
    outcomes: dict[str, Outcome],
    seen: dict[str, GroupView],
    run: JobRun,
    held: dict[int, int],
    unread: dict[str, int],
    names: dict[str, str],
    changed: set[str] = frozenset(),
) -> None:
    """The `--source kafka` run against the broker: every group the run could read whole is
    compared as for the segment dump. A group with records after an open transaction's first
    one (`unread`, from the log the run read) is not compared, read_committed cannot show them
    yet; the run must report its offsets partition as held back. `changed`: groups written to
    after the broker's answers were taken (not compared)."""
    groups = {g for o in outcomes.values() for g in o.groups}
    mine = job_view(run, groups, names)
    for name, outcome in outcomes.items():
        readable = [g for g in outcome.groups if g not in unread and g not in changed]
        compare_views(
            recorder,
            version,
            name,
            phase,
            {g: seen[g] for g in readable},
            {g: mine[g] for g in readable},
        )
        for g in outcome.groups:
            if g in unread:
                recorder.compare(
                    version, name, phase, f"{g} reported held back", True, unread[g] in held
                )


def job_view(
    run: JobRun, groups: Iterable[str], topic_names: dict[str, str]
) -> dict[str, GroupView]:
    views: dict[str, GroupView] = {}
    for group in groups:
        row = run.groups.get(group)
        view = GroupView()
        decision = run.group_decisions.get(group) or {}
        expired = {
            (d["topic"], d["partition"])
            for d in run.offset_decisions
            if d["group_id"] == group and d["expired"]
        }
        unread = [u for u in run.unread_marker_offsets if u["group_id"] == group]
        view.uncertain = any(u["is_group_in_doubt"] for u in unread)
        view.uncertain_offsets = {(u["topic"], u["partition"]) for u in unread}
        # what the broker shows once its cleanup passed as_of: a deleted group, and under a
        # Scala coordinator a simple one (generation 0) that leaves the cache without a
        # tombstone (DEL-CLASSIC: not `deleted`, blocked only by GENERATION_0_NO_TOMBSTONE)
        if decision.get("deleted") or decision.get("blocked_by") == "GENERATION_0_NO_TOMBSTONE":
            row = None
        if row is not None:
            view.state = row["state"]
            view.listed = row["state"] != "Dead"
            view.group_type = row["group_type"] if view.listed else None
            view.simple = row["protocol_type"] is None or row["protocol_type"] == ""
            view.protocol = row["protocol"] if row["group_type"] == "classic" else None
            # OffsetFetch(require_stable) of all partitions answers UNSTABLE for the partitions
            # with a committed offset and a pending one: a partition whose only offset is
            # pending is not among them (the group's has_pending_transactions still says so)
            view.unstable = any(
                o["has_pending_transaction"]
                for o in run.offsets
                if o["group_id"] == group and (o["topic"], o["partition"]) not in expired
            )
            view.exact_state = row["state"]
            if row["group_type"] != "classic":
                view.epochs = (row["generation"], row["target_assignment_epoch"])
        else:
            view.state = view.exact_state = "Dead"
        members = [m for m in run.members if m["group_id"] == group and row is not None]
        view.members = sorted(
            (
                m["member_id"],
                m["group_instance_id"],
                m["client_id"],
                m["client_host"],
                sorted(
                    (p["topic"] or topic_names.get(p["topic_id"]), p["partition"])
                    for p in (m["assigned_partitions"] or [])
                ),
            )
            for m in members
        )
        if view.epochs is not None:
            view.member_epochs = {m["member_id"]: m["member_epoch"] for m in members}
        if row is not None and row["group_type"] in ("streams", "share"):
            view.members = sorted((m["member_id"],) for m in members)
        for o in run.offsets:
            if o["group_id"] == group and (o["topic"], o["partition"]) not in expired:
                key = (o["topic"], o["partition"])
                view.offsets[key] = (o["committed_offset"], o["leader_epoch"], o["metadata"])
        views[group] = view
    return views


def _librdkafka_state(state: str | None) -> str | None:
    """librdkafka (confluent-kafka 2.16) has no Assigning/Reconciling/NotReady: it says UNKNOWN."""
    return "Unknown" if state in ("Assigning", "Reconciling", "NotReady") else state


def compare_views(
    recorder: Recorder,
    version: str,
    situation: str,
    phase: str,
    broker: dict[str, GroupView],
    job: dict[str, GroupView],
) -> None:
    for group, seen in broker.items():
        mine = job[group]

        def check(what: str, b, j, group=group, unknown: bool = False) -> None:
            recorder.compare(
                version, situation, phase, f"{group} {what}", b, j, job_unknown=unknown
            )

        # the values the job flagged uncertain: whether the group exists (listed, state, type)
        # and the flagged offsets
        existence_unknown = mine.uncertain
        check("listed", seen.listed, mine.listed, unknown=existence_unknown)
        check(
            "state (librdkafka)",
            seen.state,
            _librdkafka_state(mine.state),
            unknown=existence_unknown,
        )
        check("state", seen.exact_state, mine.exact_state, unknown=existence_unknown)
        if seen.epochs is not None or mine.epochs is not None:
            check("group epoch, target assignment epoch", seen.epochs, mine.epochs)
            check("member epochs", seen.member_epochs, mine.member_epochs)
        if seen.listed:
            # a broker before 3.8 lists no type (librdkafka: unknown): all its groups are classic
            seen_type = seen.group_type if lists_group_types(version) else "classic"
            check("type", seen_type, mine.group_type, unknown=existence_unknown)
            if seen_type == "classic":
                check("protocol_type is null", seen.simple, mine.simple)
                if not seen.simple:
                    check("protocol", seen.protocol, mine.protocol)
            members = mine.members
            if not describes_instance_ids(version):  # the broker cannot show them
                members = [(m[0], None, *m[2:]) for m in members]
            check("members", seen.members, members)
        if has_require_stable(version):
            check("unstable (require_stable)", seen.unstable, mine.unstable)
        # an offset the job lists as undecided is reported unknown even where neither side
        # shows it (the tombstone's outcome, which the broker confirmed)
        for key in sorted(set(seen.offsets) | set(mine.offsets) | mine.uncertain_offsets):
            check(
                f"offset {key[0]}/{key[1]}",
                seen.offsets.get(key),
                mine.offsets.get(key),
                unknown=key in mine.uncertain_offsets,
            )


# ---- Kafka's Java clients: TxnOffsetCommit v6 and OffsetFetch by topic id ---------------------


def logged_requests(request_log: Path, api: str) -> list[dict]:
    """The broker's request log entries of one API (header, request, response)."""
    if not request_log.exists():
        return []
    entries = []
    for line in request_log.read_text().splitlines():
        if line.startswith("Completed request:"):
            entry = json.loads(line.split(":", 1)[1])
            if entry["requestHeader"]["requestApiKeyName"] == api:
                entries.append(entry)
    return entries


def request_versions(request_log: Path, api: str) -> dict[str, list[int]]:
    """client id -> the versions of `api` the broker's request log shows it sent."""
    sent: dict[str, list[int]] = {}
    for entry in logged_requests(request_log, api):
        header = entry["requestHeader"]
        sent.setdefault(header["clientId"], []).append(header["requestApiVersion"])
    return sent


def fence_check(tables: Path, run_id: str, commit: dict, api_version: int | None) -> str:
    """`offsets fence-check --transactional` of one TxnOffsetCommit partition: ACCEPTED or the
    error the deciding rule of the run's coordinator answers."""
    args = ["fence-check", "--output", str(tables), "--run-id", run_id, "--transactional"]
    args += ["--group", commit["group"], "--member", commit["member_id"]]
    args += ["--member-epoch", str(commit["member_epoch"]), "--topic", commit["topic"]]
    args += ["--partition", str(commit["partition"]), "--json"]
    if api_version is not None:
        args += ["--api-version", str(api_version)]
    result = CliRunner().invoke(offsets_cli, args)
    assert result.exit_code in (0, 6), result.output  # accepted or fenced: never undecided
    doc = json.loads(result.output)
    return doc[doc["decided_by"]]["outcome"]


def compare_txn_commits(
    recorder: Recorder,
    version: str,
    outcomes: dict[str, Outcome],
    run: JobRun,
    request_log: Path,
) -> None:
    """Each TxnOffsetCommit partition a situation's Java producer sent: the version the broker
    logged (what fence-check is asked about), and its answer against fence-check's, with the
    version given and by default (the newest the run's coordinator speaks)."""
    sent = request_versions(request_log, "TXN_OFFSET_COMMIT")
    for name, outcome in outcomes.items():
        for commit in outcome.txn_commits:
            what = f"{commit['group']} {commit['topic']}/{commit['partition']} ({commit['case']})"
            client = f"{name}-{commit['case']}"
            recorder.compare(
                version, name, "live", f"{client} TxnOffsetCommit versions", sent.get(client), [6]
            )
            answered = commit["error"] or "ACCEPTED"
            for api_version in (6, None):
                label = "default version" if api_version is None else f"v{api_version}"
                recorder.compare(
                    version,
                    name,
                    "live",
                    f"{what} fence-check ({label})",
                    answered,
                    fence_check(run.tables, run.run_id, commit, api_version),
                )


def fetch_by_topic_id(
    tables: Path, run_id: str, group: str, topic: str, partition: int, topic_id: str
) -> int:
    """`offsets fetch --topic-id`: the committed offset of one partition (-1: none)."""
    args = ["fetch", "--output", str(tables), "--run-id", run_id, "--json"]
    args += ["--group", f"{group}:{topic}:{partition}", "--topic-id", f"{topic}={topic_id}"]
    result = CliRunner().invoke(offsets_cli, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["groups"][0]["partitions"][0]["committed_offset"]


def _uuid(kafka_id: str) -> str:
    """Kafka's 22-character topic id in the UUID form of the tables."""
    return str(uuid.UUID(bytes=base64.urlsafe_b64decode(kafka_id + "==")))


def compare_topic_id_fetches(
    recorder: Recorder,
    version: str,
    outcomes: dict[str, Outcome],
    run: JobRun,
    request_log: Path,
) -> None:
    """Each OffsetFetch by topic id a situation's Java consumer sent: that the broker's request
    log shows it naming the topic by the current id (v10+), the offset it answered against
    `offsets fetch --topic-id` with that id, and the id stored with the job's offset against it;
    and the deleted topic's offset: none at the broker between the deletion and the re-creation,
    and -1 from `offsets fetch` by the deleted topic's id (FETCH-TOPICID)."""
    logged = logged_requests(request_log, "OFFSET_FETCH")
    for name, outcome in outcomes.items():
        for f in outcome.topic_id_fetches:
            what = f"{f['group']} {f['topic']}/{f['partition']}"
            named = sorted(
                {
                    topic.get("topicId")
                    for entry in logged
                    if entry["requestHeader"]["clientId"] == f["client"]
                    and entry["requestHeader"]["requestApiVersion"] >= 10
                    for group in entry["request"].get("groups", [])
                    for topic in group.get("topics") or []
                }
            )
            recorder.compare(
                version,
                name,
                "live",
                f"{f['client']} OffsetFetch v10+ topic ids",
                named,
                [f["topic_id"]],
            )
            answered = -1 if f["offset"] is None else f["offset"]
            fetched = fetch_by_topic_id(
                run.tables, run.run_id, f["group"], f["topic"], f["partition"], f["topic_id"]
            )
            recorder.compare(version, name, "live", f"{what} by topic id", answered, fetched)
            stored = [
                o["topic_id"]
                for o in run.offsets
                if (o["group_id"], o["topic"], o["partition"])
                == (f["group"], f["topic"], f["partition"])
            ]
            recorder.compare(
                version, name, "live", f"{what} stored topic id", [_uuid(f["topic_id"])], stored
            )
            old = fetch_by_topic_id(
                run.tables, run.run_id, f["group"], f["topic"], f["partition"], f["old_topic_id"]
            )
            recorder.compare(
                version,
                name,
                "live",
                f"{what} deleted topic's offset (broker: by name while deleted; job: by its id)",
                f["offset_while_deleted"],
                old,
            )


# ---- tombstones the broker wrote -------------------------------------------------------------


def _key_group(key: bytes) -> tuple[int, str]:
    version = struct.unpack_from(">h", key, 0)[0]
    length = struct.unpack_from(">h", key, 2)[0]
    return version, key[4 : 4 + length].decode()


def tombstones_after(table, after: dict[int, int], until_ms: int | None = None) -> tuple[dict, set]:
    """Offset tombstones {(group, topic, partition): ts_ms} and group tombstones written after
    the `after` offsets (and, given `until_ms`, written by then)."""
    offsets: dict[tuple[str, str, int], int] = {}
    groups: set[str] = set()
    for row in table.to_pylist():
        if row["is_control"] or row["value"] is not None:
            continue
        if row["offset"] < after.get(row["partition"], 0):
            continue
        version, group = _key_group(row["key"])
        ts_ms = int(row["timestamp"].timestamp() * 1000)
        if until_ms is not None and ts_ms > until_ms:
            continue
        if version in (0, 1):
            pos = 4 + len(group.encode())
            tlen = struct.unpack_from(">h", row["key"], pos)[0]
            topic = row["key"][pos + 2 : pos + 2 + tlen].decode()
            partition = struct.unpack_from(">i", row["key"], pos + 2 + tlen)[0]
            offsets[(group, topic, partition)] = ts_ms
        elif version in GROUP_METADATA_KEY_TYPES:
            groups.add(group)
    return offsets, groups


def _end_offsets(table) -> dict[int, int]:
    ends: dict[int, int] = {}
    for row in table.select(["partition", "offset"]).to_pylist():
        ends[row["partition"]] = max(ends.get(row["partition"], 0), row["offset"] + 1)
    return ends


def _ms(value: datetime | None) -> int | None:
    return None if value is None else int(value.timestamp() * 1000)


def now_ms() -> int:
    return int(time.time() * 1000)


# ---- the world -------------------------------------------------------------------------------


@dataclass
class World:
    version: str
    recorder: Recorder
    outcomes: dict[str, Outcome]
    errors: dict[str, str]
    timings: dict[str, float]
    # groups the broker could expire while the reload phases read (compared in neither)
    expiring_during_reload: set[str] = field(default_factory=set)


def _topic_names(admin) -> dict[str, str]:
    from confluent_kafka import TopicCollection

    names = [t for t in admin.list_topics(timeout=10).topics if not t.startswith("__")]
    if not names:
        return {}
    described = admin.describe_topics(TopicCollection(names))
    out = {}
    for name, future in described.items():
        with contextlib.suppress(KafkaException):
            topic_id = future.result().topic_id
            high, low = topic_id.get_most_significant_bits(), topic_id.get_least_significant_bits()
            out[str(uuid.UUID(int=((high % 2**64) << 64) | (low % 2**64)))] = name
    return out


def situations_for(version: str, *, late: bool) -> list[Situation]:
    chosen = [s for s in SITUATIONS if s.runs_on(version) and s.late == late]
    return sorted(chosen, key=lambda s: not s.keeps_members)  # stable: file order otherwise


def build_world(version: str, work: Path, spark, recorder: Recorder) -> World:
    broker = KafkaBroker(version, work / "broker")
    coordinator = coordinator_for(version)
    broker.start()
    driver = Driver(broker.bootstrap)
    outcomes: dict[str, Outcome] = {}
    errors: dict[str, str] = {}
    timings: dict[str, float] = {}
    expiring: set[str] = set()
    started = time.monotonic()
    try:
        for s in situations_for(version, late=False):
            began = time.monotonic()
            try:
                outcomes[s.name] = s.drive(driver, s.name)
            except Exception as exc:  # reported by that situation's test
                errors[s.name] = f"{type(exc).__name__}: {exc!r}"
            timings[s.name] = round(time.monotonic() - began, 1)
        timings["drive"] = time.monotonic() - started
        driven_ms = now_ms()
        time.sleep(1.0)
        groups = {g for o in outcomes.values() for g in o.groups}

        # 1. live: the broker's answers, then the log they come from, then the OffsetDeletes
        seen = broker_view(driver.admin, groups, broker.bootstrap)
        names = _topic_names(driver.admin)
        live_ms = now_ms()
        live = segments.write_dump(broker.log_dir, work / "dump-live")
        live_ends = _end_offsets(live)
        # The OffsetDeletes at once: the job's answers are those of the live log, and a simple
        # group's offsets expire one retention after their commit (the Spark runs below take
        # a good part of that).
        requests = [
            f"{g}/{t}:{p}" for o in outcomes.values() for g, ps in o.offset_deletes for t, p in ps
        ]
        deleted = {
            (r["group"], r["topic"], r["partition"]): r["error"]
            for r in java_admin(broker.bootstrap, "delete-offsets", requests)
        }
        # the live topic itself, read as users run the job; it reads the OffsetDeletes' records
        # too, so their groups are compared in the reload phases only
        kafka_tables = work / "tables-kafka"
        run, held = run_kafka_job(
            broker.bootstrap, kafka_tables, "live-kafka", live_ms, coordinator
        )
        compare_kafka_read(
            recorder,
            version,
            "live (kafka)",
            outcomes,
            seen,
            run,
            held,
            groups_after_open_transactions(live),
            names,
            {g for o in outcomes.values() for g, _ in o.offset_deletes},
        )
        run = run_job(spark, work / "dump-live", work / "tables", "live", live_ms, coordinator)
        compare_txn_commits(recorder, version, outcomes, run, broker.request_log)
        compare_topic_id_fetches(recorder, version, outcomes, run, broker.request_log)
        mine = job_view(run, groups, names)
        for name, outcome in outcomes.items():
            compare_views(
                recorder,
                version,
                name,
                "live",
                {g: seen[g] for g in outcome.groups},
                {g: mine[g] for g in outcome.groups},
            )

        # 2. offset-delete: the job's delete_error against the real error codes
        decisions = {(d["group_id"], d["topic"], d["partition"]): d for d in run.offset_decisions}
        removed: set[tuple[str, str, int]] = set()
        for name, outcome in outcomes.items():
            for group, partitions in outcome.offset_deletes:
                for topic, partition in partitions:
                    actual = deleted.get((group, topic, partition), "NO ANSWER")
                    decision = decisions.get((group, topic, partition))
                    predicted = _predicted_delete_error(run, group, decision, coordinator)
                    recorder.compare(
                        version,
                        name,
                        "offset-delete",
                        f"{group} {topic}/{partition} error",
                        actual,
                        predicted,
                    )
                    if actual is None:
                        removed.add((group, topic, partition))

        # 3. expiry: predicted on the live log at T, then read back after the broker passed T
        # T: one retention (1 minute) after the last commit, so every Empty group has expired
        as_of_ms = max(driven_ms + 62_000, now_ms() + 3_000)
        run = run_job(spark, work / "dump-live", work / "tables", "expiry", as_of_ms, coordinator)
        wait_s = (as_of_ms + 2 * CLEANUP_INTERVAL_MS + EXPIRY_SLACK_MS - now_ms()) / 1000
        time.sleep(max(wait_s, 0))
        after_ms = now_ms()
        after = segments.write_dump(broker.log_dir, work / "dump-after-expiry")
        offset_stones, group_stones = tombstones_after(after, live_ends)
        _compare_expiry(
            recorder, version, outcomes, run, offset_stones, group_stones, after_ms, removed
        )
        timings["expiry"] = time.monotonic() - started

        # 4. reload: the coordinator replays its log after a restart. The late situations run
        # now (their offsets must not have expired when the broker loads them back).
        late = Driver(broker.bootstrap)
        for s in situations_for(version, late=True):
            try:
                outcomes[s.name] = s.drive(late, s.name)
            except Exception as exc:
                errors[s.name] = f"{type(exc).__name__}: {exc!r}"
                continue
            if broker.major in s.documented_live:
                what, reason = s.documented_live[broker.major]
                mine = broker_view(late.admin, outcomes[s.name].groups, broker.bootstrap)
                for g in outcomes[s.name].groups:
                    recorder.compare(
                        version, s.name, "live", f"{g} {reason}", mine[g].offsets, what
                    )
        late.close()
        # the kept members leave last: their groups' retention (one minute) starts here, and
        # the reload's reads below should fall inside it
        driver.close()
        groups = {g for o in outcomes.values() for g in o.groups}
        time.sleep(1.0)
        broker.stop()
        final = segments.write_dump(broker.log_dir, work / "dump-final")
        broker.start()
        # The first cleanup pass after the load removes what the load left expired (a 2.3
        # broker loads GroupMetadataValue v3 without its state time: EXP-EMPTY-V3-COMMIT-TS);
        # the view is taken after it, as the expiry phase waits for the pass after T. Taken
        # at once, ListGroups could still list a group that DescribeGroups then finds Dead.
        time.sleep((2 * CLEANUP_INTERVAL_MS + EXPIRY_SLACK_MS) / 1000)
        # a new client: the old one's reconnect backoff (up to 10 s) outlasts a request timeout
        reloaded = AdminClient(broker.client_conf)
        view_started_ms = now_ms()
        seen = broker_view(reloaded, groups, broker.bootstrap)
        reload_ms = now_ms()
        run = run_job(spark, work / "dump-final", work / "tables", "reload", reload_ms, coordinator)
        names |= _topic_names(reloaded)
        # the next scheduled run: incremental from the live run's checkpoint, after the expiry
        # tombstones, the late situations' commits and the restart
        kafka_run, held = run_kafka_job(
            broker.bootstrap, kafka_tables, "reload-kafka", reload_ms, coordinator
        )
        # what the broker may expire between its answers and the end of the Kafka run's read
        # is decided by neither side (a slow machine stretches the reads past a retention)
        expiring = expiring_between(run, view_started_ms, now_ms())
        if expiring:
            print(f"{version} reload: not compared, expiring during the reads: {sorted(expiring)}")
        mine = job_view(run, groups, names)
        for name, outcome in outcomes.items():
            compared = [g for g in outcome.groups if g not in expiring]
            compare_views(
                recorder,
                version,
                name,
                "reload",
                {g: seen[g] for g in compared},
                {g: mine[g] for g in compared},
            )
        run = kafka_run
        # a state the broker wrote after its answers (a static member's session running out
        # on a slow machine) is one the answers cannot show
        moved = changed_after(run, view_started_ms)
        if moved:
            print(f"{version} reload (kafka): not compared, changed after the view: {moved}")
        compare_kafka_read(
            recorder,
            version,
            "reload (kafka)",
            outcomes,
            seen,
            run,
            held,
            groups_after_open_transactions(final),
            names,
            expiring | set(moved),
        )
        timings["total"] = time.monotonic() - started
    finally:
        driver.close()
        broker.stop()
        broker.kill()
    return World(version, recorder, outcomes, errors, timings, expiring)


def changed_after(run: JobRun, start_ms: int) -> list[str]:
    """Groups whose state the run read was written at or after `start_ms`."""
    return sorted(
        g for g, row in run.groups.items() if (_ms(row["current_state_timestamp"]) or 0) >= start_ms
    )


def expiring_between(run: JobRun, start_ms: int, end_ms: int) -> set[str]:
    """Groups with a deletion or an offset expiry the job places where the broker's cleanup
    may or may not have acted by a read taken in [start_ms, end_ms]: the pass that acts on
    `expires_at` runs up to one interval (and a late start) after it."""
    since = start_ms - CLEANUP_INTERVAL_MS - EXPIRY_SLACK_MS

    def inside(value: datetime | None) -> bool:
        at = _ms(value)
        return at is not None and since < at <= end_ms

    groups = {d["group_id"] for d in run.offset_decisions if inside(d["expires_at"])}
    return groups | {g for g, d in run.group_decisions.items() if inside(d["deletes_at"])}


def _predicted_delete_error(
    run: JobRun, group: str, decision: dict | None, coordinator: str
) -> str | None:
    if decision is not None:
        return decision["delete_error"]
    if coordinator in ("classic-2.1", "pre-2.1"):
        return "UNSUPPORTED_VERSION"  # no OffsetDelete before 2.4 (semantics.md section 6)
    row = run.groups.get(group)
    if row is None or row["state"] == "Dead":
        return "GROUP_ID_NOT_FOUND"
    return None  # no committed offset: deleting nothing succeeds


def _live_expires_ms(run: JobRun, decision: dict) -> int | None:
    """When the broker of the expiry phase expires the offset. The job places
    EXP-EMPTY-V3-COMMIT-TS's offsets as a load rebuilds their group (by commit time); this
    broker has not reloaded since the group became Empty and still holds the time it did in
    memory, so it expires them at the stored state time plus the retention (docs/rules.md).
    An offset committed to the Empty group afterwards (an admin reset) then goes earlier than
    the job's time by as much as the commit came after the group emptied."""
    if decision["rule"] != "EXP-EMPTY-V3-COMMIT-TS":
        return _ms(decision["expires_at"])
    return _ms(run.groups[decision["group_id"]]["current_state_timestamp"]) + RETENTION_MS


def _compare_expiry(
    recorder, version, outcomes, run, offset_stones, group_stones, after_ms, removed
):
    as_of = None
    for name, outcome in outcomes.items():
        for d in run.offset_decisions:
            if d["group_id"] not in outcome.groups:
                continue
            as_of = as_of or _ms(d["as_of"])
            key = (d["group_id"], d["topic"], d["partition"])
            if key in removed:
                continue  # deleted by the OffsetDelete phase (compared there)
            expires_ms = _live_expires_ms(run, d)
            if expires_ms is not None and _ms(d["as_of"]) < expires_ms <= after_ms:
                continue  # switches between as_of and the read-back: not decided by either
            what = f"{key[0]} {key[1]}/{key[2]}"
            stone = offset_stones.get(key)
            recorder.compare(
                version, name, "expiry", f"{what} expired", stone is not None, bool(d["expired"])
            )
            if stone is not None and expires_ms is not None:
                on_time = expires_ms <= stone <= expires_ms + CLEANUP_INTERVAL_MS + EXPIRY_SLACK_MS
                recorder.compare(
                    version,
                    name,
                    "expiry",
                    f"{what} tombstone written at expires_at",
                    True,
                    on_time if on_time else f"expires_at {expires_ms}, tombstone {stone}",
                )
        for group in outcome.groups:
            decision = run.group_decisions.get(group)
            if decision is None:
                continue
            deletes_ms = _ms(decision["deletes_at"])
            if deletes_ms is not None and _ms(decision["as_of"]) < deletes_ms <= after_ms:
                continue
            recorder.compare(
                version,
                name,
                "expiry",
                f"{group} group deleted",
                group in group_stones,
                bool(decision["deleted"]),
            )
