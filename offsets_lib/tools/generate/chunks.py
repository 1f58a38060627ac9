"""One Parquet file of a dump: the bulk offset commits of a time slice, the transactional
commits, markers and rare records that fall in it, sorted by (partition, time) and numbered.

`Layout` fixes the slices once (the bulk's time mapping and the records that fall in each);
`chunk_table` builds one slice's table. A chunk's random draws come from its own stream
(`world.rng("chunk", c)`), in a fixed order, so the same seed gives the same bytes.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib import wire
from offsets_lib.tools.generate.bulk import commit_values, inverse_cdf
from offsets_lib.tools.generate.model import World

TOPIC = "__consumer_offsets"
CHUNK_ROWS = 2_500_000

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

_MARKER_KEYS = pa.array([wire.encode_control("ABORT")[0], wire.encode_control("COMMIT")[0]])
_MARKER_VALUES = pa.array([wire.encode_control("COMMIT", e)[1] for e in range(8)])
_TOPIC_POOL = pa.array([TOPIC], pa.string())


def take(pool: pa.Array, idx: np.ndarray) -> pa.Array:
    """``pool[idx]`` as an Arrow array (the indexes narrowed to int32 for `take`)."""
    return pool.take(pa.array(idx.astype(np.int32, copy=False)))


@dataclass
class Layout:
    """Where each record goes: the bulk's slices and the chunk of every fixed record."""

    world: World
    rare: list[tuple]
    txn: dict[str, np.ndarray]
    n_bulk: int
    tomb_p: float  # chance that a bulk commit is a tombstone instead
    n_chunks: int
    bounds: list[int]  # bulk rows [bounds[c], bounds[c + 1]) go to chunk c
    cdf: np.ndarray
    grid_t: np.ndarray
    rare_bucket: np.ndarray
    txn_bucket: np.ndarray
    marker_bucket: np.ndarray
    producer_ids: np.ndarray  # per group (-1: no transactional producer)
    producer_epochs: np.ndarray

    def ts_at(self, u: np.ndarray) -> np.ndarray:
        """Bulk timestamps of quantiles ``u`` of the window's activity (the daily cycle)."""
        return _ts_at(self.world, self.cdf, self.grid_t, u)


def _ts_at(world: World, cdf: np.ndarray, grid_t: np.ndarray, u: np.ndarray) -> np.ndarray:
    return world.start + np.floor(np.interp(u, cdf, grid_t)).astype(np.int64)


def layout(
    world: World, rare: list[tuple], txn: dict[str, np.ndarray], n_bulk: int, tomb_p: float
) -> Layout:
    """Cut the window into chunks of at most ~`CHUNK_ROWS` rows, in time order. Returns the layout;
    the fixed records go to the chunk whose time slice holds them."""
    records = world.records
    n_chunks = max(1, math.ceil(records / (CHUNK_ROWS - 100_000)))
    bounds = [n_bulk * c // n_chunks for c in range(n_chunks + 1)]
    cdf, grid_t = inverse_cdf(world)
    cut = [
        _ts_at(world, cdf, grid_t, np.array([bounds[c] / max(1, n_bulk)]))[0]
        if 0 < c < n_chunks
        else None
        for c in range(n_chunks + 1)
    ]
    edges = np.array([cut[c] for c in range(1, n_chunks)], np.int64)

    def bucket(ts: np.ndarray) -> np.ndarray:
        return np.searchsorted(edges, ts, side="right")

    return Layout(
        world,
        rare,
        txn,
        n_bulk,
        tomb_p,
        n_chunks,
        bounds,
        cdf,
        grid_t,
        rare_bucket=bucket(np.array([r[0] for r in rare], np.int64)),
        txn_bucket=bucket(txn["ts"]),
        marker_bucket=bucket(txn["mts"]),
        producer_ids=np.array([g.producer_id for g in world.groups], np.int64),
        producer_epochs=np.array([g.producer_epoch for g in world.groups], np.int32),
    )


@dataclass
class _Commits:
    """A chunk's offset commits (bulk, then transactional), before markers and rare rows."""

    ts: np.ndarray
    key: np.ndarray
    values: pa.Array
    versions: np.ndarray
    tomb: np.ndarray
    is_txn: np.ndarray


def _commits(plan: Layout, c: int, rng: np.random.Generator) -> _Commits:
    world, txn, n_bulk = plan.world, plan.txn, plan.n_bulk
    lo, hi = plan.bounds[c], plan.bounds[c + 1]
    u = (np.arange(lo, hi, dtype=np.float64) + rng.random(hi - lo)) / max(1, n_bulk)
    b_ts = plan.ts_at(u)
    b_key = world.sample_keys(rng, b_ts)
    sel = np.flatnonzero(plan.txn_bucket == c)
    t_ts, t_key = txn["ts"][sel], txn["key"][sel]
    ts = np.concatenate([b_ts, t_ts])
    key = np.concatenate([b_key, t_key])
    is_txn = np.concatenate([np.zeros(len(b_ts), bool), np.ones(len(t_ts), bool)])
    values, versions = commit_values(world, rng, ts, key, is_txn)
    tomb = np.concatenate([rng.random(len(b_ts)) < plan.tomb_p, np.zeros(len(t_ts), bool)])
    values = pc.if_else(pa.array(tomb), pa.scalar(None, pa.binary()), values)
    return _Commits(ts, key, values, versions, tomb, is_txn)


def _offsets(rng: np.random.Generator, part_sorted: np.ndarray, counters: np.ndarray) -> np.ndarray:
    """Offsets of rows sorted by partition: strictly increasing per partition from its
    counter, with a gap now and then (as the log cleaner leaves them); advances `counters`."""
    n = len(part_sorted)
    gap = np.ones(n, np.int64)
    gaps = rng.random(n) < 0.01
    gap[gaps] += rng.integers(1, 50, size=int(gaps.sum()))
    cs = np.cumsum(gap)
    partitions = len(counters)
    first = np.searchsorted(part_sorted, np.arange(partitions), side="left")
    last = np.searchsorted(part_sorted, np.arange(partitions), side="right")
    prev = np.where(first > 0, cs[np.maximum(first - 1, 0)], 0)
    run_base = counters - prev  # offset = counters[p] + cs - cs_before_partition
    offsets = run_base[part_sorted] + cs - 1
    nonempty = last > first
    counters[nonempty] = offsets[last[nonempty] - 1] + 1
    return offsets


def chunk_table(
    plan: Layout, c: int, counters: np.ndarray, seen: np.ndarray, by_type: Counter[str]
) -> tuple[pa.Table, int]:
    """Chunk ``c``'s rows: commits, markers and rare records, sorted and numbered.

    Args:
        plan: the layout.
        c: the chunk's index.
        counters: the next offset of each partition; advanced past this chunk's rows.
        seen: per offset key, whether a commit was written; updated.
        by_type: counts per record type (``t1``, ``t1.vN``, ``control``); updated.

    Returns:
        The table (`SCHEMA`) and the count of its bulk tombstones.
    """
    rng = plan.world.rng("chunk", c)
    cm = _commits(plan, c, rng)
    seen[cm.key] = True
    columns, tiebreak, n_markers = _columns(plan, c, cm)
    order = np.lexsort((tiebreak, columns["timestamp"], columns["partition"]))
    sorted_columns = {
        name: values[order] for name, values in columns.items() if isinstance(values, np.ndarray)
    }
    offsets = _offsets(rng, sorted_columns["partition"], counters)
    n = len(order)
    idx = pa.array(order.astype(np.int64))
    table = pa.table(
        {
            "key": columns["key"].take(idx),
            "value": columns["value"].take(idx),
            "topic": _TOPIC_POOL.take(pa.array(np.zeros(n, np.int32))),
            "partition": pa.array(sorted_columns["partition"], pa.int32()),
            "offset": pa.array(offsets, pa.int64()),
            "timestamp": pa.array(sorted_columns["timestamp"] * 1000, pa.timestamp("us", tz="UTC")),
            "timestampType": pa.array(np.zeros(n, np.int32)),
            "producer_id": pa.array(sorted_columns["producer_id"]),
            "producer_epoch": pa.array(sorted_columns["producer_epoch"]),
            "is_transactional": pa.array(sorted_columns["is_transactional"]),
            "is_control": pa.array(sorted_columns["is_control"]),
        },
        schema=SCHEMA,
    )
    by_type["t1"] += len(cm.ts)
    by_type["control"] += n_markers
    vcounts = np.bincount(cm.versions[~cm.tomb], minlength=5)
    for v in range(5):
        if vcounts[v]:
            by_type[f"t1.v{v}"] += int(vcounts[v])
    return table, int(cm.tomb.sum())


def _columns(plan: Layout, c: int, cm: _Commits) -> tuple[dict, np.ndarray, int]:
    """The chunk's columns in the order commits, markers, rare rows (unsorted), the sort's
    tiebreak (commits, then rare rows in writing order, then markers) and the marker count."""
    world, txn = plan.world, plan.txn
    g_of = world.key_group[cm.key]
    gp_all, ge_all = plan.producer_ids, plan.producer_epochs
    msel = np.flatnonzero(plan.marker_bucket == c)
    m_g, m_ts, m_commit = txn["mgroup"][msel], txn["mts"][msel], txn["mcommit"][msel]
    r_rows = [plan.rare[i] for i in np.flatnonzero(plan.rare_bucket == c)]

    def column(commits: np.ndarray, markers: np.ndarray, rare_field: int, dtype) -> np.ndarray:
        rare_values = np.array([r[rare_field] for r in r_rows], dtype)
        return np.concatenate([commits, markers, rare_values]).astype(dtype)

    pid = np.where(cm.is_txn, gp_all[g_of], -1).astype(np.int64)
    pep = np.where(cm.is_txn, ge_all[g_of], -1).astype(np.int32)
    columns = {
        "key": pa.concat_arrays(
            [
                take(world.key_bytes, cm.key),
                take(_MARKER_KEYS, m_commit.astype(np.int32)),
                pa.array([r[3] for r in r_rows], pa.binary()),
            ]
        ),
        "value": pa.concat_arrays(
            [
                cm.values,
                take(_MARKER_VALUES, (m_g % 8).astype(np.int32)),
                pa.array([r[4] for r in r_rows], pa.binary()),
            ]
        ),
        "timestamp": column(cm.ts, m_ts, 0, np.int64),
        "partition": column(world.g_part[g_of], world.g_part[m_g], 2, np.int32),
        "producer_id": column(pid, gp_all[m_g], 5, np.int64),
        "producer_epoch": column(pep, ge_all[m_g], 6, np.int32),
        "is_transactional": np.concatenate(
            [cm.is_txn, np.ones(len(m_ts), bool), np.array([r[5] != -1 for r in r_rows], bool)]
        ),
        "is_control": np.concatenate(
            [np.zeros(len(cm.ts), bool), np.ones(len(m_ts), bool), np.zeros(len(r_rows), bool)]
        ),
    }
    tiebreak = np.concatenate(
        [
            np.zeros(len(cm.ts), np.int64),
            np.full(len(m_ts), 1 << 50, np.int64),
            (1 << 40) + np.array([r[1] for r in r_rows], np.int64),
        ]
    )
    return columns, tiebreak, len(m_ts)
