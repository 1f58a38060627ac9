"""Shared fixtures: one local SparkSession per test session (shared/notes/feasibility.md §4)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator

import pytest

# Free space a run should start with: it held ~3 GB at once (measured: most of it the cluster
# tests' jar copies), plus room. A full disk does not fail loud: a broker whose log directory
# fills keeps its clients retrying.
SUITE_DISK_GB = 8


def pytest_sessionstart(session: pytest.Session) -> None:
    """Say up front when the temporary folder's disk is short of what the suite writes."""
    free_gb = shutil.disk_usage(tempfile.gettempdir()).free / 1e9
    if free_gb < SUITE_DISK_GB:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = (
            f"only {free_gb:.1f} GB free under {tempfile.gettempdir()}: the suite needs about "
            f"{SUITE_DISK_GB} GB; tests may stall or fail when the disk fills"
        )
        if reporter is not None:
            reporter.write_line(message, yellow=True, bold=True)


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
