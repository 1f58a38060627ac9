"""Shared fixtures: one local SparkSession per test session (shared/notes/feasibility.md §4)."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterator

import pytest

# Free space a run should start with: it held ~3 GB at once (measured: most of it the cluster
# tests' jar copies), plus room. A full disk does not fail loud: a broker whose log directory
# fills keeps its clients retrying.
SUITE_DISK_GB = 8


# `make test` runs two pytest-xdist workers. Tests that share a session-scoped server (a
# Kafka broker, the cluster) go to one worker: a second would start a second server for the
# same tests. Every other file goes whole to one worker, so its module fixtures are built once.
_SHARED_SERVER_FOLDERS = ("tests/broker", "tests/cluster", "tests/kafka")


def work_unit(nodeid: str) -> str:
    """What one worker runs whole: a shared-server folder, else a test file."""
    file = nodeid.split("::", 1)[0]
    for folder in _SHARED_SERVER_FOLDERS:
        if file.startswith(folder + "/"):
            return folder
    return file


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """xdist's scope scheduling with `work_unit` as the scope (its `loadgroup` marks are not
    applied under pytest 9's node ids, and `loadfile` would split the shared-server folders)."""
    from xdist.scheduler import LoadScopeScheduling

    class WorkUnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return WorkUnitScheduling(config, log)


_SESSION_START = 0.0


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """With `-n`, the broker tests' worker writes the real-broker comparisons and the workers'
    summaries are not shown: the controller prints the table from that worker's report."""
    is_xdist_controller = config.pluginmanager.hasplugin("dsession")
    if not is_xdist_controller:
        return  # without workers, tests/broker/conftest.py prints it
    from tests.broker.recorder import report_path, summary

    path = report_path()
    if path.exists() and path.stat().st_mtime >= _SESSION_START:
        report = json.loads(path.read_text())
        terminalreporter.write_sep("-", "real-broker comparisons")
        terminalreporter.write_line(
            summary(report["checks"], report["not_run"], report.get("generated"))
        )


def pytest_sessionstart(session: pytest.Session) -> None:
    """Say up front when the temporary folder's disk is short of what the suite writes."""
    global _SESSION_START
    _SESSION_START = time.time()
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
