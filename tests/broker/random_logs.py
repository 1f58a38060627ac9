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
CLASSIC_ERA = ("classic", "simple")
CONSUMER_ERA = ("classic", "simple", "consumer")  # the new coordinator's group types
KIND_WEIGHTS = (3, 1, 2)


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
        self.kinds = CONSUMER_ERA if version_tuple(version) >= (4, 0) else CLASSIC_ERA

    def has_ids(self, g: _Group) -> bool:
        """A consumer group is possible: the era has them and every topic of `g` has an id."""
        return self.kinds == CONSUMER_ERA and all(t in self.topic_ids for t, _ in g.topics)

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

    def plain_commit(
        self, group: str, topic: str, partition: int, offset: int, metadata: str
    ) -> tuple[bytes, bytes]:
        fields = {
            "offset": offset,
            "leaderEpoch": -1,
            "metadata": metadata,
            "commitTimestamp": self.timestamp(),
        }
        key = wire.encode_key(1, {"group": group, "topic": topic, "partition": partition})
        return key, wire.encode_value(1, 3, fields)

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

    # ---- KIP-848 consumer groups (records 3, 5, 6, 7, 8; the new coordinator's eras) ----

    def consumer_rebalance(self, g: _Group) -> list[tuple[bytes, bytes | None]]:
        """Members leave (tombstones 8, 7, 5, in the order the coordinator writes them) and
        join (5); a new group epoch (3), each member's target (7), the target epoch (6), each
        member's current assignment at that epoch (8). No member left: Empty, epochs written."""
        rng, out = self.rng, []
        leaving = [m for m in g.members if rng.random() < 0.4]
        for m in leaving:
            out += self.member_tombstones(g, m)
        kept = [m for m in g.members if m not in leaving]
        for _ in range(rng.choice((0, 1, 1, 2, 3)) if kept else rng.choice((0, 1, 2, 3))):
            m = self.member(g)
            kept.append(m)
            fields = {
                "InstanceId": m["groupInstanceId"],
                "RackId": None,
                "ClientId": m["clientId"],
                "ClientHost": m["clientHost"],
                "SubscribedTopicNames": sorted({t for t, _ in g.topics}),
                "SubscribedTopicRegex": None,
                "RebalanceTimeoutMs": 300_000,
                "ServerAssignor": rng.choice(("uniform", None)),
            }
            out.append((self.modern_key(5, g, m), wire.encode_value(5, 0, fields)))
        g.members, g.exists = kept, True
        g.generation += 1
        epoch = g.generation
        out.append((self.modern_key(3, g), wire.encode_value(3, 0, {"Epoch": epoch})))
        owners = _assign(g.topics, len(kept))
        targets = []
        for m, owned in zip(kept, owners, strict=True):
            parts = [{"TopicId": self.topic_ids[t], "Partitions": ps} for t, ps in owned]
            targets.append(parts)
            value = wire.encode_value(7, 0, {"TopicPartitions": parts})
            out.append((self.modern_key(7, g, m), value))
        target = {"AssignmentEpoch": epoch}
        out.append((self.modern_key(6, g), wire.encode_value(6, 0, target)))
        for m, parts in zip(kept, targets, strict=True):
            fields = {
                "MemberEpoch": epoch,
                "PreviousMemberEpoch": epoch - 1,
                "State": 0,
                "AssignedPartitions": parts,
                "PartitionsPendingRevocation": [],
            }
            out.append((self.modern_key(8, g, m), wire.encode_value(8, 0, fields)))
        return out

    def member_tombstones(self, g: _Group, m: dict) -> list[tuple[bytes, None]]:
        return [(self.modern_key(t, g, m), None) for t in (8, 7, 5)]

    def consumer_group_tombstones(self, g: _Group) -> list[tuple[bytes, None]]:
        """DeleteGroups of an Empty consumer group, or the old type's records at a type change:
        target-assignment metadata, partition metadata, then group metadata tombstones."""
        g.exists, g.members, g.generation = False, [], 0
        return [(self.modern_key(t, g), None) for t in (6, 4, 3)]

    def modern_key(self, record_type: int, g: _Group, m: dict | None = None) -> bytes:
        fields = {"GroupId": g.name}
        if m is not None:
            fields["MemberId"] = m["memberId"]
        return wire.encode_key(record_type, fields)


def _assign(topics: list[tuple[str, int]], n: int) -> list[list[tuple[str, list[int]]]]:
    """Round-robin of the group's partitions over `n` members."""
    per: list[dict[str, list[int]]] = [{} for _ in range(n)]
    for i, (t, p) in enumerate(sorted(topics)):
        if n:
            per[i % n].setdefault(t, []).append(p)
    return [sorted(d.items()) for d in per]


def _history(w: _Writer, g: _Group, *, broken: bool = False) -> list[Step]:
    """One group's steps in time order. `broken`: a consumer group whose group tombstone is
    written while a member remains (its member tombstones compacted away): LOG-6 fails the
    load of its offsets partition on a 4.x broker."""
    rng, steps = w.rng, []

    def plain(*records) -> None:
        steps.append(Step(g.partition, list(records)))

    def rebalance() -> None:
        if g.kind == "classic":
            plain(w.group_value(g))
        else:
            plain(*w.consumer_rebalance(g))

    if g.kind != "simple":
        rebalance()
    for _ in range(rng.randint(1, 7)):
        roll = rng.random()
        committed = sorted(g.offsets)
        if roll < 0.45:
            tps = rng.sample(g.topics, rng.randint(1, min(3, len(g.topics))))
            plain(*(w.commit(g, tp) for tp in tps))
        elif roll < 0.6 and g.kind != "simple":
            rebalance()
        elif roll < 0.65 and committed:
            plain(w.offset_tombstone(g, rng.choice(committed)))
        elif roll < 0.68 and g.kind != "consumer":
            tps = rng.sample(g.topics, rng.randint(1, min(2, len(g.topics))))
            end = rng.choices(("commit", "abort", "open"), (6, 3, 1))[0]
            offsets = []
            for t, p in tps:
                offset = g.offsets.get((t, p), rng.randint(0, 1000)) + rng.randint(1, 500)
                offsets.append((t, p, offset, rng.choice(("", "txn"))))
                if end == "commit":
                    g.offsets[(t, p)] = offset
            steps.append(Step(g.partition, [], end, g.name, offsets))
        elif roll < 0.75 and not g.members and g.kind != "simple" and w.has_ids(g):
            # a type change of an Empty group: the old type's tombstones, the new type's records
            if g.kind == "classic":
                records = [w.group_tombstone(g)] if g.exists else []
                g.kind = "consumer"
                plain(*records, *w.consumer_rebalance(g))
            else:
                records = w.consumer_group_tombstones(g)
                g.kind = "classic"
                plain(*records, w.group_value(g))
        elif not g.members:  # DeleteGroups of an Empty (or simple) group
            records = [w.offset_tombstone(g, tp) for tp in committed]
            if g.exists and g.kind == "consumer":
                records += w.consumer_group_tombstones(g)
            elif g.exists:
                records.append(w.group_tombstone(g))
            if records:
                plain(*records)
    if broken:
        if not g.members:
            g.members = []
            plain(*w.consumer_rebalance(g))
            while not g.members:
                plain(*w.consumer_rebalance(g))
        plain(*w.consumer_group_tombstones(g))
    return steps


def generate(
    seed: int,
    groups: int,
    version: str,
    partitions: int,
    topics: dict[str, tuple[int, object]],
    now_ms: int,
    broken_partitions: tuple[int, ...] = (),
    max_transactions: int | None = None,
    transactions_first: bool = False,
) -> GeneratedLog:
    """`groups` histories over `topics` (name -> (partitions, topic id or None)), interleaved
    at random in each offsets partition, then compaction-like gaps. In an era with consumer
    groups, the first consumer group of each of `broken_partitions` fails the partition's load
    (LOG-6: a group tombstone while a member remains). `max_transactions`: the others become
    plain commits (committed ones) or nothing (aborted, open). `transactions_first`: every
    transaction before the first plain record (a 4.x coordinator whose log was appended to
    behind its back reloads, and fails writes meanwhile)."""
    rng = random.Random(seed)
    ids = {t: tid for t, (_, tid) in topics.items() if tid is not None}
    w = _Writer(rng, version, now_ms, ids)
    all_tps = [(t, p) for t, (n, _) in sorted(topics.items()) for p in range(n)]
    histories, kinds = [], {}
    open_groups: set[str] = set()
    unbroken = set(broken_partitions) if w.kinds == CONSUMER_ERA else set()
    for i in range(groups):
        name = f"gen-{seed}-{i}"
        kind = rng.choices(w.kinds, KIND_WEIGHTS[: len(w.kinds)])[0]
        g = _Group(name, kind, partition_for(name, partitions), rng.sample(all_tps, 4))
        if any(t not in ids for t, _ in g.topics):  # a consumer group names topics by id
            g.kind = kind = "classic" if kind == "consumer" else kind
        breaks = kind == "consumer" and g.partition in unbroken
        unbroken.discard(g.partition)
        history = _history(w, g, broken=breaks)
        kinds[name] = g.kind
        # one open transaction per group at most, and it is the group's last step
        opened = [k for k, s in enumerate(history) if s.txn == "open"]
        for k in opened[:-1]:
            history[k].txn = "abort"
        if opened:
            open_groups.add(name)
        histories.append(history)
    merged = _interleave(rng, histories)
    txns = [s for s in merged if s.txn is not None]
    if max_transactions is not None and len(txns) > max_transactions:
        for step in rng.sample(txns, len(txns) - max_transactions):
            if step.txn == "commit":  # written without a transaction instead
                step.records = [w.plain_commit(step.group, *o) for o in step.offsets]
            step.txn, step.offsets = None, []
    merged = [s for s in merged if s.txn != "open"] + [s for s in merged if s.txn == "open"]
    if transactions_first:
        merged = [s for s in merged if s.txn] + [s for s in merged if not s.txn]
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
    """Remove some plain values whose key is written again later by a plain record, as the log
    cleaner does (transactional records, tombstones and the last record of a key stay: a
    tombstone removed before its sibling's could fail a 4.x load, LOG-6, which only
    `broken_partitions` do)."""
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
            if value is not None and last[key] > i and rng.random() < 0.3:
                dropped += 1
            else:
                kept.append((key, value))
        s.records = kept
    return dropped
