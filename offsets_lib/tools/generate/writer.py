"""What every group kind's record writer shares: the rare records written so far, the random
stream, memoized keys and values, a group's timeline, member ids and assignments.

`Events` (events.py) and the writers of modern_groups.py build on `EventWriter`.
"""

from __future__ import annotations

from offsets_lib import wire
from offsets_lib.tools.generate.draws import kafka_id, new_uuid
from offsets_lib.tools.generate.encoding import MEMBER_EPOCHS, Template, epochs_template
from offsets_lib.tools.generate.model import Group, World


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
        """Append one record; `seq` keeps the writing order among records of the same time.

        Args:
            ts: the record's timestamp (epoch ms).
            partition: its offsets partition.
            key, value: its bytes (value None: a tombstone).
            label: its record type for the report (``t2``, ``corrupt``, ...).
            pid, pepoch: producer id and epoch (-1: not transactional).
        """
        self.rows.append((ts, self.seq, partition, key, value, pid, pepoch, label))
        self.seq += 1


class EventWriter:
    """The state the group writers share; `Events.build` writes every group with it."""

    def __init__(self, world: World) -> None:
        self.w = world
        self.rare = RareRecords()
        self.rng = world.py("events")
        self.tombstone_keys = 0
        self.cache: dict[tuple, bytes] = {}
        self.templates: dict[tuple, Template] = {}
        self.keys: dict[tuple, bytes] = {}

    def key(self, record_type: int, **fields: object) -> bytes:
        """A record key written once per content (keys repeat at every rebalance)."""
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
        """A new member id: Kafka's 22-character form for the new coordinator's groups, else
        ``<client id>-<uuid>`` as the classic coordinator makes them.
        """
        u = new_uuid(self.rng)
        if g.kind in ("consumer", "share", "streams"):
            return kafka_id(u)
        return f"{self.client_id(g, n)}-{u}"

    def client_id(self, g: Group, n: int) -> str:
        """The client id of a group's n-th member."""
        return f"{g.name[:24]}-{n}" if g.kind != "connect" else f"connect-{n}"

    def host(self) -> str:
        """A random ``/10.a.b.c`` client host."""
        r = self.rng.integers
        a, b, c = r(0, 255), r(0, 255), r(0, 255)
        return f"/10.{a}.{b}.{c}"

    def topics_at(self, g: Group, at: int) -> list[int]:
        """The group's topics at a time: its last topic leaves the subscription at `t_drop`."""
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
        """Tombstones of every offset key of a group that is deleted."""
        self._offset_tombstones(g, ts, range(g.key_start, g.key_start + g.key_count))
