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
    assignment,
    group_metadata,
    subscription,
    with_raw_string,
)
from offsets_lib.tools.generate.model import (
    COMMITTING,
    HOUR_MS,
    KINDS,
    Group,
)
from offsets_lib.tools.generate.modern_groups import (
    ConsumerGroupEvents,
    ShareGroupEvents,
    StreamsGroupEvents,
)
from offsets_lib.tools.generate.vocabulary import ASSIGNORS
from offsets_lib.tools.generate.writer import EventWriter


class Events(EventWriter):
    """Builds every rare record of the dump from the model, in per-group time order."""

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
