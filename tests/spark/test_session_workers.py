"""`session.start_python_workers`: the run's Python workers start while the driver plans."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from offsets_lib.job import session, worker_daemon

ROOT = Path(__file__).resolve().parents[2]


def _fresh_workers_modules(*options: str) -> list[str]:
    """The task modules a fresh local session's workers have imported, in a process of its own
    (tests/support/worker_modules.py): the shared session's reused workers have imported them
    already, whatever the start does."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    command = [sys.executable, "-m", "tests.support.worker_modules", *options]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.spark
def test_started_workers_have_imported_what_the_tasks_need():
    assert _fresh_workers_modules() == sorted(worker_daemon.TASK_MODULES)


@pytest.mark.spark
def test_workers_are_forked_with_the_task_modules_imported():
    """A session we start forks its Python workers from job/worker_daemon.py: the first job's
    tasks find the modules loaded (pyspark.daemon's would have imported none)."""
    assert _fresh_workers_modules("--no-start") == sorted(worker_daemon.TASK_MODULES)


def test_the_daemon_starts_whatever_it_cannot_import():
    worker_daemon.preload(("offsets_lib.no_such_module", "json"))
    assert "json" in sys.modules


@pytest.mark.spark
def test_a_worker_start_that_fails_leaves_the_run_to_report(spark, caplog):
    caplog.set_level("DEBUG", logger="offsets_lib.job.session")
    thread = session.start_python_workers(spark, modules=("offsets_lib.no_such_module",))
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert "starting Python workers failed" in caplog.text
    assert spark.range(3).count() == 3  # the session is unharmed


@pytest.mark.spark
def test_a_clusters_parallelism_is_measured_by_a_python_job_over_the_ranges_splits(
    spark, monkeypatch
):
    """Where the settings do not give it (a cluster's master), one Python job over a range
    counts its splits and imports the given modules: no SQL function, which would wait for a
    Hive catalog starting beside it."""
    from offsets_lib.io import spark_settings

    monkeypatch.setattr(spark_settings, "given_parallelism", lambda _spark: None)
    monkeypatch.setattr(spark_settings, "_MEASURED", type(spark_settings._MEASURED)())
    splits = spark.range(0, 1 << 16).rdd.getNumPartitions()
    assert spark_settings.parallelism(spark, imports=session.TASK_MODULES) == splits
    monkeypatch.setattr(spark_settings, "_MEASURED", type(spark_settings._MEASURED)())
    with pytest.raises(Exception, match="no_such_module"):
        spark_settings.parallelism(spark, imports=("offsets_lib.no_such_module",))
