"""`offsets run` in a Spark Connect session (SPARK_REMOTE) gives the tables a classic session's
run of the same input gives: a dump, and the live topic of a real Kafka broker."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import offsets_lib
from tests.kafka.test_kafka_job import rows_on_own_partitions, scenario_specs, table_rows

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.slow]

TABLES = (
    "offsets", "groups", "members", "offset_decisions", "group_decisions", "lag", "metrics",
)  # fmt: skip


def _connect_run(server, *args: str) -> subprocess.CompletedProcess:
    """`offsets run ARGS` as its own process, a client of the Connect server."""
    command = [str(Path(sys.executable).parent / "offsets"), "run", *args]
    done = subprocess.run(
        command, env=server.client_env(), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{done.stderr[-3000:]}\nserver log: {server.log}"
    return done


@pytest.fixture(scope="module")
def golden(tmp_path_factory) -> tuple[list[dict], int]:
    specs = scenario_specs([1, 2, 3, 5, 8, 13])
    rows, _ = rows_on_own_partitions(specs)
    return rows, specs[0]["config"]["evaluated_at_ms"]


def test_a_dump_under_connect_equals_classic(spark, connect_server, golden, tmp_path):
    rows, as_of = golden
    dump = tmp_path / "dump.parquet"
    pq.write_table(pa.Table.from_pylist(rows), dump)
    out = str(tmp_path / "tables")
    _connect_run(
        connect_server, "--input", str(dump), "--output", out, "--as-of", str(as_of),
        "--run-id", "connect",
    )  # fmt: skip
    offsets_lib.run(spark, inputs=[str(dump)], output=out, as_of=as_of, run_id="classic")
    via_connect, via_classic = (
        table_rows(out, "connect", TABLES),
        table_rows(out, "classic", TABLES),
    )
    assert via_connect["offsets"]
    assert via_connect == via_classic


def test_the_live_topic_under_connect_equals_classic(
    spark, connect_server, kafka_broker, committed_groups, tmp_path
):
    """A real broker's `__consumer_offsets` (its coordinator's records of real groups)."""
    as_of = str(int(time.time() * 1000))
    kafka = ["--source", "kafka", "--bootstrap-servers", kafka_broker.bootstrap]
    connect_out, classic_out = str(tmp_path / "connect"), str(tmp_path / "classic")
    _connect_run(connect_server, *kafka, "--output", connect_out, "--as-of", as_of, "--run-id", "r")
    offsets_lib.run(
        spark,
        source="kafka",
        kafka_options={"bootstrap.servers": kafka_broker.bootstrap},
        output=classic_out,
        as_of=as_of,
        run_id="r",
    )
    via_connect, via_classic = (
        table_rows(connect_out, "r", TABLES),
        table_rows(classic_out, "r", TABLES),
    )
    assert len(via_connect["offsets"]) == len(committed_groups.offsets)
    assert via_connect["lag"] and via_connect["members"] == []
    assert via_connect == via_classic


def test_the_tools_session_is_a_connect_client_that_imports_the_shipped_package(connect_server):
    """SPARK_REMOTE gives `session.get_or_create` a Connect session (no JVM here) whose Python
    workers import offsets_lib from the zip it shipped (the server has no PYTHONPATH of ours)."""
    probe = """
from offsets_lib.io.spark_settings import is_connect, parallelism
from offsets_lib.job import session
spark = session.get_or_create()
where = spark.range(1).mapInArrow(_where, "where string").first()[0]
print(is_connect(spark), parallelism(spark), where)
"""
    where = (
        "def _where(batches):\n"
        "    import pyarrow as pa, offsets_lib\n"
        "    for _ in batches: pass\n"
        "    yield pa.record_batch([pa.array([offsets_lib.__file__])], names=['where'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", where + probe],
        env=connect_server.client_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    is_connect, cores, where = done.stdout.split()
    assert (is_connect, cores) == ("True", "2")
    assert "offsets_lib.zip" in where or "artifacts" in where, where
