"""What one xdist worker runs whole (tests/conftest.py `work_unit`), and the broker report the
workers' shares join into (tests/broker/recorder.py `merge_parts`)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.broker.recorder import Recorder, merge_parts
from tests.conftest import work_unit


@pytest.mark.parametrize(
    ("nodeid", "unit"),
    [
        ("tests/cluster/test_cluster.py::test_x", "tests/cluster"),
        ("tests/cluster/test_airflow_dag.py::test_y", "tests/cluster"),
        (
            "tests/broker/test_broker_oracle.py::test_job_agrees_with_broker[2.3.1-simple-assign]",
            "tests/broker/test_broker_oracle.py[2.3.1]",
        ),
        (
            "tests/broker/test_generated_logs.py::test_generated_logs_agree_with_broker[4.4.0]",
            "tests/broker/test_generated_logs.py[4.4.0]",
        ),
        ("tests/broker/test_sasl_source.py::test_a[x]", "tests/broker/test_sasl_source.py"),
        ("tests/kafka/test_kafka_job.py::test_z", "tests/kafka/test_kafka_job.py"),
        (
            "tests/kafka/test_incremental.py::test_incremental_chain_equals_full_reread",
            "tests/kafka/test_incremental.py::test_incremental_chain_equals_full_reread",
        ),
        (
            "tests/spark/test_catalog.py::test_run_with_database_is_read_by_name_in_a_new_session[spark]",
            "tests/spark/test_catalog.py::test_run_with_database_is_read_by_name_in_a_new_session[spark]",
        ),
        ("tests/spark/test_catalog.py::test_a_metastore_service[x]", "tests/spark/test_catalog.py"),
        ("tests/unit/test_fence.py::test_f[a-b]", "tests/unit/test_fence.py"),
    ],
)
def test_work_unit(nodeid: str, unit: str) -> None:
    assert work_unit(nodeid) == unit


def test_the_workers_broker_reports_join_into_one(tmp_path: Path, monkeypatch) -> None:
    path, since = tmp_path / "broker-checks.json", time.time() - 1
    for worker, version in (("gw0", "4.4.0"), ("gw3", "2.0.1")):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        recorder = Recorder()
        recorder.compare(version, "s", "live", "g offsets", 1, 1)
        recorder.generated[version] = {"groups": 150}
        if worker == "gw3":
            recorder.not_run["2.3.1"] = "RuntimeError: no java"
        recorder.write(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "broker-checks.gw0.json",
        "broker-checks.gw3.json",
    ]
    assert merge_parts(path, since)
    assert [p.name for p in tmp_path.iterdir()] == ["broker-checks.json"]
    report = json.loads(path.read_text())
    assert [(c["version"], c["agrees"]) for c in report["checks"]] == [
        ("4.4.0", True),
        ("2.0.1", True),
    ]
    assert report["not_run"] == {"2.3.1": "RuntimeError: no java"}
    assert report["generated"] == {"4.4.0": {"groups": 150}, "2.0.1": {"groups": 150}}
    assert not merge_parts(path, since)  # no part left: the report stays as it is
