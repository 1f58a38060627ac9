"""`offsets run --database`: tables registered in a catalog that outlives the session.

The run and the reader are two processes (two JVMs) sharing one warehouse folder, whose Hive
metastore on embedded Derby (session.catalog_conf) is the catalog; one JVM at a time may open
it, as with a real metastore's clients one after the other. Adds ~2 session starts (~30 s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from offsets_lib.engine.pipeline import DECIDED_TABLES
from offsets_lib.io import sink
from offsets_lib.tools.generate import generate_dump

pytestmark = [pytest.mark.spark, pytest.mark.slow]

BIN = Path(sys.executable).parent

READER = """
import json, sys
from offsets_lib.job import session
spark = session.get_or_create("reader", master="local[1]", warehouse=sys.argv[1])
rows = spark.table("audit.offset_decisions").select("group_id", "topic", "partition", "run_id")
tables = sorted(t.name for t in spark.catalog.listTables("audit"))
print(json.dumps({"rows": sorted(map(list, rows.collect())), "tables": tables}))
spark.stop()
"""


def test_run_with_database_is_read_by_name_in_a_new_session(tmp_path: Path) -> None:
    dump, warehouse = tmp_path / "dump", tmp_path / "warehouse"
    generate_dump(str(dump), groups=12, records=400, seed=5, partitions=3)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    command = [str(BIN / "offsets"), "run", "--input", str(dump), "--database", "audit"]
    command += ["--warehouse", str(warehouse), "--run-id", "r1"]
    run = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=1200, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    assert "tables in database audit:" in run.stdout
    assert "WARN" not in run.stderr  # no Spark start-up warnings on the terminal

    read = subprocess.run(
        [sys.executable, "-c", READER, str(warehouse)],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=tmp_path,
    )
    assert read.returncode == 0, read.stderr
    got = json.loads(read.stdout.strip().splitlines()[-1])
    # managed tables: in the database's folder of the warehouse, read here with delta-rs too
    managed = sink.read_table(str(warehouse / "audit.db"), "offset_decisions")
    expected = sorted(
        [r["group_id"], r["topic"], r["partition"], r["run_id"]] for r in managed.to_pylist()
    )
    assert got["rows"] == expected
    assert got["rows"] and {r[3] for r in got["rows"]} == {"r1"}
    assert got["tables"] == sorted([*DECIDED_TABLES, "lag", "runs"])


def test_readers_take_a_database_as_well_as_a_path(spark, tmp_path: Path) -> None:
    """fetch, fence-check, lag and the notebook's loader read `offsets run --database`'s tables
    by database name exactly as by path. In-process (CliRunner) on the tests' shared session:
    its catalog is the one the run registers in (--warehouse only matters to a new session).
    One tiny run serves every reader; adds ~1 min (one run through Delta's Spark writer)."""
    from click.testing import CliRunner

    from offsets_lib.cli import main
    from offsets_lib.tools import notebook_queries

    runner = CliRunner()
    dump, warehouse = tmp_path / "dump", tmp_path / "warehouse"
    generate_dump(str(dump), groups=12, records=400, seed=5, partitions=3)
    run = ["run", "--input", str(dump), "--database", "audit", "--warehouse", str(warehouse)]
    run += ["--run-id", "r1", "--end-offsets", str(dump / "_end_offsets.csv")]
    ran = runner.invoke(main, run)
    assert ran.exit_code == 0, ran.output
    # managed tables: in the database's folder of the session's warehouse
    root = spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:") + "/audit.db"
    by_name = ["--database", "audit", "--warehouse", str(warehouse)]
    group = notebook_queries.load_run(root).tables["offsets"]["group_id"].iloc[0]
    fence = ["fence-check", "--group", group, "--member", "", "--member-epoch", "-1"]
    fence += ["--topic", "t", "--partition", "0", "--json"]
    for command in (["fetch", "--all-groups", "--json"], ["lag", "--json"], fence):
        by_path = runner.invoke(main, [*command, "--output", root])
        # fence-check's status is its answer: 0 accepted, 6 fenced, 7 cannot tell
        assert by_path.exit_code in ((0, 6, 7) if command is fence else (0,)), by_path.output
        assert by_path.stdout.strip()
        from_catalog = runner.invoke(main, [*command, *by_name])
        assert from_catalog.exit_code == by_path.exit_code, from_catalog.output
        assert from_catalog.stdout == by_path.stdout, command

    loaded = notebook_queries.load_run(None, database="audit", warehouse=str(warehouse))
    expected = notebook_queries.load_run(root)
    assert (loaded.output, loaded.run_id, loaded.as_of) == (root, "r1", expected.as_of)
    assert loaded.tables["lag"] is not None and not loaded.tables["lag"].empty
    for name, frame in expected.tables.items():
        assert (loaded.tables[name] is None) == (frame is None), name
        if frame is not None:
            assert loaded.tables[name].equals(frame), name

    both = runner.invoke(main, ["lag", "--output", root, "--database", "audit"])
    assert both.exit_code == 2
    missing = runner.invoke(main, ["lag", "--database", "no_such_db"])
    assert (missing.exit_code, missing.stderr) == (
        3,
        "offsets: no database 'no_such_db' in the catalog\n",
    )
