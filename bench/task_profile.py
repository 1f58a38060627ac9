"""CPU profile of ONE audit task, in-process, by part: what an audit task of a bench dump spends
its CPU on (decoding, compaction, group replay, meters, decisions, table rows, writes).

Why in-process CPU and not wall time: on a shared machine a wall-clock bench measures the
neighbours; the process CPU of one task (`time.process_time` around each part's functions) does
not. cProfile (--top) only ranks functions: its per-call cost inflates Python-heavy parts. The
task is the one `offsets run` would give the most records: the dump's records cut by
`routing.audit_tasks_of` into as many tasks as the run makes (`audit_plan.audit_tasks`), the
transaction markers copied to every task; one unmeasured run first, then --reps measured.

    PYTHONPATH=. python bench/task_profile.py bench/data/dump-10000000 [--reps 3] [--top 25]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import importlib
import pstats
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds

from offsets_lib.audit import task_audit
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.rules import DAY_MS, Params
from offsets_lib.audit.table_rows import DIRECT_TABLES
from offsets_lib.engine import exchange, piece_files, routing
from offsets_lib.engine.staging import TableFiles
from offsets_lib.job.options import SPLIT_COMMITS

# (part, module, function): a part's CPU is its functions' process time, timed where the task
# looks them up (unprofiled: cProfile's per-call cost inflates Python-heavy parts several-fold)
PARTS = (
    ("decoding", "offsets_lib.audit.task_audit", "audit_decoded"),
    ("compaction", "offsets_lib.audit.compaction", "latest_per_key"),
    ("compaction", "offsets_lib.audit.compaction", "unread_marker_offsets"),
    ("replay", "offsets_lib.audit.task_audit", "replay_groups"),
    ("meters", "offsets_lib.audit.task_audit", "kip496_meters"),
    ("live offsets", "offsets_lib.audit.task_audit", "live_offsets"),
    ("decisions", "offsets_lib.audit.task_audit", "decided"),
    ("table rows", "offsets_lib.audit.table_rows", "table_rows"),
    ("writes", "offsets_lib.io.sink", "write_task_files"),
)


def largest_task(dump: str, cores: int = 2, map_tasks: int = 8) -> list[pa.RecordBatch]:
    """The records of the run's largest audit task (RAW_ARROW batches), markers included, in
    the order the run's task reads them: the pieces of `map_tasks` map tasks (exchange.plan, as
    local_tuning's minPartitionNum sets it) one after another, each cut as the map cuts them.
    The order matters: a dump's pieces do not come in log order (sorting by key costs more)."""
    table = routing.positioned_table(ds.dataset(dump, format="parquet").to_table())
    tasks = max(cores, -(-table.num_rows // routing.RECORDS_PER_TASK))  # audit_plan.audit_tasks
    task_of = routing.audit_tasks_of(table, tasks)
    sizes = np.bincount(task_of[task_of >= 0], minlength=tasks)
    chosen = int(np.argmax(sizes))
    del table
    files = sorted(f"file://{path.resolve()}" for path in Path(dump).glob("*.parquet"))
    assigned = exchange.plan(files, map_tasks=map_tasks)
    if assigned is None:
        raise SystemExit(f"pyarrow cannot read the dump's files under {dump}")
    batches = [
        piece.records
        for units in assigned
        for piece in piece_files.cut(
            (
                records
                for unit in units
                for records in piece_files.read_unit(
                    unit.path, unit.row_groups, unit.is_positioned, unit.is_history,
                    rows=piece_files.batch_rows(tasks),
                )
            ),
            tasks,
            reduce_large=SPLIT_COMMITS["auto"],  # as a run's map cuts them by default
        )
        if piece.task in (chosen, routing.MARKERS)
    ]  # fmt: skip
    print(
        f"{int(sizes.sum()):,} records, {tasks} tasks; task {chosen}: "
        f"{sum(b.num_rows for b in batches):,} records in {len(batches)} pieces"
    )
    return batches


def run_task(batches: list[pa.RecordBatch], output: str) -> None:
    """Audit the task and write its tables as the run's tasks do (delta-rs files)."""
    as_of_ms = int(time.time() * 1000)
    emit = TableFiles(_NoStaging(), output, "profile", as_of_ms, tuple(DIRECT_TABLES))
    tables = task_audit.task_tables(
        iter(batches),
        coordinator=Coordinator.NEW,
        params=Params(retention_ms=7 * DAY_MS, as_of_ms=as_of_ms),
    )
    for _ in emit(tables):
        pass


@contextlib.contextmanager
def timed_parts() -> Iterator[dict[str, float]]:
    """Process CPU seconds by part (PARTS) of the work inside, the functions wrapped meanwhile."""
    seconds: dict[str, float] = {}
    originals = []
    for part, module_name, name in PARTS:
        module = importlib.import_module(module_name)
        original = getattr(module, name)
        originals.append((module, name, original))

        def timed(*args, _f=original, _part=part, **kwargs):
            started = time.process_time()
            try:
                return _f(*args, **kwargs)
            finally:
                seconds[_part] = seconds.get(_part, 0.0) + time.process_time() - started

        setattr(module, name, timed)
    try:
        yield seconds
    finally:
        for module, name, original in originals:
            setattr(module, name, original)


class _NoStaging:
    def __call__(self, tables):
        return iter(())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dump")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--top", type=int, default=0, help="then a cProfile run: its N costliest functions"
    )
    args = parser.parse_args(argv)
    batches = largest_task(args.dump)
    with tempfile.TemporaryDirectory() as output:
        run_task(batches, f"{output}/warm")  # imports and first-call costs out of the figures
        for rep in range(args.reps):
            with timed_parts() as parts:
                started = time.process_time()
                run_task(batches, f"{output}/{rep}")
                total = time.process_time() - started
            shown = "  ".join(f"{p} {s:.2f}" for p, s in parts.items())
            other = total - sum(parts.values())
            print(f"rep {rep}: task CPU {total:.2f} s: {shown}  other {other:.2f}", flush=True)
        if args.top:
            profiler = cProfile.Profile(time.process_time)
            profiler.runcall(run_task, batches, f"{output}/profiled")
            pstats.Stats(profiler).sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
