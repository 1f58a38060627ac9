"""Event writers of the group-level records: one method per group kind, in per-group time order.

Every key and value is written by `wire`'s writer (`encoding.Template` where only epochs or a
generation change between records); the bulk offset commits are in `bulk.py`, the KIP-848
consumer, streams and share groups' records in `modern_groups.py`.
"""

from __future__ import annotations

import functools
import struct

import numpy as np

from offsets_lib import wire
from offsets_lib.tools.generate.encoding import (
    MEMBER_EPOCHS,
    Template,
    assignment,
    epochs_template,
    group_metadata,
    subscription,
    with_raw_string,
)
from offsets_lib.tools.generate.model import (
    COMMITTING,
    HOUR_MS,
    KINDS,
    Group,
    World,
    kafka_id,
    new_uuid,
)
from offsets_lib.tools.generate.modern_groups import (
    ConsumerGroupEvents,
    ShareGroupEvents,
    StreamsGroupEvents,
)
from offsets_lib.tools.generate.vocabulary import ASSIGNORS


class RareRecords:
    """Rare records, built one by one with Python (group-level records, corrupt ones, ...)."""

    def __init__(self) -> None:
        self.rows: list[tuple] = []
        self.seq = 0

    def add(
        self,
        ts: int,
        partition: int,
        key: bytes,
        value: bytes | None,
        label: str,
        pid: int = -1,
        pepoch: int = -1,
    ) -> None:
        self.rows.append((ts, self.seq, partition, key, value, pid, pepoch, label))
        self.seq += 1


class Events:
    """Builds every rare record of the dump from the model, in per-group time order."""

    def __init__(self, world: World) -> None:
        self.w = world
        self.rare = RareRecords()
        self.rng = world.py("events")
        self.tombstone_keys = 0
        self.cache: dict[tuple, bytes] = {}
        self.templates: dict[tuple, Template] = {}
        self.keys: dict[tuple, bytes] = {}

    def key(self, record_type: int, **fields: object) -> bytes:
        memo = (record_type, *fields.values())
        if memo not in self.keys:
            self.keys[memo] = wire.encode_key(record_type, fields)
        return self.keys[memo]

    def target_value(self, per_member: list[tuple[int, list[int]]]) -> bytes:
        """ConsumerGroupTargetAssignmentMemberValue, cached by content."""
        memo = (7, tuple((t, tuple(ps)) for t, ps in per_member))
        if memo not in self.cache:
            tids = self.w.topic_ids
            tps = [{"TopicId": tids[t], "Partitions": list(ps)} for t, ps in memo[1]]
            self.cache[memo] = wire.encode_value(7, 0, {"TopicPartitions": tps})
        return self.cache[memo]

    def current_template(self, owned: tuple) -> Template:
        """ConsumerGroupCurrentMemberAssignmentValue, the member epochs left to fill in."""
        memo = (8, owned)
        if memo not in self.templates:
            tids = self.w.topic_ids
            tps = []
            for t, ps, epochs in owned:
                tp: dict = {"TopicId": tids[t], "Partitions": list(ps)}
                if epochs is not None:
                    tp["AssignmentEpochs"] = list(epochs)
                tps.append(tp)
            fields = {
                "MemberEpoch": 0,
                "PreviousMemberEpoch": 0,
                "State": 0,
                "AssignedPartitions": tps,
                "PartitionsPendingRevocation": [],
            }
            self.templates[memo] = epochs_template(8, fields, *MEMBER_EPOCHS)
        return self.templates[memo]

    def build(self) -> None:
        w, p = self.w, self.w.p
        r = w.records
        budgets = {
            "classic": p.gm_share * r,
            "connect": 0.0,
            "consumer": p.kip848_share * r,
            "streams": p.streams_share * r,
            "share": p.share_share * r,
        }
        births = {"classic": 1, "connect": 1, "consumer": 0, "streams": 0, "share": 0}
        by_kind: dict[str, list[Group]] = {k: [] for k in KINDS}
        for g in w.groups:
            by_kind[g.kind].append(g)
        # the birth records are fixed; the rest of each budget becomes extra rebalances
        cost = {"classic": 1, "connect": 1, "consumer": 0, "streams": 0, "share": 0}
        for g in w.groups:
            if g.kind == "consumer":
                births["consumer"] += 2 + 3 * g.members
            elif g.kind == "streams":
                births["streams"] += 3 + 3 * g.members
            elif g.kind == "share":
                births["share"] += 3 + 3 * g.members
        for kind in ("classic", "consumer", "streams", "share"):
            groups = by_kind[kind]
            if not groups:
                continue
            avg_m = sum(g.members for g in groups) / len(groups)
            cost[kind] = 1 if kind == "classic" else int(2 + 1.3 * avg_m)
            extra = max(0.0, budgets[kind] - births[kind]) / cost[kind]
            wts = np.array([g.weight for g in groups])
            alloc = self.w.rng("alloc", kind).multinomial(int(extra), wts / wts.sum())
            for g, a in zip(groups, alloc, strict=True):
                g.extra_events = int(a)
        for g in by_kind["connect"]:
            g.extra_events = int(self.rng.poisson(2))
        for g in w.groups:
            getattr(self, f"_{g.kind}")(g)
        self._offset_deletes()
        self._type0()
        self._corrupt()

    def _times(self, g: Group, n: int, lo: int, hi: int) -> list[int]:
        if n <= 0 or hi <= lo:
            return []
        return sorted(self.rng.integers(lo, hi) for _ in range(n))

    def timeline(self, g: Group) -> list[tuple[int, str]]:
        """Rebalance times plus the forced events (drop, empty), in time order."""
        hi = g.t_empty if g.t_empty is not None else self.w.end
        events = [(t, "rebalance") for t in self._times(g, g.extra_events, g.t_start + 1, hi)]
        if g.t_drop is not None:
            events.append((g.t_drop, "drop"))
        events.sort()
        return events

    def member_id(self, g: Group, n: int) -> str:
        u = new_uuid(self.rng)
        if g.kind in ("consumer", "share", "streams"):
            return kafka_id(u)
        return f"{self.client_id(g, n)}-{u}"

    def client_id(self, g: Group, n: int) -> str:
        return f"{g.name[:24]}-{n}" if g.kind != "connect" else f"connect-{n}"

    def host(self) -> str:
        r = self.rng.integers
        a, b, c = r(0, 255), r(0, 255), r(0, 255)
        return f"/10.{a}.{b}.{c}"

    def topics_at(self, g: Group, at: int) -> list[int]:
        return g.topics[:-1] if g.t_drop is not None and at >= g.t_drop else g.topics

    def assign(self, g: Group, topics: list[int], n_members: int) -> list[list[tuple[int, list]]]:
        """Round-robin of the topics' partitions over the members: per member [(topic, parts)]."""
        out: list[dict[int, list[int]]] = [{} for _ in range(n_members)]
        i = 0
        for t in topics:
            for part in range(int(self.w.topic_parts[t])):
                out[i % n_members].setdefault(t, []).append(part)
                i += 1
        return [sorted(m.items()) for m in out]

    # offsets of a group that goes away ---------------------------------------------------
    def _offset_tombstones(self, g: Group, ts: int, keys: range) -> None:
        w = self.w
        for k in keys:
            key = w.key_bytes[k].as_py()
            self.rare.add(ts, g.partition, key, None, "t1")
            self.tombstone_keys += 1

    def delete_offsets(self, g: Group, ts: int) -> None:
        self._offset_tombstones(g, ts, range(g.key_start, g.key_start + g.key_count))

    # classic and connect --------------------------------------------------------------------
    def _classic(self, g: Group) -> None:
        rng = self.rng
        sub_version = rng.choice((0, 1, 3, 3, 3))
        protocol = ASSIGNORS[int(rng.integers(len(ASSIGNORS)))]
        static = rng.random() < 0.1
        members = [self.member_id(g, n) for n in range(g.members)]
        hosts = [self.host() for _ in members]
        generation = int(rng.integers(1, 60)) if g.t_start < self.w.start + HOUR_MS else 1
        owned: list[tuple] = [() for _ in members]
        assigned_cache: dict[tuple[int, int], list[tuple]] = {}
        key = self.key(2, group=g.name)
        names = self.w.topic_names

        def write(ts: int) -> None:
            topics = self.topics_at(g, ts)
            tnames = tuple(names[t] for t in topics)
            memo = (len(topics), len(members))
            if memo not in assigned_cache:
                assigned_cache[memo] = [
                    tuple((names[t], tuple(parts)) for t, parts in a)
                    for a in self.assign(g, topics, len(members))
                ]
            assigned = assigned_cache[memo]
            rows = []
            for m, mid in enumerate(members):
                sub = subscription(
                    sub_version, tnames, owned[m], generation - 1, "rack-a" if m % 2 else None
                )
                rows.append(
                    {
                        "memberId": mid,
                        "groupInstanceId": f"{g.name[:20]}-instance-{m}" if static else None,
                        "clientId": self.client_id(g, m),
                        "clientHost": hosts[m],
                        "rebalanceTimeout": 300000,
                        "sessionTimeout": 45000,
                        "subscription": sub,
                        "assignment": assignment(sub_version, assigned[m]),
                    }
                )
                owned[m] = assigned[m]
            # one wire encoding per record: a template per membership was measured slower
            # (59% of the records of a 1M dump have a membership not seen before)
            value = group_metadata("consumer", generation, protocol, members[0], ts, rows)
            self.rare.add(ts, g.partition, key, value, "t2")

        write(g.t_start)
        for ts, _what in self.timeline(g):
            generation += 1
            if rng.random() < 0.3:  # a member left, another joined
                j = int(rng.integers(len(members)))
                members[j] = self.member_id(g, j)
                owned[j] = ()
            write(ts)
        self._classic_end(g, key, generation)

    def _classic_end(self, g: Group, key: bytes, generation: int) -> None:
        if g.t_empty is not None:
            value = group_metadata("consumer", generation + 1, None, None, g.t_empty, [])
            self.rare.add(g.t_empty, g.partition, key, value, "t2")
        if g.t_delete is not None:
            self.delete_offsets(g, g.t_delete)
            self.rare.add(g.t_delete, g.partition, key, None, "t2")

    def _connect(self, g: Group) -> None:
        rng = self.rng
        members = [self.member_id(g, n) for n in range(g.members)]
        key = self.key(2, group=g.name)
        generation = int(rng.integers(1, 200))
        times = [g.t_start, *self._times(g, g.extra_events, g.t_start + 1, self.w.end)]
        for ts in times:
            generation += 1
            rows = []
            for m, mid in enumerate(members):
                url = f"http://10.0.0.{m}:8083/".encode()
                sub = struct.pack(">hh", 1, len(url)) + url + struct.pack(">q", 42 + generation)
                asg = struct.pack(">hhh", 1, 0, len(mid)) + mid.encode() + bytes(rng.bytes(8))
                rows.append(
                    {
                        "memberId": mid,
                        "groupInstanceId": None,
                        "clientId": f"connect-{m}",
                        "clientHost": f"/10.0.0.{m}",
                        "rebalanceTimeout": 60000,
                        "sessionTimeout": 10000,
                        "subscription": sub,
                        "assignment": asg,
                    }
                )
            value = group_metadata("connect", generation, "sessioned", members[0], ts, rows)
            self.rare.add(ts, g.partition, key, value, "t2")

    def _simple(self, g: Group) -> None:
        if g.t_delete is not None:
            self.delete_offsets(g, g.t_delete)

    # KIP-848 consumer, streams and share groups: modern_groups.py ---------------------------
    def _consumer(self, g: Group) -> None:
        ConsumerGroupEvents(self, g).write()

    def _streams(self, g: Group) -> None:
        StreamsGroupEvents(self, g).write()

    def _share(self, g: Group) -> None:
        ShareGroupEvents(self, g).write()

    # offsets deleted with OffsetDelete after a topic left the subscription ----------------
    def _offset_deletes(self) -> None:
        for g in self.w.groups:
            if g.t_drop is None or g.kind not in COMMITTING or self.rng.random() >= 0.3:
                continue
            ts = int(self.rng.integers(g.t_drop + 1, max(g.t_drop + 2, g.t_end)))
            self._offset_tombstones(
                g, ts, range(g.key_start + g.key_kept, g.key_start + g.key_count)
            )

    # legacy type-0 keys ------------------------------------------------------------------------
    def _type0(self) -> None:
        w = self.w
        n = round(w.p.type0_share * w.records)
        if n == 0 or w.n_keys == 0:
            return
        for _ in range(n):
            k = int(self.rng.integers(w.n_keys))
            g = w.groups[int(w.key_group[k])]
            ts = int(self.rng.integers(w.start, w.start + int(0.1 * w.span)))
            key = self.key(
                0,
                group=g.name,
                topic=w.topic_names[int(w.key_topic[k])],
                partition=int(w.key_part[k]),
            )
            value = wire.encode_value(
                0, 0, {"offset": int(w.key_base[k]), "metadata": "", "commitTimestamp": ts}
            )
            self.rare.add(ts, g.partition, key, value, "t0")

    # corrupt records ---------------------------------------------------------------------------
    def _corrupt(self) -> None:
        w = self.w
        n = round(w.p.corrupt_share * w.records)
        if n == 0 or w.n_keys == 0:
            return
        n = max(n, 4)
        for i in range(n):
            k = int(self.rng.integers(w.n_keys))
            g = w.groups[int(w.key_group[k])]
            ts = int(self.rng.integers(w.start, w.end))
            key = w.key_bytes[k].as_py()
            fields = {"offset": int(w.key_base[k]), "leaderEpoch": 0, "metadata": ""}
            fields["commitTimestamp"] = ts
            good = wire.encode_value(1, 3, fields)
            kind = i % 4
            if kind == 0:  # truncated value
                value = good[: int(self.rng.integers(3, len(good) - 1))]
            elif kind == 1:  # unknown record type
                key = struct.pack(">h", int(self.rng.integers(24, 200))) + key[2:]
            elif kind == 2:  # unknown value version
                value = struct.pack(">h", int(self.rng.integers(5, 99))) + good[2:]
            else:  # invalid UTF-8 in metadata
                encode = functools.partial(wire.encode_value, 1, 3)
                value = with_raw_string(encode, fields, "metadata", b"\xc3\x28\xff")
            if kind == 1:
                value = good
            self.rare.add(ts, g.partition, key, value, "corrupt")
