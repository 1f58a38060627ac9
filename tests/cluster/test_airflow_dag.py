"""The hourly DAG, run for real: Airflow runs jobs/airflow_dag.py's task (`airflow tasks test`)
with a `spark_default` connection to the standalone test cluster.

The task submits the job with the shipped profile itself, conf/prod-example.toml: a deployment's
addresses win over its example ones through the DAG's OFFSETS_AUDIT_OPTIONS (flags win over a
profile), and the SASL password comes from KAFKA_SASL_PASSWORD, as the profile says. The job
reads Kafka 4.4's __consumer_offsets over SASL_SSL (SCRAM-SHA-512, a CA made for the test) and
writes Delta tables registered in a catalog and stored on the S3-compatible server. `offsets
fetch --database`, `offsets lag --database` and the notebook's queries then read those tables,
and the next hour's run reads only the records committed since. Bad news on this path: a wrong
SASL password and a cluster without the Kafka connector's jar each end the job with one line and
its documented exit status, and the password shows in no log.

The catalog is the cluster's own configuration, as in production: the submitting machine's
spark-defaults.conf (SPARK_CONF_DIR) names a Hive metastore, here on embedded Derby in a folder
that the local readers open with `--warehouse`. Runs after this file's tests in test_cluster.py
kill a worker; this file's name sorts first so that its runs have both.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.airflow.test_dag import ensure_airflow_venv
from tests.broker.brokers import KafkaBroker
from tests.cluster.servers import (
    BIN,
    BUCKET,
    OFFSETS_PARTITIONS,
    REPO,
    SASL_PASSWORD,
    S3Server,
    SparkCluster,
    clean_env,
    write_spark_conf,
)

PROFILE = REPO / "conf" / "prod-example.toml"
DATABASE = "kafka_audit"  # the profile's
DAG_ID, TASK_ID = "kafka_offsets_audit", "audit_offsets"
OFFSETS_TOPIC = "__consumer_offsets"
TOPIC = "orders"
OUTPUT = f"s3://{BUCKET}/kafka/offsets-audit"
RUN_TIMEOUT_S = 1800  # one run took 14.5 min on 2 cores at a load average of 28
CLI_TIMEOUT_S = 300
RETENTION_MS = 7 * 24 * 3600 * 1000  # the profile's retention

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(2 * RUN_TIMEOUT_S)]


# ------------------------------------------------------------------------------ the broker


def create_topic(broker: KafkaBroker, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(broker.client_conf)
    [future] = admin.create_topics([NewTopic(TOPIC, partitions, 1)]).values()
    future.result(timeout=30)


def produce(broker: KafkaBroker, counts: dict[int, int]) -> None:
    """`counts[p]` records to partition p of TOPIC."""
    from confluent_kafka import Producer

    producer = Producer(broker.client_conf)
    for partition, count in counts.items():
        for i in range(count):
            producer.produce(TOPIC, value=f"order-{i}".encode(), partition=partition)
    assert producer.flush(30) == 0


def commit(broker: KafkaBroker, group: str, offsets: dict[int, int]) -> None:
    """One OffsetCommit of `offsets` (partition -> offset of TOPIC) by a consumer outside any
    membership."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(broker.client_conf | {"group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(
            offsets=[TopicPartition(TOPIC, p, o) for p, o in offsets.items()], asynchronous=False
        )
    finally:
        consumer.close()


def offsets_topic_created(broker: KafkaBroker) -> None:
    """__consumer_offsets exists, as on any cluster with a consumer group: a group's describe
    finds its coordinator, which creates the topic."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(broker.client_conf)
    deadline = time.monotonic() + 60
    while True:  # NOT_COORDINATOR while the broker creates the topic's partitions
        [future] = admin.describe_consumer_groups(["probe"], request_timeout=30).values()
        try:
            future.result()
            return
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def offsets_topic_records(broker: KafkaBroker) -> int:
    """Records in __consumer_offsets now (its high watermarks; nothing is compacted away yet,
    every partition starts at 0): what a full read of the topic reads."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(broker.client_conf | {"group.id": "watermarks-of-the-test"})
    try:
        return sum(
            consumer.get_watermark_offsets(TopicPartition(OFFSETS_TOPIC, p), timeout=30)[1]
            for p in range(OFFSETS_PARTITIONS)
        )
    finally:
        consumer.close()


# ------------------------------------------------------------------------- the deployment


@dataclass
class Deployment:
    root: Path
    warehouse: Path
    airflow: Path
    env: dict[str, str]  # Airflow's, and so the task's and spark-submit's
    logs: list[Path]

    def reader_env(self) -> dict[str, str]:
        """A local reader's: the object store's three settings, nothing else of the task's."""
        return clean_env({k: v for k, v in self.env.items() if k.startswith("AWS_")})


def deployment_options(
    broker: KafkaBroker, output: str = OUTPUT, database: str | None = None
) -> str:
    """OFFSETS_AUDIT_OPTIONS: this deployment's addresses instead of the profile's example ones
    (broker, bucket, the CA's file), and for the fault runs their own `database` (the catalog
    refuses a second folder for the tables of one database, before any fault shows)."""
    assert broker.tls is not None
    return shlex.join(
        [
            "--bootstrap-servers", broker.bootstrap,
            "--output", output,
            "--kafka-option", f"ssl.ca.location={broker.tls.ca_pem}",
            *(["--database", database] if database else []),
        ]
    )  # fmt: skip


# what the DAG's spark-submit lacks on a machine without the cluster's own spark-defaults.conf
SUBMIT_CONF = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    # test-only: no executor-side cache of the jars (see servers.SparkCluster)
    "spark.files.useFetchCache": "false",
}


@pytest.fixture(scope="module")
def deployment(
    tmp_path_factory: pytest.TempPathFactory,
    s3: S3Server,
    cluster: SparkCluster,
    scram_broker: KafkaBroker,
) -> Deployment:
    """A release of the job (`make package`'s zip and executors' environment, the job, the
    shipped profile itself), a DAG folder, the cluster's spark-defaults and an Airflow home
    with its metadata database."""
    root = tmp_path_factory.mktemp("deployment")
    release, dags = root / "release", root / "dags"
    for folder in (release / "jobs", release / "dist", release / "conf", dags):
        folder.mkdir(parents=True)
    for job in ("offsets_job.py", "prune_job.py", "report_job.py"):
        (release / "jobs" / job).symlink_to(REPO / "jobs" / job)
    (release / "dist" / "offsets_lib.zip").symlink_to(cluster.pyfiles)
    (release / "dist" / "executor-env.tar.gz").symlink_to(cluster.executor_env)
    (release / "conf" / PROFILE.name).symlink_to(PROFILE)
    (dags / "airflow_dag.py").symlink_to(REPO / "jobs" / "airflow_dag.py")
    warehouse = root / "catalog"
    spark_conf = write_spark_conf(root / "spark-conf", warehouse, SUBMIT_CONF)

    airflow = ensure_airflow_venv().parent / "airflow"
    connection = {
        "conn_type": "spark",
        "host": "spark://127.0.0.1",
        "port": int(cluster.master_url.rsplit(":", 1)[1]),
        "extra": {"deploy-mode": "client", "spark-binary": "spark-submit"},
    }
    scratch = root / "driver-tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    env = {
        k: v
        for k, v in clean_env(dict(cluster.env)).items()
        if k not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"}
        and not k.startswith(("AIRFLOW", "OFFSETS_", "SPARK_WORKER", "SPARK_LOCAL_DIRS", "JDK_"))
    }
    env |= {
        "AIRFLOW_HOME": str(root / "airflow-home"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(connection),
        "OFFSETS_AUDIT_RELEASE": str(release),
        "OFFSETS_AUDIT_PROFILE": PROFILE.name,
        "OFFSETS_AUDIT_OPTIONS": deployment_options(scram_broker),
        "KAFKA_SASL_PASSWORD": SASL_PASSWORD,
        "SPARK_CONF_DIR": str(spark_conf),
        "PYTHONDONTWRITEBYTECODE": "1",
        # the driver's temporary folders here: a driver killed before its shutdown hook ran
        # leaves no /tmp/spark-* copy of the executors' archive behind
        "SPARK_SUBMIT_OPTS": f"-Djava.io.tmpdir={scratch}",
    }
    migrate = subprocess.run(
        [str(airflow), "db", "migrate"], env=env, cwd=root, capture_output=True, text=True,
        timeout=CLI_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert migrate.returncode == 0, (migrate.stdout + migrate.stderr)[-3000:]
    return Deployment(root, warehouse, airflow, env, [])


@dataclass
class TaskRun:
    code: int  # `airflow tasks test` exits 0 when the task fails too (Airflow 3.3)
    log: str
    seconds: float

    @property
    def state(self) -> str | None:
        """The task instance's last state in the log (success, up_for_retry, failed)."""
        states = re.findall(r"new_state=(\w+)", self.log)
        return states[-1] if states else None


def run_task(
    deployment: Deployment, logical_date: datetime, task_id: str = TASK_ID, **env: str
) -> TaskRun:
    """`airflow tasks test` of the DAG's task (the run by default) for `logical_date`, with
    `env` on top of the deployment's."""
    log = deployment.root / f"airflow-{len(deployment.logs)}.log"
    deployment.logs.append(log)
    command = [str(deployment.airflow), "tasks", "test", DAG_ID, task_id, logical_date.isoformat()]
    started = time.monotonic()
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, env=deployment.env | env, cwd=deployment.root, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        try:
            code = process.wait(timeout=RUN_TIMEOUT_S)
        finally:
            if process.poll() is None:  # Airflow, spark-submit and the driver
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    return TaskRun(code, log.read_text(errors="replace"), time.monotonic() - started)


def offsets_cli(deployment: Deployment, *args: str) -> subprocess.CompletedProcess:
    """A local `offsets` command reading the catalog of the cluster's runs."""
    return subprocess.run(
        [str(BIN / "offsets"), *args, "--database", DATABASE, "--warehouse",
         str(deployment.warehouse)],
        env=deployment.reader_env(), cwd=deployment.root, capture_output=True, text=True,
        timeout=CLI_TIMEOUT_S, check=False,
    )  # fmt: skip


@contextmanager
def aws_env(deployment: Deployment) -> Iterator[None]:
    """This test process reads the store with the readers' AWS settings."""
    settings = {k: v for k, v in deployment.env.items() if k.startswith("AWS_")}
    saved = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
    for key in saved:
        del os.environ[key]
    os.environ.update(settings)
    try:
        yield
    finally:
        for key in settings:
            os.environ.pop(key, None)
        os.environ.update(saved)


def runs_rows(deployment: Deployment, output: str = OUTPUT) -> list[dict[str, Any]]:
    from offsets_lib.io import sink

    with aws_env(deployment):
        rows = sink.read_table(output, "runs").to_pylist()
    return sorted(rows, key=lambda r: r["started_at"])


def lag_rows(deployment: Deployment) -> list[tuple[str, str, int, int, int, int]]:
    """`offsets lag --database --json` of the latest run: (group, topic, partition, committed,
    log end, lag)."""
    done = offsets_cli(deployment, "lag", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    keys = ("group_id", "topic", "partition", "committed_offset", "log_end_offset", "lag")
    return sorted(tuple(r[k] for k in keys) for r in rows)


def hour_after(now: datetime) -> datetime:
    return now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)


# ------------------------------------------------------------------------------ the runs

# Hour 1: TOPIC's log ends at 100 per partition; two groups commit.
FIRST_END = {0: 100, 1: 100, 2: 100}
FIRST_COMMITS = {"billing": {0: 40, 1: 55, 2: 70}, "shipping": {0: 100, 2: 30}}
# Hour 2: 50 more records on partition 0; billing moves on, a new group commits.
SECOND_PRODUCED = {0: 50}
SECOND_COMMITS = {"billing": {0: 120}, "reports": {1: 100}}


@pytest.fixture(scope="module")
def first_run(deployment: Deployment, scram_broker: KafkaBroker) -> dict:
    create_topic(scram_broker, len(FIRST_END))
    produce(scram_broker, FIRST_END)
    for group, offsets in FIRST_COMMITS.items():
        commit(scram_broker, group, offsets)
    records = offsets_topic_records(scram_broker)
    logical_date = hour_after(datetime.now(UTC))
    task = run_task(deployment, logical_date)
    return {"task": task, "records": records, "logical_date": logical_date}


def test_first_dag_run_reads_the_whole_topic(
    first_run: dict, deployment: Deployment, cluster: SparkCluster
) -> None:
    task: TaskRun = first_run["task"]
    assert (task.code, task.state) == (0, "success"), task.log[-6000:]
    master_log = (cluster.root / "master.log").read_text()
    assert "Registered app kafka-offsets-audit with ID app-" in master_log  # on the cluster
    [row] = runs_rows(deployment)
    assert row["status"] == "succeeded"
    assert row["source"] == "kafka"
    assert row["records_read"] == first_run["records"] == 5  # one per committed partition
    assert row["records_rejected"] == 0
    assert row["retention_ms"] == RETENTION_MS
    assert row["coordinator"] == "new"
    assert SASL_PASSWORD not in task.log


def test_fetch_reads_the_catalog_tables(first_run: dict, deployment: Deployment) -> None:
    """`offsets fetch --database`: the committed offsets of the first hour, with their lag
    against the log ends the run took from the broker."""
    done = offsets_cli(deployment, "fetch", "--all-groups", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout)
    got = sorted(
        (g["group_id"], p["topic"], p["partition"], p["committed_offset"], p["lag"])
        for g in doc["groups"]
        for p in g["partitions"]
    )
    assert got == [
        ("billing", TOPIC, 0, 40, 60),
        ("billing", TOPIC, 1, 55, 45),
        ("billing", TOPIC, 2, 70, 30),
        ("shipping", TOPIC, 0, 100, 0),
        ("shipping", TOPIC, 2, 30, 70),
    ]
    assert all(g["error"] is None for g in doc["groups"])


def test_lag_reads_the_catalog_tables(first_run: dict, deployment: Deployment) -> None:
    assert lag_rows(deployment) == [
        ("billing", TOPIC, 0, 40, 100, 60),
        ("billing", TOPIC, 1, 55, 100, 45),
        ("billing", TOPIC, 2, 70, 100, 30),
        ("shipping", TOPIC, 0, 100, 100, 0),
        ("shipping", TOPIC, 2, 30, 100, 70),
    ]


@pytest.fixture(scope="module")
def second_run(first_run: dict, deployment: Deployment, scram_broker: KafkaBroker) -> dict:
    produce(scram_broker, SECOND_PRODUCED)
    for group, offsets in SECOND_COMMITS.items():
        commit(scram_broker, group, offsets)
    records = offsets_topic_records(scram_broker)
    logical_date = first_run["logical_date"] + timedelta(hours=1)
    task = run_task(deployment, logical_date)
    return {"task": task, "records": records, "logical_date": logical_date}


def test_the_next_hour_reads_only_the_new_records(
    first_run: dict, second_run: dict, deployment: Deployment, s3: S3Server
) -> None:
    from tests.cluster.test_cluster import files_per_table

    task: TaskRun = second_run["task"]
    assert (task.code, task.state) == (0, "success"), task.log[-6000:]
    first, second = runs_rows(deployment)
    assert second["status"] == "succeeded"
    assert second["records_read"] == second_run["records"] - first_run["records"] == 2
    # with the cluster's defaults (200 SQL shuffle partitions): a task per core of its two
    # workers, at most a file per task and table
    assert ", 2 tasks, read by " in task.log, task.log[-6000:]
    files = files_per_table(s3, OUTPUT, second["run_id"])
    print(f"the second hour: 2 tasks, files per table {files}")
    assert max(files.values()) <= 2 and files["offsets"] >= 1, files
    assert second["as_of"] - first["as_of"] == timedelta(hours=1)
    assert SASL_PASSWORD not in task.log
    # the state of both hours: billing's partition 0 moved on, reports is new
    assert lag_rows(deployment) == [
        ("billing", TOPIC, 0, 120, 150, 30),
        ("billing", TOPIC, 1, 55, 100, 45),
        ("billing", TOPIC, 2, 70, 100, 30),
        ("reports", TOPIC, 1, 100, 100, 0),
        ("shipping", TOPIC, 0, 100, 150, 50),
        ("shipping", TOPIC, 2, 30, 100, 70),
    ]


NOTEBOOK_QUERIES = """
import json, sys
import pandas as pd
from offsets_lib.tools import notebook_queries as q

from offsets_lib.job import session

spark = session.get_or_create(warehouse=sys.argv[2])  # the notebook's own session
run = q.load_run(None, database=sys.argv[1], warehouse=sys.argv[2], spark=spark)
worst = q.worst_lagging_groups(run.tables["lag"])
expiring = q.expiring_within(run.tables["offset_decisions"], run.as_of, pd.Timedelta("7d"))
rate, _ = q.commit_rate(run.tables["offsets"], run.tables["metrics"])
print(json.dumps({
    "run_id": run.run_id,
    "worst": worst[["group_id", "partitions", "total_lag", "max_lag"]].values.tolist(),
    "expiring": sorted(map(list, expiring[["group_id", "partition"]].values.tolist())),
    "commits": int(rate["commits"].sum()),
}))
"""


def test_the_notebook_queries_read_the_catalog_tables(
    second_run: dict, deployment: Deployment
) -> None:
    """The lag-audit notebook's queries over the latest run, found through the catalog."""
    assert second_run["task"].state == "success"
    done = subprocess.run(
        [str(BIN / "python"), "-c", NOTEBOOK_QUERIES, DATABASE, str(deployment.warehouse)],
        env=deployment.reader_env(), cwd=deployment.root, capture_output=True, text=True,
        timeout=CLI_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["run_id"] == runs_rows(deployment)[-1]["run_id"]
    assert got["worst"] == [
        ["shipping", 2, 120, 70],
        ["billing", 3, 105, 45],
        ["reports", 1, 0, 0],
    ]
    # committed within the last two hours: every offset expires within the profile's 7 days
    assert got["expiring"] == [
        ["billing", 0], ["billing", 1], ["billing", 2],
        ["reports", 1], ["shipping", 0], ["shipping", 2],
    ]  # fmt: skip


def test_the_report_task_writes_the_pages_next_to_the_tables(
    second_run: dict, deployment: Deployment
) -> None:
    """The DAG's report task after the second hour: the run's page and `_reports/latest.html`
    with their report.json on S3 next to the tables, read back; its log says where."""
    from offsets_lib.io import storage

    assert second_run["task"].state == "success"
    second = runs_rows(deployment)[-1]
    task = run_task(deployment, second_run["logical_date"], "report_run", KAFKA_SASL_PASSWORD="")
    assert (task.code, task.state) == (0, "success"), task.log[-6000:]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", second["run_id"])
    assert f"{OUTPUT}/_reports/{name}.html" in task.log
    with aws_env(deployment):
        fs, root = storage.filesystem(OUTPUT)
        read = {}
        for file in (f"{name}.html", f"{name}.json", "latest.html", "latest.json"):
            with fs.open_input_stream(f"{root}/_reports/{file}") as stream:
                read[file] = stream.read().decode("utf-8")
    assert read["latest.html"] == read[f"{name}.html"]
    assert f"<dd id='h-run'>{second['run_id']}</dd>" in read["latest.html"]
    summary = json.loads(read["latest.json"])
    assert summary["run_id"] == second["run_id"]
    assert summary["tiles"]["rejects"] == 0


def test_the_prune_task_removes_the_older_run(
    first_run: dict, second_run: dict, deployment: Deployment
) -> None:
    """The DAG's prune task after the second hour, with a deployment's retention of one run:
    it finds the tables from the profile and the deployment's --output (no Kafka password
    needed), removes the first hour's run, and the readers still read the second."""
    assert second_run["task"].state == "success"
    before = lag_rows(deployment)
    first, second = runs_rows(deployment)
    task = run_task(
        deployment,
        second_run["logical_date"],
        "prune_runs",
        OFFSETS_AUDIT_RETENTION="--keep-runs 1 --no-vacuum",
        KAFKA_SASL_PASSWORD="",
    )
    assert (task.code, task.state) == (0, "success"), task.log[-6000:]
    assert "removed 1 runs, kept 1 (latest succeeded: " + second["run_id"] + ")" in task.log
    assert [r["run_id"] for r in runs_rows(deployment)] == [second["run_id"]]
    assert first["run_id"] != second["run_id"]
    assert lag_rows(deployment) == before


def test_the_password_is_in_no_log(
    second_run: dict, deployment: Deployment, cluster: SparkCluster
) -> None:
    """Neither Airflow's logs nor the cluster's (master, workers, and the executors' of
    applications the workers have not cleaned up yet) hold the secret."""
    logs = [*deployment.logs, *cluster.root.glob("*.log"), *cluster.root.glob("work-*/*/*/std*")]
    assert len(logs) >= len(deployment.logs) + 3
    assert [log for log in logs if SASL_PASSWORD in log.read_text(errors="replace")] == []


# ------------------------------------------------------------------------------ bad news
# Each on the real servers, after the runs above (another output, so their tables stay); they
# need no earlier run: `-k` runs them alone.

FAULT_OUTPUT = f"s3://{BUCKET}/kafka/faults"
FAULT_DATABASE = "kafka_audit_faults"
WRONG_PASSWORD = "wrong-Pa55-for-tests"  # test-only


def job_lines(log: str) -> set[str]:
    """The job's own lines (`offsets: ...`) in a log, without what Airflow's log adds before
    and after them (its error repeats the tail of spark-submit's output)."""
    return {
        AIRFLOW_SUFFIX.sub("", line[line.index("offsets: ") :])
        for line in log.splitlines()
        if "offsets: " in line
    }


AIRFLOW_SUFFIX = re.compile(r"\s+\[airflow\.[\w.]+\] loc=\S+$")


def fault_as_of() -> datetime:
    """A later hour than the runs above."""
    return hour_after(datetime.now(UTC)) + timedelta(hours=3)


def test_a_wrong_sasl_password_fails_in_one_line(
    deployment: Deployment, scram_broker: KafkaBroker
) -> None:
    """The scheduler's KAFKA_SASL_PASSWORD is wrong: the task fails with the job's one line
    (exit 3, input not readable) and neither password shows anywhere in its log."""
    task = run_task(
        deployment,
        fault_as_of(),
        KAFKA_SASL_PASSWORD=WRONG_PASSWORD,
        OFFSETS_AUDIT_OPTIONS=deployment_options(scram_broker, FAULT_OUTPUT, FAULT_DATABASE),
    )
    assert task.state == "up_for_retry", task.log[-6000:]  # the DAG's retries fail alike
    assert "Error code is: 3." in task.log, task.log[-6000:]
    [line] = job_lines(task.log)  # one line, however often Airflow shows it
    assert "authentication" in line.lower(), line
    assert scram_broker.bootstrap in line
    assert WRONG_PASSWORD not in task.log and SASL_PASSWORD not in task.log
    print(f"wrong password: {line} ({task.seconds:.1f} s with Airflow)")


def test_a_cluster_without_the_kafka_connector_fails_in_one_line(
    deployment: Deployment, cluster: SparkCluster, scram_broker: KafkaBroker
) -> None:
    """spark-submit as the DAG runs it, but without Spark's Kafka connector among --packages
    (a plain cluster has none): exit 2 (the deployment is incomplete), one line naming it."""
    from offsets_lib.io.sources.kafka import CONNECTOR
    from offsets_lib.job.session import DELTA_CONF
    from offsets_lib.tools import jars

    packages = [p for p in jars.submit_packages() if not p.startswith(f"{CONNECTOR}:")]
    assert len(packages) == len(jars.submit_packages()) - 1
    release = Path(deployment.env["OFFSETS_AUDIT_RELEASE"])
    offsets_topic_created(scram_broker)
    as_of = fault_as_of()
    command = [
        str(BIN / "spark-submit"), "--master", cluster.master_url,
        "--packages", ",".join(packages),
        *(item for k, v in DELTA_CONF.items() for item in ("--conf", f"{k}={v}")),
        "--py-files", str(release / "dist" / "offsets_lib.zip"),
        str(release / "jobs" / "offsets_job.py"), "--conf", PROFILE.name,
        *shlex.split(deployment_options(scram_broker, FAULT_OUTPUT, FAULT_DATABASE)),
        "--as-of", as_of.isoformat(), "--run-id", "without-the-connector",
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(
        command, env=deployment.env | {"OFFSETS_CONF_DIR": str(release / "conf")},
        cwd=deployment.root, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False,
    )  # fmt: skip
    seconds = time.monotonic() - started
    output = done.stdout + done.stderr
    assert done.returncode == 2, output[-6000:]
    [line] = job_lines(output)
    assert CONNECTOR in line and "--packages" in line, line
    assert SASL_PASSWORD not in output
    print(f"no connector: {line} ({seconds:.1f} s with spark-submit)")
