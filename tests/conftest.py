"""Shared fixtures: one local SparkSession per test session (shared/notes/feasibility.md §4)."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterator

import pytest
from hypothesis import settings

# An example's time is not its result: on the shared 2-core machine a 1 ms example once took
# 354 ms and failed the suite under Hypothesis' default 200 ms deadline. Speed is `make bench`'s.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

# Free space a run should start with: it held ~3 GB at once (measured: most of it the cluster
# tests' jar copies), plus room. A full disk does not fail loud: a broker whose log directory
# fills keeps its clients retrying.
SUITE_DISK_GB = 8


# `make test` runs pytest-xdist workers that mostly wait (servers starting, JVMs, polls): a
# whole run used ~21 of its 2 x 47 minutes of CPU. A work unit is what one worker runs whole:
# - tests/cluster, whose files share one Spark standalone cluster, SeaweedFS and SASL broker
#   (tests/cluster/conftest.py): a second worker would start them all again;
# - one broker version of the broker oracle or of the generated logs: each starts its own
#   broker (tests/broker/conftest.py `broker_world`, generated.check_version), one at a time;
# - a test of minutes that shares no module fixture with its file's other tests (`_OWN_UNIT`);
# - else a test file, so that its module fixtures are built once.
_SHARED_SERVER_FOLDERS = ("tests/cluster",)
_PER_VERSION_FILES = ("tests/broker/test_broker_oracle.py", "tests/broker/test_generated_logs.py")
_OWN_UNIT = (
    "tests/spark/test_catalog.py::test_run_with_database_is_read_by_name_in_a_new_session",
    "tests/spark/test_catalog.py::test_readers_take_a_database_as_well_as_a_path",
    "tests/spark/test_catalog.py::test_a_catalog_without_a_warehouse_folder",
    "tests/spark/test_exchange.py::test_a_dump_spark_reads_publishes_the_tables_of_its_files",
    "tests/spark/test_sink.py::test_both_writers_give_tables_read_identically",
    "tests/spark/test_sink.py::test_spark_writer_",
    "tests/kafka/test_incremental.py::test_incremental_chain_equals_full_reread",
)
# Wall seconds of the longest units (a whole run on 2 cores, 2 workers, before Delta's snapshots
# took 2 tasks): they start first, the rest (files of seconds, many tests first) fill in behind.
_BY_DATABASE = (
    "tests/spark/test_catalog.py::test_run_with_database_is_read_by_name_in_a_new_session"
)
UNIT_SECONDS: dict[str, int] = {
    "tests/cluster": 900,
    f"{_BY_DATABASE}[spark]": 350,
    "tests/spark/test_exchange.py": 250,
    "tests/kafka/test_incremental.py::test_incremental_chain_equals_full_reread": 240,
    "tests/spark/test_exchange.py::test_a_dump_spark_reads_publishes_the_tables_of_its_files": 240,
    "tests/spark/test_readers_ids.py": 220,
    "tests/broker/test_broker_oracle.py[4.4.0]": 200,
    "tests/kafka/test_kafka_source.py": 200,
    f"{_BY_DATABASE}[delta-rs]": 185,
    "tests/broker/test_broker_oracle.py[2.8.2]": 155,
    "tests/unit/test_state_replay.py": 150,
    "tests/spark/test_reliability.py": 150,
    "tests/broker/test_broker_oracle.py[3.9.1]": 130,
    "tests/broker/test_broker_oracle.py[2.3.1]": 125,
    "tests/broker/test_broker_oracle.py[2.0.1]": 115,
    "tests/kafka/test_incremental.py": 110,
}


def work_unit(nodeid: str) -> str:
    """What one worker runs whole (see above)."""
    file, _, test = nodeid.partition("::")
    for folder in _SHARED_SERVER_FOLDERS:
        if file.startswith(folder + "/"):
            return folder
    if file in _PER_VERSION_FILES and "[" in test:
        return f"{file}[{test.split('[', 1)[1].split('-', 1)[0].rstrip(']')}]"
    if nodeid.startswith(_OWN_UNIT):
        return nodeid
    return file


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """xdist's scope scheduling with `work_unit` as the scope (its `loadgroup` marks are not
    applied under pytest 9's node ids, and `loadfile` would split the shared-server folders);
    the longest units first, and a worker is handed its next unit only when it has one test
    left (xdist's own waits for two: a long unit could queue behind two long tests)."""
    from xdist.scheduler import LoadScopeScheduling

    class WorkUnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

        def _assign_work_unit(self, node) -> None:
            longest = max(self.workqueue, key=lambda unit: UNIT_SECONDS.get(unit, 0))
            self.workqueue.move_to_end(longest, last=False)
            super()._assign_work_unit(node)

        def _reschedule(self, node) -> None:
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            if self._pending_of(self.assigned_work[node]) <= 1:
                self._assign_work_unit(node)

    return WorkUnitScheduling(config, log)


_SESSION_START = 0.0


def pytest_sessionfinish(session: pytest.Session) -> None:
    """With `-n`, each worker that ran broker tests wrote its share of the real-broker
    comparisons: the controller joins them into the report."""
    if session.config.pluginmanager.hasplugin("dsession"):
        from tests.broker.recorder import merge_parts, report_path

        merge_parts(report_path(), _SESSION_START)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """With `-n`, the workers' summaries are not shown: the controller prints the real-broker
    comparisons from the joined report."""
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
    # an in-process CLI run of an earlier unit on this worker (the broker oracle's) leaves its
    # own session running, without these settings: get_or_create would hand that one back, and
    # a catalog test then finds Spark's default warehouse (seen in a clean clone's make test)
    earlier = job_session.running_session()
    if earlier is not None:
        earlier.stop()
    spark_session = job_session.get_or_create(
        "offsets-lib-tests",
        master="local[2]",
        show_progress=False,
        extra_conf={**TEST_CONF, "spark.sql.warehouse.dir": str(warehouse)},
    )
    yield spark_session
    spark_session.stop()
