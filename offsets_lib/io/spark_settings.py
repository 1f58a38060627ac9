"""A Spark session setting changed for a block and put back after it (the session's own value,
or unset when it had none): the sources and sinks that need one setting for their Spark jobs
leave the caller's session as they found it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from pyspark.sql import SparkSession

__all__ = ["setting"]


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
