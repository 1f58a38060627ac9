"""`offsets report` on large runs: the 10M-record bench run and a run with 100,000 groups, each
with 24 retained runs (the audited run's partitions copied under 23 earlier run ids an hour
apart: the cheapest history, no second audit). Prints `bench report: ...` lines: the report's
wall time (target < 30 s), its file size (< 10 MB) and the page's open time in headless Chromium
until the first page's chart and, after a click on Groups, the groups table are drawn (< 5 s);
with the CPU seconds of each and the load average, as other work on the machine stretches the
wall times.

    PYTHONPATH=. .venv/bin/python bench/report.py [--case 10M] [--case 100k-groups]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import write_deltalake

from bench.harness import ensure_dump
from offsets_lib.io import sink, storage

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"
BIN = Path(sys.executable).parent
RUNS = 24
RUN_ID = "bench-report"
TARGETS = {"seconds": 30.0, "open_s": 5.0, "mb": 10.0}


def _dump(case: str) -> tuple[Path, list[str]]:
    """The case's dump folder and the extra `offsets run` arguments."""
    if case == "10M":
        path = Path(ensure_dump(DATA, 10_000_000))
        return path, ["--end-offsets", str(path / "_end_offsets.csv")]
    path = DATA / "report-100k-groups"
    if not (path / "_end_offsets.csv").exists():
        subprocess.run(
            [str(BIN / "offsets"), "generate", "--out", str(path), "--groups", "100000",
             "--records", "1000000", "--seed", "3"],
            check=True,
        )  # fmt: skip
    return path, ["--end-offsets", str(path / "_end_offsets.csv")]


def _tables(case: str) -> str:
    """The case's tables: one audited run, then RUNS - 1 copies of it an hour apart."""
    tables = DATA / f"report-tables-{case}"
    if storage.is_delta_table(sink.table_uri(str(tables), "runs")):
        return str(tables)
    shutil.rmtree(tables, ignore_errors=True)
    dump, extra = _dump(case)
    subprocess.run(
        [str(BIN / "offsets"), "run", "--source", "parquet", "--input", str(dump),
         "--output", str(tables), "--run-id", RUN_ID, *extra],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    for name in sorted(p.name for p in tables.iterdir() if (p / "_delta_log").is_dir()):
        run = sink.read_table(str(tables), name, run_id=RUN_ID)
        copies = [_shifted(run, hours) for hours in range(RUNS - 1, 0, -1)]
        write_deltalake(str(tables / name), pa.concat_tables(copies), mode="append")
    return str(tables)


def _shifted(table: pa.Table, hours: int) -> pa.Table:
    """The run's rows as an earlier run's: its own run id, every run time ``hours`` earlier."""
    shift = pa.scalar(timedelta(hours=hours))
    for column in ("as_of", "started_at", "finished_at"):
        if column in table.column_names:
            index = table.column_names.index(column)
            table = table.set_column(index, column, pc.subtract(table[column], shift))
    run_ids = pa.array([f"{RUN_ID}-{hours:02d}h-earlier"] * len(table), pa.string())
    return table.set_column(table.column_names.index("run_id"), "run_id", run_ids)


def _open_seconds(path: Path) -> tuple[float, float]:
    """Seconds in headless Chromium from navigation to the first page's chart drawn, then, a
    click on Groups, its table drawn (the groups are decoded when that page is first shown);
    and the CPU seconds of the page's main thread meanwhile (what a busy machine stretches)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=shutil.which("chromium-headless-shell"), args=["--no-sandbox"]
        )
        page = browser.new_page()
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        started = time.perf_counter()
        page.goto(path.as_uri())
        page.wait_for_function("document.getElementById('chart-expiry')._fullData")
        page.click("#nav-groups")
        page.wait_for_function("document.querySelector('#groups-table tbody tr') !== null")
        seconds = time.perf_counter() - started
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        browser.close()
    return seconds, metrics["ThreadTime"]


def bench(case: str) -> str:
    tables = _tables(case)
    out = DATA / f"report-{case}.html"
    load = os.getloadavg()[0]
    cpu = _children_cpu()
    started = time.perf_counter()
    subprocess.run(
        [str(BIN / "offsets"), "report", "--output", tables, "--out", str(out), "--history",
         str(RUNS)],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    cpu = _children_cpu() - cpu
    mb = out.stat().st_size / 1e6
    open_s, open_cpu = _open_seconds(out)
    groups = sink.read_table(tables, "groups", run_id=RUN_ID, columns=["group_id"]).num_rows
    ok = seconds < TARGETS["seconds"] and open_s < TARGETS["open_s"] and mb < TARGETS["mb"]
    return (
        f"bench report: {case} ({groups:,} groups, {RUNS} retained runs): {seconds:.1f} s to "
        f"write ({cpu:.1f} s CPU), {mb:.1f} MB, {open_s:.1f} s to open in headless Chromium "
        f"({open_cpu:.1f} s CPU on its main thread) (targets < {TARGETS['seconds']:.0f} s, "
        f"< {TARGETS['mb']:.0f} MB, < {TARGETS['open_s']:.0f} s: {'met' if ok else 'MISSED'}; "
        f"load average {load:.1f} on {os.cpu_count()} cores)"
    )


def _children_cpu() -> float:
    """CPU seconds of the finished child processes (the `offsets report` command)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", choices=("10M", "100k-groups"))
    for case in parser.parse_args().case or ["10M", "100k-groups"]:
        print(bench(case), flush=True)


if __name__ == "__main__":
    main()
