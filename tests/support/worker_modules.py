"""Test-only entry point: a fresh local session's Python workers, started by
`session.start_python_workers` (or, with ``--no-start``, by the first job's tasks), and the task
modules they have imported (a JSON list on the last line of stdout).

    python -m tests.support.worker_modules [--no-start]

A process of its own because the suite's shared session cannot show it: its Python workers are
reused (spark.python.worker.reuse), and earlier tests' tasks have imported the task modules into
them already, so a check there passes even when starting the workers imports nothing.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from functools import partial
from typing import Any

from offsets_lib.job import session, worker_daemon

STARTED_TIMEOUT_S = 120


def _loaded(modules: tuple[str, ...], batches: Iterator[Any]) -> Iterator[Any]:
    """Executor side: which of `modules` this worker has imported (it imports none itself)."""
    import sys

    import pyarrow as pa

    schema = pa.schema([("module", pa.string())])
    for batch in batches:
        names = [m for m in modules if m in sys.modules] if batch.num_rows else []
        yield pa.RecordBatch.from_pydict({"module": names}, schema=schema)


def main() -> None:
    spark = session.get_or_create("offsets-worker-modules", master="local[2]", show_progress=False)
    try:
        if "--no-start" not in sys.argv[1:]:
            thread = session.start_python_workers(spark)
            thread.join(timeout=STARTED_TIMEOUT_S)
            if thread.is_alive():
                raise SystemExit(f"the workers did not start within {STARTED_TIMEOUT_S} s")
        ids = spark.range(0, 2, 1, 2)
        probe = partial(_loaded, tuple(worker_daemon.TASK_MODULES))
        rows = ids.mapInArrow(probe, "module string").collect()
        print(json.dumps(sorted({r.module for r in rows})))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
