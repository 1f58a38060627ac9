"""One runner for the stages whose tasks find their work by id: a Spark task per id 0..n-1,
each running a work item for its id.

A work item is a small named, picklable object (a frozen dataclass of the engine): the lists it
reads by task id, `schema` (the Arrow schema of the rows it yields) and `__call__(task)`. Spark
pickles it once per stage; it holds no session. Why ids rather than a shuffle that sends each
task its listed work: measured (2 cores), that shuffle cost a job of ~1 s in a fresh JVM (a
command-line run), twice per run.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from functools import partial
from typing import Protocol

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from offsets_lib.audit.schemas import spark_schema

__all__ = ["TaskWork", "freeze_worker_heap", "run_tasks"]


class TaskWork(Protocol):
    """What one task of a stage does, given its id."""

    @property
    def schema(self) -> pa.Schema: ...

    def __call__(self, task: int) -> Iterator[pa.RecordBatch]: ...


_frozen_in: int | None = None  # the process whose heap freeze_worker_heap froze


def freeze_worker_heap() -> None:
    """Executor side, once per Python worker process: the objects alive now (mostly the
    imported modules) leave the cycle collector's generations (gc.freeze); those made later are
    collected as before. Why: PySpark's daemon runs gc.collect() after every task of a reused
    worker, and a worker with our imports holds ~83k objects: 35-55 ms a collect, 28 times in a
    10M run (2 cores, alternating runs: the workers' CPU 28.9 against 30.8 s, four each)."""
    global _frozen_in
    if _frozen_in != os.getpid():
        gc.freeze()
        _frozen_in = os.getpid()


def _run(work: TaskWork, ids: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Executor side: the work of each id of this Spark task (one id per task)."""
    freeze_worker_heap()
    for batch in ids:
        for task in batch.column("id").to_pylist():
            yield from work(task)


def run_tasks(spark: SparkSession, work: TaskWork, tasks: int) -> DataFrame:
    """A stage of `tasks` tasks, task t running `work(t)` -> the rows they yield (lazy: the
    caller collects, or writes, them)."""
    ids = spark.range(0, tasks, 1, tasks)  # one id per partition
    return ids.mapInArrow(partial(_run, work), spark_schema(work.schema))
