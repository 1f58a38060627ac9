"""The bench's bookkeeping: CPU per process, never negative, and busy reps flagged."""

from __future__ import annotations

import subprocess
import sys

from offsets_lib.tools import bench

BURN = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass"


def test_cpu_of_workers_that_exit_mid_run_is_counted_and_never_negative() -> None:
    def work() -> None:
        for _ in range(2):  # each child exits before the measurement ends
            subprocess.run([sys.executable, "-c", BURN], check=True)

    measured = bench.measure(work)
    assert measured["cpu_s"] >= 1.0  # both children's CPU, sampled while they ran
    assert measured["other_processes_cpu_s"] >= 0.0
    assert isinstance(measured["is_machine_busy"], bool)
    assert measured["python_worker_rss_mb"] > 0.0


def test_processes_alive_before_the_work_count_only_what_they_use_during_it() -> None:
    burner = subprocess.Popen([sys.executable, "-c", BURN])
    try:
        burner.wait()  # its CPU is spent before the measurement starts
        measured = bench.measure(lambda: None)
    finally:
        burner.wait()
    assert 0.0 <= measured["cpu_s"] < 0.5
