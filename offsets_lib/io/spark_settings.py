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

from pyspark.sql import SparkSession

_LOCAL_MASTER = re.compile(r"local(?:-cluster)?\[(\d+|\*)(?:,\s*\d+)*\]|local")
_MEASURED: weakref.WeakKeyDictionary[SparkSession, int] = weakref.WeakKeyDictionary()
_MEASURING = threading.Lock()  # a second caller waits for the one measurement


def is_connect(spark: SparkSession) -> bool:
    """A Spark Connect session (a client of a server's driver: no SparkContext, no JVM here)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def parallelism(spark: SparkSession) -> int:
    """How many tasks the session runs at once (classic Spark's `defaultParallelism`):
    ``spark.default.parallelism`` when set, N of a ``local[N]`` master run here, else the
    splits Spark gives a range (its default parallelism: the executors' cores), measured by
    one small job once per session."""
    given = spark.conf.get("spark.default.parallelism", None)
    if given:
        return int(given)
    found = _LOCAL_MASTER.fullmatch(spark.conf.get("spark.master", "") or "")
    if found is not None and not is_connect(spark):  # a Connect server's cores are not ours
        cores = found.group(1)
        return (os.cpu_count() or 1) if cores in (None, "*") else int(cores)
    with _MEASURING:
        if spark not in _MEASURED:
            from pyspark.sql import functions as F

            # the partition id projected first: an aggregate may not take it as its argument
            ids = spark.range(0, 1 << 16).select(F.spark_partition_id().alias("split"))
            splits = ids.agg(F.max("split")).first()[0]
            _MEASURED[spark] = int(splits) + 1
        return _MEASURED[spark]


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
