"""Tuning of a Spark session that this process starts with a local master on a small machine.

job/session.py applies it (`tuned`) only when it starts the session itself with a local master
(`is_local`): never under spark-submit or a pyspark shell (their JVM and its settings exist
before our code runs), never with a cluster master, and never to a session that runs already (a
notebook's: pyspark's getOrCreate would apply builder settings to it). Each setting states its
measured gain (2 cores, Java 17, the figures of the commits that added it); what the settings
cost is memory and a few files in the user's cache, which is why a cluster gets none of them.

The layers: `TUNED_CONF` (Spark settings and the executors' allocators), `QUICK_START_JIT` for a
driver JVM that moves few records, the driver JVM's class-data archive (`class_archive`), the jars
Spark resolved once listed in a manifest (`resolved_jars`), and a filter on the JVM's start-up
lines (`jvm_start_noise_dropped`). ``make setup`` fetches the JVM packages into Ivy's cache and
builds the class archive (``python -m offsets_lib.job.session --warm``, `build_class_archive`).
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

from pyspark.sql import SparkSession

from offsets_lib.io import storage
from offsets_lib.job import worker_daemon
from offsets_lib.job.jvm import JAVA_OPTIONS, jvm_packages

TUNED_CONF: dict[str, str] = {
    # session start 9.6-10.8 -> 5.6-6.3 s, measured together with the loopback binding and few
    # shuffle partitions (../shared/notes/feasibility.md section 4)
    "spark.ui.enabled": "false",
    # a fresh JVM's 10M-record read-and-dedupe 36.9 -> 31.3 s against the default 200 (one run each)
    "spark.sql.shuffle.partitions": "8",
    # at least 4 input splits per core (Spark's default, one per core of at most 128 MB, left a
    # 500 MB dump in 5 scan tasks on 2 cores): 10M records, scan + shuffle write 8.2-8.6 s ->
    # 7.1-7.6 s
    "spark.sql.files.minPartitionNum": "8",
    # Delta rebuilds a table's snapshot at every Spark write and read in this many tasks
    # (default 50, for large clusters): a 3-row write with Delta's Spark writer took 14-16 s of
    # driver CPU, 2 s with 2 (8: 4 s); `--database` and `--delta-writer spark` write 11 tables
    "spark.databricks.delta.snapshotPartitions": "2",
    # Python workers take every block from their heap and keep freed memory for their next task
    # (glibc otherwise hands blocks over its mmap threshold back at once, and every audit task
    # faulted its hundreds of MB in again): 10M records, plain / one group at 30 %, 12.1 / 14.2
    # -> 11.5-11.8 / 13.2-13.6 s (workers' CPU 28.3-28.5 -> 24.9-25.8 s). Price: a worker keeps
    # the heap of its largest task (glibc returns only free memory above 1 GB at the heap's top);
    # the largest worker of a 100M-record run stayed at 1.9 GB
    "spark.executorEnv.MALLOC_MMAP_MAX_": "0",
    "spark.executorEnv.MALLOC_TRIM_THRESHOLD_": str(1024 * 1024 * 1024),
    # Arrow's buffers from the same heap (pyarrow's wheels default to mimalloc, which asks the
    # kernel for huge pages: where THP is "madvise", a fresh worker's first audit task then
    # waited on the kernel's page compaction): the hourly Kafka run of the incremental bench
    # (10k new over a 10M state), its first audit tasks 5.8-7.6 -> 2.2-2.4 s, the run 20.0-23.5
    # -> 16.3-16.8 s (probes alternating on one broker: seven runs without, four with)
    "spark.executorEnv.ARROW_DEFAULT_MEMORY_POOL": "system",
    # Python workers forked with the task modules imported (job/worker_daemon.py: a fresh
    # worker's imports, ~0.6 CPU-s, once per session): 10M records after 70 s idle 10.7-11.6 ->
    # 9.8-9.9 s. Local workers run this interpreter, which has the package; a cluster's
    # executors may get it only with a task's --py-files, after their daemon starts
    "spark.python.daemon.module": worker_daemon.__name__,
}

# A driver JVM that moves few records compiles with C1 only: with the file shuffle and delta-rs
# the records pass through Python workers, and C2's compiler thread only competes with them for
# the cores. A Kafka run of 10k new records over a 10M-record topic 14.3-15.3 -> 11.5-12.8 s;
# a first run reading all 10M records through the connector 45 -> 56 s (~1.1 s per million
# records read against ~3 s saved at start: QUICK_START_MAX_RECORDS keeps a margin).
QUICK_START_JIT = ("-XX:TieredStopAtLevel=1",)
QUICK_START_MAX_RECORDS = 1_000_000


def is_local(master: str) -> bool:
    """Whether `master` runs the executors in this machine's driver JVM (the tuning's case)."""
    return master == "local" or master.startswith("local[")


def is_quick_start(jvm_records: int) -> bool:
    """Whether a local driver JVM that moves `jvm_records` records starts with QUICK_START_JIT."""
    return jvm_records <= QUICK_START_MAX_RECORDS


def tuned(conf: dict[str, str], *, quick_start: bool = False) -> dict[str, str]:
    """`conf` (job/session.py's settings of a new local session) with this module's layers: our
    packages from the manifest's jars when Spark resolved them once, and the driver JVM's
    options with the class archive and, with `quick_start`, QUICK_START_JIT."""
    result = {**conf, **TUNED_CONF}
    jars = resolved_jars()
    if jars and result.get("spark.jars.packages") == ",".join(jvm_packages()):
        del result["spark.jars.packages"]
        result["spark.driver.extraClassPath"] = os.pathsep.join(driver_class_path(jars))
    options = [result.get(JAVA_OPTIONS, "")]
    if quick_start:
        options += QUICK_START_JIT
    archive = class_archive()
    if archive is not None and archive.exists():
        options += [f"-XX:SharedArchiveFile={archive}", *_QUIET_CDS]
    result[JAVA_OPTIONS] = " ".join(o for o in options if o)
    return result


# ---- the driver JVM's class-data archive ---------------------------------------------------

# The archive's own warnings (classes it skips, an archive of another JVM build it ignores) are
# not for the person at the terminal: a JVM that cannot use it starts as usual.
_QUIET_CDS = ("-Xshare:auto", "-Xlog:cds=off", "-Xlog:cds+dynamic=off")


def class_archive() -> Path | None:
    """Where the driver JVM's class-data archive (Java's AppCDS) is kept: one per Java binary,
    Spark version and JVM packages, in the user's cache, outside the repository. None when no
    Java is found.

    A local JVM loads and verifies ~15,000 classes of Spark's jars at every start; mapped from
    the archive: session with a first job 8.7 -> 6.1-6.6 s, a Parquet write and read after it
    11.7 -> 8.6-9.1 s. `make setup` builds it (`build_class_archive`)."""
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


ARCHIVE_STEPS = ("--dump-classes", "--check-classes")


def archive_step_options(step: str, candidate: Path) -> str:
    """The driver JVM's options of a step of `build_class_archive`: write the classes it loaded
    at its exit, or start only with the archive mapped (-Xshare:on)."""
    if step == "--dump-classes":
        option = f"-XX:ArchiveClassesAtExit={candidate}"
    else:  # the archive under test, required: a JVM that cannot map it fails to start
        option = f"-XX:SharedArchiveFile={candidate} -Xshare:on"
    return f"{option} -Xlog:cds=off -Xlog:cds+dynamic=off"


def record_classes(spark: SparkSession) -> None:
    """A step's work, what a run's JVM does in small (SQL, an Arrow round trip through a Python
    worker, a Parquet write and read, an aggregation); then the session stops and its JVM exits
    (it writes the archive on exit)."""
    import tempfile

    from pyspark import SparkContext

    with tempfile.TemporaryDirectory() as folder:
        frame = spark.range(1000).selectExpr("id", "cast(id % 7 as string) as key")
        frame = frame.mapInArrow(lambda batches: batches, frame.schema)
        frame.write.mode("overwrite").parquet(f"{folder}/work")
        spark.read.parquet(f"{folder}/work").groupBy("key").count().collect()
    process = SparkContext._gateway.proc
    spark.stop()
    process.stdin.close()  # the gateway JVM exits when its stdin closes
    process.wait(timeout=300)


def build_class_archive(archive: Path) -> bool:
    """Build the class-data archive (`class_archive`) in two child processes (job/session.py's
    ARCHIVE_STEPS): one JVM runs typical work and writes the classes it loaded at its exit; a
    second must start with the archive required (-Xshare:on) and do the same work. Only then is
    it moved into place: a truncated archive would crash the JVMs that map it."""
    import subprocess
    import tempfile

    print(f"building the driver JVM's class archive: {archive}", file=sys.stderr)
    print(
        "  once, about 100 s: two Spark sessions record and check the ~15,000 classes a run"
        " loads, so that every later run's JVM starts 2-3 s sooner",
        file=sys.stderr,
    )
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=archive.parent) as scratch:
        candidate = Path(scratch) / archive.name
        for step in ARCHIVE_STEPS:
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


# ---- the jars Spark resolved, listed once --------------------------------------------------

# 2: version 1 manifests could list the S3A packages' jars too, when the first session that
# resolved ours was one reading s3a:// (`make setup`'s offsets_lib.tools.jars): every local
# session then loaded ~790 MB of jars, which the local executor copies at its start (session
# start 5.1-5.2 s; with our packages' 38 jars 3.4-3.6 s).
MANIFEST_VERSION = 2


def ivy_jars_folder() -> Path:
    """Where Spark's Ivy resolution leaves the jars (``spark.jars.ivy``'s default in Spark 4)."""
    return Path.home() / ".ivy2.5.2" / "jars"


def _manifest() -> Path:
    """Where the jars Spark resolved for this pyspark/delta-spark pairing are listed (next to
    Ivy's cache, outside the repository). Named with MANIFEST_VERSION: a manifest of an earlier
    version is not read."""
    name = f"offsets-lib-{MANIFEST_VERSION}-" + "+".join(
        c.replace(":", "_") for c in jvm_packages()
    )
    return ivy_jars_folder().parent / f"{name}.jars"


def resolved_jars() -> list[str]:
    """The jars of an earlier resolution, if the manifest exists and every jar is still there.

    `tuned` puts them on the driver's class path instead of ``spark.jars.packages``: a
    resolution with a warm cache still took ~5-25 s per session start (Ivy asks every repository
    for parent POMs again) and printed its report; and on the class path rather than as
    ``spark.jars`` (which the local executor copies at each start, and the class archive does
    not cover): session start 3.4-3.6 -> 2.8-3.3 s."""
    manifest = _manifest()
    if not manifest.exists():
        return []
    jars = [line for line in manifest.read_text().splitlines() if line]
    if not jars or not all(_jar_path(j).exists() for j in jars):
        return []
    return jars


def _jar_path(jar: str) -> Path:
    """A resolved jar's file (Spark lists them as ``file:`` URIs)."""
    return Path(storage.local_path(jar) or jar)


def missing_jars() -> list[str]:
    """The JVM packages not resolved on this machine yet (no manifest of their jars)."""
    return [] if resolved_jars() else jvm_packages()


def remember_resolved_jars(spark: SparkSession) -> None:
    """After Spark resolved ``spark.jars.packages``: list the local jars it added, when it
    resolved exactly our packages (ours came from the manifest already, or a session also
    resolved others: S3A's, whose AWS SDK bundle alone is ~690 MB, are not for every session)."""
    packages = spark.sparkContext.getConf().get("spark.jars.packages", "") or ""
    if sorted(p for p in packages.split(",") if p) != sorted(jvm_packages()):
        return
    jars = [j for j in spark.sparkContext.getConf().get("spark.jars", "").split(",") if j.strip()]
    local = [j for j in jars if _jar_path(j).exists()]
    if local:
        _manifest().parent.mkdir(parents=True, exist_ok=True)
        _manifest().write_text("\n".join(local) + "\n")


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
    paths = [_jar_path(jar) for jar in jars]
    # Ivy names its jars group_artifact-version.jar
    return [str(p) for p in paths if artifact(p.name.split("_", 1)[-1]) not in spark_own]


_VERSIONED_JAR = re.compile(r"^(?P<artifact>.+?)-\d[^/]*\.jar$")


# ---- the JVM's start-up lines ---------------------------------------------------------------

# What the JVM prints when it starts, before any log level can act: Spark adds
# --add-modules=jdk.incubator.vector and Java announces it; a pyspark session counts as a shell
# and Spark announces the shell's log level (set to ours right after the start). No time is
# gained: three lines that are not for the person at the terminal.
JVM_START_NOISE = (
    b"WARNING: Using incubator modules",
    b'Setting default log level to "WARN".',
    b"To adjust logging level use sc.setLogLevel(newLevel).",
)


@contextmanager
def jvm_start_noise_dropped(*, enabled: bool) -> Iterator[None]:
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
