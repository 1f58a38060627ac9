"""Random but well-formed `__consumer_offsets` histories of many groups, for the differential
check against real brokers (tests/broker/generated.py).

`generate(seed, groups, version, partitions, topics, now_ms)` returns the steps to produce, in
log order: plain records, or the records of one transaction that ends committed, aborted or
stays open. Every record is encoded by `offsets_lib.wire` (the repo's one encoder). Each group
lives on its hashed offsets partition and has a history the era's coordinator could have
written: classic groups (GroupMetadata values of the versions the era reads, members joining
and leaving, Empty and back), simple groups (offsets only), commits of every value version the
era reads (v1 with an explicit expire timestamp in the past or the future), offset tombstones
(OffsetDelete), group deletions (offset tombstones then the group tombstone, sometimes a new
life after), transactional commits; then compaction-like gaps (an older value of a key
removed, as the log cleaner does). Commit and state timestamps stay at least `MARGIN_MS` away
from the retention boundary at `now_ms`, so the broker's cleanup and the job decide alike
whenever either looks within the next minutes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from offsets_lib import wire
from offsets_lib.tools.generate.model import partition_for
from tests.broker.eras import version_tuple

DAY_MS = 86_400_000
RETENTION_MS = 7 * DAY_MS  # the broker's default offsets.retention.minutes, and the job's
MARGIN_MS = 30 * 60_000  # no deadline within this of `now_ms`
SESSION_TIMEOUT_MS = 1_800_000  # members loaded from the log stay until the check is done


@dataclass
class Step:
    """Records produced together to one offsets partition; or, `txn` set, a transactional
    offset commit of `group` (TxnOffsetCommit: the broker refuses raw transactional produce to an
    internal topic, AddPartitionsToTxn answers TOPIC_AUTHORIZATION_FAILED) that ends committed,
    aborted or stays open ("commit", "abort", "open")."""

    partition: int
    records: list[tuple[bytes, bytes | None]]
    txn: str | None = None
    group: str = ""
    offsets: list[tuple[str, int, int, str]] = field(default_factory=list)


@dataclass
class GeneratedLog:
    steps: list[Step]
    groups: dict[str, str]  # group id -> kind (classic, simple)
    partitions: int
    records: int = 0
    dropped: int = 0  # older values removed (compaction-like gaps)


def offset_versions(version: str) -> tuple[int, ...]:
    """OffsetCommitValue versions the era's loader reads (records.md section 4)."""
    line = version_tuple(version)
    if line < (2, 1):
        return (0, 1)
    if line < (4, 0):
        return (0, 1, 2, 3)
    return (0, 1, 2, 3, 4)


def group_versions(version: str) -> tuple[int, ...]:
    """GroupMetadataValue versions the era's loader reads."""
    line = version_tuple(version)
    if line < (2, 1):
        return (0, 1)
    if line < (2, 3):
        return (0, 1, 2)
    return (0, 1, 2, 3)


@dataclass
class _Group:
    name: str
    kind: str
    partition: int
    topics: list[tuple[str, int]]
    generation: int = 0
    members: list[dict] = field(default_factory=list)
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    exists: bool = False  # a GroupMetadata value is live


class _Writer:
    def __init__(self, rng: random.Random, version: str, now_ms: int, topic_ids: dict):
        self.rng, self.version, self.now_ms, self.topic_ids = rng, version, now_ms, topic_ids
        self.offset_versions = offset_versions(version)
        self.group_versions = group_versions(version)
        self.member_serial = 0

    def timestamp(self) -> int:
        """A past time up to 10 days back, not within MARGIN_MS of the retention boundary."""
        while True:
            ts = self.now_ms - self.rng.randint(60_000, 10 * DAY_MS)
            if abs(self.now_ms - ts - RETENTION_MS) > MARGIN_MS:
                return ts

    def commit(self, g: _Group, tp: tuple[str, int]) -> tuple[bytes, bytes]:
        offset = g.offsets.get(tp, self.rng.randint(0, 1000)) + self.rng.randint(1, 500)
        g.offsets[tp] = offset
        version = self.rng.choice(self.offset_versions)
        fields: dict = {
            "offset": offset,
            "leaderEpoch": self.rng.choice((-1, 0, 3)),
            "metadata": self.rng.choice(("", "", "m", "checkpoint-7")),
            "commitTimestamp": self.timestamp(),
        }
        if version == 1:  # an explicit retention: expired long ago, or still far ahead
            ahead = self.rng.random() < 0.5
            span = self.rng.randint(MARGIN_MS, 3 * DAY_MS)
            fields["expireTimestamp"] = self.now_ms + span if ahead else self.now_ms - span
        if version >= 4 and self.rng.random() < 0.8 and tp[0] in self.topic_ids:
            fields["topicId"] = self.topic_ids[tp[0]]
        key = wire.encode_key(1, {"group": g.name, "topic": tp[0], "partition": tp[1]})
        return key, wire.encode_value(1, version, fields)

    def offset_tombstone(self, g: _Group, tp: tuple[str, int]) -> tuple[bytes, None]:
        g.offsets.pop(tp, None)
        return wire.encode_key(1, {"group": g.name, "topic": tp[0], "partition": tp[1]}), None

    def group_value(self, g: _Group) -> tuple[bytes, bytes]:
        """A rebalance's outcome: members leave and join; none left = Empty."""
        rng = self.rng
        kept = [m for m in g.members if rng.random() < 0.6]
        for _ in range(rng.choice((0, 0, 1, 1, 2, 3)) if kept else rng.choice((0, 1, 2, 3))):
            kept.append(self.member(g))
        g.members, g.generation, g.exists = kept, g.generation + 1, True
        version = rng.choice(self.group_versions)
        topics = sorted({t for t, _ in g.topics})
        owners = _assign(g.topics, len(kept))
        members = []
        for m, owned in zip(kept, owners, strict=True):
            assigned = [{"Topic": t, "Partitions": ps} for t, ps in owned]
            sub = {"Topics": topics, "UserData": None, "OwnedPartitions": [], "GenerationId": -1}
            sub["RackId"] = None
            assignment = {"AssignedPartitions": assigned, "UserData": None}
            members.append(
                {
                    **{k: v for k, v in m.items() if k != "sub_version"},
                    "groupInstanceId": m["groupInstanceId"] if version >= 3 else None,
                    "rebalanceTimeout": 300_000,
                    "sessionTimeout": SESSION_TIMEOUT_MS,
                    "subscription": wire.encode_subscription(m["sub_version"], sub),
                    "assignment": wire.encode_assignment(0, assignment),
                }
            )
        fields = {
            "protocolType": "consumer",
            "generation": g.generation,
            "protocol": rng.choice(("range", "roundrobin")) if kept else None,
            "leader": kept[0]["memberId"] if kept else None,
            "currentStateTimestamp": self.timestamp(),
            "members": members,
        }
        return wire.encode_key(2, {"group": g.name}), wire.encode_value(2, version, fields)

    def member(self, g: _Group) -> dict:
        self.member_serial += 1
        n = self.member_serial
        static = self.rng.random() < 0.2
        return {
            "memberId": f"consumer-{n}-{self.rng.getrandbits(32):08x}",
            "groupInstanceId": f"instance-{n}" if static else None,
            "clientId": f"client-{n % 7}",
            "clientHost": f"/127.0.0.{n % 5 + 1}",
            "sub_version": self.rng.choice((0, 1)),
        }

    def group_tombstone(self, g: _Group) -> tuple[bytes, None]:
        g.exists, g.members, g.generation = False, [], 0
        return wire.encode_key(2, {"group": g.name}), None


def _assign(topics: list[tuple[str, int]], n: int) -> list[list[tuple[str, list[int]]]]:
    """Round-robin of the group's partitions over `n` members."""
    per: list[dict[str, list[int]]] = [{} for _ in range(n)]
    for i, (t, p) in enumerate(sorted(topics)):
        if n:
            per[i % n].setdefault(t, []).append(p)
    return [sorted(d.items()) for d in per]


def _history(w: _Writer, g: _Group) -> list[Step]:
    """One group's steps in time order."""
    rng, steps = w.rng, []

    def plain(*records) -> None:
        steps.append(Step(g.partition, list(records)))

    if g.kind == "classic":
        plain(w.group_value(g))
    for _ in range(rng.randint(1, 7)):
        roll = rng.random()
        committed = sorted(g.offsets)
        if roll < 0.45:
            tps = rng.sample(g.topics, rng.randint(1, min(3, len(g.topics))))
            plain(*(w.commit(g, tp) for tp in tps))
        elif roll < 0.6 and g.kind == "classic":
            plain(w.group_value(g))
        elif roll < 0.65 and committed:
            plain(w.offset_tombstone(g, rng.choice(committed)))
        elif roll < 0.68:
            tps = rng.sample(g.topics, rng.randint(1, min(2, len(g.topics))))
            end = rng.choices(("commit", "abort", "open"), (6, 3, 1))[0]
            offsets = []
            for t, p in tps:
                offset = g.offsets.get((t, p), rng.randint(0, 1000)) + rng.randint(1, 500)
                offsets.append((t, p, offset, rng.choice(("", "txn"))))
                if end == "commit":
                    g.offsets[(t, p)] = offset
            steps.append(Step(g.partition, [], end, g.name, offsets))
        elif not g.members:  # DeleteGroups of an Empty (or simple) group
            records = [w.offset_tombstone(g, tp) for tp in committed]
            if g.exists:
                records.append(w.group_tombstone(g))
            if records:
                plain(*records)
    return steps


def generate(
    seed: int,
    groups: int,
    version: str,
    partitions: int,
    topics: dict[str, tuple[int, object]],
    now_ms: int,
) -> GeneratedLog:
    """`groups` histories over `topics` (name -> (partitions, topic id or None)), interleaved
    at random in each offsets partition, then compaction-like gaps."""
    rng = random.Random(seed)
    ids = {t: tid for t, (_, tid) in topics.items() if tid is not None}
    w = _Writer(rng, version, now_ms, ids)
    all_tps = [(t, p) for t, (n, _) in sorted(topics.items()) for p in range(n)]
    histories, kinds = [], {}
    open_groups: set[str] = set()
    for i in range(groups):
        name = f"gen-{seed}-{i}"
        kind = rng.choices(("classic", "simple"), (3, 1))[0]
        g = _Group(name, kind, partition_for(name, partitions), rng.sample(all_tps, 4))
        kinds[name] = kind
        history = _history(w, g)
        # one open transaction per group at most, and it is the group's last step
        opened = [k for k, s in enumerate(history) if s.txn == "open"]
        for k in opened[:-1]:
            history[k].txn = "abort"
        if opened:
            open_groups.add(name)
        histories.append(history)
    merged = _interleave(rng, histories)
    merged = [s for s in merged if s.txn != "open"] + [s for s in merged if s.txn == "open"]
    dropped = _compaction_gaps(rng, merged)
    merged = [s for s in merged if s.records or s.txn]
    records = sum(len(s.records) for s in merged)
    return GeneratedLog(merged, kinds, partitions, records, dropped)


def _interleave(rng: random.Random, histories: list[list[Step]]) -> list[Step]:
    """A random merge that keeps each history's order."""
    keyed = []
    for h, history in enumerate(histories):
        times = sorted(rng.random() for _ in history)
        keyed.extend((t, h, k, s) for k, (t, s) in enumerate(zip(times, history, strict=True)))
    return [s for *_, s in sorted(keyed, key=lambda x: x[:3])]


def _compaction_gaps(rng: random.Random, steps: list[Step]) -> int:
    """Remove some plain records whose key is written again later by a plain record, as the log
    cleaner does (transactional records and the last record of a key stay)."""
    last: dict[bytes, int] = {}
    for i, s in enumerate(steps):
        if s.txn is None:
            for key, _ in s.records:
                last[key] = i
    dropped = 0
    for i, s in enumerate(steps):
        if s.txn is not None:
            continue
        kept = []
        for key, value in s.records:
            if last[key] > i and rng.random() < 0.3:
                dropped += 1
            else:
                kept.append((key, value))
        s.records = kept
    return dropped
