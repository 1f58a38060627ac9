"""Hourly audit of Kafka's __consumer_offsets into Delta tables (Airflow, SparkSubmitOperator).

Each run executes the spark-submit line below for the hour that just ended::

    spark-submit --packages org.apache.hadoop:hadoop-aws:3.5.0 \\
        --py-files $RELEASE/dist/offsets_lib.zip --files $RELEASE/conf/prod-example.toml \\
        $RELEASE/jobs/offsets_job.py --conf prod-example.toml \\
        --as-of <data_interval_end> --run-id <airflow run_id>

``$RELEASE`` is a checkout of this repository where ``make package`` has built
``dist/offsets_lib.zip`` (set ``OFFSETS_AUDIT_RELEASE`` in the scheduler's environment; default
``/opt/kafka-offsets-audit``). The profile carries the cluster, output and Kafka client settings;
its secret (``KAFKA_SASL_PASSWORD``) must be in the driver's environment (the worker's in client
mode), never in this file. Retries and backfills are safe: a rerun with the same ``--run-id``
replaces that run's rows. Connection ``spark_default`` says where to submit (master, deploy mode).

Needs ``apache-airflow`` and ``apache-airflow-providers-apache-spark`` in the *Airflow*
environment only: the provider pulls ``pyspark-client``, which overwrites ``pyspark`` and must
never be installed next to the job itself.
"""

from __future__ import annotations

import os
from datetime import timedelta

import pendulum
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

try:  # Airflow 3
    from airflow.sdk import DAG
except ImportError:  # Airflow 2
    from airflow import DAG

RELEASE = os.environ.get("OFFSETS_AUDIT_RELEASE", "/opt/kafka-offsets-audit").rstrip("/")
PROFILE = "prod-example.toml"
# s3a:// dumps and tables: Hadoop's S3A connector matching the cluster's Hadoop (Spark 4.2 bundles
# Hadoop 3.5.0; offsets_lib.job.session.s3a_packages() names it for the installed pyspark)
PACKAGES = "org.apache.hadoop:hadoop-aws:3.5.0"

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
    SparkSubmitOperator(
        task_id="audit_offsets",
        conn_id="spark_default",
        name="kafka-offsets-audit-{{ ts_nodash }}",
        application=f"{RELEASE}/jobs/offsets_job.py",
        py_files=f"{RELEASE}/dist/offsets_lib.zip",
        packages=PACKAGES,
        files=f"{RELEASE}/conf/{PROFILE}",  # cluster mode: lands in the driver's working dir
        env_vars={"OFFSETS_CONF_DIR": f"{RELEASE}/conf"},  # client mode: where --conf looks
        conf={"spark.sql.session.timeZone": "UTC"},
        application_args=[
            "--conf",
            PROFILE,
            "--as-of",
            "{{ data_interval_end.isoformat() }}",
            "--run-id",
            "{{ run_id }}",
        ],
        execution_timeout=timedelta(minutes=50),
    )
