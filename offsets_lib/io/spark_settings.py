"""What the run asks of a session's settings, through `spark.conf` only (a Spark Connect
session has no SparkContext): a setting changed for a block and put back after it (the sources
and sinks that need one leave the caller's session as they found it), how many tasks the
session runs at once, and whether it is a Connect session."""

from __future__ import annotations

import contextlib
import os
import re
import threading
import weakref
from collections.abc import Iterator
from functools import partial
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.types import LongType, StructField, StructType

_LOCAL_MASTER = re.compile(r"local(?:-cluster)?\[(\d+|\*)(?:,\s*\d+)*\]|local")
_MEASURED: weakref.WeakKeyDictionary[SparkSession, int] = weakref.WeakKeyDictionary()
_MEASURING = threading.Lock()  # a second caller waits for the one measurement


def is_connect(spark: SparkSession) -> bool:
    """A Spark Connect session (a client of a server's driver: no SparkContext, no JVM here)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def parallelism(spark: SparkSession, imports: tuple[str, ...] = ()) -> int:
    """How many tasks the session runs at once (classic Spark's `defaultParallelism`):
    ``spark.default.parallelism`` when set, N of a ``local[N]`` master run here, else the
    splits Spark gives a range (its default parallelism: the executors' cores), measured by
    one small job once per session, whose tasks import `imports` (the workers' start).

    The job is a Python map over the range's splits, one row each: an SQL function in it
    (`spark_partition_id`, `max`) waits for the session catalog, and on a cluster whose catalog
    is a Hive metastore the run asks that catalog at the same time (its client starts in
    ~10-25 s). Measured, local with a Hive catalog starting beside it: the SQL query's
    analysis waited 12.1 s, this job's none. On the bench's production line (event logs, one
    round each) the run's first job started 46.2 -> 39.2 s after the application, its
    executors ready at ~20 s. What is left there waits on no lock (the driver's threads every
    ~1.3 s: this one runnable throughout, in Delta's analyzer rules, code generation and class
    loading, while the Hive client starts beside it): a cold JVM's work on two busy cores."""
    given = given_parallelism(spark)
    if given is not None:
        return given
    with _MEASURING:
        if spark not in _MEASURED:
            splits = spark.range(0, 1 << 16).mapInArrow(partial(split_rows, imports), SPLIT_ROWS)
            _MEASURED[spark] = len(splits.collect())
        return _MEASURED[spark]


def given_parallelism(spark: SparkSession) -> int | None:
    """`parallelism` when the settings give it (no job): ``spark.default.parallelism``, or the
    N of a ``local[N]`` master run here."""
    given = spark.conf.get("spark.default.parallelism", None)
    if given:
        return int(given)
    found = _LOCAL_MASTER.fullmatch(spark.conf.get("spark.master", "") or "")
    if found is not None and not is_connect(spark):  # a Connect server's cores are not ours
        cores = found.group(1)
        return (os.cpu_count() or 1) if cores in (None, "*") else int(cores)
    return None


# A schema, not the DDL "records long": Spark parses DDL with its SQL parser, whose first parses
# in a cold driver JVM are slow, and this job is the first of a run on a cluster. Measured (the
# bench's production line, event logs, three alternating submits each): the job started
# 27.2-28.8 -> 25.1-25.9 s after the application, which ended 63.9-65.9 -> 61.6-65.5 s.
SPLIT_ROWS = StructType([StructField("records", LongType())])


def split_rows(imports: tuple[str, ...], batches: Iterator[Any]) -> Iterator[Any]:
    """Executor side of `parallelism`'s job: `imports` imported, then one row for the split."""
    import importlib

    import pyarrow as pa

    for module in imports:
        importlib.import_module(module)
    records = sum(batch.num_rows for batch in batches)
    yield pa.RecordBatch.from_pydict({"records": [records]})


@contextlib.contextmanager
def setting(spark: SparkSession, key: str, value: str) -> Iterator[None]:
    """Within the block the session's `key` is `value`; after it, what it was."""
    previous = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, previous)
