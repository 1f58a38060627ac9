"""Ctrl-C during `offsets run` (SIGINT to its process group, as a terminal sends it): exit 130
with one line, whether it comes while Spark starts or while it runs."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.cluster.servers import BIN
from tests.support.cli_lines import said

pytestmark = pytest.mark.spark

SMALL = ["--groups", "3", "--records", "50"]


def _wait_for_a_jvm(process: subprocess.Popen, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        children = psutil.Process(process.pid).children(recursive=True)
        if any("java" in child.name() for child in children):
            return
        assert process.poll() is None, "the run ended before Spark started"
        time.sleep(0.2)
    raise AssertionError("no JVM started")


@pytest.mark.parametrize("after_jvm_s", [0.0, 5.0])
def test_ctrl_c_while_spark_starts_or_runs(tmp_path: Path, after_jvm_s: float) -> None:
    made = subprocess.run(
        [str(BIN / "offsets"), "generate", "--out", str(tmp_path / "dump"), *SMALL],
        capture_output=True,
        check=True,
    )
    assert made.returncode == 0
    to_tables = ["--output", str(tmp_path / "tables"), "--run-id", "c1"]
    run = subprocess.Popen(
        [str(BIN / "offsets"), "run", "--input", str(tmp_path / "dump"), *to_tables],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    _wait_for_a_jvm(run)
    time.sleep(after_jvm_s)
    os.killpg(run.pid, signal.SIGINT)  # Ctrl-C signals the whole group: Python and the JVM
    _, err = run.communicate(timeout=120)
    assert (run.returncode, said(err)) == (
        130,
        ["offsets: interrupted: run c1 stopped; no table of it was published"],
    )
