"""The one place that builds a SparkSession (for jobs, the CLI, notebooks and test fixtures)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

from pyspark.sql import SparkSession

from offsets_lib.io import storage

# Settings measured on a 2-core machine (../shared/notes/feasibility.md section 4): a UI-less,
# loopback-bound local session with few shuffle partitions starts in ~5 s instead of ~10 s.
LOCAL_DEFAULTS: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.memory": "3g",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    # at least 4 input splits per core: with Spark's default (one per core, at most 128 MB) a
    # 500 MB dump became 5 scan tasks on 2 cores, the last wave using one core (10M records:
    # scan + shuffle write 8.2-8.6 s, with 32-48 MB splits 7.1-7.6 s)
    "spark.sql.files.minPartitionNum": "8",
    # Python workers keep freed memory for their next task. By default glibc hands blocks above
    # its (adaptive) mmap threshold back to the kernel at once, so every audit task faulted its
    # hundreds of MB in again: 10M records, 3 runs each, workers' CPU 28.3-28.5 s -> 24.9-25.8 s
    # (system time 4.3-6.1 s -> 2.3-3.7 s). 32 MB is glibc's own upper bound for the threshold;
    # at most 1 GB stays unreturned per worker. Cluster sessions keep their own settings.
    "spark.executorEnv.MALLOC_MMAP_THRESHOLD_": str(32 * 1024 * 1024),
    "spark.executorEnv.MALLOC_TRIM_THRESHOLD_": str(1024 * 1024 * 1024),
}


def hadoop_version() -> str:
    """The Hadoop client version of this Spark (hadoop-aws must match): from the jars of
    SPARK_HOME (spark-submit) or of the installed pyspark."""
    import pyspark

    homes = [os.environ.get("SPARK_HOME"), str(Path(pyspark.__file__).parent)]
    for home in filter(None, homes):
        found = sorted((Path(home) / "jars").glob("hadoop-client-api-*.jar"))
        if found:
            return found[-1].name.removeprefix("hadoop-client-api-").removesuffix(".jar")
    raise RuntimeError(f"no hadoop-client-api jar under the jars of {homes}")


def s3a_packages() -> list[str]:
    """Maven coordinates of Hadoop's S3A connector for this Spark (its AWS SDK v2 bundle comes
    as a dependency); spark-submit needs them as `--packages` (jobs/airflow_dag.py)."""
    return [f"org.apache.hadoop:hadoop-aws:{hadoop_version()}"]


def s3a_conf(uris: Iterable[str] = ()) -> dict[str, str]:
    """Spark settings for `s3a://` inputs and outputs: the S3A jars (only when a URI needs
    them, so local runs resolve no package), the endpoint of an S3-compatible server from
    AWS_ENDPOINT_URL with path-style requests, and the same endpoint for the executors' pyarrow
    and delta-rs. Credentials are never put in the conf: S3A, pyarrow and delta-rs all read
    AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (or the profile, or an instance role) themselves."""
    if not any(storage.scheme(uri) in ("s3", "s3a", "s3n") for uri in uris):
        return {}
    conf = {
        "spark.jars.packages": ",".join(s3a_packages()),
        # delta-rs names its files s3://...; Spark reads them through S3A too
        "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.endpoint.region": storage.region(),
        "spark.executorEnv.AWS_REGION": storage.region(),
    }
    endpoint = storage.endpoint_url()
    if endpoint:
        conf |= {
            "spark.hadoop.fs.s3a.endpoint": endpoint,
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": str(endpoint.startswith("https")).lower(),
            "spark.executorEnv.AWS_ENDPOINT_URL": endpoint,
        }
    return conf


def _merged(conf: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """`conf` updated by `extra`; comma lists (spark.jars.packages) are appended, not replaced."""
    merged = dict(conf)
    for key, value in extra.items():
        if key == "spark.jars.packages" and merged.get(key):
            present = merged[key].split(",")
            value = ",".join([*present, *(p for p in value.split(",") if p not in present)])
        merged[key] = value
    return merged


def get_or_create(
    app_name: str = "kafka-offsets-audit",
    *,
    master: str | None = None,
    show_progress: bool | None = None,
    extra_conf: dict[str, str] | None = None,
    storage_uris: Iterable[str] = (),
) -> SparkSession:
    """Return the active session, or a local one tuned for this job when none is running.

    Under spark-submit the master and resources come from the cluster; local defaults apply only
    when no master is configured. The console progress bar is on for interactive terminals only.
    `storage_uris` (the run's input and output) add what their file systems need (`s3a_conf`).
    """
    # Executors must use the interpreter that has pyarrow and this package installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    # spark-submit starts the Python driver from a JVM it already configured (gateway port set):
    # then the cluster's master and resources win and no local defaults are applied.
    launched_by_spark_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    if master is not None or not launched_by_spark_submit:
        builder = builder.master(master or "local[2]")
        for key, value in LOCAL_DEFAULTS.items():
            builder = builder.config(key, value)
    if show_progress is None:
        show_progress = sys.stderr.isatty()
    builder = builder.config("spark.ui.showConsoleProgress", str(show_progress).lower())
    conf = _merged(s3a_conf(storage_uris), extra_conf or {})
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
