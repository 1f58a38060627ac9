"""PySpark's daemon (``spark.python.daemon.module``) with the task modules imported before it
forks the Python workers: a fresh worker starts with them loaded.

Why: Spark stops a Python worker idle for a minute, so a run an hour after the last one (or
after a minute of other jobs in the same session) starts fresh workers, each importing pyarrow,
numpy, delta-rs and the audit (~0.6 CPU-s each). Measured (10M records, one local[2] session,
runs after 70 s idle): 10.7-11.6 s and 19.5-20.1 CPU-s in the workers with pyspark.daemon,
9.8-9.9 s and 17.3-17.7 CPU-s with this module, as fast as runs on reused workers. Importing
starts threads (OpenBLAS's, jemalloc's background threads) before the fork; both libraries
register fork handlers for that. Local sessions only (local_tuning.TUNED_CONF).
"""

from __future__ import annotations

import contextlib
import importlib

# What a run's tasks import (the audit, its emitters and sinks).
TASK_MODULES = ("offsets_lib.engine.exchange", "offsets_lib.engine.staging", "offsets_lib.io.sink")


def preload(modules: tuple[str, ...] = TASK_MODULES) -> None:
    """Import `modules` and the worker's own; one that fails is left for the tasks to report
    (the daemon must start whatever the executor's Python lacks)."""
    for name in ("pyspark.worker", *modules):
        with contextlib.suppress(Exception):  # the task importing it fails loud instead
            importlib.import_module(name)


if __name__ == "__main__":
    from pyspark import daemon

    preload()
    daemon.manager()
