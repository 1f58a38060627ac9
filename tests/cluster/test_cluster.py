"""Issue 18: the job on a standalone Spark cluster, dump and tables on an S3-compatible store.

One small generated dump serves every test; the local-mode run over it is the reference that the
cluster runs must reproduce table for table.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.conftest import BIN, S3Server, SparkCluster, clean_env

pytestmark = [pytest.mark.spark, pytest.mark.slow]

RUN_ID = "scheduled__2026-11-24T06:00:00+00:00"  # an Airflow run id: quoted in partition paths
TABLES = (
    "offsets", "groups", "members", "rejects", "metrics", "offset_decisions",
    "group_decisions", "lag",
)  # fmt: skip
RUN_TIMEOUT_S = 900


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
    assert "files shuffle" in reference["log"]  # staging and pieces went through the store
    assert "cluster-test-secret" not in reference["log"]


def test_spark_submit_to_the_cluster_equals_the_local_run(
    s3: S3Server, cluster: SparkCluster, dump: str, reference
) -> None:
    output = s3.uri("tables/cluster")
    job = cluster.submit(["--input", dump, "--output", output, "--run-id", RUN_ID], s3.env)
    log = cluster.submitted[-1]
    assert finished(job, log) == 0, log.read_text()[-3000:]
    assert "app-" in (cluster.root / "master.log").read_text()  # it ran on the cluster
    assert all_tables(s3, output) == reference["tables"]
    assert [r["status"] for r in runs_rows(s3, output)] == ["succeeded"]
