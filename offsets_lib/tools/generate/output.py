"""Output of `offsets generate`: the Parquet files, `_end_offsets.csv`, `_generate.json` and
the report (`generate_dump` drives the model and the event writers)."""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from offsets_lib import wire
from offsets_lib.tools.generate.bulk import commit_values, inverse_cdf, transactions
from offsets_lib.tools.generate.events import Events
from offsets_lib.tools.generate.model import (
    END_MS,
    KINDS,
    PROFILES,
    GenerateError,
    World,
)

TOPIC = "__consumer_offsets"
CHUNK_ROWS = 2_500_000
ROW_GROUP_ROWS = 262_144


def take(pool: pa.Array, idx: np.ndarray) -> pa.Array:
    return pool.take(pa.array(idx.astype(np.int32, copy=False)))


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


def _write_end_offsets(world: World, path: Path) -> None:
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


def _check_arguments(
    groups: int,
    records: int,
    partitions: int,
    profile: str,
    days: float,
    dominant_group_share: float,
) -> None:
    """Reject arguments the model cannot honour (the CLI exits 2 with the message)."""
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
    _check_arguments(groups, records, partitions, profile, days, dominant_group_share)
    prof = PROFILES[profile]
    world = World(groups, records, seed, partitions, prof, days, dominant_group_share)
    if world.commit_cdf is None:
        raise GenerateError("the model has no group that commits offsets; use more --groups")
    events = Events(world)
    events.build()
    rare = events.rare.rows
    txn = transactions(world, int(prof.txn_share * records))
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
    cdf, grid_t = inverse_cdf(world)

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
        values, versions = commit_values(world, rng, ts, key, is_txn)
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
                take(world.key_bytes, key),
                take(mkeys, m_commit.astype(np.int32)),
                pa.array([r[3] for r in r_rows], pa.binary()),
            ]
        )
        vals = pa.concat_arrays(
            [
                values,
                take(mvals, (m_g % 8).astype(np.int32)),
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
