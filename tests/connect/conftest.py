"""A Spark Connect server from the installed pyspark (Spark 4.2), one per test session: its
driver runs local[2] with the Delta and Kafka connector jars and the settings the classic test
session gets (tests/conftest.py TEST_CONF), on 127.0.0.1 at a free port.

Clients run in subprocesses (`offsets run` with SPARK_REMOTE): a Connect session in the pytest
process would switch pyspark's functions to Connect for every later classic test
(SPARK_CONNECT_MODE_ENABLED is process-wide)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cluster.servers import BIN, _start, _stop, _wait_for, clean_env
from tests.conftest import TEST_CONF
from tests.kafka.conftest import tansu_bootstrap  # noqa: F401  (the live topic's broker)
from tests.support.ports import free_port, is_listening

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


@dataclass(frozen=True)
class ConnectServer:
    url: str  # sc://127.0.0.1:PORT
    log: Path

    def client_env(self) -> dict[str, str]:
        """A client process's environment: SPARK_REMOTE, and no PYTHONPATH of this worktree
        for the server's workers to rely on (the package reaches them as an artifact)."""
        return {**os.environ, "SPARK_REMOTE": self.url}


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    from offsets_lib.job import session

    root = tmp_path_factory.mktemp("spark-connect")
    port = free_port()
    plan = session.new_session(
        master="local[2]",
        show_progress=False,
        extra_conf={**TEST_CONF, "spark.sql.warehouse.dir": str(root / "warehouse")},
    )
    conf = {
        **plan.conf,
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
    }
    command = [str(BIN / "spark-submit"), "--class", SERVER_CLASS, "--master", plan.master]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    env = clean_env({"SPARK_WORKER_DIR": str(root / "work")})
    env.pop("PYTHONPATH", None)  # the workers import the package from the session's artifact
    log = root / "server.log"
    process = _start([*command, "spark-internal"], log, env)
    try:
        _wait_for("Spark Connect server", lambda: is_listening(port), process, log)
        yield ConnectServer(f"sc://127.0.0.1:{port}", log)
    finally:
        _stop(process)
