"""`session.start_python_workers`: the run's Python workers start while the driver plans."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from offsets_lib.job import session

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.spark
def test_started_workers_have_imported_what_the_tasks_need():
    """In a process of its own (tests/support/worker_modules.py): the shared session's reused
    workers have imported the task modules already, whatever the start does."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    command = [sys.executable, "-m", "tests.support.worker_modules"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == sorted(session.TASK_MODULES)


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
