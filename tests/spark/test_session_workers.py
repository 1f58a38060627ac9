"""`session.start_python_workers`: the run's Python workers start while the driver plans."""

from __future__ import annotations

import pytest

from offsets_lib.job import session


def _worker_modules(spark) -> set[str]:
    """The task modules already imported by the Python workers of `spark`'s executors."""

    def loaded(batches):
        import sys

        import pyarrow as pa

        for batch in batches:
            names = [m for m in session.TASK_MODULES if m in sys.modules]
            yield pa.RecordBatch.from_pydict({"module": names * (batch.num_rows > 0)})

    ids = spark.range(0, 2, 1, 2)
    return {r.module for r in ids.mapInArrow(loaded, "module string").collect()}


@pytest.mark.spark
def test_started_workers_have_imported_what_the_tasks_need(spark):
    thread = session.start_python_workers(spark)
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert _worker_modules(spark) == set(session.TASK_MODULES)


@pytest.mark.spark
def test_a_worker_start_that_fails_leaves_the_run_to_report(spark, caplog):
    caplog.set_level("DEBUG", logger="offsets_lib.job.session")
    thread = session.start_python_workers(spark, modules=("offsets_lib.no_such_module",))
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert "starting Python workers failed" in caplog.text
    assert spark.range(3).count() == 3  # the session is unharmed
