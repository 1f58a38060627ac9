"""Synthetic `__consumer_offsets` dumps (`offsets generate`), deterministic by seed.

`generate_dump(out, groups=..., records=..., seed=...)` writes Parquet files with the Spark
Kafka-source schema plus the batch-metadata columns (shared/spec/contract.md):

    key binary, value binary (null = tombstone), topic string ("__consumer_offsets"),
    partition int32, offset int64, timestamp timestamp[us, UTC], timestampType int32 (0),
    producer_id int64, producer_epoch int32, is_transactional bool, is_control bool

Files are `part-NNNNN.parquet` (at most `CHUNK_ROWS` rows each, `ROW_GROUP_ROWS`-row row groups,
snappy), rows sorted by (partition, offset) inside a file, files in time order. The same
arguments give byte-identical files (with the same pyarrow version); stale `part-*.parquet`
files of an earlier run in `out` are removed. `_generate.json` records the parameters.

Parameters
----------
groups      number of groups in the model (every group type, shares set by the profile)
records     exact number of rows written (data records + control markers + corrupt records);
            must be >= groups, and large enough for every group's first records
seed        everything random derives from it (numpy PCG64 via SeedSequence per purpose)
partitions  partitions of `__consumer_offsets`; group -> abs(java String.hashCode) % partitions
profile     "realistic" (default) or "bench", see `PROFILES`
days        length of the time window; it always ends at `END_MS` (seed-independent), so the
            newest record is at most `END_MS` and `--as-of latest` is close to it

Data model (both profiles; shares are of `records` unless said otherwise)
-------------------------------------------------------------------------
- Topics: a pool of ~0.15 x groups names (20..3000), 3-24 partitions each, a topic id each.
- Groups (realistic shares of `groups`): classic consumer groups 62% (GroupMetadata v3, members
  with real ConsumerProtocolSubscription v0-v3 / Assignment bytes), simple groups 12% (offsets
  only), Connect worker groups 4% (protocolType "connect", opaque member bytes, no offsets),
  KIP-848 consumer groups 16% (records 3, 5, 6, 7, 8; some use regex subscriptions with records 16;
  some carry AssignmentEpochs / AssignmentTimestamp / MetadataHash tags and ClassicMemberMetadata),
  streams groups 3% (17, 19, 20, 21, 22, 23), share groups 3% (10-15). Each group has 1 + Poisson(4)
  topics, an activity weight (lognormal), and lives on its hashed partition. A few group ids
  are non-ASCII (incl. a supplementary character) so hashing over UTF-16 units matters.
- Offset commits (the bulk, built with numpy/pyarrow, no Python per record): keys are drawn by
  group weight, then uniformly over the group's (topic, partition) keys; timestamps follow a
  daily cycle; committed offsets grow per key; leaderEpoch per key (-1 for old clients).
  Values: v3 by default, v1 with an explicit expireTimestamp for groups whose clients set a
  retention (~15% of commits), v4 (with topicId tag 90% of the time) on ~30% of the
  partitions after a broker upgrade at 60% of the window, ~0.2% legacy v0/v2; metadata ""
  90% of the time.
- Group life: rebalances rewrite GroupMetadata with new generations (member churn); KIP-848,
  streams and share groups bump epochs (3/6/8, 17/20/22, 11/12/14) with member churn (tombstones
  8, 7, 5 of a leaving member); ~10% of groups drop a topic (new subscriptions; its offsets become
  unsubscribed, some are then deleted with OffsetDelete tombstones); ~8% of groups go Empty
  (some early enough that their offsets are past a 7-day retention) and ~60% of those are
  deleted (offset tombstones, then the group tombstones); ~15% of groups appear mid-window.
- Tombstones: ~2% of records in total (deletions above plus random offset deletions).
- Transactions (realistic): streams groups and ~5% of classic groups commit through
  transactional producers: 1-6 offset records per transaction (producer_id, producer_epoch,
  is_transactional) then a COMMIT (96%) or ABORT (4%) control record on the same partition;
  the last transaction of ~25% of those producers has no marker (pending). Other rows have
  producer_id -1, producer_epoch -1, is_transactional false, is_control false.
- Rare records (realistic): ~0.05% type-0 (legacy) offset keys with value v0, and ~0.05% corrupt
  records (truncated values, unknown record type, unknown value version, invalid UTF-8
  metadata), each of which fails `wire.decode_record`; every other data record decodes.
- Offsets: each partition starts at a random base; offsets strictly increase with occasional
  gaps (as left by the log cleaner); timestamps are non-decreasing per partition.

The "bench" profile (issue 7) keeps the same machinery with the benchmark's mix: classic groups
85%, KIP-848 groups 12%, simple groups 3%; ~1% group metadata, ~3% KIP-848 records, ~2%
tombstones, v3/v1 values only, no transactions, no corrupt records. With 20k groups it has
~1.2M offset-commit keys (about 1.1-1.2M distinct keys are hit at 10M records).
"""

from __future__ import annotations

import base64
import bisect
import functools
import json
import math
import random
import struct
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from offsets_lib import wire

TOPIC = "__consumer_offsets"
END_MS = 1_700_000_000_000
"""Every dump ends here (2023-11-14T22:13:20Z), whatever the seed."""
CHUNK_ROWS = 2_500_000
ROW_GROUP_ROWS = 262_144
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


@dataclass
class GenerateReport:
    out: str
    files: int
    records: int
    groups: dict[str, int]
    records_by_type: dict[str, int]
    tombstones: int
    corrupt: int
    transactional: int
    control: int
    pending_transactions: int
    offset_keys: int
    distinct_offset_keys: int
    seconds: float = 0.0
    paths: list[str] = field(default_factory=list)

    def summary(self) -> str:
        kinds = " ".join(f"{k}={v}" for k, v in self.groups.items())
        return (
            f"generated {self.records} records in {self.files} files under {self.out}: "
            f"groups {sum(self.groups.values())} ({kinds}); "
            f"tombstones {self.tombstones}, transactional {self.transactional}, "
            f"markers {self.control}, pending txns {self.pending_transactions}, "
            f"corrupt {self.corrupt}; {self.distinct_offset_keys} distinct offset keys; "
            f"{self.seconds:.1f}s"
        )


# --- hashing (records.md section 1) -------------------------------------------------------


def java_hash(s: str) -> int:
    """Java's String.hashCode(): 31-polynomial over UTF-16 code units, 32-bit signed wrap."""
    data = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group: str, partitions: int) -> int:
    """`abs(hashCode) % partitions`, with abs(Integer.MIN_VALUE) taken as 0 (Kafka's Utils.abs)."""
    h = java_hash(group)
    return 0 if h == -(1 << 31) else abs(h) % partitions


# --- fast classic encoders (non-flexible layouts; equal to the codec, see the tests) -------


def _str(s: str | None) -> bytes:
    if s is None:
        return b"\xff\xff"
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _bytes(b: bytes | None) -> bytes:
    if b is None:
        return b"\xff\xff\xff\xff"
    return struct.pack(">i", len(b)) + b


@functools.lru_cache(maxsize=1 << 16)
def _topic_partitions(tps: tuple[tuple[str, tuple[int, ...]], ...]) -> bytes:
    out = [struct.pack(">i", len(tps))]
    for topic, parts in tps:
        out.append(_str(topic))
        out.append(struct.pack(f">i{len(parts)}i", len(parts), *parts))
    return b"".join(out)


@functools.lru_cache(maxsize=1 << 14)
def _topic_list(topics: tuple[str, ...]) -> bytes:
    return struct.pack(">i", len(topics)) + b"".join(_str(t) for t in topics)


def encode_subscription_fast(
    version: int,
    topics: tuple[str, ...],
    owned: tuple[tuple[str, tuple[int, ...]], ...],
    generation: int,
    rack: str | None,
) -> bytes:
    """ConsumerProtocolSubscription v0-v3 (UserData null); tuples so that parts are cached."""
    out = [struct.pack(">h", version), _topic_list(tuple(topics)), _bytes(None)]
    if version >= 1:
        out.append(_topic_partitions(owned))
    if version >= 2:
        out.append(struct.pack(">i", generation))
    if version >= 3:
        out.append(_str(rack))
    return b"".join(out)


def encode_assignment_fast(
    version: int, assigned: tuple[tuple[str, tuple[int, ...]], ...]
) -> bytes:
    """ConsumerProtocolAssignment v0-v3 (UserData null)."""
    return struct.pack(">h", version) + _topic_partitions(assigned) + _bytes(None)


def encode_group_metadata_v3(
    protocol_type: str,
    generation: int,
    protocol: str | None,
    leader: str | None,
    state_ts: int,
    members: list[tuple],
) -> bytes:
    """GroupMetadataValue v3; members are (memberId, groupInstanceId, clientId, clientHost,
    rebalanceTimeout, sessionTimeout, subscription, assignment)."""
    out = [
        struct.pack(">h", 3),
        _str(protocol_type),
        struct.pack(">i", generation),
        _str(protocol),
        _str(leader),
        struct.pack(">qi", state_ts, len(members)),
    ]
    for mid, iid, cid, host, rto, sto, sub, asg in members:
        out += [_str(mid), _str(iid), _str(cid), _str(host), struct.pack(">ii", rto, sto)]
        out += [_bytes(sub), _bytes(asg)]
    return b"".join(out)


def _patch_epochs(template: bytes, *epochs: int) -> bytes:
    """Replace the leading int32 field(s) right after the int16 version (types 3, 6, 8, ...)."""
    head = struct.pack(f">{len(epochs)}i", *epochs)
    return template[:2] + head + template[2 + len(head) :]


# --- Arrow helpers ---------------------------------------------------------------------------


def _fixed(arr: np.ndarray, dtype: str) -> pa.Array:
    """Big-endian bytes of each element as a binary array."""
    raw = np.ascontiguousarray(arr.astype(dtype))
    width = raw.dtype.itemsize
    fsb = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(width), len(raw), [None, pa.py_buffer(raw.tobytes())]
    )
    return fsb.cast(pa.binary())


def _packed(n: int, columns: list[tuple[str, np.ndarray]]) -> pa.Array:
    """Several big-endian fields per row, packed back to back, as one binary array."""
    rec = np.empty(n, dtype=[(name, arr_dtype) for name, (arr_dtype, _) in _named(columns)])
    for name, (_, values) in _named(columns):
        rec[name] = values
    width = rec.dtype.itemsize
    fsb = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(width), n, [None, pa.py_buffer(rec.tobytes())]
    )
    return fsb.cast(pa.binary())


def _named(columns: list[tuple[str, np.ndarray]]) -> list[tuple[str, tuple[str, np.ndarray]]]:
    return [(f"f{i}", (dtype, values)) for i, (dtype, values) in enumerate(columns)]


def _take(pool: pa.Array, idx: np.ndarray) -> pa.Array:
    return pool.take(pa.array(idx.astype(np.int32, copy=False)))


EMPTY = pa.scalar(b"", pa.binary())


# --- the model -------------------------------------------------------------------------------

_DOMAINS = [
    "orders",
    "payments",
    "clicks",
    "inventory",
    "users",
    "shipments",
    "audit",
    "metrics",
    "logs",
    "events",
    "sessions",
    "invoices",
    "fraud",
    "search",
    "recs",
    "billing",
    "ledger",
    "pricing",
    "catalog",
    "ads",
]
_ENTITIES = [
    "created",
    "updated",
    "deleted",
    "events",
    "state",
    "changes",
    "raw",
    "enriched",
    "dlq",
    "snapshots",
]
_APPS = [
    "indexer",
    "aggregator",
    "reconciler",
    "notifier",
    "enricher",
    "archiver",
    "router",
    "scorer",
    "sink",
    "loader",
    "dedup",
    "validator",
    "exporter",
    "tracker",
]
_TEAMS = ["core", "data", "risk", "growth", "platform", "ops", "search", "ml", "finance", "edge"]
_NON_ASCII = ("-über", "-消费者", "-café", "-😀")
_METADATA = (
    "",
    '{"app":"{app}","v":3}',
    "host=ip-10-0-3-17",
    "checkpoint:{n}",
    '{"ts":1699990000,"node":"n7"}',
    "ünïcode-meta",
)
_ASSIGNORS = ("range", "cooperative-sticky", "roundrobin", "sticky")


class _Py:
    """Scalar draws with Python's `random` (numpy's scalar calls cost ~1 us each)."""

    def __init__(self, seed_words: np.random.SeedSequence) -> None:
        self.r = random.Random(int(seed_words.generate_state(2, np.uint64)[0]))
        self.random = self.r.random

    def integers(self, lo: int, hi: int | None = None) -> int:
        return self.r.randrange(lo, hi) if hi is not None else self.r.randrange(lo)

    def uniform(self, lo: float, hi: float) -> float:
        return self.r.uniform(lo, hi)

    def choice(self, seq: list | tuple):
        return seq[self.r.randrange(len(seq))]

    def poisson(self, lam: float) -> int:
        limit, k, prod = math.exp(-lam), 0, self.r.random()
        while prod > limit:
            k += 1
            prod *= self.r.random()
        return k

    def bytes(self, n: int) -> bytes:
        return self.r.getrandbits(8 * n).to_bytes(n, "big")

    def sample_weighted(self, cdf: list[float], k: int) -> list[int]:
        """k distinct indices drawn with probabilities given by the cumulative `cdf`."""
        out: dict[int, None] = {}
        for _ in range(50 * k):
            if len(out) == k:
                break
            out[min(bisect.bisect_right(cdf, self.r.random() * cdf[-1]), len(cdf) - 1)] = None
        for i in range(len(cdf)):
            if len(out) == k:
                break
            out.setdefault(i, None)
        return list(out)


def _uuid(rng: _Py | np.random.Generator) -> uuid.UUID:
    b = bytearray(rng.bytes(16))
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    return uuid.UUID(bytes=bytes(b))


def _kafka_id(u: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode()


@dataclass
class _Group:
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


class _Rare:
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


class _World:
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

    def py(self, *purpose: object) -> _Py:
        return _Py(self.seed_seq(*purpose))

    # topics -----------------------------------------------------------------------------
    def _topics(self, rng: np.random.Generator) -> None:
        n = int(np.clip(round(self.n_groups * 0.15), 20, 3000))
        self.topic_names = []
        for i in range(n):
            d = _DOMAINS[rng.integers(len(_DOMAINS))]
            e = _ENTITIES[rng.integers(len(_ENTITIES))]
            self.topic_names.append(f"{d}.{e}.{i:04d}" if i % 3 else f"{d}-{e}-v{i % 7 + 1}-{i}")
        self.topic_parts = rng.choice(np.array([3, 6, 8, 12, 12, 16, 24]), size=n)
        self.topic_ids = [_uuid(rng) for _ in range(n)]
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
        self.groups: list[_Group] = []
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
            g = _Group(
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
                g.producer_id = 1000 + i * 7 + int(rng.integers(0, 7))
                g.producer_epoch = int(rng.integers(0, 40))
                g.pending = rng.random() < 0.25
            self.groups.append(g)
        self._ensure_deletions()
        if p.non_ascii:
            # a few ids outside ASCII, incl. a supplementary character (UTF-16 surrogates)
            for j, g in enumerate(self.groups[: max(1, len(self.groups) // 100)]):
                g.name = g.name + _NON_ASCII[j % len(_NON_ASCII)]
                g.partition = partition_for(g.name, self.partitions)

    def _dominant(self) -> None:
        """With a dominant share: the first classic group commits that share of the bulk offset
        commits, all along the dump, over up to 40 topics (issue 19: a group that dominates)."""
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

    def _group_name(self, rng: _Py, i: int, kind: str) -> str:
        team = _TEAMS[rng.integers(len(_TEAMS))]
        app = _APPS[rng.integers(len(_APPS))]
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
        self.key_base = (rng.lognormal(10, 3, size=n)).astype(np.int64) % (1 << 40)
        self.key_rate = rng.lognormal(0.0, 1.5, size=n)  # messages per second
        self.key_epoch = rng.integers(0, 25, size=n).astype(np.int32)
        self.key_bump = self.start + (rng.random(n) * self.span * 3).astype(np.int64)
        gnames = pa.array([g.name.encode() for g in self.groups], pa.binary())
        tnames = pa.array([t.encode() for t in self.topic_names], pa.binary())
        glen = np.array([len(g.name.encode()) for g in self.groups], np.int16)
        tlen = np.array([len(t.encode()) for t in self.topic_names], np.int16)
        self.key_bytes = pc.binary_join_element_wise(
            _packed(n, [(">i2", np.ones(n, np.int16)), (">i2", glen[self.key_group])]),
            _take(gnames, self.key_group),
            _fixed(tlen[self.key_topic], ">i2"),
            _take(tnames, self.key_topic),
            _fixed(self.key_part, ">i4"),
            b"",
        )
        # per-group arrays for the vectorized sampler
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
        self.g_meta = rng.integers(1, len(_METADATA), size=len(self.groups))
        self.g_meta_p = rng.choice([0.0, 0.05, 0.1, 0.5, 1.0], size=len(self.groups))
        committing = np.array([g.kind in COMMITTING and g.key_count > 0 for g in self.groups])
        w = np.array([g.weight for g in self.groups]) * committing
        self.commit_cdf = np.cumsum(w) / w.sum() if w.sum() > 0 else None
        steady = committing & (self.g_start < self.start + HOUR_MS) & (self.g_end >= self.end)
        ws = w * steady
        self.steady_cdf = np.cumsum(ws) / ws.sum() if ws.sum() > 0 else self.commit_cdf
        self.upgraded = self.rng("upgrade").random(self.partitions) < self.p.v4_partitions
        # metadata pools: classic (int16 length) then flexible (uvarint length+1), then ""
        metas = [
            m.replace("{app}", "svc").replace("{n}", str(1000 + i)).encode()
            for i, m in enumerate(_METADATA)
        ]
        self.meta_pool = pa.array(
            [struct.pack(">h", len(m)) + m for m in metas]
            + [bytes([len(m) + 1]) + m for m in metas],
            pa.binary(),
        )
        self.n_meta = len(metas)
        tags = [b"\x00"] + [b"\x01\x00\x10" + u.bytes for u in self.topic_ids] + [b""]
        self.tag_pool = pa.array(tags, pa.binary())

    def sample_keys(self, rng: np.random.Generator, ts: np.ndarray) -> np.ndarray:
        """Key index per commit: a group alive at `ts` by weight, then one of its keys."""
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


class _Events:
    """Builds every rare record of the dump from the model, in per-group time order."""

    def __init__(self, world: _World) -> None:
        self.w = world
        self.rare = _Rare()
        self.rng = world.py("events")
        self.tombstone_keys = 0
        self.cache: dict[tuple, bytes] = {}
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

    def _current(self, owned: tuple) -> bytes:
        """ConsumerGroupCurrentMemberAssignmentValue with epochs 0 (patched by the caller)."""
        memo = (8, owned)
        if memo not in self.cache:
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
            self.cache[memo] = wire.encode_value(8, 0, fields)
        return self.cache[memo]

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
        by_kind: dict[str, list[_Group]] = {k: [] for k in KINDS}
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

    def _times(self, g: _Group, n: int, lo: int, hi: int) -> list[int]:
        if n <= 0 or hi <= lo:
            return []
        return sorted(self.rng.integers(lo, hi) for _ in range(n))

    def _timeline(self, g: _Group) -> list[tuple[int, str]]:
        """Rebalance times plus the forced events (drop, empty), in time order."""
        hi = g.t_empty if g.t_empty is not None else self.w.end
        events = [(t, "rebalance") for t in self._times(g, g.extra_events, g.t_start + 1, hi)]
        if g.t_drop is not None:
            events.append((g.t_drop, "drop"))
        events.sort()
        return events

    def _member_id(self, g: _Group, n: int) -> str:
        u = _uuid(self.rng)
        if g.kind in ("consumer", "share", "streams"):
            return _kafka_id(u)
        return f"{self.client_id(g, n)}-{u}"

    def client_id(self, g: _Group, n: int) -> str:
        return f"{g.name[:24]}-{n}" if g.kind != "connect" else f"connect-{n}"

    def host(self) -> str:
        r = self.rng.integers
        a, b, c = r(0, 255), r(0, 255), r(0, 255)
        return f"/10.{a}.{b}.{c}"

    def _topics(self, g: _Group, at: int) -> list[int]:
        return g.topics[:-1] if g.t_drop is not None and at >= g.t_drop else g.topics

    def _assign(self, g: _Group, topics: list[int], n_members: int) -> list[list[tuple[int, list]]]:
        """Round-robin of the topics' partitions over the members: per member [(topic, parts)]."""
        out: list[dict[int, list[int]]] = [{} for _ in range(n_members)]
        i = 0
        for t in topics:
            for part in range(int(self.w.topic_parts[t])):
                out[i % n_members].setdefault(t, []).append(part)
                i += 1
        return [sorted(m.items()) for m in out]

    # offsets of a group that goes away ---------------------------------------------------
    def _offset_tombstones(self, g: _Group, ts: int, keys: range) -> None:
        w = self.w
        for k in keys:
            key = w.key_bytes[k].as_py()
            self.rare.add(ts, g.partition, key, None, "t1")
            self.tombstone_keys += 1

    def _delete_offsets(self, g: _Group, ts: int) -> None:
        self._offset_tombstones(g, ts, range(g.key_start, g.key_start + g.key_count))

    # classic and connect --------------------------------------------------------------------
    def _classic(self, g: _Group) -> None:
        rng = self.rng
        sub_version = rng.choice((0, 1, 3, 3, 3))
        protocol = _ASSIGNORS[int(rng.integers(len(_ASSIGNORS)))]
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
                asg = assigned[m]
                sub = encode_subscription_fast(
                    sub_version, tnames, owned[m], generation - 1, "rack-a" if m % 2 else None
                )
                rows.append(
                    (
                        mid,
                        f"{g.name[:20]}-instance-{m}" if static else None,
                        self.client_id(g, m),
                        hosts[m],
                        300000,
                        45000,
                        sub,
                        encode_assignment_fast(sub_version, asg),
                    )
                )
                owned[m] = asg
            value = encode_group_metadata_v3("consumer", generation, protocol, members[0], ts, rows)
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

    def _classic_end(self, g: _Group, key: bytes, generation: int) -> None:
        if g.t_empty is not None:
            value = encode_group_metadata_v3("consumer", generation + 1, None, None, g.t_empty, [])
            self.rare.add(g.t_empty, g.partition, key, value, "t2")
        if g.t_delete is not None:
            self._delete_offsets(g, g.t_delete)
            self.rare.add(g.t_delete, g.partition, key, None, "t2")

    def _connect(self, g: _Group) -> None:
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
                rows.append((mid, None, f"connect-{m}", f"/10.0.0.{m}", 60000, 10000, sub, asg))
            value = encode_group_metadata_v3(
                "connect", generation, "sessioned", members[0], ts, rows
            )
            self.rare.add(ts, g.partition, key, value, "t2")

    def _simple(self, g: _Group) -> None:
        if g.t_delete is not None:
            self._delete_offsets(g, g.t_delete)

    # KIP-848 consumer groups ---------------------------------------------------------------
    def _consumer(self, g: _Group) -> None:
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
                sub = encode_subscription_fast(3, tuple(names[t] for t in topics), (), -1, None)
                fields["ClassicMemberMetadata"] = {
                    "SessionTimeoutMs": 45000,
                    "SupportedProtocols": [{"Name": "range", "Metadata": sub}],
                }
            k = self.key(5, GroupId=g.name, MemberId=members[m])
            add(ts, part, k, wire.encode_value(5, 0, fields), "t5")

        def group_epoch(ts: int) -> None:
            # ConsumerGroupMetadataValue v0: Epoch + tags [MetadataHash (tag 0)]
            tags = b"\x00"
            if with_hash:
                tags = b"\x01\x00\x08" + struct.pack(">q", rng.integers(1, 1 << 62))
            add(ts, part, k3, struct.pack(">hi", 0, epoch) + tags, "t3")

        def target_epoch(ts: int, stamp: bool) -> None:
            # ConsumerGroupTargetAssignmentMetadataValue v0: AssignmentEpoch + [AssignmentTimestamp]
            tags = b"\x01\x00\x08" + struct.pack(">q", ts) if stamp else b"\x00"
            add(ts, part, k6, struct.pack(">hi", 0, epoch) + tags, "t6")

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
                value = _patch_epochs(self._current(owned), epoch, epoch - 1)
                k8 = self.key(8, GroupId=g.name, MemberId=mid)
                add(ts, part, k8, value, "t8")
                templates[m] = (k8, value)

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

        templates: list[tuple[bytes, bytes]] = [(b"", b"")] * len(members)
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
                for k8, v8 in templates:
                    add(ts, part, k8, _patch_epochs(v8, epoch, epoch - 1), "t8")
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
    def _streams(self, g: _Group) -> None:
        rng, w, add = self.rng, self.w, self.rare.add
        names = w.topic_names
        part = g.partition
        epoch = int(rng.integers(1, 30)) if g.t_start < w.start + HOUR_MS else 1
        topo_epoch = int(rng.integers(0, 4))
        members = [self._member_id(g, n) for n in range(g.members)]
        process = [str(_uuid(rng)) for _ in members]
        k17 = self.key(17, GroupId=g.name)
        k20 = self.key(20, GroupId=g.name)
        k23 = self.key(23, GroupId=g.name)
        templates: list[tuple[bytes, bytes]] = []
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
        v17_bytes = wire.encode_value(17, 0, v17)
        add(ts0, part, k17, v17_bytes, "t17")
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
        v20 = wire.encode_value(20, 0, {"AssignmentEpoch": epoch})
        add(ts0, part, k20, v20, "t20")
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
            v22b = wire.encode_value(22, 0, v22)
            add(ts0, part, k22, v22b, "t22")
            templates.append((k22, v22b))
        for ts, _what in self._timeline(g):
            epoch += 1
            add(ts, part, k17, _patch_epochs(v17_bytes, epoch), "t17")
            add(ts, part, k20, _patch_epochs(v20, epoch), "t20")
            for k22, v22b in templates:
                add(ts, part, k22, _patch_epochs(v22b, epoch, epoch - 1), "t22")
        if g.t_delete is not None:
            ts = g.t_delete
            self._delete_offsets(g, ts)
            for mid in members:
                for t in (22, 21, 19):
                    add(ts, part, self.key(t, GroupId=g.name, MemberId=mid), None, f"t{t}")
            for k, t in ((k20, 20), (k23, 23), (k17, 17)):
                add(ts, part, k, None, f"t{t}")

    # share groups ----------------------------------------------------------------------------
    def _share(self, g: _Group) -> None:
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
        v11 = wire.encode_value(
            11, 0, {"Epoch": epoch, "MetadataHash": int(rng.integers(1, 1 << 62))}
        )
        add(ts0, part, k11, v11, "t11")
        per_member = self._assign(g, g.topics, len(members))
        for m, mid in enumerate(members):
            tps = [{"TopicId": tids[t], "Partitions": ps} for t, ps in per_member[m]]
            k13 = self.key(13, GroupId=g.name, MemberId=mid)
            add(ts0, part, k13, wire.encode_value(13, 0, {"TopicPartitions": tps}), "t13")
        v12 = wire.encode_value(12, 0, {"AssignmentEpoch": epoch, "AssignmentTimestamp": ts0})
        add(ts0, part, k12, v12, "t12")
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
            v14b = wire.encode_value(14, 0, v14)
            add(ts0, part, k14, v14b, "t14")
            templates.append((k14, v14b))
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
            add(ts, part, k11, _patch_epochs(v11, epoch), "t11")
            add(ts, part, k12, _patch_epochs(v12, epoch), "t12")
            for k14, v14b in templates:
                add(ts, part, k14, _patch_epochs(v14b, epoch, epoch - 1), "t14")

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
            good = struct.pack(">hqih", 3, int(w.key_base[k]), 0, 0) + struct.pack(">q", ts)
            kind = i % 4
            if kind == 0:  # truncated value
                value = good[: int(self.rng.integers(3, len(good) - 1))]
            elif kind == 1:  # unknown record type
                key = struct.pack(">h", int(self.rng.integers(24, 200))) + key[2:]
            elif kind == 2:  # unknown value version
                value = struct.pack(">h", int(self.rng.integers(5, 99))) + good[2:]
            else:  # invalid UTF-8 in metadata
                bad = b"\xc3\x28\xff"
                value = struct.pack(">hqih", 3, int(w.key_base[k]), 0, len(bad)) + bad
                value += struct.pack(">q", ts)
            if kind == 1:
                value = good
            self.rare.add(ts, g.partition, key, value, "corrupt")


# --- transactions (vectorized) ------------------------------------------------------------------


def _transactions(world: _World, budget: int) -> dict[str, np.ndarray]:
    """Transactional commit rows and their markers, as arrays (no Python per record)."""
    groups = [g for g in world.groups if g.txn and g.key_count > 0]
    empty = np.zeros(0, np.int64)
    if budget <= 0 or not groups:
        return {"ts": empty, "key": empty, "group": empty, "mts": empty, "mgroup": empty,
                "mcommit": np.zeros(0, bool), "pending": 0}  # fmt: skip
    rng = world.rng("txn")
    sizes_mean = 3.5
    n_txn = max(1, int(budget / (sizes_mean + 1)))
    w = np.array([g.weight for g in groups])
    txn_group = rng.choice(len(groups), size=n_txn, p=w / w.sum())
    gi = np.array([g.idx for g in groups], np.int64)[txn_group]
    lo = np.maximum(world.g_start[gi], world.start) + 1
    hi = world.g_end[gi] - 100
    ok = hi > lo
    gi, lo, hi = gi[ok], lo[ok], hi[ok]
    ts = lo + (rng.random(len(gi)) * (hi - lo)).astype(np.int64)
    order = np.lexsort((ts, gi))
    gi, ts = gi[order], ts[order]
    size = rng.integers(1, 7, size=len(gi))
    row_txn = np.repeat(np.arange(len(gi)), size)
    row_g = gi[row_txn]
    row_ts = ts[row_txn]
    count = np.where(row_ts >= world.g_drop[row_g], world.g_kkept[row_g], world.g_kcount[row_g])
    row_key = world.g_kstart[row_g] + (rng.random(len(row_g)) * count).astype(np.int64)
    commit = rng.random(len(gi)) >= 0.04
    mts = np.minimum(ts + rng.integers(1, 50, size=len(gi)), world.end)
    # the last transaction of a "pending" producer gets no marker
    last = np.ones(len(gi), bool)
    last[:-1] = gi[:-1] != gi[1:]
    pending_group = np.array([world.groups[int(x)].pending for x in gi])
    has_marker = ~(last & pending_group)
    return {
        "ts": row_ts,
        "key": row_key,
        "group": row_g,
        "mts": mts[has_marker],
        "mgroup": gi[has_marker],
        "mcommit": commit[has_marker],
        "pending": int((~has_marker).sum()),
    }


# --- the bulk ------------------------------------------------------------------------------------


def _commit_values(
    world: _World,
    rng: np.random.Generator,
    ts: np.ndarray,
    key: np.ndarray,
    txn: np.ndarray,
) -> tuple[pa.Array, np.ndarray]:
    """OffsetCommit values (v0-v4) for the rows, built column-wise; returns (values, versions)."""
    n = len(ts)
    p = world.p
    g = world.key_group[key]
    part = world.g_part[g]
    version = np.full(n, 3, np.int16)
    v1 = world.g_retention[g] > 0
    version[v1] = 1
    if p.v4_partitions > 0:
        version[world.upgraded[part] & (ts >= world.t_upgrade) & ~v1] = 4
    if p.legacy_share > 0:
        legacy = rng.random(n) < p.legacy_share
        version[legacy] = np.where(rng.random(int(legacy.sum())) < 0.5, 0, 2)
    version[txn & (version < 3)] = 3
    offset = world.key_base[key] + (world.key_rate[key] * (ts - world.start) / 1000).astype(
        np.int64
    )
    epoch = world.key_epoch[key] + (ts > world.key_bump[key])
    epoch = np.where(world.g_old[g], -1, epoch).astype(np.int32)
    has_meta = rng.random(n) < world.g_meta_p[g]
    meta = np.where(has_meta, world.g_meta[g], 0) + np.where(version == 4, world.n_meta, 0)
    flex = version == 4
    with_epoch = version >= 3
    head = _packed(n, [(">i2", version), (">i8", offset)])
    epoch_part = pc.if_else(pa.array(with_epoch), _fixed(epoch, ">i4"), EMPTY)
    is_v1 = version == 1
    tail = pc.if_else(
        pa.array(is_v1),
        _packed(n, [(">i8", ts), (">i8", ts + world.g_retention[g])]),
        _fixed(ts, ">i8"),
    )
    topic = world.key_topic[key]
    known = rng.random(n) < 0.9
    tag_idx = np.where(flex, np.where(known, topic + 1, 0), len(world.topic_ids) + 1)
    value = pc.binary_join_element_wise(
        head, epoch_part, _take(world.meta_pool, meta), tail, _take(world.tag_pool, tag_idx), b""
    )
    return value, version


def _inverse_cdf(world: _World) -> tuple[np.ndarray, np.ndarray]:
    """Grid for timestamps with a daily cycle (busier during the day, quieter at night)."""
    grid = np.linspace(0.0, 1.0, 4097)
    t = grid * world.span
    rate = 1.0 + 0.6 * np.sin(2 * np.pi * ((world.start + t) % DAY_MS) / DAY_MS - np.pi / 2)
    cdf = np.concatenate([[0.0], np.cumsum((rate[1:] + rate[:-1]) / 2)])
    return cdf / cdf[-1], t


# --- the driver ----------------------------------------------------------------------------------

SCHEMA = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestampType", pa.int32()),
        ("producer_id", pa.int64()),
        ("producer_epoch", pa.int32()),
        ("is_transactional", pa.bool_()),
        ("is_control", pa.bool_()),
    ]
)


# Log-end offsets of the consumed topics at the dump's end (`offsets run --end-offsets`, for the
# lag table). The leading underscore keeps Spark and pyarrow from reading it as dump data.
END_OFFSETS_FILE = "_end_offsets.csv"


def _write_end_offsets(world: _World, path: Path) -> None:
    """Per consumed partition: above every offset committed for it (offsets grow at each key's
    rate), plus a lag of up to 5000 records, deterministic by seed."""
    committed_max = world.key_base + (world.key_rate * world.span / 1000).astype(np.int64)
    ends: dict[tuple[str, int], int] = {}
    for topic, part, offset in zip(
        world.key_topic.tolist(), world.key_part.tolist(), committed_max.tolist(), strict=True
    ):
        key = (world.topic_names[topic], part)
        ends[key] = max(ends.get(key, 0), offset)
    lag = world.rng("end-offsets").integers(0, 5000, size=len(ends))
    lines = ["topic,partition,log_end_offset"]
    for (topic, part), extra in zip(sorted(ends), lag.tolist(), strict=True):
        lines.append(f"{topic},{part},{ends[(topic, part)] + 1 + extra}")
    path.write_text("\n".join(lines) + "\n")


def generate_dump(
    out: str,
    *,
    groups: int,
    records: int,
    seed: int,
    partitions: int = 50,
    profile: str = "realistic",
    days: float = 8.0,
    dominant_group_share: float = 0.0,
) -> GenerateReport:
    """Write a synthetic raw dump under `out` (see the module docstring); returns a report."""
    started = time.perf_counter()
    if profile not in PROFILES:
        raise GenerateError(f"unknown profile {profile!r} (choose {', '.join(PROFILES)})")
    if groups < 1:
        raise GenerateError(f"--groups must be at least 1, got {groups}")
    if partitions < 1:
        raise GenerateError(f"--partitions must be at least 1, got {partitions}")
    if records < groups:
        raise GenerateError(f"--records ({records}) must be at least --groups ({groups})")
    if not 0.0 <= dominant_group_share < 1.0:
        raise GenerateError(
            f"--dominant-group-share must be within 0..1, got {dominant_group_share}"
        )
    if not 1.0 <= days <= 365.0:
        raise GenerateError(f"days must be within 1..365, got {days}")
    prof = PROFILES[profile]
    world = _World(groups, records, seed, partitions, prof, days, dominant_group_share)
    if world.commit_cdf is None:
        raise GenerateError("the model has no group that commits offsets; use more --groups")
    events = _Events(world)
    events.build()
    rare = events.rare.rows
    txn = _transactions(world, int(prof.txn_share * records))
    n_fixed = len(rare) + len(txn["ts"]) + len(txn["mts"])
    n_bulk = records - n_fixed
    if n_bulk < 0:
        need = n_fixed + groups
        raise GenerateError(
            f"--records {records} is too small for {groups} groups of profile {profile}: "
            f"their group records alone take {n_fixed}; use at least {need}"
        )
    tomb_random = max(0.0, prof.tombstone_share * records - events.tombstone_keys)
    tomb_p = min(0.5, tomb_random / max(1, n_bulk))

    n_chunks = max(1, math.ceil(records / (CHUNK_ROWS - 100_000)))
    bounds = [n_bulk * c // n_chunks for c in range(n_chunks + 1)]
    cdf, grid_t = _inverse_cdf(world)

    def ts_at(u: np.ndarray) -> np.ndarray:
        return world.start + np.floor(np.interp(u, cdf, grid_t)).astype(np.int64)

    cut = [
        ts_at(np.array([bounds[c] / max(1, n_bulk)]))[0] if 0 < c < n_chunks else None
        for c in range(n_chunks + 1)
    ]

    def bucket(ts: np.ndarray) -> np.ndarray:
        edges = np.array([cut[c] for c in range(1, n_chunks)], np.int64)
        return np.searchsorted(edges, ts, side="right")

    rare_ts = np.array([r[0] for r in rare], np.int64)
    rare_bucket = bucket(rare_ts)
    txn_bucket = bucket(txn["ts"])
    mk_bucket = bucket(txn["mts"])
    counters = world.rng("offsets").integers(10_000, 50_000_000, size=partitions).astype(np.int64)
    seen = np.zeros(world.n_keys, bool)
    by_type: Counter[str] = Counter()
    tombstones = sum(1 for r in rare if r[4] is None)
    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    mkeys = pa.array([wire.encode_control("ABORT")[0], wire.encode_control("COMMIT")[0]])
    mvals = pa.array([wire.encode_control("COMMIT", e)[1] for e in range(8)])
    topic_pool = pa.array([TOPIC], pa.string())
    gp_all = np.array([g.producer_id for g in world.groups], np.int64)
    ge_all = np.array([g.producer_epoch for g in world.groups], np.int32)
    for c in range(n_chunks):
        rng = world.rng("chunk", c)
        lo, hi = bounds[c], bounds[c + 1]
        u = (np.arange(lo, hi, dtype=np.float64) + rng.random(hi - lo)) / max(1, n_bulk)
        b_ts = ts_at(u)
        b_key = world.sample_keys(rng, b_ts)
        sel = np.flatnonzero(txn_bucket == c)
        t_ts, t_key = txn["ts"][sel], txn["key"][sel]
        ts = np.concatenate([b_ts, t_ts])
        key = np.concatenate([b_key, t_key])
        is_txn = np.concatenate([np.zeros(len(b_ts), bool), np.ones(len(t_ts), bool)])
        values, versions = _commit_values(world, rng, ts, key, is_txn)
        tomb = np.concatenate([rng.random(len(b_ts)) < tomb_p, np.zeros(len(t_ts), bool)])
        values = pc.if_else(pa.array(tomb), pa.scalar(None, pa.binary()), values)
        seen[key] = True
        g_of = world.key_group[key]
        pid = np.where(is_txn, gp_all[g_of], -1).astype(np.int64)
        pep = np.where(is_txn, ge_all[g_of], -1).astype(np.int32)
        tiebreak = np.zeros(len(ts), np.int64)
        # markers
        msel = np.flatnonzero(mk_bucket == c)
        m_g = txn["mgroup"][msel]
        m_ts = txn["mts"][msel]
        m_commit = txn["mcommit"][msel]
        # rare
        rsel = np.flatnonzero(rare_bucket == c)
        r_rows = [rare[i] for i in rsel]
        keys = pa.concat_arrays(
            [
                _take(world.key_bytes, key),
                _take(mkeys, m_commit.astype(np.int32)),
                pa.array([r[3] for r in r_rows], pa.binary()),
            ]
        )
        vals = pa.concat_arrays(
            [
                values,
                _take(mvals, (m_g % 8).astype(np.int32)),
                pa.array([r[4] for r in r_rows], pa.binary()),
            ]
        )
        all_ts = np.concatenate([ts, m_ts, np.array([r[0] for r in r_rows], np.int64)])
        all_part = np.concatenate(
            [world.g_part[g_of], world.g_part[m_g], np.array([r[2] for r in r_rows], np.int32)]
        ).astype(np.int32)
        all_tb = np.concatenate(
            [
                tiebreak,
                np.full(len(m_ts), 1 << 50, np.int64),
                (1 << 40) + np.array([r[1] for r in r_rows], np.int64),
            ]
        )
        all_pid = np.concatenate(
            [pid, gp_all[m_g], np.array([r[5] for r in r_rows], np.int64)]
        ).astype(np.int64)
        all_pep = np.concatenate(
            [pep, ge_all[m_g], np.array([r[6] for r in r_rows], np.int32)]
        ).astype(np.int32)
        all_txn = np.concatenate(
            [is_txn, np.ones(len(m_ts), bool), np.array([r[5] != -1 for r in r_rows], bool)]
        )
        all_ctl = np.concatenate(
            [np.zeros(len(ts), bool), np.ones(len(m_ts), bool), np.zeros(len(r_rows), bool)]
        )
        order = np.lexsort((all_tb, all_ts, all_part))
        part_sorted = all_part[order]
        n = len(order)
        gap = np.ones(n, np.int64)
        gaps = rng.random(n) < 0.01
        gap[gaps] += rng.integers(1, 50, size=int(gaps.sum()))
        cs = np.cumsum(gap)
        first = np.searchsorted(part_sorted, np.arange(partitions), side="left")
        last = np.searchsorted(part_sorted, np.arange(partitions), side="right")
        prev = np.where(first > 0, cs[np.maximum(first - 1, 0)], 0)
        run_base = counters - prev  # offset = counters[p] + cs - cs_before_partition
        offsets = run_base[part_sorted] + cs - 1
        nonempty = last > first
        counters[nonempty] = offsets[last[nonempty] - 1] + 1
        idx = pa.array(order.astype(np.int64))
        table = pa.table(
            {
                "key": keys.take(idx),
                "value": vals.take(idx),
                "topic": topic_pool.take(pa.array(np.zeros(n, np.int32))),
                "partition": pa.array(part_sorted, pa.int32()),
                "offset": pa.array(offsets, pa.int64()),
                "timestamp": pa.array(all_ts[order] * 1000, pa.timestamp("us", tz="UTC")),
                "timestampType": pa.array(np.zeros(n, np.int32)),
                "producer_id": pa.array(all_pid[order]),
                "producer_epoch": pa.array(all_pep[order]),
                "is_transactional": pa.array(all_txn[order]),
                "is_control": pa.array(all_ctl[order]),
            },
            schema=SCHEMA,
        )
        path = outdir / f"part-{c:05d}.parquet"
        pq.write_table(
            table, path, row_group_size=ROW_GROUP_ROWS, compression="snappy", write_statistics=True
        )
        written.append(str(path))
        # counts
        by_type["t1"] += len(ts)
        by_type["control"] += len(m_ts)
        tombstones += int(tomb.sum())
        vcounts = np.bincount(versions[~tomb], minlength=5)
        for v in range(5):
            if vcounts[v]:
                by_type[f"t1.v{v}"] += int(vcounts[v])
    for r in rare:
        by_type[r[7]] += 1
    for stale in outdir.glob("part-*.parquet"):
        if str(stale) not in written:
            stale.unlink()
    _write_end_offsets(world, outdir / END_OFFSETS_FILE)
    groups_by_kind = Counter(g.kind for g in world.groups)
    report = GenerateReport(
        out=str(outdir),
        files=len(written),
        records=records,
        groups={k: groups_by_kind.get(k, 0) for k in KINDS if groups_by_kind.get(k, 0)},
        records_by_type=dict(sorted(by_type.items())),
        tombstones=tombstones,
        corrupt=by_type.get("corrupt", 0),
        transactional=len(txn["ts"]),
        control=len(txn["mts"]),
        pending_transactions=txn["pending"],
        offset_keys=world.n_keys,
        distinct_offset_keys=int(seen.sum()),
        paths=written,
    )
    meta = {
        "groups": groups,
        "records": records,
        "seed": seed,
        "partitions": partitions,
        "profile": profile,
        "days": days,
        "end_ms": END_MS,
        "report": {k: v for k, v in report.__dict__.items() if k not in ("seconds", "paths")},
    }
    (outdir / "_generate.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    report.seconds = time.perf_counter() - started
    return report


__all__ = [
    "END_MS",
    "PROFILES",
    "GenerateError",
    "GenerateReport",
    "generate_dump",
    "java_hash",
    "partition_for",
]
