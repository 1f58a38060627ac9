"""Hourly audit of Kafka's __consumer_offsets into Delta tables (Airflow, SparkSubmitOperator).

Each run submits ``$RELEASE/jobs/offsets_job.py --conf $PROFILE $OPTIONS --as-of
<data_interval_end> --run-id <airflow run_id>`` with the packages and settings below: the whole
spark-submit line, as Airflow's Spark provider builds it, is in docs/deploy.md (generated from
this file by tests/airflow/test_dag.py).

Set in the scheduler's environment (read when the DAG file is parsed):

- ``OFFSETS_AUDIT_RELEASE``: a checkout of this repository where ``make package`` has built
  ``dist/offsets_lib.zip`` and ``dist/executor-env.tar.gz`` (default
  ``/opt/kafka-offsets-audit``);
- ``OFFSETS_AUDIT_PROFILE``: the profile's file name under ``$RELEASE/conf`` (default
  ``prod-example.toml``): the cluster, output and Kafka client settings;
- ``OFFSETS_AUDIT_OPTIONS`` (optional): ``offsets run`` options, shell-quoted, that win over the
  profile's as flags do (``--kafka-option`` key by key), e.g. one profile for several
  environments that differ in ``--bootstrap-servers``, ``--output`` and
  ``--kafka-option ssl.ca.location=...``. Never a secret: Airflow logs the command line.

- ``OFFSETS_AUDIT_RETENTION`` (optional): what the ``prune_runs`` task keeps, as ``offsets
  prune`` options; default ``--keep-for 7d --keep-runs 48``, TABLES.md's retention for hourly
  runs: the last 7 days of runs (168) stay queryable, at least 48 when the schedule paused,
  never fewer than the latest succeeded run, and removed files are deleted 7 days later.

After a successful run, ``prune_runs`` submits ``jobs/prune_job.py`` (``offsets prune``) the
same way with the same profile: it reads where the tables are from the profile (and from
``--output``, else ``--database``, and ``--warehouse`` of ``OFFSETS_AUDIT_OPTIONS``), so the
output location is written once. Without it every run would add a ``run_id`` partition to
every table for good (8,760 a year).

After a successful run, ``report_run`` submits ``jobs/report_job.py`` (``offsets report
--next-to-tables``) the same way: the page of the latest succeeded run (this DAG run's, as
``max_active_runs`` is 1) and its ``report.json`` go next to the tables,
``<output>/_reports/<run_id>.html`` and ``_reports/latest.html`` (also on S3); the task's log
prints where. The driver's Python needs ``plotly`` (a dependency of the project).

The executors' Python packages travel with each task, as Spark documents for Python
dependencies: ``dist/executor-env.tar.gz`` (a venv of jobs/executor-constraints.txt packed with
venv-pack) goes with ``--archives ...#environment`` and ``PYSPARK_PYTHON`` names its
interpreter, so the executors need only Python 3.11 at the path of the machine that built it
(their own site-packages are not used). In client mode the driver runs on the Airflow worker:
its ``PYSPARK_DRIVER_PYTHON`` names a Python with the pins and PySpark 4.2.

The profile's secret (``KAFKA_SASL_PASSWORD``) must be in the driver's environment (the
worker's in client mode), never in a file or an option. Retries and backfills are safe: a rerun
with the same ``--run-id`` replaces that run's rows. Connection ``spark_default`` says where to
submit (master, deploy mode). The catalog that ``database`` names (a Hive metastore, Glue...)
is the cluster's own setting (its ``spark-defaults.conf``); this DAG brings only what a plain
Spark cluster lacks: the jars of Delta Lake, of Spark's Kafka connector and of Hadoop's S3A, and
Delta's SQL extension.

Needs ``apache-airflow`` and ``apache-airflow-providers-apache-spark`` in the *Airflow*
environment only: the provider pulls ``pyspark-client``, which overwrites ``pyspark`` and must
never be installed next to the job itself.
"""

from __future__ import annotations

import os
import shlex
from datetime import timedelta

import pendulum
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

try:  # Airflow 3
    from airflow.sdk import DAG
except ImportError:  # Airflow 2
    from airflow import DAG

RELEASE = os.environ.get("OFFSETS_AUDIT_RELEASE", "/opt/kafka-offsets-audit").rstrip("/")
PROFILE = os.environ.get("OFFSETS_AUDIT_PROFILE", "prod-example.toml")
OPTIONS = shlex.split(os.environ.get("OFFSETS_AUDIT_OPTIONS", ""))
RETENTION = shlex.split(os.environ.get("OFFSETS_AUDIT_RETENTION", "--keep-for 7d --keep-runs 48"))
# What a plain Spark 4.2 cluster lacks, built for its Spark, Scala and Hadoop versions (`python -m
# offsets_lib.tools.jars --packages` prints this list for the installed pyspark): Delta Lake's
# writer and catalog, Spark's Kafka connector, and Hadoop's S3A for s3:// tables (Spark 4.2
# bundles Hadoop 3.5.0; the AWS SDK bundle comes as hadoop-aws's dependency).
PACKAGES = (
    "io.delta:delta-spark_4.2_2.13:4.4.0,"
    "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0,"
    "org.apache.hadoop:hadoop-aws:3.5.0"
)
# The executors' Python (`make package`): unpacked as ./environment in every executor's folder
EXECUTOR_ENV = f"{RELEASE}/dist/executor-env.tar.gz#environment"
EXECUTOR_PYTHON = "./environment/bin/python"
# Delta's SQL extension and catalog (its Spark writer, `CREATE TABLE ... USING delta`)
DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def location_options(options: list[str]) -> list[str]:
    """The options among the run's that say where its tables are, for ``offsets prune``: its
    ``--output`` (the tables are there, registered in a database or not), else its
    ``--database``; and ``--warehouse``. As ``offsets prune --conf`` reads a profile."""
    found: dict[str, str] = {}
    for i, arg in enumerate(options):
        name, equals, value = arg.partition("=")
        if name in ("--output", "--database", "--warehouse"):
            found[name] = value if equals else options[i + 1]
    if "--output" in found:
        found.pop("--database", None)
    return [part for name, value in found.items() for part in (name, value)]


def submit(
    task_id: str, job: str, name: str, arguments: list[str], timeout: timedelta
) -> SparkSubmitOperator:
    """A task that submits ``jobs/<job>`` of the release with the profile (the same release,
    packages, executors' environment and settings for every task, so each finds what the run
    wrote)."""
    return SparkSubmitOperator(
        task_id=task_id,
        conn_id="spark_default",
        name=f"{name}-{{{{ ts_nodash }}}}",
        application=f"{RELEASE}/jobs/{job}",
        py_files=f"{RELEASE}/dist/offsets_lib.zip",
        archives=EXECUTOR_ENV,
        packages=PACKAGES,
        files=f"{RELEASE}/conf/{PROFILE}",  # cluster mode: lands in the driver's working dir
        # OFFSETS_CONF_DIR: where --conf looks in client mode
        env_vars={"OFFSETS_CONF_DIR": f"{RELEASE}/conf", "PYSPARK_PYTHON": EXECUTOR_PYTHON},
        conf={"spark.sql.session.timeZone": "UTC", **DELTA_CONF},
        application_args=["--conf", PROFILE, *arguments],
        execution_timeout=timeout,
    )


with DAG(
    dag_id="kafka_offsets_audit",
    description="Decode __consumer_offsets, predict offset expiry and group deletion, write Delta.",
    schedule="@hourly",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": timedelta(minutes=5)},
    tags=["kafka", "delta", "audit"],
    doc_md=__doc__,
) as dag:
    audit = submit(
        "audit_offsets",
        "offsets_job.py",
        "kafka-offsets-audit",
        [*OPTIONS, "--as-of", "{{ data_interval_end.isoformat() }}", "--run-id", "{{ run_id }}"],
        timedelta(minutes=50),
    )
    prune = submit(
        "prune_runs",
        "prune_job.py",
        "kafka-offsets-prune",
        [*location_options(OPTIONS), *RETENTION],
        timedelta(minutes=20),
    )
    report = submit(
        "report_run",
        "report_job.py",
        "kafka-offsets-report",
        [*location_options(OPTIONS), "--next-to-tables"],
        timedelta(minutes=20),
    )
    audit >> [report, prune]
