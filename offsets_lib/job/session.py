"""The one place that builds a SparkSession (for jobs, the CLI, notebooks and test fixtures).

A local session (no spark-submit) gets, in this order of layers:

1. ``LOCAL_DEFAULTS``: measured settings for a small machine, master ``local[*]``;
2. ``jvm_packages()``: Delta Lake's jars matching the installed ``delta-spark`` and ``pyspark``
   and Spark's Kafka connector, resolved from Maven Central into Ivy's cache (``make setup``
   warms it with ``python -m offsets_lib.job.session --warm``);
3. ``DELTA_CONF``: Delta's SQL extension and catalog;
4. ``catalog_conf(warehouse)``: with a warehouse folder, a Hive metastore on embedded Derby
   inside it, so that tables registered with ``--database`` outlive the session;
5. the driver JVM's class-data archive (``class_archive()``), when ``make setup`` built one.

Under spark-submit the cluster's own configuration wins: none of these layers is applied (the
job is submitted with ``--packages`` and the cluster's catalog; see jobs/offsets_job.py).
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

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
    # (system time 4.3-6.1 s -> 2.3-3.7 s). glibc caps that threshold at 32 MB, and blocks above
    # it (numpy's buffers of a task's keys and values: the dominant group's 274 MB of metadata)
    # still went back at once, so workers now take every block from their heap (MMAP_MAX_ 0):
    # 10M records, plain and one group 30 %, alternating sessions: 12.1 / 14.2 s -> 11.5-11.8 /
    # 13.2-13.6 s. The price: a worker keeps the heap of its largest task (glibc returns only
    # free memory above 1 GB at the heap's top); the largest worker of a 100M-record run stayed
    # at 1.9 GB. Cluster sessions keep their own settings.
    "spark.executorEnv.MALLOC_MMAP_MAX_": "0",
    "spark.executorEnv.MALLOC_TRIM_THRESHOLD_": str(1024 * 1024 * 1024),
    # The same for Arrow's allocator (mimalloc in pyarrow's wheels), which by default hands
    # freed pages back 10 ms later: a worker then faults the next task's memory in afresh. 10M
    # records, alternating sessions, warm reps: workers' system time 1.6-2.1 s -> 0.9-1.2 s.
    # The price is memory a worker keeps: the largest worker of a 100M-record run 1.3 -> 1.9 GB.
    "spark.executorEnv.MIMALLOC_PURGE_DELAY": "-1",
}

LOCAL_MASTER = "local[*]"  # every core of the machine

DELTA_CONF: dict[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}

SCALA_VERSION = "2.13"  # Spark 4 is built for Scala 2.13 only

# The log level of local sessions: Spark's start-up warnings (native-hadoop, loopback address,
# Ivy's resolution report) are not for the person at the terminal; --verbose shows them.
QUIET_LOG_LEVEL = "ERROR"
VERBOSE_LOG_LEVEL = "WARN"
JAVA_OPTIONS = "spark.driver.extraJavaOptions"
LOG4J2_CONF = Path(__file__).with_name("log4j2.properties")


def jvm_packages() -> list[str]:
    """Maven coordinates of the JVM packages a local session loads: Delta Lake's jars for the
    installed ``delta-spark`` (its artifact is named after Spark's major.minor, as
    ``delta.pip_utils.configure_spark_with_delta_pip`` names it) and the Kafka connector built
    for the installed ``pyspark``."""
    import pyspark

    spark_version = pyspark.__version__
    spark_minor = ".".join(spark_version.split(".")[:2])
    delta_version = metadata.version("delta_spark")
    return [
        f"io.delta:delta-spark_{spark_minor}_{SCALA_VERSION}:{delta_version}",
        f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_VERSION}:{spark_version}",
    ]


def catalog_conf(warehouse: str | os.PathLike[str] | None) -> dict[str, str]:
    """Settings of a persistent local catalog: Spark's warehouse folder and a Hive metastore on
    embedded Derby inside it (one JVM at a time may open it). Empty without a warehouse: then
    the catalog lives as long as the session (Spark's in-memory catalog)."""
    if warehouse is None:
        return {}
    root = Path(warehouse).resolve()
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(root),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={root / 'metastore_db'};create=true"
        ),
    }


# A local driver JVM that moves few records compiles with C1 only. With the file shuffle and
# delta-rs the records pass through Python workers: the JVM schedules tasks and passes small
# results, and C2's compiler thread only competes with the workers for the cores. A JVM that
# reads many records from Spark's Kafka source needs C2. Measured (issue 19, 2 cores, Kafka
# 4.4.0, alternating runs): `offsets run --source kafka` of 10k new records over a 10M-record
# state 11.5-12.8 s with C1 only, 14.3-15.3 s with both compilers; the first run, reading all
# 10M records through the connector, 56 s with C1 only, 45 s with both (~1.1 s per million
# records read against ~3 s saved at start: at most QUICK_START_MAX_RECORDS keeps a margin).
QUICK_START_JIT = ("-XX:TieredStopAtLevel=1",)
QUICK_START_MAX_RECORDS = 1_000_000


def is_quick_start(jvm_records: int) -> bool:
    """Whether a local driver JVM that moves `jvm_records` records starts with QUICK_START_JIT."""
    return jvm_records <= QUICK_START_MAX_RECORDS


def driver_java_options(
    *,
    warehouse: str | os.PathLike[str] | None = None,
    verbose: bool = False,
    quick_start: bool = False,
) -> str:
    """The local driver JVM's options: our log4j 2 configuration (Spark's start-up warnings
    only with ``verbose``), with a warehouse Derby's home (else derby.log lands in the working
    directory), and with ``quick_start`` QUICK_START_JIT."""
    level = VERBOSE_LOG_LEVEL if verbose else QUIET_LOG_LEVEL
    options = [
        f"-Dlog4j2.configurationFile={LOG4J2_CONF}",
        f"-Doffsets.log.level={level.lower()}",
    ]
    if quick_start:
        options += QUICK_START_JIT
    if warehouse is not None:
        options.append(f"-Dderby.system.home={Path(warehouse).resolve()}")
    archive = class_archive()
    if archive is not None and archive.exists():
        options += [f"-XX:SharedArchiveFile={archive}", *_QUIET_CDS]
    return " ".join(options)


# The class-data archive's own warnings (classes it skips, an archive of another JVM build it
# ignores) are not for the person at the terminal: a JVM that cannot use it starts as usual.
_QUIET_CDS = ("-Xshare:auto", "-Xlog:cds=off", "-Xlog:cds+dynamic=off")


def class_archive() -> Path | None:
    """Where the local driver JVM's class-data archive (Java's AppCDS) is kept: one per Java
    binary, Spark version and JVM packages, in the user's cache, outside the repository. None
    when no Java is found.

    Why: a local JVM loads and verifies ~15,000 classes of Spark's jars at every start. Mapping
    them from an archive measured (2 cores, Java 17): session with a first job 8.7 -> 6.1-6.6 s,
    a Parquet write and read after it 11.7 -> 8.6-9.1 s. `make setup` builds it
    (`build_class_archive`); sessions use it when it exists."""
    import hashlib
    import shutil

    home = os.environ.get("JAVA_HOME")
    java = Path(home) / "bin" / "java" if home else None
    if java is None or not java.exists():
        found = shutil.which("java")
        java = Path(found) if found else None
    if java is None:
        return None
    java = java.resolve()
    # The JVM refuses an archive whose class path entries moved or changed, silently with
    # -Xshare:auto: the key names Spark's jars folder (each checkout's venv has its own) and
    # its time, or a second venv (a clean clone's) wrote the archive the first then ignored.
    import pyspark

    spark_jars = Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent) / "jars"
    key = "|".join(
        [
            str(java),
            str(java.stat().st_mtime_ns),
            metadata.version("pyspark"),
            str(spark_jars.resolve()),
            str(spark_jars.stat().st_mtime_ns) if spark_jars.exists() else "",
            *jvm_packages(),
            "driver-class-path",  # the archive covers the jars on the driver's class path
        ]
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return Path.home() / ".cache" / "kafka-offsets-audit" / f"spark-classes-{digest}.jsa"


def is_launched_by_spark_submit() -> bool:
    """spark-submit starts the Python driver from a JVM it already configured (gateway port)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def local_conf(
    *,
    warehouse: str | os.PathLike[str] | None = None,
    show_progress: bool = False,
    verbose: bool = False,
    master: str = LOCAL_MASTER,
    quick_start: bool = False,
) -> dict[str, str]:
    """Every setting of a session this module starts (see the module docstring for the layers);
    `master` another than local (tests' standalone clusters) ships the jars to its executors;
    `quick_start`: see QUICK_START_JIT."""
    return {
        **LOCAL_DEFAULTS,
        **jvm_package_conf(master),
        **DELTA_CONF,
        **catalog_conf(warehouse),
        JAVA_OPTIONS: driver_java_options(
            warehouse=warehouse, verbose=verbose, quick_start=quick_start
        ),
        "spark.ui.showConsoleProgress": str(show_progress).lower(),
    }


def jvm_package_conf(master: str = LOCAL_MASTER) -> dict[str, str]:
    """``spark.jars.packages`` for Spark's own resolution (Ivy, Maven Central), or, once it
    resolved them on this machine, the jars it resolved (the manifest
    :func:`remember_resolved_jars` wrote): on the driver JVM's class path for a local master
    (`driver_class_path`), else ``spark.jars``. Why: a resolution with a warm cache still took
    ~5-25 s per session start here (Ivy asks every repository for parent POMs again) and
    prints its report on the terminal; the listed jars are the same files. And the local
    executor copies every ``spark.jars`` jar at its start and deletes the copies at its end,
    and the driver's class archive covers only classes of the class path: local session start
    3.4-3.6 -> 2.8-3.3 s (2 cores)."""
    jars = resolved_jars()
    if not jars:
        return {"spark.jars.packages": ",".join(jvm_packages())}
    if master.startswith("local"):
        return {"spark.driver.extraClassPath": os.pathsep.join(driver_class_path(jars))}
    return {"spark.jars": ",".join(jars)}


def driver_class_path(jars: Iterable[str]) -> list[str]:
    """The resolved jars (file: URIs) as class path entries, without the artifacts Spark ships
    itself (Hadoop's client, Parquet, Jackson, log4j... in other versions): the class path
    lists ours before Spark's, and Spark's own must win, as they do over ``spark.jars``
    (loaded by a child class loader, parent first)."""
    import pyspark

    def artifact(name: str) -> str:
        found = _VERSIONED_JAR.match(name)
        return found.group("artifact") if found else name

    home = Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)
    spark_own = {artifact(jar.name) for jar in (home / "jars").glob("*.jar")}
    paths = [Path(jar.removeprefix("file://").removeprefix("file:")) for jar in jars]
    # Ivy names its jars group_artifact-version.jar
    return [str(p) for p in paths if artifact(p.name.split("_", 1)[-1]) not in spark_own]


_VERSIONED_JAR = re.compile(r"^(?P<artifact>.+?)-\d[^/]*\.jar$")


def _manifest() -> Path:
    """Where the jars Spark resolved for this pyspark/delta-spark pairing are listed (next to
    Ivy's cache, outside the repository). Named with MANIFEST_VERSION: a manifest of an earlier
    version is not read."""
    name = f"offsets-lib-{MANIFEST_VERSION}-" + "+".join(
        c.replace(":", "_") for c in jvm_packages()
    )
    return ivy_jars_folder().parent / f"{name}.jars"


# 2: version 1 manifests could list the S3A packages' jars too, when the first session that
# resolved ours was one reading s3a:// (`make setup`'s offsets_lib.tools.jars): every local
# session then loaded ~790 MB of jars, which the local executor copies at its start (session
# start 5.1-5.2 s; with our packages' 38 jars 3.4-3.6 s, 2 cores).
MANIFEST_VERSION = 2


def resolved_jars() -> list[str]:
    """The jars of an earlier resolution, if the manifest exists and every jar is still there."""
    manifest = _manifest()
    if not manifest.exists():
        return []
    jars = [line for line in manifest.read_text().splitlines() if line]
    if not jars or not all(Path(j.removeprefix("file:")).exists() for j in jars):
        return []
    return jars


def remember_resolved_jars(spark: SparkSession) -> None:
    """After Spark resolved ``spark.jars.packages``: list the local jars it added, when it
    resolved exactly our packages (ours came from the manifest already, or a session also
    resolved others: S3A's, whose AWS SDK bundle alone is ~690 MB, are not for every session)."""
    packages = spark.sparkContext.getConf().get("spark.jars.packages", "") or ""
    if sorted(p for p in packages.split(",") if p) != sorted(jvm_packages()):
        return
    jars = [j for j in spark.sparkContext.getConf().get("spark.jars", "").split(",") if j.strip()]
    local = [j for j in jars if Path(j.removeprefix("file:")).exists()]
    if local:
        _manifest().parent.mkdir(parents=True, exist_ok=True)
        _manifest().write_text("\n".join(local) + "\n")


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
    warehouse: str | os.PathLike[str] | None = None,
    verbose: bool = False,
    storage_uris: Iterable[str] = (),
    quick_start: bool = False,
) -> SparkSession:
    """Return the active session, or a local one tuned for this job when none is running.

    Under spark-submit the master, packages, catalog and resources come from the cluster; the
    local layers apply only when no master is configured (or ``master`` is given).
    ``extra_conf`` is applied last (tests: fewer partitions). ``warehouse``: the folder of a
    persistent local catalog (``--warehouse``), see :func:`catalog_conf`. ``verbose`` shows
    Spark's and the JVM's warnings. ``storage_uris`` (the run's input and output) add what their
    file systems need (:func:`s3a_conf`, local or not). ``quick_start``: the run's driver JVM
    moves few records (see QUICK_START_JIT; local sessions only).
    """
    # Executors must use the interpreter that has pyarrow and this package installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    local = master is not None or not is_launched_by_spark_submit()
    if local:
        if show_progress is None:
            show_progress = sys.stderr.isatty()
        builder = builder.master(master or LOCAL_MASTER)
        conf = local_conf(
            warehouse=warehouse,
            show_progress=show_progress,
            verbose=verbose,
            master=master or LOCAL_MASTER,
            quick_start=quick_start,
        )
        extra = dict(extra_conf or {})
        if JAVA_OPTIONS in extra:  # added to ours, not instead of them
            extra[JAVA_OPTIONS] = f"{conf[JAVA_OPTIONS]} {extra[JAVA_OPTIONS]}"
        conf = _merged(_merged(conf, s3a_conf(storage_uris)), extra)
    else:
        conf = _merged(s3a_conf(storage_uris), extra_conf or {})
    for key, value in conf.items():
        builder = builder.config(key, value)
    with _jvm_start_noise_dropped(enabled=local and not verbose):
        spark = builder.getOrCreate()
    if local:
        remember_resolved_jars(spark)
        spark.sparkContext.setLogLevel(VERBOSE_LOG_LEVEL if verbose else QUIET_LOG_LEVEL)
    return spark


# What a run's tasks import (the audit, its emitters and sinks); the workers started early
# import them before the first stage needs them.
TASK_MODULES = ("offsets_lib.engine.exchange", "offsets_lib.engine.staging", "offsets_lib.io.sink")


def start_python_workers(
    spark: SparkSession, modules: Sequence[str] = TASK_MODULES
) -> threading.Thread:
    """Start the executors' Python workers, with `modules` imported, in a background job while
    the driver plans the run (reads the checkpoint, asks Kafka for offsets, lists files): the
    stages that follow reuse them (spark.python.worker.reuse, Spark's default). Returns the
    job's thread; a failure there is left to the run's own jobs to report.

    Why: a fresh JVM's first Python job pays for the daemon and workers, their imports and
    Spark's cold Arrow path; measured (2 cores): a job of two trivial mapInArrow tasks took
    2.5-2.7 s as the JVM's first job and 0.2-0.3 s after it, and an hourly Kafka run's driver
    plans for ~2 s after the session starts, with its executors idle."""
    tasks = max(spark.sparkContext.defaultParallelism, 1)

    def start() -> None:
        try:
            spark.sparkContext.setLocalProperty("spark.job.description", "start Python workers")
            ids = spark.range(0, tasks, 1, tasks)
            ids.mapInArrow(partial(_imported, tuple(modules)), ids.schema).collect()
        except Exception:  # the run's own jobs start workers again and fail loud
            logging.getLogger(__name__).debug("starting Python workers failed", exc_info=True)

    thread = threading.Thread(target=start, name="start-python-workers", daemon=True)
    thread.start()
    return thread


def _imported(modules: tuple[str, ...], batches: Iterator[Any]) -> Iterator[Any]:
    """Executor side of `start_python_workers`."""
    import importlib

    for module in modules:
        importlib.import_module(module)
    yield from batches


# What the JVM prints when it starts, before any log level can act: Spark adds
# --add-modules=jdk.incubator.vector and Java announces it; a pyspark session counts as a shell
# and Spark announces the shell's log level (set to ours right after the start).
JVM_START_NOISE = (
    b"WARNING: Using incubator modules",
    b'Setting default log level to "WARN".',
    b"To adjust logging level use sc.setLogLevel(newLevel).",
)


@contextmanager
def _jvm_start_noise_dropped(*, enabled: bool) -> Iterator[None]:
    """Start the JVM with its stderr going through a pipe: a thread forwards everything to our
    stderr (errors, the progress bar) except the lines of JVM_START_NOISE."""
    from pyspark import SparkContext

    if not enabled or SparkContext._gateway is not None:  # a JVM is running already
        yield
        return
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    terminal = os.dup(2)
    os.dup2(write_end, 2)  # the JVM inherits this as its stderr
    os.close(write_end)
    threading.Thread(
        target=_forward, args=(read_end, terminal), name="jvm-stderr", daemon=True
    ).start()
    try:
        yield
    finally:
        os.dup2(terminal, 2)  # our own stderr again; the JVM keeps writing into the pipe


def _forward(read_end: int, terminal: int) -> None:
    pending = b""
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        while chunk := pipe.read(65536):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            kept = [line for line in lines if not line.startswith(JVM_START_NOISE)]
            if kept:
                os.write(terminal, b"\n".join(kept) + b"\n")
            if pending and not any(n.startswith(pending[: len(n)]) for n in JVM_START_NOISE):
                os.write(terminal, pending)  # e.g. the progress bar (\r, no newline)
                pending = b""
    if pending:
        os.write(terminal, pending)


def ivy_jars_folder() -> Path:
    """Where Spark's Ivy resolution leaves the jars (``spark.jars.ivy``'s default in Spark 4)."""
    return Path.home() / ".ivy2.5.2" / "jars"


def missing_jars() -> list[str]:
    """The JVM packages not resolved on this machine yet (no manifest of their jars)."""
    return [] if resolved_jars() else jvm_packages()


def _session_with(java_options: str) -> SparkSession:
    """A local session whose driver JVM gets `java_options` too (the class archive's steps)."""
    return get_or_create(
        "offsets-class-archive",
        show_progress=False,
        extra_conf={JAVA_OPTIONS: java_options},
    )


def _typical_work(spark: SparkSession, folder: Path) -> None:
    """What a run's JVM does, in small: SQL, an Arrow round trip through a Python worker, a
    Parquet write and read, an aggregation."""
    frame = spark.range(1000).selectExpr("id", "cast(id % 7 as string) as key")
    frame = frame.mapInArrow(lambda batches: batches, frame.schema)
    frame.write.mode("overwrite").parquet(str(folder / "work"))
    spark.read.parquet(str(folder / "work")).groupBy("key").count().collect()


def _stop_jvm(spark: SparkSession) -> None:
    """Stop the session and wait for its JVM to exit (it writes the class archive on exit)."""
    from pyspark import SparkContext

    process = SparkContext._gateway.proc
    spark.stop()
    process.stdin.close()  # the gateway JVM exits when its stdin closes
    process.wait(timeout=300)


def build_class_archive(archive: Path) -> bool:
    """Build the class-data archive (`class_archive`) in two child processes: one JVM runs
    typical work and writes the classes it loaded at its exit; a second must start with the
    archive required (-Xshare:on) and do the same work. Only then is it moved into place: a
    truncated archive would crash the JVMs that map it."""
    import subprocess
    import tempfile

    archive.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=archive.parent) as scratch:
        candidate = Path(scratch) / archive.name
        for step in ("--dump-classes", "--check-classes"):
            done = subprocess.run(
                [sys.executable, "-m", "offsets_lib.job.session", step, str(candidate)],
                capture_output=True,
                text=True,
            )
            if done.returncode != 0 or not candidate.exists():
                print(f"no class archive ({step}): {done.stderr[-2000:]}", file=sys.stderr)
                return False
        candidate.replace(archive)
    return True


def main(argv: list[str] | None = None) -> int:
    """``python -m offsets_lib.job.session --warm``: fetch every JVM package into Ivy's cache
    by starting a local session once (``make setup``; no JVM when the cache holds them), then
    build the driver JVM's class archive if there is none (`build_class_archive`)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] in ("--dump-classes", "--check-classes"):
        import tempfile

        if args[0] == "--dump-classes":
            option = f"-XX:ArchiveClassesAtExit={args[1]}"
        else:  # the archive under test, required: a JVM that cannot map it fails to start
            option = f"-XX:SharedArchiveFile={args[1]} -Xshare:on"
        spark = _session_with(f"{option} -Xlog:cds=off -Xlog:cds+dynamic=off")
        with tempfile.TemporaryDirectory() as folder:
            _typical_work(spark, Path(folder))
        _stop_jvm(spark)
        return 0
    if args != ["--warm"]:
        print("usage: python -m offsets_lib.job.session --warm", file=sys.stderr)
        return 2
    missing = missing_jars()
    if missing:
        print(f"fetching JVM packages into Ivy's cache: {', '.join(missing)}", file=sys.stderr)
        get_or_create("offsets-warm-ivy-cache", show_progress=False).stop()
        missing = missing_jars()
        if missing:
            print(f"not in Ivy's cache after a session start: {missing}", file=sys.stderr)
            return 1
    archive = class_archive()
    if archive is not None and not archive.exists():
        print(f"building the driver JVM's class archive: {archive}", file=sys.stderr)
        print(
            "  once, about 100 s: two Spark sessions record and check the ~15,000 classes a run"
            " loads, so that every later run's JVM starts 2-3 s sooner",
            file=sys.stderr,
        )
        build_class_archive(archive)  # a session without it only starts slower
    return 0


if __name__ == "__main__":
    sys.exit(main())
