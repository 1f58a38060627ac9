"""The model of a synthetic dump: its profile, topics, groups, names and offset-commit keys.

Everything random derives from the seed (numpy PCG64 via a SeedSequence per purpose), so the
same arguments give the same world. The event writers (`events.py`, `bulk.py`) turn it into
records; `output.py` writes them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from offsets_lib import wire
from offsets_lib.tools.generate.draws import PyRandom, new_uuid
from offsets_lib.tools.generate.encoding import fill_column, template
from offsets_lib.tools.generate.vocabulary import (
    APPS,
    DOMAINS,
    ENTITIES,
    METADATA,
    NON_ASCII,
    TEAMS,
)

END_MS = 1_700_000_000_000
"""Every dump ends here (2023-11-14T22:13:20Z), whatever the seed."""
DAY_MS = 86_400_000
HOUR_MS = 3_600_000

KINDS = ("classic", "simple", "connect", "consumer", "streams", "share")
"""Group kinds: classic consumer-protocol groups, offsets-only groups, Connect worker groups,
KIP-848 consumer groups, streams (KIP-1071) and share (KIP-932) groups."""
COMMITTING = ("classic", "simple", "consumer", "streams")


@dataclass(frozen=True)
class Profile:
    """Mix of a dump: `kinds` are shares of groups, `*_share` are shares of records."""

    name: str
    kinds: dict[str, float]
    gm_share: float
    kip848_share: float
    streams_share: float
    share_share: float
    tombstone_share: float
    txn_share: float
    corrupt_share: float
    type0_share: float
    legacy_share: float
    v1_share: float
    v4_partitions: float
    weight_sigma: float
    empty_share: float
    drop_share: float
    late_share: float
    txn_group_share: float
    non_ascii: bool


PROFILES: dict[str, Profile] = {
    "realistic": Profile(
        name="realistic",
        kinds={
            "classic": 0.62,
            "simple": 0.12,
            "connect": 0.04,
            "consumer": 0.16,
            "streams": 0.03,
            "share": 0.03,
        },
        gm_share=0.015,
        kip848_share=0.03,
        streams_share=0.006,
        share_share=0.004,
        tombstone_share=0.02,
        txn_share=0.025,
        corrupt_share=0.0005,
        type0_share=0.0005,
        legacy_share=0.002,
        v1_share=0.15,
        v4_partitions=0.3,
        weight_sigma=1.0,
        empty_share=0.08,
        drop_share=0.10,
        late_share=0.15,
        txn_group_share=0.05,
        non_ascii=True,
    ),
    "bench": Profile(
        name="bench",
        kinds={"classic": 0.85, "simple": 0.03, "consumer": 0.12},
        gm_share=0.01,
        kip848_share=0.03,
        streams_share=0.0,
        share_share=0.0,
        tombstone_share=0.02,
        txn_share=0.0,
        corrupt_share=0.0,
        type0_share=0.0,
        legacy_share=0.0,
        v1_share=0.15,
        v4_partitions=0.0,
        weight_sigma=0.5,
        empty_share=0.03,
        drop_share=0.05,
        late_share=0.05,
        txn_group_share=0.0,
        non_ascii=False,
    ),
}


class GenerateError(ValueError):
    """Bad arguments (the CLI exits 2 with the message)."""


def java_hash(s: str) -> int:
    """Java's String.hashCode(): 31-polynomial over UTF-16 code units, 32-bit signed wrap."""
    data = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group: str, partitions: int) -> int:
    """`abs(hashCode) % partitions`, with abs(Integer.MIN_VALUE) taken as 0 (Kafka's Utils.abs).
    Returns the group's offsets partition, as the broker computes it."""
    h = java_hash(group)
    return 0 if h == -(1 << 31) else abs(h) % partitions


# --- the model -------------------------------------------------------------------------------


@dataclass
class Group:
    idx: int
    name: str
    kind: str
    partition: int
    weight: float
    topics: list[int]
    t_start: int
    t_end: int  # no commits from here on (Empty or deleted)
    t_empty: int | None = None
    t_delete: int | None = None
    t_drop: int | None = None  # the last topic is dropped from the subscription here
    members: int = 1
    retention_ms: int = 0  # > 0: clients send a retention -> v1 values
    old_client: bool = False
    txn: bool = False
    pending: bool = False
    producer_id: int = -1
    producer_epoch: int = -1
    key_start: int = 0
    key_kept: int = 0
    key_count: int = 0
    regex: str | None = None
    extra_events: int = 0


class World:
    def __init__(
        self,
        groups: int,
        records: int,
        seed: int,
        partitions: int,
        profile: Profile,
        days: float,
        dominant_share: float = 0.0,
    ):
        self.n_groups = groups
        self.dominant_share = dominant_share
        self.records = records
        self.seed = seed
        self.partitions = partitions
        self.p = profile
        self.end = END_MS
        self.start = END_MS - int(days * DAY_MS)
        self.span = self.end - self.start
        self.t_upgrade = self.start + int(0.6 * self.span)
        rng = self.rng("world")
        self._topics(rng)
        self._groups(rng)
        self._dominant()
        self._keys(rng)

    def seed_seq(self, *purpose: object) -> np.random.SeedSequence:
        words = [self.seed & 0xFFFFFFFF, self.seed >> 32 & 0xFFFFFFFF]
        for p in purpose:
            words += list(str(p).encode()) if isinstance(p, str) else [int(p)]
        return np.random.SeedSequence(words)

    def rng(self, *purpose: object) -> np.random.Generator:
        return np.random.default_rng(self.seed_seq(*purpose))

    def py(self, *purpose: object) -> PyRandom:
        return PyRandom(self.seed_seq(*purpose))

    # topics -----------------------------------------------------------------------------
    def _topics(self, rng: np.random.Generator) -> None:
        n = int(np.clip(round(self.n_groups * 0.15), 20, 3000))
        self.topic_names = []
        for i in range(n):
            d = DOMAINS[rng.integers(len(DOMAINS))]
            e = ENTITIES[rng.integers(len(ENTITIES))]
            self.topic_names.append(f"{d}.{e}.{i:04d}" if i % 3 else f"{d}-{e}-v{i % 7 + 1}-{i}")
        self.topic_parts = rng.choice(np.array([3, 6, 8, 12, 12, 16, 24]), size=n)
        self.topic_ids = [new_uuid(rng) for _ in range(n)]
        # popularity: a few topics are read by many groups
        pop = rng.pareto(1.2, size=n) + 1.0
        self.topic_p = pop / pop.sum()

    # groups -----------------------------------------------------------------------------
    def _kind_counts(self) -> dict[str, int]:
        shares = self.p.kinds
        counts = {k: math.floor(self.n_groups * s) for k, s in shares.items()}
        # at least one group of every kind of the profile when there is room
        for k in shares:
            if counts[k] == 0 and sum(counts.values()) < self.n_groups:
                counts[k] = 1
        counts["classic"] += self.n_groups - sum(counts.values())
        if counts["classic"] < 0:
            raise GenerateError(f"--groups {self.n_groups} is too small for the profile")
        return counts

    def _groups(self, rng: np.random.Generator) -> None:
        p = self.p
        kinds: list[str] = []
        for k, c in self._kind_counts().items():
            kinds += [k] * c
        order = rng.permutation(len(kinds))
        kinds = [kinds[i] for i in order]
        weights = rng.lognormal(0.0, p.weight_sigma, size=len(kinds))
        self.groups: list[Group] = []
        n_topics = len(self.topic_names)
        cdf = np.cumsum(self.topic_p).tolist()
        rng = self.py("groups")
        for i, kind in enumerate(kinds):
            name = self._group_name(rng, i, kind)
            n_t = int(min(n_topics, 1 + rng.poisson(4)))
            topics = rng.sample_weighted(cdf, n_t)
            late = rng.random() < p.late_share
            t_start = (
                self.start + int(rng.integers(0, HOUR_MS))
                if not late
                else self.start + int(rng.uniform(0.05, 0.9) * self.span)
            )
            g = Group(
                idx=i,
                name=name,
                kind=kind,
                partition=partition_for(name, self.partitions),
                weight=float(weights[i]),
                topics=topics,
                t_start=t_start,
                t_end=self.end,
                members=int(min(12, 1 + rng.poisson(2))),
            )
            self._life(rng, g)
            self.groups.append(g)
        self._ensure_deletions()
        if p.non_ascii:
            # a few ids outside ASCII, incl. a supplementary character (UTF-16 surrogates)
            for j, g in enumerate(self.groups[: max(1, len(self.groups) // 100)]):
                g.name = g.name + NON_ASCII[j % len(NON_ASCII)]
                g.partition = partition_for(g.name, self.partitions)

    def _life(self, rng: PyRandom, g: Group) -> None:
        """A group's retention, client age, Empty/deletion, dropped topic, regex and
        transactional producer (drawn in this order: the seed's bytes depend on it)."""
        p, kind, t_start, topics = self.p, g.kind, g.t_start, g.topics
        if kind in ("classic", "simple") and rng.random() < 0.15:
            g.retention_ms = rng.choice((1, 3, 7, 14, 30)) * DAY_MS
        g.old_client = kind in ("classic", "simple") and rng.random() < 0.05
        if kind != "connect" and kind != "share" and rng.random() < p.empty_share:
            g.t_empty = int(rng.uniform(t_start + HOUR_MS, self.end - HOUR_MS))
            if g.t_empty > t_start:
                g.t_end = g.t_empty
                if rng.random() < 0.6:
                    t_del = g.t_empty + int(rng.uniform(HOUR_MS, 2 * DAY_MS))
                    if t_del < self.end:
                        g.t_delete = t_del
            else:
                g.t_empty = None
        if len(topics) > 1 and kind != "connect" and rng.random() < p.drop_share:
            t_drop = int(rng.uniform(t_start + HOUR_MS, g.t_end))
            if t_drop < g.t_end - HOUR_MS:
                g.t_drop = t_drop
        if kind == "consumer" and rng.random() < 0.15:
            d = self.topic_names[topics[0]].split(".")[0].split("-")[0]
            g.regex = f"{d}\\..*"
        if kind == "streams" or (
            kind == "classic" and p.txn_group_share and rng.random() < p.txn_group_share
        ):
            g.txn = p.txn_share > 0
        if g.txn:
            g.producer_id = 1000 + g.idx * 7 + int(rng.integers(0, 7))
            g.producer_epoch = int(rng.integers(0, 40))
            g.pending = rng.random() < 0.25

    def _dominant(self) -> None:
        """With a dominant share: the first classic group commits that share of the bulk offset
        commits, all along the dump, over up to 40 topics (a skewed dump: the audit task of that
        group would hold that share)."""
        if not self.dominant_share:
            return
        g = next((g for g in self.groups if g.kind == "classic"), None)
        if g is None:
            raise GenerateError("--dominant-group-share needs a classic group; use more --groups")
        g.t_start, g.t_end = self.start, self.end
        g.t_empty = g.t_delete = g.t_drop = None
        g.topics = list(range(min(40, len(self.topic_names))))
        others = sum(o.weight for o in self.groups if o is not g and o.kind in COMMITTING)
        g.weight = self.dominant_share / (1.0 - self.dominant_share) * others

    def _ensure_deletions(self) -> None:
        """Small dumps still show one group of each kind going Empty and being deleted."""
        if self.p.empty_share <= 0:
            return
        for kind in ("classic", "consumer", "streams", "simple"):
            same = [g for g in self.groups if g.kind == kind]
            if len(same) < 2 or any(g.t_delete is not None for g in same):
                continue
            g = same[-1]
            g.t_start = min(g.t_start, self.start + HOUR_MS - 1)
            g.t_empty = g.t_end = self.start + int(0.3 * self.span)
            g.t_delete = self.start + int(0.4 * self.span)
            if g.t_drop is not None and g.t_drop >= g.t_end - HOUR_MS:
                g.t_drop = None

    def _group_name(self, rng: PyRandom, i: int, kind: str) -> str:
        team = TEAMS[rng.integers(len(TEAMS))]
        app = APPS[rng.integers(len(APPS))]
        if kind == "connect":
            return f"connect-cluster-{team}-{i:05d}"
        if kind == "streams":
            return f"{team}-{app}-streams-{i:05d}"
        if kind == "share":
            return f"share-{team}-{app}-workers-{i:05d}"
        if kind == "simple":
            return f"{team}.{app}.manual-{i:05d}"
        if kind == "consumer":
            return f"{team}-{app}-consumer-{i:05d}"
        return f"{team}-{app}-{i:05d}"

    # offset-commit key universe -----------------------------------------------------------
    def _keys(self, rng: np.random.Generator) -> None:
        pair_g, pair_t = [], []
        pos = 0
        parts = self.topic_parts
        for g in self.groups:
            g.key_start = pos
            if g.kind in COMMITTING:
                kept = g.topics[:-1] if g.t_drop is not None else g.topics
                pair_g += [g.idx] * len(g.topics)
                pair_t += g.topics
                g.key_kept = int(sum(parts[t] for t in kept))
                pos += int(sum(parts[t] for t in g.topics))
            g.key_count = pos - g.key_start
        pg = np.array(pair_g, np.int64)
        pt = np.array(pair_t, np.int64)
        width = parts[pt].astype(np.int64)
        self.key_group = np.repeat(pg, width)
        self.key_topic = np.repeat(pt, width)
        starts = np.repeat(np.cumsum(width) - width, width)
        self.key_part = (np.arange(len(self.key_group)) - starts).astype(np.int32)
        n = len(self.key_group)
        self.n_keys = n
        base = (rng.lognormal(10, 3, size=n)).astype(np.int64) % (1 << 40)
        rate = rng.lognormal(0.0, 1.5, size=n)  # messages per second
        # One log per topic partition: every group reading it sees the same offsets over time,
        # so a group's lag is the messages written since its last commit (zero to millions).
        log = self.key_topic.astype(np.int64) * (1 << 32) + self.key_part
        _, first, same_log = np.unique(log, return_index=True, return_inverse=True)
        self.key_base = base[first][same_log]
        self.key_rate = rate[first][same_log]
        self.key_epoch = rng.integers(0, 25, size=n).astype(np.int32)
        self.key_bump = self.start + (rng.random(n) * self.span * 3).astype(np.int64)
        # one wire-encoded key per (group, topic), its partition filled in per key
        keys = [
            template(
                lambda f: wire.encode_key(1, f),
                {"group": self.groups[g].name, "topic": self.topic_names[t], "partition": 0},
                {"partition": 4},
            )
            for g, t in zip(pair_g, pair_t, strict=True)
        ]
        pair_of_key = np.repeat(np.arange(len(pg)), width)
        self.key_bytes = fill_column(keys, pair_of_key, {"partition": self.key_part})
        self._group_arrays(rng)

    def _group_arrays(self, rng: np.random.Generator) -> None:
        """Per-group arrays for the vectorized sampler, and the offset metadata strings."""
        self.g_start = np.array([g.t_start for g in self.groups], np.int64)
        self.g_end = np.array([g.t_end for g in self.groups], np.int64)
        self.g_drop = np.array(
            [g.t_drop if g.t_drop is not None else self.end + 1 for g in self.groups], np.int64
        )
        self.g_kstart = np.array([g.key_start for g in self.groups], np.int64)
        self.g_kcount = np.array([g.key_count for g in self.groups], np.int64)
        self.g_kkept = np.array([g.key_kept for g in self.groups], np.int64)
        self.g_part = np.array([g.partition for g in self.groups], np.int32)
        self.g_retention = np.array([g.retention_ms for g in self.groups], np.int64)
        self.g_old = np.array([g.old_client for g in self.groups], bool)
        self.g_meta = rng.integers(1, len(METADATA), size=len(self.groups))
        self.g_meta_p = rng.choice([0.0, 0.05, 0.1, 0.5, 1.0], size=len(self.groups))
        committing = np.array([g.kind in COMMITTING and g.key_count > 0 for g in self.groups])
        w = np.array([g.weight for g in self.groups]) * committing
        self.commit_cdf = np.cumsum(w) / w.sum() if w.sum() > 0 else None
        steady = committing & (self.g_start < self.start + HOUR_MS) & (self.g_end >= self.end)
        ws = w * steady
        self.steady_cdf = np.cumsum(ws) / ws.sum() if ws.sum() > 0 else self.commit_cdf
        self.upgraded = self.rng("upgrade").random(self.partitions) < self.p.v4_partitions
        self.metadata = [
            m.replace("{app}", "svc").replace("{n}", str(1000 + i)) for i, m in enumerate(METADATA)
        ]
        ids = b"".join(u.bytes for u in self.topic_ids)
        self.topic_id_bytes = np.frombuffer(ids, np.uint8).reshape(-1, 16)

    def sample_keys(self, rng: np.random.Generator, ts: np.ndarray) -> np.ndarray:
        """Key index per commit: a group alive at `ts` by weight, then one of its keys. Returns an
        offset key index per commit."""
        n = len(ts)
        grp = np.searchsorted(self.commit_cdf, rng.random(n), side="right")
        for _ in range(4):
            bad = np.flatnonzero((ts < self.g_start[grp]) | (ts >= self.g_end[grp]))
            if len(bad) == 0:
                break
            grp[bad] = np.searchsorted(self.commit_cdf, rng.random(len(bad)), side="right")
        bad = np.flatnonzero((ts < self.g_start[grp]) | (ts >= self.g_end[grp]))
        if len(bad):
            grp[bad] = np.searchsorted(self.steady_cdf, rng.random(len(bad)), side="right")
        grp = np.minimum(grp, len(self.groups) - 1)
        count = np.where(ts >= self.g_drop[grp], self.g_kkept[grp], self.g_kcount[grp])
        return self.g_kstart[grp] + (rng.random(n) * count).astype(np.int64)


# --- group-level records (Python, the codec or the fast classic encoders) -------------------
