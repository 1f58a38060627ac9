"""The Python worker's heap frozen once per process (task_runner.freeze_worker_heap): the
daemon's collect after each task then walks only what the tasks made."""

from __future__ import annotations

import subprocess
import sys

# run in a child: freezing pytest's own heap would outlive the test
CHILD = """
import gc, os
from offsets_lib.engine import task_runner
before = gc.get_freeze_count()
task_runner.freeze_worker_heap()
frozen = gc.get_freeze_count()
task_runner.freeze_worker_heap()  # a later task of the same worker: nothing more frozen
again = gc.get_freeze_count()
cycle = []
cycle.append(cycle)  # made after the freeze: still the collector's
del cycle
collected = gc.collect()
kept = [[]]  # alive in the forked worker
pid = os.fork()
if pid == 0:  # a worker forked from this one freezes its own heap on its first task
    task_runner.freeze_worker_heap()
    os._exit(0 if gc.get_freeze_count() > frozen else 1)
_, status = os.waitpid(pid, 0)
print(before, frozen > 0, again == frozen, collected >= 1, os.waitstatus_to_exitcode(status))
"""


def test_a_workers_heap_is_frozen_once_and_later_cycles_are_still_collected() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHILD], check=True, capture_output=True, text=True
    ).stdout.split()
    assert out == ["0", "True", "True", "True", "0"]
