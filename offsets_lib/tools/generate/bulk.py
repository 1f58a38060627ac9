"""Event writers of the bulk: offset commits and transactions, as arrays (no Python per record).

The commit values are the wire writer's bytes, one template per shape (version, metadata,
topic id or not) with the numbers filled in column-wise (`encoding.fill_column`).
"""

from __future__ import annotations

import functools
import uuid

import numpy as np
import pyarrow as pa

from offsets_lib import wire
from offsets_lib.tools.generate.encoding import Template, fill_column, template
from offsets_lib.tools.generate.model import DAY_MS, World

_VERSIONS = 5
"""OffsetCommitValue versions 0-4."""


@functools.lru_cache(maxsize=8)
def _commit_templates(metadata: tuple[str, ...]) -> list[Template]:
    """One OffsetCommitValue per (version, metadata string, with a topicId tag or not)."""
    out = []
    for version in range(_VERSIONS):
        for text in metadata:
            for with_topic_id in (False, True):
                fields = {
                    "offset": 0,
                    "leaderEpoch": 0,
                    "metadata": text,
                    "commitTimestamp": 0,
                    "expireTimestamp": 0,
                    "topicId": uuid.UUID(int=1) if with_topic_id else uuid.UUID(int=0),
                }
                patched = {"offset": 8, "commitTimestamp": 8}
                if version >= 3:
                    patched["leaderEpoch"] = 4
                if version == 1:
                    patched["expireTimestamp"] = 8
                if version >= 4 and with_topic_id:
                    patched["topicId"] = 16
                encode = functools.partial(wire.encode_value, 1, version)
                out.append(template(encode, fields, patched))
    return out


def _commit_shape(
    version: np.ndarray, meta: np.ndarray, with_topic_id: np.ndarray, n_meta: int
) -> np.ndarray:
    """Index into `_commit_templates` (same nesting order)."""
    return (version.astype(np.int64) * n_meta + meta) * 2 + with_topic_id


def transactions(world: World, budget: int) -> dict[str, np.ndarray]:
    """Transactional commit rows and their markers, as arrays (no Python per record). Returns
    ``ts``, ``key`` and ``group`` of the commits; ``mts``, ``mgroup`` and ``mcommit`` of the markers
    (a pending producer's last transaction has none); ``pending``, their count."""
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


def commit_values(
    world: World,
    rng: np.random.Generator,
    ts: np.ndarray,
    key: np.ndarray,
    txn: np.ndarray,
) -> tuple[pa.Array, np.ndarray]:
    """OffsetCommit values (v0-v4) for the rows, built column-wise. Returns (the values, each row's
    value version)."""
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
    meta = np.where(has_meta, world.g_meta[g], 0)
    topic = world.key_topic[key]
    known = rng.random(n) < 0.9
    with_topic_id = (version == 4) & known
    shape = _commit_shape(version, meta, with_topic_id, len(world.metadata))
    numbers = {
        "offset": offset,
        "leaderEpoch": epoch,
        "commitTimestamp": ts,
        "expireTimestamp": ts + world.g_retention[g],
        "topicId": world.topic_id_bytes[topic],
    }
    value = fill_column(_commit_templates(tuple(world.metadata)), shape, numbers)
    return value, version


def inverse_cdf(world: World) -> tuple[np.ndarray, np.ndarray]:
    """Grid for timestamps with a daily cycle (busier during the day, quieter at night). Returns
    (the activity's cumulative share at each grid point, the grid's ms since the start)."""
    grid = np.linspace(0.0, 1.0, 4097)
    t = grid * world.span
    rate = 1.0 + 0.6 * np.sin(2 * np.pi * ((world.start + t) % DAY_MS) / DAY_MS - np.pi / 2)
    cdf = np.concatenate([[0.0], np.cumsum((rate[1:] + rate[:-1]) / 2)])
    return cdf / cdf[-1], t
