"""Event writers of the group-level records: one method per group kind, in per-group time order.

Every key and value is written by `wire`'s writer (`encoding.Template` where only epochs or a
generation change between records); the bulk offset commits are in `bulk.py`.
"""

from __future__ import annotations

import functools
import struct

import numpy as np

from offsets_lib import wire
from offsets_lib.tools.generate.encoding import Template, template, with_raw_string
from offsets_lib.tools.generate.model import (
    ASSIGNORS,
    COMMITTING,
    HOUR_MS,
    KINDS,
    Group,
    World,
    kafka_id,
    new_uuid,
)

_MEMBER_EPOCHS = ("MemberEpoch", "PreviousMemberEpoch")


def _epochs_template(record_type: int, fields: dict, *epochs: str) -> Template:
    """A value (version 0) whose int32 epochs are filled in per record (metadata refreshes)."""
    patched = dict.fromkeys(epochs, 4)
    return template(lambda f: wire.encode_value(record_type, 0, f), fields, patched)


@functools.lru_cache(maxsize=1 << 16)
def _subscription(
    version: int, topics: tuple[str, ...], owned: tuple, rack: str | None
) -> Template:
    fields = {
        "Topics": list(topics),
        "UserData": None,
        "OwnedPartitions": [{"Topic": t, "Partitions": list(ps)} for t, ps in owned],
        "GenerationId": 0,
        "RackId": rack,
    }
    patched = {"GenerationId": 4} if version >= 2 else {}
    return template(lambda f: wire.encode_subscription(version, f), fields, patched)


def subscription(
    version: int,
    topics: tuple[str, ...],
    owned: tuple[tuple[str, tuple[int, ...]], ...],
    generation: int,
    rack: str | None,
) -> bytes:
    """ConsumerProtocolSubscription (UserData null); one template per content, the generation
    filled in (it changes at every rebalance, the rest rarely)."""
    return _subscription(version, topics, owned, rack).fill(GenerationId=generation)


@functools.lru_cache(maxsize=1 << 16)
def assignment(version: int, assigned: tuple[tuple[str, tuple[int, ...]], ...]) -> bytes:
    """ConsumerProtocolAssignment (UserData null), cached by content."""
    partitions = [{"Topic": t, "Partitions": list(ps)} for t, ps in assigned]
    return wire.encode_assignment(version, {"AssignedPartitions": partitions, "UserData": None})


def group_metadata(
    protocol_type: str,
    generation: int,
    protocol: str | None,
    leader: str | None,
    state_ts: int,
    members: list[dict],
) -> bytes:
    """GroupMetadataValue v3 (members as the layout's MemberMetadata dicts)."""
    fields = {
        "protocolType": protocol_type,
        "generation": generation,
        "protocol": protocol,
        "leader": leader,
        "currentStateTimestamp": state_ts,
        "members": members,
    }
    return wire.encode_value(2, 3, fields)


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

    def _target(self, per_member: list[tuple[int, list[int]]]) -> bytes:
        """ConsumerGroupTargetAssignmentMemberValue, cached by content."""
        memo = (7, tuple((t, tuple(ps)) for t, ps in per_member))
        if memo not in self.cache:
            tids = self.w.topic_ids
            tps = [{"TopicId": tids[t], "Partitions": list(ps)} for t, ps in memo[1]]
            self.cache[memo] = wire.encode_value(7, 0, {"TopicPartitions": tps})
        return self.cache[memo]

    def _current(self, owned: tuple) -> Template:
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
            self.templates[memo] = _epochs_template(8, fields, *_MEMBER_EPOCHS)
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

    def _timeline(self, g: Group) -> list[tuple[int, str]]:
        """Rebalance times plus the forced events (drop, empty), in time order."""
        hi = g.t_empty if g.t_empty is not None else self.w.end
        events = [(t, "rebalance") for t in self._times(g, g.extra_events, g.t_start + 1, hi)]
        if g.t_drop is not None:
            events.append((g.t_drop, "drop"))
        events.sort()
        return events

    def _member_id(self, g: Group, n: int) -> str:
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

    def _topics(self, g: Group, at: int) -> list[int]:
        return g.topics[:-1] if g.t_drop is not None and at >= g.t_drop else g.topics

    def _assign(self, g: Group, topics: list[int], n_members: int) -> list[list[tuple[int, list]]]:
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

    def _delete_offsets(self, g: Group, ts: int) -> None:
        self._offset_tombstones(g, ts, range(g.key_start, g.key_start + g.key_count))

    # classic and connect --------------------------------------------------------------------
    def _classic(self, g: Group) -> None:
        rng = self.rng
        sub_version = rng.choice((0, 1, 3, 3, 3))
        protocol = ASSIGNORS[int(rng.integers(len(ASSIGNORS)))]
        static = rng.random() < 0.1
        members = [self._member_id(g, n) for n in range(g.members)]
        hosts = [self.host() for _ in members]
        generation = int(rng.integers(1, 60)) if g.t_start < self.w.start + HOUR_MS else 1
        owned: list[tuple] = [() for _ in members]
        assigned_cache: dict[tuple[int, int], list[tuple]] = {}
        key = self.key(2, group=g.name)
        names = self.w.topic_names

        def write(ts: int) -> None:
            topics = self._topics(g, ts)
            tnames = tuple(names[t] for t in topics)
            memo = (len(topics), len(members))
            if memo not in assigned_cache:
                assigned_cache[memo] = [
                    tuple((names[t], tuple(parts)) for t, parts in a)
                    for a in self._assign(g, topics, len(members))
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
        for ts, _what in self._timeline(g):
            generation += 1
            if rng.random() < 0.3:  # a member left, another joined
                j = int(rng.integers(len(members)))
                members[j] = self._member_id(g, j)
                owned[j] = ()
            write(ts)
        self._classic_end(g, key, generation)

    def _classic_end(self, g: Group, key: bytes, generation: int) -> None:
        if g.t_empty is not None:
            value = group_metadata("consumer", generation + 1, None, None, g.t_empty, [])
            self.rare.add(g.t_empty, g.partition, key, value, "t2")
        if g.t_delete is not None:
            self._delete_offsets(g, g.t_delete)
            self.rare.add(g.t_delete, g.partition, key, None, "t2")

    def _connect(self, g: Group) -> None:
        rng = self.rng
        members = [self._member_id(g, n) for n in range(g.members)]
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
            self._delete_offsets(g, g.t_delete)

    # KIP-848 consumer groups ---------------------------------------------------------------
    def _consumer(self, g: Group) -> None:
        rng, w, add = self.rng, self.w, self.rare.add
        names = w.topic_names
        epoch = int(rng.integers(1, 50)) if g.t_start < w.start + HOUR_MS else 1
        with_hash = rng.random() < 0.7
        with_epochs = rng.random() < 0.4
        with_ts = rng.random() < 0.4
        classic_member = rng.random() < 0.1
        members = [self._member_id(g, n) for n in range(g.members)]
        hosts = [self.host() for _ in members]
        part = g.partition
        k3 = self.key(3, GroupId=g.name)
        k6 = self.key(6, GroupId=g.name)
        assign_epoch: dict[tuple[int, int], int] = {}

        def member_meta(ts: int, m: int) -> None:
            topics = self._topics(g, ts)
            fields: dict = {
                "InstanceId": None,
                "RackId": None,
                "ClientId": self.client_id(g, m),
                "ClientHost": hosts[m],
                "SubscribedTopicNames": [] if g.regex else [names[t] for t in topics],
                "SubscribedTopicRegex": g.regex,
                "RebalanceTimeoutMs": 300000,
                "ServerAssignor": "uniform" if m % 3 else None,
            }
            if classic_member and m == 0:
                sub = subscription(3, tuple(names[t] for t in topics), (), -1, None)
                fields["ClassicMemberMetadata"] = {
                    "SessionTimeoutMs": 45000,
                    "SupportedProtocols": [{"Name": "range", "Metadata": sub}],
                }
            k = self.key(5, GroupId=g.name, MemberId=members[m])
            add(ts, part, k, wire.encode_value(5, 0, fields), "t5")

        def group_epoch(ts: int) -> None:
            # ConsumerGroupMetadataValue v0: Epoch + tags [MetadataHash (tag 0)]
            fields = {"Epoch": epoch}
            if with_hash:
                fields["MetadataHash"] = int(rng.integers(1, 1 << 62))
            add(ts, part, k3, wire.encode_value(3, 0, fields), "t3")

        def target_epoch(ts: int, stamp: bool) -> None:
            # ConsumerGroupTargetAssignmentMetadataValue v0: AssignmentEpoch + [AssignmentTimestamp]
            fields = {"AssignmentEpoch": epoch, "AssignmentTimestamp": ts if stamp else 0}
            add(ts, part, k6, wire.encode_value(6, 0, fields), "t6")

        def assignments(ts: int) -> None:
            topics = self._topics(g, ts)
            per_member = self._assign(g, topics, len(members))
            for m, mid in enumerate(members):
                k7 = self.key(7, GroupId=g.name, MemberId=mid)
                add(ts, part, k7, self._target(per_member[m]), "t7")
            target_epoch(ts, with_ts)
            for m, mid in enumerate(members):
                owned = tuple(
                    (
                        t,
                        tuple(ps),
                        tuple(assign_epoch.setdefault((t, p_), epoch) for p_ in ps)
                        if with_epochs
                        else None,
                    )
                    for t, ps in per_member[m]
                )
                current = self._current(owned)
                k8 = self.key(8, GroupId=g.name, MemberId=mid)
                add(
                    ts,
                    part,
                    k8,
                    current.fill(MemberEpoch=epoch, PreviousMemberEpoch=epoch - 1),
                    "t8",
                )
                templates[m] = (k8, current)

        def leave(ts: int, m: int) -> None:
            mid = members[m]
            add(ts, part, self.key(8, GroupId=g.name, MemberId=mid), None, "t8")
            add(ts, part, self.key(7, GroupId=g.name, MemberId=mid), None, "t7")
            add(ts, part, self.key(5, GroupId=g.name, MemberId=mid), None, "t5")

        def regex(ts: int) -> None:
            if g.regex:
                k16 = self.key(16, GroupId=g.name, RegularExpression=g.regex)
                fields = {
                    "Topics": [names[t] for t in self._topics(g, ts)],
                    "Version": int(rng.integers(1000, 10**6)),
                    "Timestamp": ts,
                }
                add(ts, part, k16, wire.encode_value(16, 0, fields), "t16")

        templates: list[tuple[bytes, Template]] = [(b"", Template(b"", {}))] * len(members)
        ts0 = g.t_start
        for m in range(len(members)):
            member_meta(ts0, m)
        regex(ts0)
        group_epoch(ts0)
        assignments(ts0)
        for ts, what in self._timeline(g):
            epoch += 1
            if what == "drop":
                for m in range(len(members)):
                    member_meta(ts, m)
                regex(ts)
                group_epoch(ts)
                assignments(ts)
            elif rng.random() < 0.25:  # churn: one member leaves, a new one joins
                j = int(rng.integers(len(members)))
                leave(ts, j)
                members[j] = self._member_id(g, j)
                member_meta(ts, j)
                group_epoch(ts)
                assignments(ts)
            else:  # metadata refresh: epochs move, assignments stay
                group_epoch(ts)
                target_epoch(ts, with_ts)
                for k8, t8 in templates:
                    add(
                        ts,
                        part,
                        k8,
                        t8.fill(MemberEpoch=epoch, PreviousMemberEpoch=epoch - 1),
                        "t8",
                    )
        if g.t_empty is not None:
            ts = g.t_empty
            for m in range(len(members)):
                leave(ts, m)
            epoch += 1
            group_epoch(ts)
            target_epoch(ts, False)
        if g.t_delete is not None:
            ts = g.t_delete
            self._delete_offsets(g, ts)
            add(ts, part, k6, None, "t6")
            add(ts, part, self.key(4, GroupId=g.name), None, "t4")
            add(ts, part, k3, None, "t3")
            if g.regex:
                add(ts, part, self.key(16, GroupId=g.name, RegularExpression=g.regex), None, "t16")

    # streams groups -------------------------------------------------------------------------
    def _streams(self, g: Group) -> None:
        rng, w, add = self.rng, self.w, self.rare.add
        names = w.topic_names
        part = g.partition
        epoch = int(rng.integers(1, 30)) if g.t_start < w.start + HOUR_MS else 1
        topo_epoch = int(rng.integers(0, 4))
        members = [self._member_id(g, n) for n in range(g.members)]
        process = [str(new_uuid(rng)) for _ in members]
        k17 = self.key(17, GroupId=g.name)
        k20 = self.key(20, GroupId=g.name)
        k23 = self.key(23, GroupId=g.name)
        templates: list[tuple[bytes, Template]] = []
        v17 = {
            "Epoch": epoch,
            "MetadataHash": int(rng.integers(1, 1 << 62)),
            "ValidatedTopologyEpoch": topo_epoch,
            "LastAssignmentConfigs": [{"Key": "num.standby.replicas", "Value": "1"}],
        }
        ts0 = g.t_start
        changelog = f"{g.name}-store-changelog"
        topology = {
            "Epoch": topo_epoch,
            "Subtopologies": [
                {
                    "SubtopologyId": "0",
                    "SourceTopics": [names[t] for t in g.topics],
                    "SourceTopicRegex": [],
                    "StateChangelogTopics": [
                        {"Name": changelog, "Partitions": 0, "ReplicationFactor": 3}
                    ],
                    "RepartitionSinkTopics": [],
                    "RepartitionSourceTopics": [],
                    "CopartitionGroups": [],
                }
            ],
        }
        add(ts0, part, k23, wire.encode_value(23, 0, topology), "t23")
        for m, mid in enumerate(members):
            fields = {
                "InstanceId": None,
                "RackId": None,
                "ClientId": self.client_id(g, m),
                "ClientHost": self.host(),
                "RebalanceTimeoutMs": 300000,
                "TopologyEpoch": topo_epoch,
                "ProcessId": process[m],
                "UserEndpoint": {"Host": f"10.1.0.{m}", "Port": 8080} if m % 2 == 0 else None,
                "ClientTags": [{"Key": "zone", "Value": f"az-{m % 3}"}],
            }
            add(
                ts0,
                part,
                self.key(19, GroupId=g.name, MemberId=mid),
                wire.encode_value(19, 0, fields),
                "t19",
            )
        t17 = _epochs_template(17, v17, "Epoch")
        add(ts0, part, k17, t17.fill(Epoch=epoch), "t17")
        n_parts = max(int(w.topic_parts[t]) for t in g.topics)
        tasks = [list(range(n_parts))[m :: len(members)] for m in range(len(members))]
        for m, mid in enumerate(members):
            active = [{"SubtopologyId": "0", "Partitions": tasks[m]}]
            v21 = {"ActiveTasks": active, "StandbyTasks": [], "WarmupTasks": []}
            add(
                ts0,
                part,
                self.key(21, GroupId=g.name, MemberId=mid),
                wire.encode_value(21, 0, v21),
                "t21",
            )
        t20 = _epochs_template(20, {"AssignmentEpoch": epoch}, "AssignmentEpoch")
        add(ts0, part, k20, t20.fill(AssignmentEpoch=epoch), "t20")
        for m, mid in enumerate(members):
            active = [
                {
                    "SubtopologyId": "0",
                    "Partitions": tasks[m],
                    "AssignmentEpochs": [epoch] * len(tasks[m]),
                }
            ]
            v22 = {
                "MemberEpoch": epoch,
                "PreviousMemberEpoch": epoch - 1,
                "State": 1,  # streams: 1 = STABLE
                "ActiveTasks": active,
                "StandbyTasks": [],
                "WarmupTasks": [],
                "ActiveTasksPendingRevocation": [],
                "StandbyTasksPendingRevocation": [],
                "WarmupTasksPendingRevocation": [],
            }
            k22 = self.key(22, GroupId=g.name, MemberId=mid)
            t22 = _epochs_template(22, v22, *_MEMBER_EPOCHS)
            add(ts0, part, k22, t22.fill(MemberEpoch=epoch, PreviousMemberEpoch=epoch - 1), "t22")
            templates.append((k22, t22))
        for ts, _what in self._timeline(g):
            epoch += 1
            add(ts, part, k17, t17.fill(Epoch=epoch), "t17")
            add(ts, part, k20, t20.fill(AssignmentEpoch=epoch), "t20")
            for k22, t22 in templates:
                add(
                    ts, part, k22, t22.fill(MemberEpoch=epoch, PreviousMemberEpoch=epoch - 1), "t22"
                )
        if g.t_delete is not None:
            ts = g.t_delete
            self._delete_offsets(g, ts)
            for mid in members:
                for t in (22, 21, 19):
                    add(ts, part, self.key(t, GroupId=g.name, MemberId=mid), None, f"t{t}")
            for k, t in ((k20, 20), (k23, 23), (k17, 17)):
                add(ts, part, k, None, f"t{t}")

    # share groups ----------------------------------------------------------------------------
    def _share(self, g: Group) -> None:
        rng, w, add = self.rng, self.w, self.rare.add
        names, tids = w.topic_names, w.topic_ids
        part = g.partition
        epoch = int(rng.integers(1, 30))
        members = [self._member_id(g, n) for n in range(g.members)]
        k11 = self.key(11, GroupId=g.name)
        k12 = self.key(12, GroupId=g.name)
        ts0 = g.t_start
        for m, mid in enumerate(members):
            v10 = {
                "RackId": None,
                "ClientId": self.client_id(g, m),
                "ClientHost": self.host(),
                "SubscribedTopicNames": [names[t] for t in g.topics],
            }
            add(
                ts0,
                part,
                self.key(10, GroupId=g.name, MemberId=mid),
                wire.encode_value(10, 0, v10),
                "t10",
            )
        v11 = {"Epoch": epoch, "MetadataHash": int(rng.integers(1, 1 << 62))}
        t11 = _epochs_template(11, v11, "Epoch")
        add(ts0, part, k11, t11.fill(Epoch=epoch), "t11")
        per_member = self._assign(g, g.topics, len(members))
        for m, mid in enumerate(members):
            tps = [{"TopicId": tids[t], "Partitions": ps} for t, ps in per_member[m]]
            k13 = self.key(13, GroupId=g.name, MemberId=mid)
            add(ts0, part, k13, wire.encode_value(13, 0, {"TopicPartitions": tps}), "t13")
        v12 = {"AssignmentEpoch": epoch, "AssignmentTimestamp": ts0}
        t12 = _epochs_template(12, v12, "AssignmentEpoch")
        add(ts0, part, k12, t12.fill(AssignmentEpoch=epoch), "t12")
        templates = []
        for m, mid in enumerate(members):
            tps = [{"TopicId": tids[t], "Partitions": ps} for t, ps in per_member[m]]
            v14 = {
                "MemberEpoch": epoch,
                "PreviousMemberEpoch": epoch - 1,
                "State": 0,
                "AssignedPartitions": tps,
            }
            k14 = self.key(14, GroupId=g.name, MemberId=mid)
            t14 = _epochs_template(14, v14, *_MEMBER_EPOCHS)
            add(ts0, part, k14, t14.fill(MemberEpoch=epoch, PreviousMemberEpoch=epoch - 1), "t14")
            templates.append((k14, t14))
        v15 = {
            "InitializingTopics": [],
            "InitializedTopics": [
                {
                    "TopicId": tids[t],
                    "TopicName": names[t],
                    "Partitions": list(range(int(w.topic_parts[t]))),
                }
                for t in g.topics
            ],
            "DeletingTopics": [],
        }
        add(ts0, part, self.key(15, GroupId=g.name), wire.encode_value(15, 0, v15), "t15")
        for ts, _what in self._timeline(g):
            epoch += 1
            add(ts, part, k11, t11.fill(Epoch=epoch), "t11")
            add(ts, part, k12, t12.fill(AssignmentEpoch=epoch), "t12")
            for k14, t14 in templates:
                add(
                    ts, part, k14, t14.fill(MemberEpoch=epoch, PreviousMemberEpoch=epoch - 1), "t14"
                )

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
