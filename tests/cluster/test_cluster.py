"""The job on a standalone Spark cluster, dump and tables on an S3-compatible store.

One small generated dump serves every test; the local-mode run over it is the reference that the
cluster runs must reproduce table for table. The cluster keeps Spark's default settings (its
SQL shuffle's 200 partitions among them), and its executors run the Python of `make package`'s
packed venv, shipped with `--archives`, not the driver's.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.servers import BIN, S3Server, SparkCluster, clean_env

pytestmark = [pytest.mark.spark, pytest.mark.slow]

RUN_ID = "scheduled__2026-11-24T06:00:00+00:00"  # an Airflow run id: quoted in partition paths
TABLES = (
    "offsets", "groups", "members", "rejects", "metrics", "offset_decisions",
    "group_decisions", "lag",
)  # fmt: skip
RUN_TIMEOUT_S = 900
REPO_ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def aws(s3: S3Server) -> Iterator[None]:
    """This test process reads the store with the same three settings the runs get."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
    for key in saved:
        del os.environ[key]
    os.environ.update(s3.env)
    try:
        yield
    finally:
        for key in s3.env:
            os.environ.pop(key, None)
        os.environ.update(saved)


def table_rows(s3: S3Server, output: str, name: str, run_id: str = RUN_ID) -> list[tuple]:
    """A table's rows of one run, in a canonical order."""
    from offsets_lib.io import sink

    with aws(s3):
        rows = sink.read_table(output, name, run_id=run_id).to_pylist()
    return sorted((tuple(sorted(r.items())) for r in rows), key=repr)


def all_tables(s3: S3Server, output: str, run_id: str = RUN_ID) -> dict[str, list[tuple]]:
    return {name: table_rows(s3, output, name, run_id) for name in TABLES}


def runs_rows(s3: S3Server, output: str) -> list[dict[str, Any]]:
    from offsets_lib.io import sink

    with aws(s3):
        return sink.read_table(output, "runs").to_pylist()


def files_per_table(s3: S3Server, output: str, run_id: str = RUN_ID) -> dict[str, int]:
    """The data files each table holds for one run (its `run_id` partition's add actions)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from offsets_lib.io import sink, storage

    files = {}
    with aws(s3):
        for name in TABLES:
            actions = pa.table(
                storage.delta_table(sink.table_uri(output, name)).get_add_actions(flatten=True)
            )
            files[name] = pc.sum(pc.equal(actions["partition.run_id"], run_id)).as_py() or 0
    return files


def checksum_counts(s3: S3Server, output: str) -> dict[str, tuple[int, int]]:
    """Per table: the live files its latest version's checksum counts, and delta-rs' count."""
    import json

    import pyarrow as pa

    from offsets_lib.io import sink, storage

    counts = {}
    with aws(s3):
        for name in TABLES:
            uri = sink.table_uri(output, name)
            dt = storage.delta_table(uri)
            fs, root = storage.filesystem(uri)
            with fs.open_input_stream(f"{root}/_delta_log/{dt.version():020d}.crc") as stream:
                checksum = json.loads(stream.read())
            counts[name] = (checksum["numFiles"], pa.table(dt.get_add_actions()).num_rows)
    return counts


def offsets_cli(*args: str, env: dict[str, str], log: Path) -> subprocess.CompletedProcess:
    """`offsets ...` in a fresh process (local mode) with exactly `env`'s AWS settings."""
    command = [str(BIN / "offsets"), *args]
    with log.open("wb") as out:
        return subprocess.run(
            command, env=clean_env(env), stdout=out, stderr=subprocess.STDOUT,
            timeout=RUN_TIMEOUT_S, check=False,
        )  # fmt: skip


def finished(process: subprocess.Popen, log: Path) -> int:
    code = process.wait(timeout=RUN_TIMEOUT_S)
    assert code is not None, log.read_text()[-3000:]
    return code


@pytest.fixture(scope="module")
def dump(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A small realistic dump (two Parquet files) uploaded to the store; its s3a:// URI."""
    import pyarrow.fs as pafs

    from offsets_lib.io import storage

    local = tmp_path_factory.mktemp("dump")
    for seed in (11, 12):
        subprocess.run(
            [str(BIN / "offsets"), "generate", "--out", str(local / str(seed)),
             "--groups", "40", "--records", "3000", "--seed", str(seed)],
            check=True, capture_output=True, env=clean_env(),
        )  # fmt: skip
    uri = s3.uri("dumps/small")
    with aws(s3):
        fs, root = storage.filesystem(uri)
        for seed in (11, 12):
            pafs.copy_files(
                str(local / str(seed) / "part-00000.parquet"),
                f"{root}/part-{seed}.parquet",
                destination_filesystem=fs,
            )
    return uri


@pytest.fixture(scope="module")
def reference(s3: S3Server, dump: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """`offsets run` in local mode, s3a:// in and out, with only the three AWS variables set."""
    output = s3.uri("tables/local")
    log = tmp_path_factory.mktemp("reference") / "run.log"
    done = offsets_cli(
        "run", "--input", dump, "--output", output, "--run-id", RUN_ID, env=s3.env, log=log
    )
    assert done.returncode == 0, log.read_text()[-3000:]
    return {"output": output, "tables": all_tables(s3, output), "log": log.read_text()}


def test_offsets_run_on_s3a_with_only_the_standard_variables(s3: S3Server, reference) -> None:
    tables = reference["tables"]
    assert len(tables["offsets"]) > 100 and len(tables["groups"]) > 10
    [run] = runs_rows(s3, reference["output"])
    assert (run["run_id"], run["status"], run["records_read"]) == (RUN_ID, "succeeded", 6000)
    assert "tasks, read by pyarrow" in reference["log"]  # pieces and staging through the store
    assert "cluster-test-secret" not in reference["log"]
    # each table's version carries Delta's checksum, written beside the commit on the store
    counts = checksum_counts(s3, reference["output"])
    assert all(ours == live for ours, live in counts.values()), counts


def lease_holder(s3: S3Server, output: str) -> str | None:
    """The run id in the output's lease object, None when there is none."""
    import json

    import pyarrow.fs as pafs

    from offsets_lib.io import storage
    from offsets_lib.io.lock import LOCK_NAME

    with aws(s3):
        fs, root = storage.filesystem(f"{output}/{LOCK_NAME}")
        if fs.get_file_info(root).type != pafs.FileType.File:
            return None
        with fs.open_input_stream(root) as stream:
            return json.loads(stream.read())["run_id"]


def wait_until(condition, process: subprocess.Popen, log: Path) -> None:
    """Poll `condition` while `process` runs (fails if it ends first)."""
    import time

    while not condition():
        assert process.poll() is None, log.read_text()[-3000:]
        time.sleep(0.2)


@pytest.fixture(scope="module")
def cluster_run(s3: S3Server, cluster: SparkCluster, dump: str, tmp_path_factory) -> dict:
    """The job submitted to the cluster; while it holds the output, a second run (local mode,
    another run id) tries the same output."""
    output = s3.uri("tables/cluster")
    # the contender asks for the lease before its JVM starts, while the job maps, audits and
    # writes on the cluster; the job's tables must equal the local run's
    args = ["--input", dump, "--output", output, "--run-id", RUN_ID]
    job = cluster.submit(args, s3.env)
    log = cluster.submitted[-1]
    wait_until(lambda: lease_holder(s3, output) == RUN_ID, job, log)
    contender_log = tmp_path_factory.mktemp("contender") / "run.log"
    contender = offsets_cli(
        "run", "--input", dump, "--output", output, "--run-id", "contender",
        env=s3.env, log=contender_log,
    )  # fmt: skip
    code = finished(job, log)
    return {
        "output": output, "code": code, "log": log,
        "contender_code": contender.returncode, "contender_log": contender_log.read_text(),
    }  # fmt: skip


def test_spark_submit_to_the_cluster_equals_the_local_run(
    s3: S3Server, cluster: SparkCluster, cluster_run: dict, reference
) -> None:
    assert cluster_run["code"] == 0, cluster_run["log"].read_text()[-3000:]
    assert "app-" in (cluster.root / "master.log").read_text()  # it ran on the cluster
    # a task per core of the two workers, not one per SQL shuffle partition (200 by default):
    # at most a file per task and table
    assert ", 2 tasks, read by pyarrow" in cluster_run["log"].read_text()
    files = files_per_table(s3, cluster_run["output"])
    print(f"6000 records on the cluster: 2 tasks, files per table {files}")
    assert files == EXPECTED_FILES
    assert all_tables(s3, cluster_run["output"]) == reference["tables"]
    assert lease_holder(s3, cluster_run["output"]) is None  # released


# The data files the run's 2 audit tasks write per table (metrics: the driver sums the tasks'
# partial sums into one file).
EXPECTED_FILES = {
    "offsets": 2, "groups": 2, "members": 2, "rejects": 2, "metrics": 1,
    "offset_decisions": 2, "group_decisions": 2, "lag": 2,
}  # fmt: skip

EXECUTOR_PYTHON_PROBE = """
import json, sys
import pyarrow as pa
from pyspark.sql import SparkSession

def where(batches):
    import glob, deltalake, numpy, pyarrow
    for _ in batches:
        pass
    versions = [pyarrow.__version__, deltalake.__version__, numpy.__version__]
    suites = glob.glob(sys.prefix + "/lib/python*/site-packages/**/tests", recursive=True)
    yield pa.RecordBatch.from_pylist([{"prefix": sys.prefix, "pyarrow": pyarrow.__file__,
                                       "versions": " ".join(versions), "tests": len(suites)}])

spark = SparkSession.builder.getOrCreate()
frame = spark.range(0, 2, numPartitions=2)
schema = "prefix string, pyarrow string, versions string, tests long"
rows = frame.mapInArrow(where, schema).collect()
print("PROBE " + json.dumps({"driver": sys.prefix, "executors": [r.asDict() for r in rows]}))
spark.stop()
"""


def test_the_executors_run_the_shipped_environment_not_the_drivers_python(
    cluster: SparkCluster, tmp_path: Path
) -> None:
    """spark-submit as the job's: each executor's Python is the packed venv's, unpacked in its
    own folder (`--archives ...#environment`), with the pinned packages imported from it and
    without their test suites (package.NOT_PACKED)."""
    import json

    from tests.unit.test_executor_constraints import pins

    probe = tmp_path / "probe.py"
    probe.write_text(EXECUTOR_PYTHON_PROBE)
    process = cluster.submit([], {}, application=probe, packages=[])
    log = cluster.submitted[-1]
    assert finished(process, log) == 0, log.read_text()[-3000:]
    [line] = [x for x in log.read_text().splitlines() if x.startswith("PROBE ")]
    found = json.loads(line.removeprefix("PROBE "))
    assert len(found["executors"]) == 2
    wanted = " ".join(pins()[name] for name in ("pyarrow", "deltalake", "numpy"))
    for executor in found["executors"]:
        assert executor["prefix"] != found["driver"]
        assert executor["prefix"].endswith("/environment"), executor
        assert executor["pyarrow"].startswith(executor["prefix"] + "/"), executor
        assert executor["versions"] == wanted
        assert executor["tests"] == 0


JAR_PATH_PROBE = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import pyarrow as pa
from offsets_lib.job import session

def jars_on_path(batches):
    for _ in batches:
        pass
    jars = [os.path.basename(p) for p in sys.path if p.endswith(".jar")]
    yield pa.RecordBatch.from_pylist([{"jars": jars}])

spark = session.get_or_create()
submitted = [os.path.basename(p) for p in spark.conf.get("spark.submit.pyFiles", "").split(",")]
rows = spark.range(0, 2, numPartitions=2).mapInArrow(jars_on_path, "jars array<string>").collect()
with open(sys.argv[2], "w") as found:
    json.dump({"submitted": submitted, "executors": [r.jars for r in rows]}, found)
spark.stop()
"""


def test_the_executors_python_workers_leave_the_packages_jars_off_their_path(
    cluster: SparkCluster, tmp_path: Path
) -> None:
    """spark-submit as the job's, with its S3A packages: spark-submit hands their jars to a
    Python application as py-files, and a session the package starts keeps them off the
    executors' Python path (session.drop_jar_includes)."""
    import json

    probe = tmp_path / "probe.py"
    probe.write_text(JAR_PATH_PROBE)
    # the answer in a file of its own: printed, it once shared a line of the submit's log with
    # the JVM's own output
    answer = tmp_path / "probe.json"
    process = cluster.submit([str(REPO_ROOT), str(answer)], {}, application=probe)
    log = cluster.submitted[-1]
    assert finished(process, log) == 0, log.read_text()[-3000:]
    found = json.loads(answer.read_text())
    packages = {name for name in found["submitted"] if name.endswith(".jar")}
    assert any("hadoop-aws" in name for name in packages), found["submitted"]
    assert any("awssdk_bundle" in name for name in packages), found["submitted"]
    assert len(found["executors"]) == 2
    for on_path in found["executors"]:  # Spark's own core jar only, from the daemon's path
        assert not packages & set(on_path), on_path
        assert all(name.startswith("spark-core") for name in on_path), on_path


def test_a_second_writer_on_the_same_object_store_output_fails_with_exit_5(
    s3: S3Server, cluster_run: dict
) -> None:
    # exit 5 naming the cluster run's id: the contender tried while that run held the lease
    # (whether the run was still going when the contender's JVM had exited is a race, not asked)
    assert cluster_run["contender_code"] == 5, cluster_run["contender_log"][-3000:]
    message = cluster_run["contender_log"].strip().splitlines()[-1]
    assert f"is being written by run {RUN_ID}" in message and "_offsets_audit.lock" in message
    output = cluster_run["output"]
    for name in (*TABLES, "runs"):  # no row of the contender anywhere
        with aws(s3):
            from offsets_lib.io import sink

            run_ids = set(sink.read_table(output, name, columns=["run_id"]).column(0).to_pylist())
        assert run_ids <= {RUN_ID}, name
    assert [r["status"] for r in runs_rows(s3, output)] == ["succeeded"]


def test_a_worker_killed_mid_audit_is_retried_and_changes_nothing(
    s3: S3Server, cluster: SparkCluster, dump: str, reference, cluster_run
) -> None:
    """Runs after the other cluster tests: it leaves one worker."""
    output = s3.uri("tables/worker-killed")
    job = cluster.submit(["--input", dump, "--output", output, "--run-id", RUN_ID], s3.env)
    log = cluster.submitted[-1]

    wait_until(lambda: _has_pieces(s3, output), job, log)
    victim = cluster.workers[0]
    os.killpg(victim.pid, 9)  # the worker, its executor and the executor's Python workers
    victim.wait()
    assert finished(job, log) == 0, log.read_text()[-3000:]
    assert all_tables(s3, output) == reference["tables"]
    assert [r["status"] for r in runs_rows(s3, output)] == ["succeeded"]


def test_a_driver_killed_between_commits_publishes_nothing_and_the_rerun_once(
    s3: S3Server, dump: str, reference, tmp_path
) -> None:
    from offsets_lib.io import storage

    output = s3.uri("tables/driver-killed")
    command = [
        "-m", "tests.support.crash_after_commit", "groups", "run",
        "--input", dump, "--output", output, "--run-id", RUN_ID,
    ]  # fmt: skip
    log = tmp_path / "crash.log"
    with log.open("wb") as out:
        crashed = subprocess.run(
            [str(BIN / "python"), *command], env=clean_env(s3.env), stdout=out,
            stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S, check=False, cwd=REPO_ROOT,
        )  # fmt: skip
    assert crashed.returncode == 137, log.read_text()[-3000:]
    with aws(s3):
        assert not storage.is_delta_table(f"{output}/runs")  # no run is claimed
    assert table_rows(s3, output, "groups") == reference["tables"]["groups"]  # committed first
    assert lease_holder(s3, output) == RUN_ID  # the dead run's lease stays

    rerun = offsets_cli(
        "run", "--input", dump, "--output", output, "--run-id", RUN_ID, env=s3.env,
        log=tmp_path / "rerun.log",
    )  # fmt: skip
    assert rerun.returncode == 0, (tmp_path / "rerun.log").read_text()[-3000:]
    assert all_tables(s3, output) == reference["tables"]  # exactly once
    assert [r["status"] for r in runs_rows(s3, output)] == ["succeeded"]


def test_a_stalled_object_store_never_leaves_a_half_published_run(
    s3: S3Server, dump: str, reference, tmp_path
) -> None:
    """The S3 server stops answering (SIGSTOP) for STALL_S once the audit stage starts: the run
    either rides it out or fails with a clear exit; it never claims success with partial tables,
    and a rerun with the same run id publishes once."""
    import signal
    import time

    output = s3.uri("tables/stalled")
    log = tmp_path / "stalled.log"
    with log.open("wb") as out:
        run = subprocess.Popen(
            [str(BIN / "offsets"), "run", "--input", dump, "--output", output, "--run-id", RUN_ID],
            env=clean_env(s3.env), stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    wait_until(lambda: _has_pieces(s3, output), run, log)
    os.killpg(s3.process.pid, signal.SIGSTOP)
    try:
        time.sleep(STALL_S)  # the fault's duration, not a wait for a result
    finally:
        os.killpg(s3.process.pid, signal.SIGCONT)
    code = finished(run, log)
    statuses = [r["status"] for r in runs_rows(s3, output)] if _has_runs(s3, output) else []
    if code == 0:
        assert statuses == ["succeeded"]
    else:
        assert "succeeded" not in statuses, log.read_text()[-3000:]
        assert "Traceback" not in log.read_text().splitlines()[-1]
        rerun = offsets_cli(
            "run", "--input", dump, "--output", output, "--run-id", RUN_ID, env=s3.env,
            log=tmp_path / "rerun.log",
        )  # fmt: skip
        assert rerun.returncode == 0, (tmp_path / "rerun.log").read_text()[-3000:]
        assert [r["status"] for r in runs_rows(s3, output)] == ["succeeded"]
    assert all_tables(s3, output) == reference["tables"]


STALL_S = 20


def _has_pieces(s3: S3Server, output: str) -> bool:
    """The map stage wrote pieces (the audit stage starts now)."""
    import pyarrow.fs as pafs

    from offsets_lib.io import storage

    with aws(s3):
        fs, root = storage.filesystem(f"{output}/_staging")
        if fs.get_file_info(root).type != pafs.FileType.Directory:
            return False
        found = fs.get_file_info(pafs.FileSelector(root, recursive=True))
        return any(i.path.endswith(".arrow") for i in found)


def _has_runs(s3: S3Server, output: str) -> bool:
    from offsets_lib.io import storage

    with aws(s3):
        return storage.is_delta_table(f"{output}/runs")


def test_offsets_fetch_reads_the_tables_on_the_object_store(s3: S3Server, reference) -> None:
    import json

    done = subprocess.run(
        [str(BIN / "offsets"), "fetch", "--output", reference["output"], "--all-groups", "--json"],
        env=clean_env(s3.env), capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    fetched = json.loads(done.stdout)
    assert fetched, done.stdout[:500]
