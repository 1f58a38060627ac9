"""Output of `offsets generate`: the Parquet files, `_end_offsets.csv`, `_generate.json` and
the report (`generate_dump` drives the model and the event writers)."""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from offsets_lib.tools.generate.bulk import transactions
from offsets_lib.tools.generate.chunks import Layout, chunk_table, layout
from offsets_lib.tools.generate.events import Events
from offsets_lib.tools.generate.model import (
    END_MS,
    KINDS,
    PROFILES,
    GenerateError,
    World,
)

ROW_GROUP_ROWS = 262_144


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


# Log-end offsets of the consumed topics at the dump's end (`offsets run --end-offsets`, for the
# lag table). The leading underscore keeps Spark and pyarrow from reading it as dump data.
END_OFFSETS_FILE = "_end_offsets.csv"


def _write_end_offsets(world: World, path: Path, at_ms: int | None = None) -> None:
    """Per consumed partition at ``at_ms`` (default: the dump's end): above every offset
    committed for it by then (offsets grow at each partition's rate), plus a lag of up to 5000
    records, deterministic by seed."""
    elapsed = world.span if at_ms is None else at_ms - world.start
    committed_max = world.key_base + (world.key_rate * elapsed / 1000).astype(np.int64)
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
    earlier_hours: int = 0,
) -> GenerateReport:
    """Write a synthetic raw dump, deterministic by seed (the module docstring of
    `tools.generate` says what it holds): exactly ``records`` rows under ``out`` (stale
    ``part-*`` files removed); ``dominant_group_share`` of the offset commits by one group;
    ``earlier_hours``: also the dump as it was 1..N hours before its end (`earlier_folder`),
    for a run history. GenerateError (one line; the CLI exits 2): arguments the model cannot
    honour.
    """
    started = time.perf_counter()
    _check_arguments(groups, records, partitions, profile, days, dominant_group_share)
    world = World(groups, records, seed, partitions, PROFILES[profile], days, dominant_group_share)
    if world.commit_cdf is None:
        raise GenerateError("the model has no group that commits offsets; use more --groups")
    plan = _plan(world, groups, profile)
    counters = world.rng("offsets").integers(10_000, 50_000_000, size=partitions).astype(np.int64)
    seen = np.zeros(world.n_keys, bool)
    by_type: Counter[str] = Counter()
    tombstones = sum(1 for r in plan.rare if r[4] is None)
    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    written, bulk_tombstones = _write_chunks(plan, outdir, counters, seen, by_type)
    tombstones += bulk_tombstones
    for r in plan.rare:
        by_type[r[7]] += 1
    _write_end_offsets(world, outdir / END_OFFSETS_FILE)
    for hours in range(1, earlier_hours + 1):
        _write_earlier(world, written, outdir / earlier_folder(hours), END_MS - hours * HOUR_MS)
    report = _report(outdir, world, plan, written, by_type, tombstones, int(seen.sum()))
    arguments = {"groups": groups, "records": records, "seed": seed, "partitions": partitions}
    _write_parameters(outdir, report, {**arguments, "profile": profile, "days": days})
    report.seconds = time.perf_counter() - started
    return report


HOUR_MS = 3_600_000


def earlier_folder(hours: int) -> str:
    """The folder inside the dump's that holds the dump as it was ``hours`` before its end (its
    leading underscore keeps the readers of the whole dump out of it)."""
    return f"_{hours}h-earlier"


def _write_earlier(world: World, written: list[str], folder: Path, at_ms: int) -> None:
    """The records written up to ``at_ms`` and the log-end offsets at that instant."""
    import pyarrow.compute as pc

    folder.mkdir(exist_ok=True)
    table = pq.read_table(written)
    cut = pa_timestamp(at_ms)
    pq.write_table(
        table.filter(pc.less_equal(table["timestamp"], cut)), folder / "part-00000.parquet"
    )
    _write_end_offsets(world, folder / END_OFFSETS_FILE, at_ms)


def pa_timestamp(ms: int):
    """An epoch-millisecond instant as an Arrow UTC timestamp scalar (the dump's type)."""
    import pyarrow as pa

    return pa.scalar(ms * 1000, type=pa.timestamp("us", tz="UTC"))


def _write_chunks(
    plan: Layout, outdir: Path, counters: np.ndarray, seen: np.ndarray, by_type: Counter[str]
) -> tuple[list[str], int]:
    """The plan's Parquet files, one per chunk (stale ``part-*`` files removed): their paths
    and the bulk tombstones they hold (`generate_dump`)."""
    written: list[str] = []
    tombstones = 0
    for c in range(plan.n_chunks):
        table, bulk_tombstones = chunk_table(plan, c, counters, seen, by_type)
        path = outdir / f"part-{c:05d}.parquet"
        pq.write_table(
            table, path, row_group_size=ROW_GROUP_ROWS, compression="snappy", write_statistics=True
        )
        written.append(str(path))
        tombstones += bulk_tombstones
    for stale in outdir.glob("part-*.parquet"):
        if str(stale) not in written:
            stale.unlink()
    return written, tombstones


def _plan(world: World, groups: int, profile: str) -> Layout:
    """The fixed records (group-level events, transactions, markers), what is left for the bulk
    commits, and where each goes."""
    records, prof = world.records, world.p
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
    return layout(world, rare, txn, n_bulk, min(0.5, tomb_random / max(1, n_bulk)))


def _write_parameters(outdir: Path, report: GenerateReport, arguments: dict[str, object]) -> None:
    """`_generate.json`: the arguments and the report, without the time taken (same seed,
    same bytes)."""
    meta = {
        **arguments,
        "end_ms": END_MS,
        "report": {k: v for k, v in report.__dict__.items() if k not in ("seconds", "paths")},
    }
    (outdir / "_generate.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")


def _report(
    outdir: Path,
    world: World,
    plan: Layout,
    written: list[str],
    by_type: Counter[str],
    tombstones: int,
    distinct_keys: int,
) -> GenerateReport:
    """The counts of what was written (the time taken is added last)."""
    groups_by_kind = Counter(g.kind for g in world.groups)
    return GenerateReport(
        out=str(outdir),
        files=len(written),
        records=world.records,
        groups={k: groups_by_kind.get(k, 0) for k in KINDS if groups_by_kind.get(k, 0)},
        records_by_type=dict(sorted(by_type.items())),
        tombstones=tombstones,
        corrupt=by_type.get("corrupt", 0),
        transactional=len(plan.txn["ts"]),
        control=len(plan.txn["mts"]),
        pending_transactions=plan.txn["pending"],
        offset_keys=world.n_keys,
        distinct_offset_keys=distinct_keys,
        paths=written,
    )
