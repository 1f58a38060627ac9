"""Records of the groups of the new coordinator: KIP-848 consumer, streams and share groups.

One writer class per group kind, each a group's life in time order: its first records, then
one step per event of `EventWriter.timeline` (rebalance, a topic dropped), then what an Empty or
deleted group leaves. The random draws happen in the same order as the model was generated
with, so a seed gives the same bytes.
"""

from __future__ import annotations

from offsets_lib import wire
from offsets_lib.tools.generate.draws import new_uuid
from offsets_lib.tools.generate.encoding import (
    MEMBER_EPOCHS,
    Template,
    epochs_template,
    subscription,
)
from offsets_lib.tools.generate.model import HOUR_MS, Group
from offsets_lib.tools.generate.writer import EventWriter


class ConsumerGroupEvents:
    """A KIP-848 consumer group: records 3, 5, 6, 7, 8 and 16 (regex subscriptions)."""

    def __init__(self, events: EventWriter, g: Group) -> None:
        rng, w = events.rng, events.w
        self.ev, self.g, self.add, self.part = events, g, events.rare.add, g.partition
        self.names = w.topic_names
        self.epoch = int(rng.integers(1, 50)) if g.t_start < w.start + HOUR_MS else 1
        self.with_hash = rng.random() < 0.7
        self.with_epochs = rng.random() < 0.4
        self.with_ts = rng.random() < 0.4
        self.classic_member = rng.random() < 0.1
        self.members = [events.member_id(g, n) for n in range(g.members)]
        self.hosts = [events.host() for _ in self.members]
        self.k3 = events.key(3, GroupId=g.name)
        self.k6 = events.key(6, GroupId=g.name)
        self.assign_epoch: dict[tuple[int, int], int] = {}
        self.templates: list[tuple[bytes, Template]] = [(b"", Template(b"", {}))] * g.members

    def write(self) -> None:
        """The group's records from its start to its end."""
        g, rng = self.g, self.ev.rng
        self._join(g.t_start)
        for ts, what in self.ev.timeline(g):
            self.epoch += 1
            if what == "drop":
                self._join(ts)
            elif rng.random() < 0.25:  # churn: one member leaves, a new one joins
                j = int(rng.integers(len(self.members)))
                self._leave(ts, j)
                self.members[j] = self.ev.member_id(g, j)
                self._member_meta(ts, j)
                self._group_epoch(ts)
                self._assignments(ts)
            else:  # metadata refresh: epochs move, assignments stay
                self._group_epoch(ts)
                self._target_epoch(ts, self.with_ts)
                for k8, t8 in self.templates:
                    value = t8.fill(MemberEpoch=self.epoch, PreviousMemberEpoch=self.epoch - 1)
                    self.add(ts, self.part, k8, value, "t8")
        self._end()

    def _join(self, ts: int) -> None:
        """Every member's metadata, the regex, a new group epoch and a new assignment."""
        for m in range(len(self.members)):
            self._member_meta(ts, m)
        self._regex(ts)
        self._group_epoch(ts)
        self._assignments(ts)

    def _end(self) -> None:
        g, add, part = self.g, self.add, self.part
        if g.t_empty is not None:
            ts = g.t_empty
            for m in range(len(self.members)):
                self._leave(ts, m)
            self.epoch += 1
            self._group_epoch(ts)
            self._target_epoch(ts, False)
        if g.t_delete is not None:
            ts = g.t_delete
            self.ev.delete_offsets(g, ts)
            add(ts, part, self.k6, None, "t6")
            add(ts, part, self.ev.key(4, GroupId=g.name), None, "t4")
            add(ts, part, self.k3, None, "t3")
            if g.regex:
                k16 = self.ev.key(16, GroupId=g.name, RegularExpression=g.regex)
                add(ts, part, k16, None, "t16")

    def _member_meta(self, ts: int, m: int) -> None:
        g, names = self.g, self.names
        topics = self.ev.topics_at(g, ts)
        fields: dict = {
            "InstanceId": None,
            "RackId": None,
            "ClientId": self.ev.client_id(g, m),
            "ClientHost": self.hosts[m],
            "SubscribedTopicNames": [] if g.regex else [names[t] for t in topics],
            "SubscribedTopicRegex": g.regex,
            "RebalanceTimeoutMs": 300000,
            "ServerAssignor": "uniform" if m % 3 else None,
        }
        if self.classic_member and m == 0:
            sub = subscription(3, tuple(names[t] for t in topics), (), -1, None)
            fields["ClassicMemberMetadata"] = {
                "SessionTimeoutMs": 45000,
                "SupportedProtocols": [{"Name": "range", "Metadata": sub}],
            }
        k = self.ev.key(5, GroupId=g.name, MemberId=self.members[m])
        self.add(ts, self.part, k, wire.encode_value(5, 0, fields), "t5")

    def _group_epoch(self, ts: int) -> None:
        # ConsumerGroupMetadataValue v0: Epoch + tags [MetadataHash (tag 0)]
        fields = {"Epoch": self.epoch}
        if self.with_hash:
            fields["MetadataHash"] = int(self.ev.rng.integers(1, 1 << 62))
        self.add(ts, self.part, self.k3, wire.encode_value(3, 0, fields), "t3")

    def _target_epoch(self, ts: int, stamp: bool) -> None:
        # ConsumerGroupTargetAssignmentMetadataValue v0: AssignmentEpoch + [AssignmentTimestamp]
        fields = {"AssignmentEpoch": self.epoch, "AssignmentTimestamp": ts if stamp else 0}
        self.add(ts, self.part, self.k6, wire.encode_value(6, 0, fields), "t6")

    def _assignments(self, ts: int) -> None:
        g, ev, epoch = self.g, self.ev, self.epoch
        per_member = ev.assign(g, ev.topics_at(g, ts), len(self.members))
        for m, mid in enumerate(self.members):
            k7 = ev.key(7, GroupId=g.name, MemberId=mid)
            self.add(ts, self.part, k7, ev.target_value(per_member[m]), "t7")
        self._target_epoch(ts, self.with_ts)
        for m, mid in enumerate(self.members):
            owned = tuple(
                (
                    t,
                    tuple(ps),
                    tuple(self.assign_epoch.setdefault((t, p_), epoch) for p_ in ps)
                    if self.with_epochs
                    else None,
                )
                for t, ps in per_member[m]
            )
            current = ev.current_template(owned)
            k8 = ev.key(8, GroupId=g.name, MemberId=mid)
            value = current.fill(MemberEpoch=epoch, PreviousMemberEpoch=epoch - 1)
            self.add(ts, self.part, k8, value, "t8")
            self.templates[m] = (k8, current)

    def _leave(self, ts: int, m: int) -> None:
        mid, name = self.members[m], self.g.name
        for record_type in (8, 7, 5):
            key = self.ev.key(record_type, GroupId=name, MemberId=mid)
            self.add(ts, self.part, key, None, f"t{record_type}")

    def _regex(self, ts: int) -> None:
        g = self.g
        if g.regex:
            k16 = self.ev.key(16, GroupId=g.name, RegularExpression=g.regex)
            fields = {
                "Topics": [self.names[t] for t in self.ev.topics_at(g, ts)],
                "Version": int(self.ev.rng.integers(1000, 10**6)),
                "Timestamp": ts,
            }
            self.add(ts, self.part, k16, wire.encode_value(16, 0, fields), "t16")


class StreamsGroupEvents:
    """A streams group (KIP-1071): records 17, 19, 20, 21, 22 and 23 (its topology)."""

    def __init__(self, events: EventWriter, g: Group) -> None:
        rng, w = events.rng, events.w
        self.ev, self.g, self.add, self.part = events, g, events.rare.add, g.partition
        self.epoch = int(rng.integers(1, 30)) if g.t_start < w.start + HOUR_MS else 1
        self.topo_epoch = int(rng.integers(0, 4))
        self.members = [events.member_id(g, n) for n in range(g.members)]
        self.process = [str(new_uuid(rng)) for _ in self.members]
        self.k17 = events.key(17, GroupId=g.name)
        self.k20 = events.key(20, GroupId=g.name)
        self.k23 = events.key(23, GroupId=g.name)
        self.v17 = {
            "Epoch": self.epoch,
            "MetadataHash": int(rng.integers(1, 1 << 62)),
            "ValidatedTopologyEpoch": self.topo_epoch,
            "LastAssignmentConfigs": [{"Key": "num.standby.replicas", "Value": "1"}],
        }
        self.templates: list[tuple[bytes, Template]] = []

    def write(self) -> None:
        """The group's records from its start to its deletion (no Empty state is written)."""
        g, add, part = self.g, self.add, self.part
        ts0 = g.t_start
        self._topology(ts0)
        self._member_records(ts0)
        t17 = epochs_template(17, self.v17, "Epoch")
        add(ts0, part, self.k17, t17.fill(Epoch=self.epoch), "t17")
        t20 = self._assignments(ts0)
        for ts, _what in self.ev.timeline(g):
            self.epoch += 1
            epoch = self.epoch
            add(ts, part, self.k17, t17.fill(Epoch=epoch), "t17")
            add(ts, part, self.k20, t20.fill(AssignmentEpoch=epoch), "t20")
            for k22, t22 in self.templates:
                value = t22.fill(MemberEpoch=epoch, PreviousMemberEpoch=epoch - 1)
                add(ts, part, k22, value, "t22")
        if g.t_delete is not None:
            ts = g.t_delete
            self.ev.delete_offsets(g, ts)
            for mid in self.members:
                for t in (22, 21, 19):
                    add(ts, part, self.ev.key(t, GroupId=g.name, MemberId=mid), None, f"t{t}")
            for k, t in ((self.k20, 20), (self.k23, 23), (self.k17, 17)):
                add(ts, part, k, None, f"t{t}")

    def _topology(self, ts: int) -> None:
        g, names = self.g, self.ev.w.topic_names
        changelog = f"{g.name}-store-changelog"
        topology = {
            "Epoch": self.topo_epoch,
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
        self.add(ts, self.part, self.k23, wire.encode_value(23, 0, topology), "t23")

    def _member_records(self, ts: int) -> None:
        g, ev = self.g, self.ev
        for m, mid in enumerate(self.members):
            fields = {
                "InstanceId": None,
                "RackId": None,
                "ClientId": ev.client_id(g, m),
                "ClientHost": ev.host(),
                "RebalanceTimeoutMs": 300000,
                "TopologyEpoch": self.topo_epoch,
                "ProcessId": self.process[m],
                "UserEndpoint": {"Host": f"10.1.0.{m}", "Port": 8080} if m % 2 == 0 else None,
                "ClientTags": [{"Key": "zone", "Value": f"az-{m % 3}"}],
            }
            key = ev.key(19, GroupId=g.name, MemberId=mid)
            self.add(ts, self.part, key, wire.encode_value(19, 0, fields), "t19")

    def _assignments(self, ts: int) -> Template:
        """Target (21), assignment epoch (20) and current (22) records; the 20's template."""
        g, ev, epoch, n = self.g, self.ev, self.epoch, len(self.members)
        n_parts = max(int(ev.w.topic_parts[t]) for t in g.topics)
        tasks = [list(range(n_parts))[m::n] for m in range(n)]
        for m, mid in enumerate(self.members):
            active = [{"SubtopologyId": "0", "Partitions": tasks[m]}]
            v21 = {"ActiveTasks": active, "StandbyTasks": [], "WarmupTasks": []}
            key = ev.key(21, GroupId=g.name, MemberId=mid)
            self.add(ts, self.part, key, wire.encode_value(21, 0, v21), "t21")
        t20 = epochs_template(20, {"AssignmentEpoch": epoch}, "AssignmentEpoch")
        self.add(ts, self.part, self.k20, t20.fill(AssignmentEpoch=epoch), "t20")
        for m, mid in enumerate(self.members):
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
            k22 = ev.key(22, GroupId=g.name, MemberId=mid)
            t22 = epochs_template(22, v22, *MEMBER_EPOCHS)
            value = t22.fill(MemberEpoch=epoch, PreviousMemberEpoch=epoch - 1)
            self.add(ts, self.part, k22, value, "t22")
            self.templates.append((k22, t22))
        return t20


class ShareGroupEvents:
    """A share group (KIP-932): records 10 to 15 (no Empty state or deletion is written)."""

    def __init__(self, events: EventWriter, g: Group) -> None:
        self.ev, self.g, self.add, self.part = events, g, events.rare.add, g.partition
        self.epoch = int(events.rng.integers(1, 30))
        self.members = [events.member_id(g, n) for n in range(g.members)]
        self.k11 = events.key(11, GroupId=g.name)
        self.k12 = events.key(12, GroupId=g.name)
        self.templates: list[tuple[bytes, Template]] = []

    def write(self) -> None:
        """The group's records: its first ones, then new epochs at each event."""
        g, ev, add, part = self.g, self.ev, self.add, self.part
        ts0 = g.t_start
        names = ev.w.topic_names
        for m, mid in enumerate(self.members):
            v10 = {
                "RackId": None,
                "ClientId": ev.client_id(g, m),
                "ClientHost": ev.host(),
                "SubscribedTopicNames": [names[t] for t in g.topics],
            }
            key = ev.key(10, GroupId=g.name, MemberId=mid)
            add(ts0, part, key, wire.encode_value(10, 0, v10), "t10")
        v11 = {"Epoch": self.epoch, "MetadataHash": int(ev.rng.integers(1, 1 << 62))}
        t11 = epochs_template(11, v11, "Epoch")
        add(ts0, part, self.k11, t11.fill(Epoch=self.epoch), "t11")
        t12 = self._assignments(ts0)
        self._state(ts0)
        for ts, _what in ev.timeline(g):
            self.epoch += 1
            epoch = self.epoch
            add(ts, part, self.k11, t11.fill(Epoch=epoch), "t11")
            add(ts, part, self.k12, t12.fill(AssignmentEpoch=epoch), "t12")
            for k14, t14 in self.templates:
                value = t14.fill(MemberEpoch=epoch, PreviousMemberEpoch=epoch - 1)
                add(ts, part, k14, value, "t14")

    def _assignments(self, ts: int) -> Template:
        """Target (13), assignment epoch (12) and current (14) records; the 12's template."""
        g, ev, epoch = self.g, self.ev, self.epoch
        tids = ev.w.topic_ids
        per_member = ev.assign(g, g.topics, len(self.members))
        for m, mid in enumerate(self.members):
            tps = [{"TopicId": tids[t], "Partitions": ps} for t, ps in per_member[m]]
            k13 = ev.key(13, GroupId=g.name, MemberId=mid)
            self.add(ts, self.part, k13, wire.encode_value(13, 0, {"TopicPartitions": tps}), "t13")
        v12 = {"AssignmentEpoch": epoch, "AssignmentTimestamp": ts}
        t12 = epochs_template(12, v12, "AssignmentEpoch")
        self.add(ts, self.part, self.k12, t12.fill(AssignmentEpoch=epoch), "t12")
        for m, mid in enumerate(self.members):
            tps = [{"TopicId": tids[t], "Partitions": ps} for t, ps in per_member[m]]
            v14 = {
                "MemberEpoch": epoch,
                "PreviousMemberEpoch": epoch - 1,
                "State": 0,
                "AssignedPartitions": tps,
            }
            k14 = ev.key(14, GroupId=g.name, MemberId=mid)
            t14 = epochs_template(14, v14, *MEMBER_EPOCHS)
            value = t14.fill(MemberEpoch=epoch, PreviousMemberEpoch=epoch - 1)
            self.add(ts, self.part, k14, value, "t14")
            self.templates.append((k14, t14))
        return t12

    def _state(self, ts: int) -> None:
        """ShareGroupStatePartitionMetadata (15): every topic initialized."""
        w, g = self.ev.w, self.g
        v15 = {
            "InitializingTopics": [],
            "InitializedTopics": [
                {
                    "TopicId": w.topic_ids[t],
                    "TopicName": w.topic_names[t],
                    "Partitions": list(range(int(w.topic_parts[t]))),
                }
                for t in g.topics
            ],
            "DeletingTopics": [],
        }
        key = self.ev.key(15, GroupId=g.name)
        self.add(ts, self.part, key, wire.encode_value(15, 0, v15), "t15")
