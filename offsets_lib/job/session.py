"""The one place that builds a SparkSession (for jobs, the CLI, notebooks and test fixtures).

`get_or_create` returns the session this process runs already as it is: a notebook's session
keeps its settings (pyspark's getOrCreate would apply a builder's settings to it), and a second
call of ours gets the first call's session. A session it starts (`new_session`) gets, unless a
launcher configured it:

1. ``LOCAL_DEFAULTS``: the session's time zone, Arrow, dynamic partition overwrite, a loopback
   driver and its heap; master ``local[*]`` unless one is given;
2. ``jvm_packages()``: Delta Lake's jars matching the installed ``delta-spark`` and ``pyspark``
   and Spark's Kafka connector, resolved from Maven Central into Ivy's cache;
3. ``DELTA_CONF``: Delta's SQL extension and catalog;
4. ``catalog_conf(warehouse)``: with a warehouse folder, a Hive metastore on embedded Derby
   inside it, so that tables registered with ``--database`` outlive the session;
5. with a local master only, job/local_tuning.py's tuning for a small machine (Spark settings,
   the workers' allocators, the driver JVM's compiler and class archive, the resolved jars).

Under spark-submit or a pyspark shell (their JVM runs before our code), or with a cluster master
that pyspark's launcher is given (``--master`` in PYSPARK_SUBMIT_ARGS, ``spark.master`` in
spark-defaults.conf), the cluster's own configuration wins: none of these layers is applied (the
job is submitted with ``--packages`` and the cluster's catalog; see jobs/offsets_job.py).
With ``SPARK_REMOTE=sc://host:port`` the session is a Spark Connect client of that server, whose
own configuration (packages, catalog) serves it: none of the layers either.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from pyspark.sql import SparkSession

from offsets_lib.io import spark_settings, storage
from offsets_lib.job import local_tuning
from offsets_lib.job.jvm import JAVA_OPTIONS, jvm_packages
from offsets_lib.job.worker_daemon import TASK_MODULES

# Settings of every session this module starts with our layers: what the tables and the tasks
# rely on, and a driver that listens on loopback only.
LOCAL_DEFAULTS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    # 10M records overflowed a 2 GB heap in make bench (decoded records cached on disk)
    "spark.driver.memory": "3g",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
}

LOCAL_MASTER = "local[*]"  # every core of the machine

DELTA_CONF: dict[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}

# The log level of the sessions this module starts: Spark's start-up warnings (native-hadoop,
# loopback address, Ivy's resolution report) are not for the person at the terminal; --verbose
# shows them.
QUIET_LOG_LEVEL = "ERROR"
VERBOSE_LOG_LEVEL = "WARN"
LOG4J2_CONF = Path(__file__).with_name("log4j2.properties")


def catalog_conf(warehouse: str | os.PathLike[str] | None) -> dict[str, str]:
    """Settings of a persistent local catalog: Spark's warehouse folder and a Hive metastore on
    embedded Derby inside it (one JVM at a time may open it), whose client's folder for added
    resources is one in the warehouse too (Hive's default, a new `<uuid>_resources` folder in the
    temp folder per session, was never removed). Empty without a warehouse: then the catalog
    lives as long as the session (Spark's in-memory catalog)."""
    if warehouse is None:
        return {}
    root = Path(warehouse).resolve()
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(root),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={root / 'metastore_db'};create=true"
        ),
        "spark.hadoop.hive.downloaded.resources.dir": str(root / HIVE_RESOURCES),
    }


HIVE_RESOURCES = "hive_resources"  # the catalog_conf warehouse's folder for Hive's resources


def driver_java_options(
    *, warehouse: str | os.PathLike[str] | None = None, verbose: bool = False
) -> str:
    """The driver JVM's options: our log4j 2 configuration (Spark's start-up warnings only with
    ``verbose``), and with a warehouse Derby's home (else derby.log lands in the working
    directory)."""
    level = VERBOSE_LOG_LEVEL if verbose else QUIET_LOG_LEVEL
    options = [
        f"-Dlog4j2.configurationFile={LOG4J2_CONF}",
        f"-Doffsets.log.level={level.lower()}",
    ]
    if warehouse is not None:
        options.append(f"-Dderby.system.home={Path(warehouse).resolve()}")
    return " ".join(options)


def local_conf(
    *,
    warehouse: str | os.PathLike[str] | None = None,
    show_progress: bool = False,
    verbose: bool = False,
) -> dict[str, str]:
    """Our layers of a session this module starts (the module docstring's 1-4), before the
    local tuning."""
    return {
        **LOCAL_DEFAULTS,
        "spark.jars.packages": ",".join(jvm_packages()),
        **DELTA_CONF,
        **catalog_conf(warehouse),
        JAVA_OPTIONS: driver_java_options(warehouse=warehouse, verbose=verbose),
        "spark.ui.showConsoleProgress": str(show_progress).lower(),
    }


def is_launched_by_spark_submit() -> bool:
    """spark-submit (or a pyspark shell) starts the Python driver from a JVM it already
    configured (gateway port)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def launcher_master() -> str | None:
    """The master pyspark's launcher is given for a JVM this process starts: ``--master`` in
    PYSPARK_SUBMIT_ARGS, else ``spark.master`` of `launcher_conf`; None when neither names one."""
    args = shlex.split(os.environ.get("PYSPARK_SUBMIT_ARGS", ""))
    for i, arg in enumerate(args):
        if arg == "--master" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--master="):
            return arg.removeprefix("--master=")
    return launcher_conf().get("spark.master")


def launcher_conf() -> dict[str, str]:
    """The settings pyspark's launcher gives a JVM this process starts: spark-defaults.conf of
    `conf_folder`, each overridden by a ``--conf KEY=VALUE`` of PYSPARK_SUBMIT_ARGS."""
    conf = {}
    folder = conf_folder()
    defaults = folder / "spark-defaults.conf" if folder else None
    if defaults is not None and defaults.is_file():
        for line in defaults.read_text().splitlines():
            found = _PROPERTY.match(line)
            if found:
                conf[found.group("key")] = found.group("value")
    args = shlex.split(os.environ.get("PYSPARK_SUBMIT_ARGS", ""))
    for i, arg in enumerate(args):
        setting = args[i + 1] if arg == "--conf" and i + 1 < len(args) else None
        if arg.startswith("--conf="):
            setting = arg.removeprefix("--conf=")
        if setting is not None and "=" in setting:
            key, _, value = setting.partition("=")
            conf[key] = value
    return conf


def conf_folder() -> Path | None:
    """Spark's configuration folder: SPARK_CONF_DIR, else SPARK_HOME/conf (None: neither set)."""
    home = os.environ.get("SPARK_HOME")
    folder = os.environ.get("SPARK_CONF_DIR") or (str(Path(home) / "conf") if home else None)
    return Path(folder) if folder else None


# a Java properties line (spark-submit reads the file so): key, then whitespace, = or :
_PROPERTY = re.compile(r"^\s*(?P<key>[^\s=:#!][^\s=:]*)\s*[=:\s]\s*(?P<value>.*?)\s*$")


def metastore_uris_to_start(warehouse: str | os.PathLike[str] | None = None) -> str | None:
    """The Hive metastore service (``hive.metastore.uris``) the catalog of a session this
    process would start asks, as its launcher is configured (``spark.hive.`` or
    ``spark.hadoop.hive.metastore.uris`` of `launcher_conf`, else the conf folder's
    hive-site.xml), for a check before its JVM starts. None when a session runs already, when
    spark-submit started this process (its JVM is configured), when the catalog is not Hive's
    (``--warehouse`` makes it so), or when no service is named."""
    if running_session() is not None or is_launched_by_spark_submit():
        return None
    conf = launcher_conf()
    if warehouse is None and conf.get("spark.sql.catalogImplementation") != "hive":
        return None
    key = "hive.metastore.uris"
    uris = conf.get(f"spark.hive.{key}") or conf.get(f"spark.hadoop.{key}")
    folder = conf_folder()
    site = folder / "hive-site.xml" if folder else None
    if uris is None and site is not None and site.is_file():
        import xml.etree.ElementTree as ElementTree

        try:
            properties = list(ElementTree.parse(site).getroot().iter("property"))
        except ElementTree.ParseError:  # the JVM's Hive reports it
            properties = []
        for prop in properties:
            if (prop.findtext("name") or "").strip() == key:
                uris = prop.findtext("value")
    return uris.strip() if uris and uris.strip() else None


def running_session() -> SparkSession | None:
    """The session this process runs already (a notebook's, a pyspark shell's, our own first
    one), or None."""
    from pyspark import SparkContext

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if SparkContext._active_spark_context is not None:  # a context, without a session here
        return SparkSession.builder.getOrCreate()  # a builder without settings changes none
    return None


@dataclass(frozen=True)
class NewSession:
    """What a session this module starts is built with: `master` (None: the launcher's), the
    settings, and whether they hold job/local_tuning.py's tuning."""

    master: str | None
    conf: dict[str, str]
    is_tuned: bool


def new_session(
    *,
    master: str | None = None,
    show_progress: bool | None = None,
    extra_conf: dict[str, str] | None = None,
    warehouse: str | os.PathLike[str] | None = None,
    verbose: bool = False,
    storage_uris: Iterable[str] = (),
    quick_start: bool = False,
) -> NewSession:
    """The master and settings of a session this process starts (see `get_or_create` for the
    arguments): our layers, and with a local master the local tuning; none of them when
    spark-submit or a launcher's cluster master configured it."""
    extra = dict(extra_conf or {})
    if os.environ.get("SPARK_REMOTE"):  # a Connect server's session: its settings are its own
        return NewSession(None, {}, is_tuned=False)
    storage_conf = s3a_conf(storage_uris)
    if master is None:
        configured = launcher_master()
        if is_launched_by_spark_submit() or not (
            configured is None or local_tuning.is_local(configured)
        ):
            return NewSession(None, merged_settings(storage_conf, extra), is_tuned=False)
        master = configured or LOCAL_MASTER
    if show_progress is None:
        show_progress = sys.stderr.isatty()
    conf = local_conf(warehouse=warehouse, show_progress=show_progress, verbose=verbose)
    is_tuned = local_tuning.is_local(master)
    if is_tuned:
        conf = local_tuning.tuned(conf, quick_start=quick_start)
    if JAVA_OPTIONS in extra:  # added to ours, not instead of them
        extra[JAVA_OPTIONS] = f"{conf[JAVA_OPTIONS]} {extra[JAVA_OPTIONS]}"
    return NewSession(master, merged_settings(merged_settings(conf, storage_conf), extra), is_tuned)


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


def merged_settings(conf: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
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
    """The session this process runs already, unchanged (every argument is then ignored), or a
    new one built as `new_session` says.

    ``master``: instead of ``local[*]`` (tests: ``local[2]``). ``extra_conf`` is applied last
    (tests: fewer partitions). ``warehouse``: the folder of a persistent local catalog
    (``--warehouse``), see :func:`catalog_conf`. ``verbose`` shows Spark's and the JVM's
    warnings. ``storage_uris`` (the run's input and output) add what their file systems need
    (:func:`s3a_conf`, local or not). ``quick_start``: the run's driver JVM moves few records
    (local_tuning.QUICK_START_JIT; local masters only).
    """
    running = running_session()
    if running is not None:
        return running
    plan = new_session(
        master=master,
        show_progress=show_progress,
        extra_conf=extra_conf,
        warehouse=warehouse,
        verbose=verbose,
        storage_uris=storage_uris,
        quick_start=quick_start,
    )
    builder = SparkSession.builder
    if os.environ.get("SPARK_REMOTE"):
        spark = builder.remote(os.environ["SPARK_REMOTE"]).getOrCreate()
        ship_package(spark)
        return spark
    if plan.is_tuned:  # local workers: this interpreter, which has pyarrow and the package;
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # a cluster's are its own
    builder = builder.appName(app_name)
    if plan.master is not None:
        builder = builder.master(plan.master)
    for key, value in plan.conf.items():
        builder = builder.config(key, value)
    with local_tuning.jvm_start_noise_dropped(enabled=plan.is_tuned and not verbose):
        spark = builder.getOrCreate()
    drop_jar_includes(spark)
    if plan.master is not None:  # our log4j configuration's level, after the JVM's start
        spark.sparkContext.setLogLevel(VERBOSE_LOG_LEVEL if verbose else QUIET_LOG_LEVEL)
    if plan.is_tuned:
        local_tuning.remember_resolved_jars(spark)
    return spark


def drop_jar_includes(spark: SparkSession) -> None:
    """Keep the jars of ``--packages`` off the Python workers' path, in a session this module
    started. spark-submit hands every jar it resolves for a Python application over as a
    py-file too (for packages that carry Python code; none of the run's do), and each
    executor's Python worker puts them on `sys.path`: Python's zip importer then reads every
    jar's directory when the worker first imports, and again when pyspark's
    `setup_spark_files` calls `importlib.invalidate_caches()`. Measured: the Ivy cache's 46
    jars (the job's 43, the AWS SDK bundle's 687 MB among them) took 0.25 CPU-s to open and
    0.24 s to re-read, per worker; py-spy over a production submit's executors put 17 % of
    their Python's samples in those reads. Submits of the production line with and without
    it, 3 each, differed less than their noise (68.4-75.6 s against 70.4-72.8 s). The JVM
    still loads the jars; a jar given only as ``--py-files`` stays on the path."""
    context = spark.sparkContext
    includes = getattr(context, "_python_includes", None)
    loaded = {uri.rsplit("/", 1)[-1] for uri in spark.conf.get("spark.jars", "").split(",")}
    if includes:
        context._python_includes = [name for name in includes if name not in loaded]


def ship_package(spark: SparkSession) -> None:
    """Give a Spark Connect session's Python workers this package (Spark's documented way for
    a client's Python code: a zip added as a `pyfile` artifact of the session)."""
    import tempfile

    from offsets_lib.job.package import build_pyfiles

    with tempfile.TemporaryDirectory(prefix="offsets-artifact-") as folder:
        archive = build_pyfiles(Path(folder) / "offsets_lib.zip")
        spark.addArtifacts(str(archive), pyfile=True)


def start_python_workers(
    spark: SparkSession, modules: Sequence[str] = TASK_MODULES
) -> threading.Thread:
    """Start the executors' Python workers, with `modules` imported, in a background job while
    the driver plans the run (reads the checkpoint, asks Kafka for offsets and the catalog for
    its tables, lists files): the stages that follow reuse them (spark.python.worker.reuse,
    Spark's default). Returns the job's thread; a failure there is left to the run's own jobs
    to report. Where the settings do not give the session's parallelism, the job that measures
    it (spark_settings.parallelism) is the one that starts them; on a cluster it waits for the
    executors: the driver plans meanwhile.

    Why: a fresh JVM's first Python job pays for the daemon and workers, their imports and
    Spark's cold Arrow path; measured (2 cores): a job of two trivial mapInArrow tasks took
    2.5-2.7 s as the JVM's first job and 0.2-0.3 s after it, and an hourly Kafka run's driver
    plans for ~2 s after the session starts, with its executors idle. On the bench's
    standalone cluster the executors take ~35-50 s to start (the packed environment unpacked
    by each), during which the driver had waited instead of starting the metastore."""

    def start() -> None:
        try:
            tasks = spark_settings.given_parallelism(spark)
            if tasks is None:  # its measuring job starts them
                spark_settings.parallelism(spark, imports=tuple(modules))
                return
            ids = spark.range(0, tasks, 1, tasks)
            imported = partial(spark_settings.split_rows, tuple(modules))
            ids.mapInArrow(imported, spark_settings.SPLIT_ROWS).collect()
        except Exception:  # the run's own jobs start workers again and fail loud
            logging.getLogger(__name__).debug("starting Python workers failed", exc_info=True)

    thread = threading.Thread(target=start, name="start-python-workers", daemon=True)
    thread.start()
    return thread


def main(argv: list[str] | None = None) -> int:
    """``python -m offsets_lib.job.session --warm`` (``make setup``): fetch every JVM package
    into Ivy's cache by starting a local session once (no JVM when the cache holds them), then
    (unless ``--no-class-archive``: `make run`, whose one run would not win back its ~100 s)
    build the driver JVM's class archive if there is none (local_tuning.build_class_archive,
    whose steps run here: ``--dump-classes`` / ``--check-classes ARCHIVE``)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] in local_tuning.ARCHIVE_STEPS:
        options = local_tuning.archive_step_options(args[0], Path(args[1]))
        spark = get_or_create(
            "offsets-class-archive", show_progress=False, extra_conf={JAVA_OPTIONS: options}
        )
        local_tuning.record_classes(spark)
        return 0
    if args not in (["--warm"], ["--warm", "--no-class-archive"]):
        print(
            "usage: python -m offsets_lib.job.session --warm [--no-class-archive]", file=sys.stderr
        )
        return 2
    missing = local_tuning.missing_jars()
    if missing:
        print(f"fetching JVM packages into Ivy's cache: {', '.join(missing)}", file=sys.stderr)
        get_or_create("offsets-warm-ivy-cache", show_progress=False).stop()
        missing = local_tuning.missing_jars()
        if missing:
            print(f"not in Ivy's cache after a session start: {missing}", file=sys.stderr)
            return 1
    archive = None if "--no-class-archive" in args else local_tuning.class_archive()
    if archive is not None and not archive.exists():
        local_tuning.build_class_archive(archive)  # a session without it only starts slower
    return 0


if __name__ == "__main__":
    sys.exit(main())
