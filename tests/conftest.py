"""Shared fixtures: one local SparkSession per test session (shared/notes/feasibility.md §4)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

# Test-only settings on top of the job's own local session (offsets_lib/job/session.py builds
# it, with the Delta and Kafka connector jars): two cores, few partitions, no AQE, a small heap.
TEST_CONF: dict[str, str] = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.memory": "2g",
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
}


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """The job's local session (session.get_or_create) on local[2], tuned for fast tests."""
    from offsets_lib.job import session as job_session

    warehouse = tmp_path_factory.mktemp("warehouse")
    spark_session = job_session.get_or_create(
        "offsets-lib-tests",
        master="local[2]",
        show_progress=False,
        extra_conf={**TEST_CONF, "spark.sql.warehouse.dir": str(warehouse)},
    )
    yield spark_session
    spark_session.stop()
