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

On the new coordinator's eras also share groups, Empty modern groups last written by an older
broker (EV-EMPTY-EPOCH: no target-assignment epoch after the last member left), and one group
per `breaks` partition written as only damage writes it: a LOG-6 group tombstone while a member
remains, a LOG-7 assignment claiming a partition another member holds (at an equal epoch: the
load fails; at a lower one: 4.0.2+/4.1.2+/4.2+ overwrite), a DEC-LIMIT value with 10,001 tagged
fields, a LOG-8 consumer-group member record for a classic group (no GroupMetadata tombstone
before it). In every era some records are corrupt but parseable as every broker reads them (bytes
after the last field of a key or value; unknown tagged fields; from 3.5 records of types the
era skips).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from offsets_lib import wire
from offsets_lib.tools.generate.model import partition_for
from offsets_lib.wire.codec import Writer
from tests.broker.eras import version_tuple

DAY_MS = 86_400_000
RETENTION_MS = 7 * DAY_MS  # the broker's default offsets.retention.minutes, and the job's
MARGIN_MS = 30 * 60_000  # no deadline within this of `now_ms`
SESSION_TIMEOUT_MS = 1_800_000  # members loaded from the log stay until the check is done
CLASSIC_ERA = ("classic", "simple")
# the new coordinator's group types
CONSUMER_ERA = ("classic", "simple", "consumer", "share", "streams")
KIND_WEIGHTS = (3, 1, 2, 1, 1)
# a damaged group per offsets partition (`generate`'s `breaks`): LOG-6, LOG-7 at an equal and at
# a lower epoch, DEC-LIMIT, LOG-8; the kind of group each damages (at the end of its history)
BREAKS = ("log6", "log7-equal", "log7-lower", "dec-limit", "type-clash")
DAMAGED_KIND = {"type-clash": "classic"}  # the others: "consumer"
# every 4.4 broker fails these loads
FAILING_BREAKS = ("log6", "log7-equal", "dec-limit", "type-clash")
FAILING_QUOTA = 20  # groups on a partition that fails to load (not compared)
# corrupt but parseable: the share of records with bytes after the last field, and (flexible
# values) with an unknown tagged field; records of types the era skips, per group
TRAILING_RATE = 0.03
UNKNOWN_TAG_RATE = 0.05
SKIPPED_TYPE_RATE = 0.02
# modern record types of a group (records.md section 5): metadata, member, target metadata,
# target member, current assignment; and the group tombstones' types in the coordinator's order
# (`createGroupTombstoneRecords`)
MODERN_TYPES = {
    "consumer": (3, 5, 6, 7, 8),
    "share": (11, 10, 12, 13, 14),
    "streams": (17, 19, 20, 21, 22),
}
GROUP_TOMBSTONES = {"consumer": (6, 4, 3), "share": (12, 11), "streams": (20, 17, 23)}
STREAMS_STABLE = 1  # a streams member's STABLE state code (consumer and share: 0)


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
    groups: dict[str, str]  # group id -> kind (classic, simple, consumer, share, skipped)
    partitions: int
    records: int = 0
    dropped: int = 0  # older values removed (compaction-like gaps)
    corrupt: int = 0  # records corrupt but parseable (`_corrupt`)
    undamaged: list[int] = field(default_factory=list)  # `breaks` partitions without a victim


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
    validated: bool = True  # streams: the topology's epoch is the validated one


class _Writer:
    def __init__(self, rng: random.Random, version: str, now_ms: int, topic_ids: dict):
        self.rng, self.version, self.now_ms, self.topic_ids = rng, version, now_ms, topic_ids
        self.offset_versions = offset_versions(version)
        self.group_versions = group_versions(version)
        self.member_serial = 0
        self.skipped: list[str] = []  # groups of records of types the era skips
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

    # ---- modern groups: KIP-848 consumer groups (records 3-8), share groups (10-14) ----

    def modern_rebalance(self, g: _Group) -> list[tuple[bytes, bytes | None]]:
        """Members leave (tombstones of the current assignment, target member and member, in the
        order the coordinator writes them) and join (member values); a new group epoch, each
        member's target, the target epoch, each member's current assignment at that epoch. No
        member left: Empty, and the target epoch is written only by 4.3.2+/4.4 (EV-EMPTY-EPOCH:
        an older broker left it behind the group epoch)."""
        rng, out = self.rng, []
        meta, member_type, target_meta, target_member, current = _types(g)
        leaving = [m for m in g.members if rng.random() < 0.4]
        for m in leaving:
            out += self.member_tombstones(g, m)
        kept = [m for m in g.members if m not in leaving]
        for _ in range(rng.choice((0, 1, 1, 2, 3)) if kept else rng.choice((0, 1, 2, 3))):
            m = self.member(g)
            kept.append(m)
            out.append((self.modern_key(member_type, g, m), self.member_value(g, m)))
        if g.kind == "streams" and not g.exists:  # a new group's topology (never changed)
            out.append((self.modern_key(23, g), self.topology(g)))
        g.members, g.exists = kept, True
        g.generation += 1
        epoch = g.generation
        out.append((self.modern_key(meta, g), self.metadata_value(g)))
        if not kept and rng.random() < 0.3:  # an older broker's last member leaving
            return out
        targets = []
        for m, parts in zip(kept, self.owners(g, len(kept)), strict=True):
            targets.append(parts)
            out.append((self.modern_key(target_member, g, m), self.target_value(g, parts)))
        target = {"AssignmentEpoch": epoch}
        out.append((self.modern_key(target_meta, g), wire.encode_value(target_meta, 0, target)))
        for m, parts in zip(kept, targets, strict=True):
            out.append((self.modern_key(current, g, m), self.assignment(g, epoch, parts)))
        return out

    def owners(self, g: _Group, n: int) -> list[list[dict]]:
        """Each of `n` members' share: partitions by topic id, or (streams) the tasks of
        subtopology "0", one per partition number of its source topics."""
        if g.kind == "streams":
            tasks = sorted({p for _, p in g.topics})
            return [
                [{"SubtopologyId": "0", "Partitions": tasks[i::n]}] if tasks[i::n] else []
                for i in range(n)
            ]
        return [
            [{"TopicId": self.topic_ids[t], "Partitions": ps} for t, ps in owned]
            for owned in _assign(g.topics, n)
        ]

    def metadata_value(self, g: _Group) -> bytes:
        """The group epoch; a streams group's topology validated (4.2+) or not (4.1: NotReady
        while it has members)."""
        meta = _types(g)[0]
        fields: dict = {"Epoch": g.generation}
        if g.kind == "streams":
            fields["MetadataHash"] = 0
            fields["ValidatedTopologyEpoch"] = 0 if g.validated else -1
        return wire.encode_value(meta, 0, fields)

    def topology(self, g: _Group) -> bytes:
        """One subtopology reading the group's topics (no internal topics)."""
        subtopology = {
            "SubtopologyId": "0",
            "SourceTopics": sorted({t for t, _ in g.topics}),
            "SourceTopicRegex": [],
            "StateChangelogTopics": [],
            "RepartitionSinkTopics": [],
            "RepartitionSourceTopics": [],
            "CopartitionGroups": [],
        }
        return wire.encode_value(23, 0, {"Epoch": 0, "Subtopologies": [subtopology]})

    def target_value(self, g: _Group, parts: list[dict]) -> bytes:
        target_member = _types(g)[3]
        if g.kind == "streams":
            fields = {"ActiveTasks": parts, "StandbyTasks": [], "WarmupTasks": []}
        else:
            fields = {"TopicPartitions": parts}
        return wire.encode_value(target_member, 0, fields)

    def member_value(self, g: _Group, m: dict) -> bytes:
        topics = sorted({t for t, _ in g.topics})
        if g.kind == "streams":
            streams = {
                "InstanceId": m["groupInstanceId"],
                "RackId": None,
                "ClientId": m["clientId"],
                "ClientHost": m["clientHost"],
                "RebalanceTimeoutMs": 300_000,
                "TopologyEpoch": 0,
                "ProcessId": f"process-{m['memberId'][-8:]}",
                "UserEndpoint": None,
                "ClientTags": [],
            }
            return wire.encode_value(19, 0, streams)
        fields = {
            "RackId": None,
            "ClientId": m["clientId"],
            "ClientHost": m["clientHost"],
            "SubscribedTopicNames": topics,
        }
        if g.kind == "share":
            return wire.encode_value(10, 0, fields)
        fields["InstanceId"] = m["groupInstanceId"]
        fields["SubscribedTopicRegex"] = None
        fields["RebalanceTimeoutMs"] = 300_000
        fields["ServerAssignor"] = self.rng.choice(("uniform", None))
        return wire.encode_value(5, 0, fields)

    def assignment(self, g: _Group, epoch: int, parts: list[dict]) -> bytes:
        """A member's current assignment at `epoch`, reconciled (state STABLE)."""
        epochs = {"MemberEpoch": epoch, "PreviousMemberEpoch": epoch - 1}
        if g.kind == "streams":
            tasks = {"ActiveTasks": parts, "StandbyTasks": [], "WarmupTasks": []}
            pending = {f"{k}PendingRevocation": [] for k in tasks}
            fields = {**epochs, "State": STREAMS_STABLE, **tasks, **pending}
            return wire.encode_value(22, 0, fields)
        fields = {**epochs, "State": 0, "AssignedPartitions": parts}
        if g.kind == "share":
            return wire.encode_value(14, 0, fields)
        return wire.encode_value(8, 0, {**fields, "PartitionsPendingRevocation": []})

    def member_tombstones(self, g: _Group, m: dict) -> list[tuple[bytes, None]]:
        _, member_type, _, target_member, current = _types(g)
        return [(self.modern_key(t, g, m), None) for t in (current, target_member, member_type)]

    def modern_group_tombstones(self, g: _Group) -> list[tuple[bytes, None]]:
        """DeleteGroups of an Empty modern group, or the old type's records at a type change:
        its group tombstones in the coordinator's order."""
        g.exists, g.members, g.generation = False, [], 0
        return [(self.modern_key(t, g), None) for t in GROUP_TOMBSTONES[g.kind]]

    def claim(self, g: _Group, lower: bool) -> list[tuple[bytes, bytes]]:
        """LOG-7: a new member whose current assignment claims a partition the first member
        holds, at the holder's epoch (`lower`: one above it, so the holder's is lower)."""
        holder_parts = _assign(g.topics, len(g.members))[0]
        topic, partitions = holder_parts[0]
        m = self.member(g)
        g.members.append(m)
        parts = [{"TopicId": self.topic_ids[topic], "Partitions": partitions[:1]}]
        epoch = g.generation + (1 if lower else 0)
        return [
            (self.modern_key(5, g, m), self.member_value(g, m)),
            (self.modern_key(8, g, m), self.assignment(g, epoch, parts)),
        ]

    def over_reader_limits(self, g: _Group) -> tuple[bytes, bytes]:
        """DEC-LIMIT: the group's metadata value again, with 10,001 unknown tagged fields of size
        0 (4.2.2+/4.3.2+/4.4 refuse the count; older releases read the value)."""
        meta = _types(g)[0]
        value = wire.encode_value(meta, 0, {"Epoch": g.generation})
        section = Writer()
        section.uvarint(10_001)
        return self.modern_key(meta, g), value[:-1] + bytes(section.out) + b"\x64\x00" * 10_001

    def modern_key(self, record_type: int, g: _Group, m: dict | None = None) -> bytes:
        fields = {"GroupId": g.name}
        if m is not None:
            fields["MemberId"] = m["memberId"]
        return wire.encode_key(record_type, fields)


def _types(g: _Group) -> tuple[int, ...]:
    return MODERN_TYPES[g.kind]


def _assign(topics: list[tuple[str, int]], n: int) -> list[list[tuple[str, list[int]]]]:
    """Round-robin of the group's partitions over `n` members."""
    per: list[dict[str, list[int]]] = [{} for _ in range(n)]
    for i, (t, p) in enumerate(sorted(topics)):
        if n:
            per[i % n].setdefault(t, []).append(p)
    return [sorted(d.items()) for d in per]


def _history(w: _Writer, g: _Group, *, damage: str | None = None) -> tuple[list[Step], bool]:
    """One group's steps in time order, and whether `damage` (BREAKS) ends them, as only damage
    writes it, where the group ends of its DAMAGED_KIND (a type change may have made it
    another): a consumer group's "log6" group tombstone while a member remains (the member's
    tombstones compacted away), "log7-equal"/"log7-lower" a new member's assignment claiming a
    partition another member holds, "dec-limit" its metadata value over the readers' limits; a
    classic group's "type-clash", a consumer-group member record after its GroupMetadata value."""
    rng, steps = w.rng, []

    def plain(*records) -> None:
        steps.append(Step(g.partition, list(records)))

    def rebalance() -> None:
        if g.kind == "classic":
            plain(w.group_value(g))
        else:
            plain(*w.modern_rebalance(g))

    if g.kind != "simple":
        rebalance()
    for _ in range(rng.randint(1, 7)):
        roll = rng.random()
        committed = sorted(g.offsets)
        if g.kind == "share" and roll < 0.6:  # a share group commits no offsets
            rebalance()
        elif roll < 0.45:
            tps = rng.sample(g.topics, rng.randint(1, min(3, len(g.topics))))
            plain(*(w.commit(g, tp) for tp in tps))
        elif roll < 0.6 and g.kind != "simple":
            rebalance()
        elif roll < 0.65 and committed:
            plain(w.offset_tombstone(g, rng.choice(committed)))
        elif roll < 0.68 and g.kind in ("classic", "simple"):
            tps = rng.sample(g.topics, rng.randint(1, min(2, len(g.topics))))
            end = rng.choices(("commit", "abort", "open"), (6, 3, 1))[0]
            offsets = []
            for t, p in tps:
                offset = g.offsets.get((t, p), rng.randint(0, 1000)) + rng.randint(1, 500)
                offsets.append((t, p, offset, rng.choice(("", "txn"))))
                if end == "commit":
                    g.offsets[(t, p)] = offset
            steps.append(Step(g.partition, [], end, g.name, offsets))
        elif roll < 0.75 and not g.members and g.kind in ("classic", "consumer") and w.has_ids(g):
            # a type change of an Empty group: the old type's tombstones, the new type's records
            if g.kind == "classic":
                records = [w.group_tombstone(g)] if g.exists else []
                g.kind = "consumer"
                plain(*records, *w.modern_rebalance(g))
            else:
                records = w.modern_group_tombstones(g)
                g.kind = "classic"
                plain(*records, w.group_value(g))
        elif not g.members:  # DeleteGroups of an Empty (or simple) group
            records = [w.offset_tombstone(g, tp) for tp in committed]
            if g.exists and g.kind in MODERN_TYPES:
                records += w.modern_group_tombstones(g)
            elif g.exists:
                records.append(w.group_tombstone(g))
            if records:
                plain(*records)
    if damage is None or g.kind != DAMAGED_KIND.get(damage, "consumer"):
        return steps, False
    if damage == "type-clash":
        if not g.exists:  # a simple group: a consumer group would replace it
            plain(w.group_value(g))
        m = w.member(g)
        plain((w.modern_key(5, g, m), w.member_value(g, m)))
        return steps, True
    while not g.members:
        plain(*w.modern_rebalance(g))
    if damage == "log6":
        plain(*w.modern_group_tombstones(g))
    elif damage == "dec-limit":
        plain(w.over_reader_limits(g))
    else:
        plain(*w.claim(g, lower=damage == "log7-lower"))
    return steps, True


def _corrupt(w: _Writer, steps: list[Step], skipped_types: tuple[int, ...], partitions: int) -> int:
    """Corrupt but parseable, as every broker of the era reads it: bytes after the last field
    of some keys and values, an unknown tagged field in some flexible values (whose tagged
    section is empty), and records of `skipped_types` (their key's group is `skipped-N`)
    that the era's loader skips. Returns the records touched or added."""
    rng, touched = w.rng, 0
    for step in steps:
        records = []
        for key, value in step.records:
            if rng.random() < TRAILING_RATE:
                key, touched = key + rng.randbytes(rng.randint(1, 4)), touched + 1
            if value is not None and rng.random() < TRAILING_RATE:
                value, touched = value + rng.randbytes(rng.randint(1, 4)), touched + 1
            elif value is not None and rng.random() < UNKNOWN_TAG_RATE and _tags_empty(key, value):
                data = rng.randbytes(rng.randint(0, 6))
                tag = Writer()
                for n in (1, 100 + rng.randint(0, 50), len(data)):
                    tag.uvarint(n)
                value, touched = value[:-1] + bytes(tag.out) + data, touched + 1
            records.append((key, value))
        if skipped_types and rng.random() < SKIPPED_TYPE_RATE:
            record_type = rng.choice(skipped_types)
            at = step.partition  # the record lives on its group's offsets partition
            name = _named(f"skipped-{len(w.skipped)}", partitions, lambda p, at=at: p == at)
            w.skipped.append(name)
            key = record_type.to_bytes(2, "big") + wire.encode_key(2, {"group": name})[2:]
            records.append((key, _skipped_value(rng, record_type)))
            touched += 1
        step.records = records
    return touched


# well-formed values of the skipped types the reader knows (a group's metadata; the removed
# partition-metadata records): the others are any bytes
_SKIPPED_VALUES = {
    3: {"Epoch": 1},
    11: {"Epoch": 1, "MetadataHash": 0},
    17: {"Epoch": 1, "MetadataHash": 0},
    9: {"Topics": []},
    18: {"Topics": []},
}


def _skipped_value(rng: random.Random, record_type: int) -> bytes:
    if record_type in _SKIPPED_VALUES:
        return wire.encode_value(record_type, 0, _SKIPPED_VALUES[record_type])
    return rng.randbytes(rng.randint(0, 12))


def _tags_empty(key: bytes, value: bytes) -> bool:
    """A flexible value whose top-level tagged section is the last byte and empty."""
    record = wire.decode_record(key, value)
    flexible = record.record_type >= 3 or (record.record_type == 1 and record.version >= 4)
    if not flexible or record.error or value[-1:] != b"\x00":
        return False
    extended = wire.decode_record(key, value[:-1] + b"\x01\x64\x00")
    return extended.error is None and extended.unknown_tags == 1 and not extended.trailing_bytes


def skipped_types(version: str) -> tuple[int, ...]:
    """Record types the era's loader skips (records.md section 8): none before 3.5 (the load
    fails), modern groups' metadata and an unassigned one on the Scala coordinator of 3.5-3.9, the
    removed 9 and 18, the proposed 24 and an unassigned one on the new coordinator."""
    line = version_tuple(version)
    if line < (3, 5):
        return ()
    return (3, 11, 17, 99) if line < (4, 0) else (9, 18, 24, 99)


def generate(
    seed: int,
    groups: int,
    version: str,
    partitions: int,
    topics: dict[str, tuple[int, object]],
    now_ms: int,
    breaks: dict[int, str] | None = None,
    max_transactions: int | None = None,
    transactions_first: bool = False,
) -> GeneratedLog:
    """`groups` histories over `topics` (name -> (partitions, topic id or None)), interleaved
    at random in each offsets partition, then compaction-like gaps and corrupt but parseable
    records. In an era with consumer groups, the first group of each partition of `breaks`
    (partition -> one of BREAKS) that ends of the damage's kind is damaged so (`_history`); a
    partition whose damage
    fails every 4.4 broker's load (FAILING_BREAKS) holds at most FAILING_QUOTA groups (the
    others are renamed onto another partition). `max_transactions`: the others become plain
    commits (committed ones) or nothing (aborted, open). `transactions_first`: every
    transaction before the first plain record (a 4.x coordinator whose log was appended to
    behind its back reloads, and fails writes meanwhile)."""
    rng = random.Random(seed)
    ids = {t: tid for t, (_, tid) in topics.items() if tid is not None}
    w = _Writer(rng, version, now_ms, ids)
    all_tps = [(t, p) for t, (n, _) in sorted(topics.items()) for p in range(n)]
    histories, kinds = [], {}
    damages = dict(breaks or {}) if w.kinds == CONSUMER_ERA else {}
    crowded = {p: 0 for p, what in damages.items() if what in FAILING_BREAKS}
    for i in range(groups):
        name = _named(f"gen-{seed}-{i}", partitions, lambda p: crowded.get(p, 0) < FAILING_QUOTA)
        kind = rng.choices(w.kinds, KIND_WEIGHTS[: len(w.kinds)])[0]
        g = _Group(name, kind, partition_for(name, partitions), rng.sample(all_tps, 4))
        g.validated = rng.random() < 0.8
        if g.partition in crowded:
            crowded[g.partition] += 1
        if any(t not in ids for t, _ in g.topics):  # a modern group names topics by id
            g.kind = kind = "classic" if kind in ("consumer", "share") else kind
        damage = damages.get(g.partition)
        if damage is not None and kind != DAMAGED_KIND.get(damage, "consumer"):
            damage = None
        history, damaged = _history(w, g, damage=damage)
        if damaged:
            del damages[g.partition]
        kinds[name] = g.kind
        # one open transaction per group at most, and it is the group's last step
        opened = [k for k, s in enumerate(history) if s.txn == "open"]
        for k in opened[:-1]:
            history[k].txn = "abort"
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
    corrupt = _corrupt(w, merged, skipped_types(version), partitions)
    kinds.update((name, "skipped") for name in w.skipped)  # no broker knows these groups
    records = sum(len(s.records) for s in merged)
    return GeneratedLog(merged, kinds, partitions, records, dropped, corrupt, sorted(damages))


def _named(name: str, partitions: int, fits) -> str:
    """`name`, or the first `name-N` whose offsets partition `fits`."""
    n = 0
    candidate = name
    while not fits(partition_for(candidate, partitions)):
        n += 1
        candidate = f"{name}-{n}"
    return candidate


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
    `breaks` do)."""
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
