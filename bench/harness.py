"""`make bench`: the full audit against the raw read-and-dedupe limit, in one Spark session.

For each size (1M and 10M records, `offsets generate --profile bench`, generated once under
bench/data), after a warm-up pass on 100k records and one at the size (`_warm_up`), the
baseline (Spark reads the dump and keeps the latest record per raw key, then writes Parquet),
the Arrow floor (pyarrow does the same in this process: the physical floor of that work on the
machine) and the full `offsets run` pipeline (decode, compact, group state, decisions, Delta
tables) alternate A B C, C B A, A B C; medians of the three repetitions go to
bench/results.json, with the run's time over the floor's. CPU seconds of this process tree
(driver, JVM, Python workers) and of every other process on the machine are recorded for each
run: the latter flags a noisy machine, which on 2 shared cores can double wall times. With
--dominant-group-share, each size's skewed dump and its unskewed twin take turns, rep by rep.

    PYTHONPATH=. python -m bench.harness [--sizes 1000000,10000000] [--reps 3] [--out bench]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

import psutil

DEFAULT_SIZES = (1_000_000, 10_000_000)
BENCH_GROUPS = 20_000


def _own_cpu(proc: psutil.Process) -> tuple[float, float] | None:
    """User and system seconds of one process (not of its children: each is sampled itself)."""
    try:
        times = proc.cpu_times()
    except psutil.Error:
        return None
    return times.user, times.system


def _machine_busy_seconds() -> float:
    times = psutil.cpu_times()
    return times.user + times.nice + times.system + times.irq + times.softirq + times.steal


# A rep is flagged when the rest of the machine used more than this share of the cores' time.
BUSY_SHARE = 0.10


class _SampledWhileInside:
    """Calls `_sample` on entering, every `interval_s` in a thread while inside, and on leaving
    (`_started` tells a sample from the one taken before the work)."""

    def __init__(self, interval_s: float) -> None:
        self._interval = interval_s
        self._started = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample()

    def __enter__(self) -> Self:
        self._sample()  # the processes alive before the work: their CPU so far is not counted
        self._started = True
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()


class _Sampler(_SampledWhileInside):
    """CPU and peak RSS of this process tree, sampled every 0.2 s, per process.

    CPU is counted per process id (the newest sample minus the one before the work started), so
    a Python worker that exits mid-run keeps what it used until its last sample (at most 0.2 s
    of it is lost) and the total can never go negative (summing the live tree twice did, when
    workers alive at the start had exited by the end). Peak RSS is kept apart for the Python
    driver, the JVM (in local mode driver and executors at once, sized by its heap) and the
    largest Python worker.
    """

    def __init__(self) -> None:
        super().__init__(0.2)
        self.peak_mb = 0.0
        self.jvm_peak_mb = 0.0
        self.worker_peak_mb = 0.0
        self._me = psutil.Process()
        self._start_cpu: dict[int, tuple[float, float]] = {}
        self._last_cpu: dict[int, tuple[float, float]] = {}

    def _tree(self) -> list[psutil.Process]:
        return [self._me, *self._me.children(recursive=True)]

    def _sample(self) -> None:
        for proc in self._tree():
            cpu = _own_cpu(proc)
            if cpu is None:
                continue
            self._start_cpu.setdefault(proc.pid, (0.0, 0.0) if self._started else cpu)
            self._last_cpu[proc.pid] = cpu
            try:
                rss = proc.memory_info().rss / 2**20
                name = proc.name()
            except psutil.Error:
                continue
            if proc.pid == self._me.pid:
                self.peak_mb = max(self.peak_mb, rss)
            elif "java" in name:
                self.jvm_peak_mb = max(self.jvm_peak_mb, rss)
            else:
                self.worker_peak_mb = max(self.worker_peak_mb, rss)

    def _used(self, part: int) -> float:
        return sum(
            max(0.0, last[part] - self._start_cpu[pid][part])
            for pid, last in self._last_cpu.items()
        )

    @property
    def cpu_s(self) -> float:
        """User plus system: summed from the parts, so it is never below the system share (the
        difference of the totals was, by one rounding)."""
        return self._used(0) + self._used(1)

    @property
    def system_cpu_s(self) -> float:
        """The kernel's share: on this Firecracker VM a process's first touch of memory costs
        ~9 CPU-s per GB in 2 MB pages (0.5 s in 4 KB pages), so it tells a run that grew fresh
        Python workers' heaps from one that reused them."""
        return self._used(1)


# A process of the production line by a word of its command line (the first match names it),
# or by its program: tar and gzip unpack the executors' environment (Spark's Utils.unpack)
PROCESS_KINDS = (
    ("driver JVM", "org.apache.spark.deploy.SparkSubmit"),
    ("executor JVMs", "CoarseGrainedExecutorBackend"),
    ("executors' Python", "pyspark.daemon"),
    ("driver Python", "offsets_job.py"),
    ("driver Python", "production_baseline.py"),
    ("Kafka broker", "kafka.Kafka"),
    ("Spark master, workers", "org.apache.spark.deploy."),
)
PROGRAM_KINDS = {"tar": "unpacking", "gzip": "unpacking", "weed": "S3 (SeaweedFS)"}


def process_kind(command: list[str]) -> str:
    """The kind of the process that runs `command` (its words), else "other"."""
    program = command[0].rsplit("/", 1)[-1] if command else ""
    if program in PROGRAM_KINDS:
        return PROGRAM_KINDS[program]
    for kind, marker in PROCESS_KINDS:
        if any(marker in word for word in command):
            return kind
    return "other"


class MachineCpu(_SampledWhileInside):
    """CPU seconds of every process of the machine by `process_kind`, sampled every 0.5 s
    while inside (each process's own user and system time, from its first sample or from
    the start; one that exits loses at most its last 0.5 s): where a 2-core deployment, whose
    processes all share the cores, spends them."""

    def __init__(self, interval_s: float = 0.5) -> None:
        super().__init__(interval_s)
        self._start: dict[int, float] = {}
        self._last: dict[int, tuple[str, float]] = {}

    def _sample(self) -> None:
        for proc in psutil.process_iter():
            cpu = _own_cpu(proc)
            if cpu is None:
                continue
            if proc.pid not in self._last:
                try:
                    kind = process_kind(proc.cmdline())
                except psutil.Error:
                    continue
                self._start[proc.pid] = 0.0 if self._started else sum(cpu)
            else:
                kind = self._last[proc.pid][0]
            self._last[proc.pid] = (kind, sum(cpu))

    def by_kind(self) -> dict[str, float]:
        """CPU seconds by kind, largest first, rounded to 0.1 s."""
        used: dict[str, float] = {}
        for pid, (kind, cpu) in self._last.items():
            used[kind] = used.get(kind, 0.0) + max(0.0, cpu - self._start[pid])
        return {kind: round(s, 1) for kind, s in sorted(used.items(), key=lambda kv: -kv[1])}


def _spark_stages(spark) -> list[Any]:
    """Spark's own record of the application's stages (its status store, kept with the UI off)."""
    context = spark.sparkContext
    # AppStatusStore.stageList(statuses, details, withSummaries, unsortedQuantiles, taskStatus):
    # every stage (statuses null), without task details; py4j passes no Scala default argument
    no_quantiles = context._gateway.new_array(context._jvm.double, 0)
    stages = (
        context._jsc.sc()
        .statusStore()
        .stageList(None, False, False, no_quantiles, context._jvm.java.util.ArrayList())
    )
    return [stages.apply(i) for i in range(stages.size())]


def _spilled_mb(spark, after_stage: int) -> dict[str, float]:
    """Bytes Spark spilled (in memory's form and on disk) in the stages after `after_stage`."""
    newer = [s for s in _spark_stages(spark) if s.stageId() > after_stage]
    return {
        "spill_memory_mb": sum(s.memoryBytesSpilled() for s in newer) / 2**20,
        "spill_disk_mb": sum(s.diskBytesSpilled() for s in newer) / 2**20,
    }


def measure(work: Callable[[], dict[str, float] | None], spark=None) -> dict[str, Any]:
    """Run `work` and measure it.

    Args:
        work: the measured work; it may return its seconds per stage (the pipeline's stage log).
        spark: the session, to read what its stages spilled.

    Returns:
        Wall seconds, own and other processes' CPU seconds (and whether the machine was busy),
        peak RSS of the driver, the JVM and the largest Python worker, the seconds per stage
        and, given the session, the spill.
    """
    last_stage = max((s.stageId() for s in _spark_stages(spark)), default=-1) if spark else -1
    before_busy = _machine_busy_seconds()
    started = time.perf_counter()
    with _Sampler() as sampler:
        stages = work()
    wall = time.perf_counter() - started
    own = sampler.cpu_s
    others = max(0.0, _machine_busy_seconds() - before_busy - own)
    measured: dict[str, Any] = {
        "wall_s": wall,
        "cpu_s": own,
        "system_cpu_s": sampler.system_cpu_s,
        "other_processes_cpu_s": others,
        "is_machine_busy": others > BUSY_SHARE * wall * (os.cpu_count() or 1),
        "rss_mb": sampler.peak_mb,
        "jvm_rss_mb": sampler.jvm_peak_mb,
        "python_worker_rss_mb": sampler.worker_peak_mb,
    }
    if spark is not None:
        measured.update(_spilled_mb(spark, last_stage))
    if stages:
        measured["stage_s"] = dict(stages)
    return measured


def baseline(spark, dump: str, out: str) -> None:
    """The practical limit: latest record per raw key bytes (log-cleaner rule), then write
    Parquet at `out`."""
    from pyspark.sql import functions as F

    raw = spark.read.parquet(dump)
    latest = raw.groupBy("partition", "key").agg(
        F.max_by(F.struct("value", "offset", "timestamp"), "offset").alias("r")
    )
    latest.where(F.col("r.value").isNotNull()).select("partition", "key", "r.*").write.mode(
        "overwrite"
    ).parquet(out)


OFFSET_BITS = 47  # a record named by one int64: partition << 47 | offset (offsets < 1.4e14)


def arrow_floor(dump: str, out: str) -> None:
    """The physical floor of the same read and compaction outside Spark: pyarrow reads the dump
    and keeps the latest record per raw key in each partition (a tombstone deletes the key),
    then writes Parquet at `out`, as `baseline` does. Two passes: the newest offset per
    (partition, key) from the key columns alone (one hash aggregation), then the records with
    those offsets, batch by batch (`is_in` on one int64 per record). Merging batches into the
    survivors instead took 54 s of CPU for the 10M dump against 30 s this way, same rows."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    dataset = ds.dataset(dump, format="parquet")

    def record_ids(table: pa.Table | pa.RecordBatch, offset: str) -> pa.Array:
        partition = pc.cast(table.column("partition"), pa.int64())
        return pc.add(pc.shift_left(partition, OFFSET_BITS), table.column(offset))

    keys = dataset.to_table(columns=["partition", "key", "offset"])
    newest = keys.group_by(["partition", "key"]).aggregate([("offset", "max")])
    latest_ids = record_ids(newest, "offset_max")
    del keys, newest
    Path(out).mkdir(parents=True, exist_ok=True)
    columns = ["partition", "key", "value", "offset", "timestamp"]
    schema = pa.schema([dataset.schema.field(name) for name in columns])
    with pq.ParquetWriter(f"{out}/part-0.parquet", schema, compression="snappy") as writer:
        for batch in dataset.to_batches(columns=columns):
            kept = pc.and_(
                pc.is_in(record_ids(batch, "offset"), value_set=latest_ids),
                pc.is_valid(batch.column("value")),
            )
            writer.write_batch(batch.filter(kept))
    # the floor runs in the bench's own process: give its memory back before the pipeline's
    # runs, whose driver RSS is judged
    del latest_ids
    pa.default_memory_pool().release_unused()


LARGEST_TASK = "largest_task_records"  # reported next to the stage seconds
TASK_SKEW = "largest_over_mean_task"


def pipeline_run(
    spark, dump: str, out: str, run_id: str, delta_writer: str = "delta-rs"
) -> dict[str, float]:
    """The full `offsets run` on the dump, tables at `out` -> its seconds per stage, and the
    input records of its largest audit task (LARGEST_TASK) against the average (TASK_SKEW)."""
    from offsets_lib.job.entry import run

    report = run(
        spark,
        output=out,
        run_id=run_id,
        inputs=(dump,),
        max_reject_ratio=1.0,
        delta_writer=delta_writer,
        echo=lambda _line: None,
    )
    return {
        **report.stage_seconds,
        LARGEST_TASK: float(report.largest_task_records or 0),
        TASK_SKEW: float(report.task_skew or 0.0),
    }


def ensure_dump(root: Path, records: int, dominant_share: float = 0.0) -> str:
    """The bench dump of `records`, generated once, in a child process (the generator's memory
    must not count as the driver's in the measurements that follow).

    Args:
        root: the folder of the bench's dumps.
        records: the dump's size.
        dominant_share: share of the commits written by one group.

    Returns:
        The dump's folder.
    """
    path = root / (f"dump-{records}" + (f"-dominant-{dominant_share}" if dominant_share else ""))
    if not (path / "_generate.json").exists():
        print(f"generating {records:,} records into {path} ...", flush=True)
        arguments = dict(
            groups=min(BENCH_GROUPS, records // 20),
            records=records,
            seed=42,
            profile="bench",
            dominant_group_share=dominant_share,
        )
        code = (
            "import sys; from offsets_lib.tools.generate import generate_dump; "
            f"generate_dump(sys.argv[1], **{arguments!r})"
        )
        subprocess.run([sys.executable, "-c", code, str(path)], check=True)
        # the new dump's dirty pages written back now, not by the kernel during the first
        # measurement after it (the 100M dump: 4.7 GB)
        os.sync()
    return str(path)


def _sessions(path: Path) -> list[Any]:
    """The sessions stored in results.json (a file holding one session, as older benches wrote
    it, is the list's only entry)."""
    if not path.exists():
        return []
    earlier = json.loads(path.read_text())
    return earlier.get("sessions", [earlier]) if isinstance(earlier, dict) else earlier


def _append_results(path: Path, report: dict[str, Any]) -> None:
    """Add this session's results to the file's list of sessions."""
    report = {"finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **report}
    path.write_text(json.dumps({"sessions": [*_sessions(path), report]}, indent=2))


def _earlier_runs(path: Path) -> list[dict[str, Any]]:
    """Every size's result of the earlier sessions in results.json (oldest first)."""
    return [r for s in _sessions(path) for r in s.get("runs", [])]


def target_lines(results: list[dict[str, Any]], earlier: list[dict[str, Any]]) -> list[str]:
    """The bench's targets (speed against the baseline, skew, memory), one line each with the
    figure it is judged on and whether it holds: `results` (this run's) judged, compared with
    `earlier` runs' where this run has no figure of its own (e.g. 100M against 10M)."""
    by_size = {
        (r["records"], r.get("dominant_group_share", 0.0)): r
        for r in [*earlier, *results]
        # the default the targets are for (earlier sittings' runs on Spark's shuffle, removed,
        # are left out: "shuffle" other than auto)
        if r.get("delta_writer", "delta-rs") == "delta-rs" and r.get("shuffle", "auto") == "auto"
    }
    lines = []
    for r in results:
        variant = "" if r.get("delta_writer") in (None, "delta-rs") else "--delta-writer spark"
        for name, figure, holds in _judged(r, by_size):
            name += f" ({variant})" if variant else ""
            lines.append(f"target {name}: {figure} -> {'met' if holds else 'MISSED'}")
    return lines


def _judged(
    r: dict[str, Any], by_size: dict[tuple[int, float], dict[str, Any]]
) -> list[tuple[str, str, bool]]:
    """The targets one result is judged on: (name, figure, holds). Ratios print with three
    decimals, so a figure printed at the threshold is one that meets it."""
    n, share, ratio = r["records"], r["dominant_group_share"], r["ratio_baseline_over_pipeline"]
    memory = f"driver {r['driver_peak_rss_mb']:.0f} MB"
    memory += f", worker {r['python_worker_peak_rss_mb']:.0f} MB"
    if share:
        judged = [
            (
                f"{n:,} records, one group {share:.0%} of the commits",
                f"largest task {r['largest_over_mean_task']:.2f}x the average, {memory}",
                r["largest_over_mean_task"] <= 2 and r["python_worker_peak_rss_mb"] < 3072,
            )
        ]
        plain = by_size.get((n, 0.0))
        if plain:
            slower = r["pipeline_s"] / plain["pipeline_s"]
            judged.append(
                (f"{n:,} skewed against unskewed", f"{slower:.3f}x the time", slower <= 1.2)
            )
        return judged
    if n == 1_000_000:
        return [("1M records", f"{1 / ratio:.3f}x the baseline's time", 1 / ratio <= 2)]
    if n == 10_000_000:
        judged = [("10M records", f"{ratio:.3f}x the baseline's throughput", ratio >= 1.5)]
        if "pipeline_over_floor" in r:
            over = r["pipeline_over_floor"]
            judged.append(("10M records", f"{over:.3f}x the Arrow floor's time", over <= 2.5))
        return judged
    if n == 100_000_000:
        ten = by_size.get((10_000_000, 0.0))
        times = f"{r['pipeline_s'] / ten['pipeline_s']:.1f}x the 10M time, " if ten else ""
        holds = (
            (ten is None or r["pipeline_s"] <= 10.5 * ten["pipeline_s"])
            and r["driver_peak_rss_mb"] < 1024
            and r["python_worker_peak_rss_mb"] < 3072
        )
        return [("100M records", times + memory, holds)]
    return []


def _runs_by_share(
    spark, n: int, dumps: dict[float, str], scratch: Path, reps: int, writer: str
) -> dict[float, dict[str, list[dict[str, Any]]]]:
    """`_reps` of each dump (by dominant group share), one rep of each in turn: a skewed dump
    and its unskewed twin measured in one session, equally warm. Measured (2 cores, 10M):
    the unskewed dump alone in a session warmed on 100k records took 17.3 s, after six 1M
    runs 13.6-14.9 s; the skewed one alone 16.4-19.2 s."""
    runs: dict[float, dict[str, list[dict[str, Any]]]] = {
        share: {kind: [] for kind in KINDS} for share in dumps
    }
    if reps > 1:
        _warm_up(spark, n, dumps[min(dumps)], scratch, writer)
    for rep in range(reps):
        for share in list(dumps)[:: 1 if rep % 2 == 0 else -1]:
            for kind, measured in _reps(spark, n, dumps[share], scratch, 1, writer, rep).items():
                runs[share][kind] += measured
    return runs


KINDS = ("baseline", "floor", "pipeline")  # measured in this order, then in reverse


def _warm_up(spark, n: int, dump: str, scratch: Path, writer: str) -> None:
    """The baseline and the pipeline once on the size's (unskewed) dump, not measured: a
    session's first run at a size grows the JVM's and the Python workers' heaps (first touch
    of memory is ~9 CPU-s per GB here) and compiles the JVM's code for it. Measured (10M, the
    skewed round's session, three `make bench` rounds): the first rep's baseline 17.7-18.1 s
    against 12.5-16.0 s after it, the pipeline's 9.8-10.8 s against 9.4-10.0 s (once 12.4:
    that round's median was its cold rep). A size measured once (`make bench-large`'s
    100M) is not warmed: the warm-up would double its time."""
    print(f"warm-up on {n:,} records ...", flush=True)
    baseline(spark, dump, str(scratch / f"warm-base-{n}"))
    pipeline_run(spark, dump, str(scratch / f"warm-job-{n}"), f"warm-{n}", writer)


def _reps(
    spark, n: int, dump: str, scratch: Path, reps: int, writer: str, first: int = 0
) -> dict[str, list[dict[str, Any]]]:
    """`reps` alternating measurements (A B C, C B A, ...) of the baseline, the Arrow floor and
    the pipeline, numbered from `first`."""
    runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    for rep in range(first, first + reps):
        for kind in KINDS if rep % 2 == 0 else KINDS[::-1]:
            target = scratch / f"{kind}-{n}"
            shutil.rmtree(target, ignore_errors=True)
            if kind == "baseline":
                m = measure(lambda t=target: baseline(spark, dump, str(t)), spark)
            elif kind == "floor":
                m = measure(lambda t=target: arrow_floor(dump, str(t)))
            else:
                m = measure(
                    lambda t=target, r=rep: pipeline_run(spark, dump, str(t), f"b{r}", writer),
                    spark,
                )
            runs[kind].append(m)
            stages = " ".join(f"{s} {v:.1f}" for s, v in m.get("stage_s", {}).items())
            print(
                f"{n:>11,} {kind:<9} rep {rep}: {m['wall_s']:7.1f} s wall,"
                f" {m['cpu_s']:7.1f} s cpu (system {m['system_cpu_s']:5.1f}),"
                f" others {m['other_processes_cpu_s']:6.1f} s, rss {m['rss_mb']:6.0f} MB,"
                f" worker rss {m['python_worker_rss_mb']:6.0f} MB"
                + (" [machine busy]" if m["is_machine_busy"] else "")
                + (f" ({stages})" if stages else ""),
                flush=True,
            )
    return runs


def _summary(
    n: int, runs: dict[str, list[dict[str, Any]]], share: float, writer: str
) -> dict[str, Any]:
    """Medians of the reps' times, the worst of their memory, task sizes and spill."""
    med = {
        k: {
            f: statistics.median(r[f] for r in v)
            for f in v[0]
            if f not in ("stage_s", "is_machine_busy")
        }
        for k, v in runs.items()
    }
    piped = runs["pipeline"]
    stage_names = [s for s in piped[0].get("stage_s", {}) if s not in (LARGEST_TASK, TASK_SKEW)]
    return {
        "records": n,
        "pipeline_s": round(med["pipeline"]["wall_s"], 2),
        "baseline_s": round(med["baseline"]["wall_s"], 2),
        "ratio_baseline_over_pipeline": round(
            med["baseline"]["wall_s"] / med["pipeline"]["wall_s"], 3
        ),
        "floor_s": round(med["floor"]["wall_s"], 2),
        "pipeline_over_floor": round(med["pipeline"]["wall_s"] / med["floor"]["wall_s"], 3),
        "pipeline_records_per_s": round(n / med["pipeline"]["wall_s"]),
        "baseline_records_per_s": round(n / med["baseline"]["wall_s"]),
        "driver_peak_rss_mb": round(max(r["rss_mb"] for r in piped), 1),
        "jvm_peak_rss_mb": round(max(r["jvm_rss_mb"] for r in piped), 1),
        "python_worker_peak_rss_mb": round(max(r["python_worker_rss_mb"] for r in piped), 1),
        "dominant_group_share": share,
        "delta_writer": writer,
        "largest_task_records": max(int(r["stage_s"].get(LARGEST_TASK, 0)) for r in piped),
        "largest_over_mean_task": round(max(r["stage_s"].get(TASK_SKEW, 0.0) for r in piped), 2),
        "spill_disk_mb": round(max(r["spill_disk_mb"] for r in piped), 1),
        "spill_memory_mb": round(max(r["spill_memory_mb"] for r in piped), 1),
        "busy_reps": sum(r["is_machine_busy"] for v in runs.values() for r in v),
        "pipeline_stage_s": {
            s: round(statistics.median(r["stage_s"][s] for r in piped), 2) for s in stage_names
        },
        "cpu_s": round(med["pipeline"]["cpu_s"], 1),
        "baseline_cpu_s": round(med["baseline"]["cpu_s"], 1),
        "system_cpu_s": round(med["pipeline"]["system_cpu_s"], 1),
        "baseline_system_cpu_s": round(med["baseline"]["system_cpu_s"], 1),
        "other_processes_cpu_s": round(
            max(r["other_processes_cpu_s"] for v in runs.values() for r in v), 1
        ),
        "reps": len(piped),
        "raw": runs,
    }


def _print_table(results: list[dict[str, Any]]) -> None:
    print()
    print(
        f"{'records':>11} {'pipeline s':>10} {'baseline s':>10} {'base/pipe':>9} {'floor s':>7}"
        f" {'pipe/floor':>10} {'pipe rec/s':>11}"
        f" {'driver MB':>9} {'JVM MB':>7} {'worker MB':>9} {'largest task':>12} {'/mean':>5}"
        f" {'spill MB':>8} {'busy reps':>9}"
    )
    for r in results:
        print(
            f"{r['records']:>11,} {r['pipeline_s']:>10.1f} {r['baseline_s']:>10.1f}"
            f" {r['ratio_baseline_over_pipeline']:>9.2f} {r.get('floor_s', 0.0):>7.1f}"
            f" {r.get('pipeline_over_floor', 0.0):>10.2f} {r['pipeline_records_per_s']:>11,}"
            f" {r['driver_peak_rss_mb']:>9.0f} {r['jvm_peak_rss_mb']:>7.0f}"
            f" {r['python_worker_peak_rss_mb']:>9.0f}"
            f" {r['largest_task_records']:>12,} {r['largest_over_mean_task']:>5.2f}"
            f" {r['spill_disk_mb']:>8.0f} {r['busy_reps']:>9}"
        )
    if len(results) >= 2:
        a, b = results[0], results[-1]
        print(
            f"scaling: {b['records'] / a['records']:.0f}x records took"
            f" {b['pipeline_s'] / a['pipeline_s']:.1f}x time"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", default="bench")
    parser.add_argument(
        "--dominant-group-share",
        type=float,
        default=0.0,
        help="dumps in which one group writes this share of the offset commits (skew)",
    )
    parser.add_argument(
        "--delta-writer",
        choices=("delta-rs", "spark"),
        default="delta-rs",
        help="who commits the job's Delta tables (offsets run --delta-writer)",
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    root = Path(args.out)
    data, scratch = root / "data", root / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    # a skewed size is measured beside its unskewed twin (`_runs_by_share`)
    shares = sorted({0.0, args.dominant_group_share})
    dumps = {n: {share: ensure_dump(data, n, share) for share in shares} for n in sizes}
    warm_dump = ensure_dump(data, 100_000)

    from offsets_lib.job import session

    spark = session.get_or_create("offsets-bench", show_progress=False)
    print("warm-up on 100k records ...", flush=True)
    baseline(spark, warm_dump, str(scratch / "warm-base"))
    pipeline_run(spark, warm_dump, str(scratch / "warm-job"), "warm", args.delta_writer)
    results = [
        _summary(n, runs, share, args.delta_writer)
        for n in sizes
        for share, runs in _runs_by_share(
            spark, n, dumps[n], scratch, args.reps, args.delta_writer
        ).items()
    ]
    spark.stop()
    earlier = _earlier_runs(root / "results.json")
    _append_results(root / "results.json", {"runs": results, "cores": os.cpu_count()})
    _print_table(results)
    for line in target_lines(results, earlier):
        print(line)
    print(f"results: {root / 'results.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
