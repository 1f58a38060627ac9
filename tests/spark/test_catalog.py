"""`offsets run --database`: tables registered in a catalog that outlives the session.

The run and the reader are two processes (two JVMs) sharing one warehouse folder, whose Hive
metastore on embedded Derby (session.catalog_conf) is the catalog; one JVM at a time may open
it, as with a real metastore's clients one after the other. Adds ~2 session starts (~30 s).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from offsets_lib.audit.tables import TABLES
from offsets_lib.engine.pipeline import DECIDED_TABLES
from offsets_lib.io import catalog, sink
from offsets_lib.job import session
from offsets_lib.tools.generate import generate_dump
from tests.support.cli_lines import said
from tests.support.ports import free_ports

pytestmark = [pytest.mark.spark, pytest.mark.slow]

BIN = Path(sys.executable).parent

# A new session reads every table by its catalog name through Delta's Spark reader and leaves
# each as Parquet in argv[2], with what the catalog says about the tables.
READER = """
import json, sys
import pyarrow.parquet as pq
from offsets_lib.job import session
spark = session.get_or_create("reader", master="local[1]", warehouse=sys.argv[1])
listed = spark.catalog.listTables("audit")
tables = sorted(t.name for t in listed if t.tableType != "VIEW")
views = sorted(t.name for t in listed if t.tableType == "VIEW")
# one view read (each reads the runs table, then its table): they share latest_view_sql
latest = spark.table("audit.latest_offsets").toArrow()
pq.write_table(latest, f"{sys.argv[2]}/latest_offsets.parquet")
about = {}
for name in tables:
    frame = spark.table(f"audit.{name}")
    pq.write_table(frame.toArrow(), f"{sys.argv[2]}/{name}.parquet")
    detail = spark.sql(f"DESCRIBE DETAIL audit.{name}").first()
    about[name] = {
        "type": spark.catalog.getTable(f"audit.{name}").tableType,
        "location": detail["location"],
        "description": detail["description"],
        "partitions": list(detail["partitionColumns"]),
        "comments": {f.name: f.metadata.get("comment") for f in frame.schema.fields},
    }
print(json.dumps({"tables": tables, "views": views, "about": about}))
spark.stop()
"""


def _rows(table: pa.Table, columns: list[str]) -> list[str]:
    """A table's rows in the spec's column order, as sorted JSON lines (engines differ in
    representation only: string views, large lists)."""
    rows = table.select(columns).to_pylist()
    return sorted(json.dumps(r, default=_json_value, sort_keys=True) for r in rows)


def _json_value(value: object) -> str:
    """Timestamps as UTC (DuckDB hands them in its session's time zone), the rest as text."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    return str(value)


@pytest.mark.parametrize("writer", ["delta-rs", "spark"])
def test_run_with_database_is_read_by_name_in_a_new_session(tmp_path: Path, writer: str) -> None:
    """The tables a catalog run writes (with delta-rs and registers, the default and the
    profile's; or with Delta's Spark writer) read identically by name through Delta's Spark
    reader (a new session on the same catalog), by path through delta-rs, Polars and DuckDB,
    and through the latest_offsets view; nothing is left in the working directory (Derby's
    log and metastore sit in the warehouse)."""
    dump, warehouse, spark_read = tmp_path / "dump", tmp_path / "warehouse", tmp_path / "read"
    spark_read.mkdir()
    generate_dump(str(dump), groups=12, records=400, seed=5, partitions=3)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    work = tmp_path / "work"  # the working directory of both processes
    work.mkdir()
    command = [str(BIN / "offsets"), "run", "--input", str(dump), "--database", "audit"]
    command += ["--warehouse", str(warehouse), "--run-id", "r1"]
    command += ["--end-offsets", str(dump / "_end_offsets.csv"), "--delta-writer", writer]
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200, cwd=work)
    assert run.returncode == 0, run.stderr
    assert "tables in database audit:" in run.stdout
    assert "WARN" not in run.stderr  # no Spark start-up warnings on the terminal

    read = subprocess.run(
        [sys.executable, "-c", READER, str(warehouse), str(spark_read)],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=work,
    )
    assert read.returncode == 0, read.stderr
    got = json.loads(read.stdout.strip().splitlines()[-1])
    assert got["tables"] == sorted([*DECIDED_TABLES, "lag", "runs"])
    assert got["views"] == [f"latest_{name}" for name in got["tables"]]
    views = ", ".join(got["views"])
    assert f"views of the latest succeeded run: {views}\n" in run.stdout
    assert list(work.iterdir()) == []  # no derby.log, no metastore_db
    # Hive's folder for added resources too, where catalog_conf puts it (not a new one per
    # session in the temp folder)
    assert sorted(p.name for p in warehouse.iterdir()) == [
        "audit.db",
        "derby.log",
        session.HIVE_RESOURCES,
        "metastore_db",
    ]

    root = warehouse / "audit.db"  # the database's folder, where the tables are
    # without --output, Delta's Spark writer makes managed tables there (DROP TABLE deletes
    # their files); delta-rs' are registered external at the same folder
    table_type = "EXTERNAL" if writer == "delta-rs" else "MANAGED"
    for name in got["tables"]:
        spec, about = TABLES[name], got["about"][name]
        uri = str(root / name)
        assert (about["type"], about["location"]) == (table_type, f"file:{uri}"), name
        assert (about["description"], about["partitions"]) == (spec.comment, ["run_id"]), name
        assert about["comments"] == {f.name: f.metadata["comment"] for f in spec.schema.fields}
        by_spark = _rows(pq.read_table(spark_read / f"{name}.parquet"), spec.columns)
        by_delta_rs = _rows(sink.read_table(str(root), name), spec.columns)
        by_polars = _rows(pl.read_delta(uri).to_arrow(), spec.columns)
        dataset = DeltaTable(uri).to_pyarrow_dataset()  # noqa: F841 (read by DuckDB)
        by_duckdb = _rows(duckdb.sql("select * from dataset").to_arrow_table(), spec.columns)
        assert by_spark == by_delta_rs == by_polars == by_duckdb, name
        assert by_spark or name in ("rejects", "load_failures", "unread_marker_offsets"), name
    offsets = [json.loads(r) for r in _rows(sink.read_table(str(root), "offsets"), ["run_id"])]
    assert offsets and {r["run_id"] for r in offsets} == {"r1"}
    # one run, r1: the view of the latest run, read in a new session, holds every row
    columns = TABLES["offsets"].columns
    by_view = _rows(pq.read_table(spark_read / "latest_offsets.parquet"), columns)
    assert by_view == _rows(sink.read_table(str(root), "offsets"), columns)

    # a reader's own process finds the tables in the database's folder, without Spark
    assert catalog.database_folder(warehouse, "AUDIT") == str(root.resolve())
    lag = [str(BIN / "offsets"), "lag", "--json"]
    by_name = [*lag, "--database", "audit", "--warehouse", str(warehouse)]
    by_name = subprocess.run(by_name, env=env, capture_output=True, text=True, cwd=work)
    by_path = subprocess.run([*lag, "--output", str(root)], env=env, capture_output=True, text=True)
    assert (by_name.returncode, by_name.stderr) == (0, ""), by_name.stderr
    assert by_name.stdout == by_path.stdout and by_name.stdout.strip()
    assert list(work.iterdir()) == []
    if writer == "delta-rs":
        _a_later_run_writes_where_the_catalog_has_the_tables(command, warehouse, work, env)


def _a_later_run_writes_where_the_catalog_has_the_tables(
    command: list[str], warehouse: Path, work: Path, env: dict[str, str]
) -> None:
    """A later run of a database whose tables and views are registered writes where the
    catalog has the tables (the database's folder, known without the catalog, which is asked
    beside the audit). The same run with another --output is refused before its commits, one
    line, exit 2: no table is made in its folder."""
    root = warehouse / "audit.db"
    again = [c if c != "r1" else "r2" for c in command]
    run = subprocess.run(again, env=env, capture_output=True, text=True, timeout=1200, cwd=work)
    assert run.returncode == 0, run.stderr
    assert "tables in database audit: " in run.stdout
    assert "views of the latest succeeded run: latest_" in run.stdout
    runs = sink.read_table(str(root), "runs").column("run_id").to_pylist()
    assert sorted(runs) == ["r1", "r2"]

    other = work.parent / "other"
    status, lines = _reader_fails([*again[1:], "--output", str(other)], work, env)
    said = [n for n in lines if not n.startswith(("Picked up JAVA_TOOL", "[read+audit] "))]
    assert (status, said) == (
        2,
        [
            f"offsets: database 'audit' has tables of another folder than {other}:"
            f" {dict(sorted((n, str(root / n)) for n in [*DECIDED_TABLES, 'lag', 'runs']))};"
            " give that folder as --output, or another --database"
        ],
    )
    assert not list(other.glob("*/_delta_log"))
    assert list(work.iterdir()) == []


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

    _latest_views_follow_the_runs_table(spark, root)
    _an_older_releases_views_of_internal_tables_are_dropped(spark)

    both = runner.invoke(main, ["lag", "--output", root, "--database", "audit"])
    assert both.exit_code == 2
    missing = runner.invoke(main, ["lag", "--database", "no_such_db"])
    assert (missing.exit_code, missing.stderr) == (
        3,
        "offsets: no database 'no_such_db' in the catalog\n",
    )


def test_a_first_runs_tables_are_made_and_registered_beside_the_audit(
    spark, tmp_path: Path
) -> None:
    """A database that lacks a Kafka run's tables (its first run): by the time the run waits
    for the catalog, before its first commit, every table it writes is in the folder, empty,
    with the spec's schema, partitioning and description, registered, and every audit table's
    view made; the run's end has nothing left to register, and the answer the run holds is
    the catalog's, though it is not asked again. A folder's table is kept as it is.
    The run's commits then follow that empty first version."""
    from offsets_lib.io import incremental
    from offsets_lib.io.delta_schema import check_table_schema
    from offsets_lib.job.entry import run_options
    from offsets_lib.job.run_catalog import CatalogSide

    root = tmp_path / "tables"
    sink.publish_run({"run_id": "r0", "status": "failed"}, output=str(root))  # kept as it is
    given = {"source": "kafka", "topic": "t", "output": str(root), "database": "first"}
    options = run_options(**given, run_id="r1", kafka_options={"bootstrap.servers": "127.0.0.1:1"})
    side = CatalogSide.prepare(options)
    assert side is not None
    assert side.start(spark, options).output == str(root)
    entries = side.ready()

    written = sorted([*TABLES, incremental.KEPT_TABLE, incremental.CHECKPOINT_TABLE])
    assert sorted(entries.locations) == written
    assert sorted(entries.views) == sorted(f"latest_{name}" for name in TABLES)
    assert all(digest is not None for digest in entries.views.values())
    assert entries == catalog.catalog_entries(spark, "first")  # as the catalog itself answers
    specs = {**TABLES, **{s.name: s for s in (incremental.KEPT_SPEC, incremental.CHECKPOINT_SPEC)}}
    for name in written:
        table = DeltaTable(str(root / name))
        check_table_schema(table, specs[name])
        about = table.metadata()
        assert (about.partition_columns, about.description) == (["run_id"], specs[name].comment)
        expected = (0, 1) if name == "runs" else (0, 0)  # runs: r0's row, as it was
        assert (table.version(), table.to_pyarrow_table().num_rows) == expected, name
    assert catalog.register_tables(spark, written, output=str(root), database="first") == []
    assert spark.sql("SELECT count(*) AS n FROM first.latest_offsets").first()["n"] == 0

    sink.publish_run({"run_id": "r1", "status": "succeeded"}, output=str(root))
    runs = spark.sql("SELECT run_id FROM first.latest_runs").first()
    assert (DeltaTable(str(root / "runs")).version(), runs["run_id"]) == (1, "r1")
    assert sink.create_missing_tables(list(specs.values()), output=str(root), run_id="r2") == []


def test_a_catalog_without_a_warehouse_folder_leaves_nothing_in_the_working_directory(
    tmp_path: Path,
) -> None:
    """A user's spark-defaults naming a Hive metastore (here Derby by its JDBC URL, as a
    remote one is named by its URIs) and no warehouse folder: Spark's default is
    ``spark-warehouse`` in the working directory. A first `run --database --output` creates
    the database at ``<output>/_database`` instead; `run --database` alone is refused with one
    line (exit 2) rather than put the tables there. Nothing in the working directory."""
    conf, work, dump, out = (tmp_path / n for n in ("conf", "work", "dump", "out"))
    conf.mkdir()
    work.mkdir()
    generate_dump(str(dump), groups=2, records=40, seed=5, partitions=1)
    metastore = tmp_path / "metastore"
    (conf / "spark-defaults.conf").write_text(
        "spark.sql.catalogImplementation hive\n"
        "spark.hadoop.javax.jdo.option.ConnectionURL"
        f" jdbc:derby:;databaseName={metastore / 'db'};create=true\n"
    )
    env = {"SPARK_CONF_DIR": str(conf), "JAVA_TOOL_OPTIONS": f"-Dderby.system.home={metastore}"}
    run = [str(BIN / "offsets"), "run", "--input", str(dump), "--run-id", "r1"]
    first = subprocess.run(
        [*run, "--database", "audit", "--output", str(out)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
        cwd=work,
    )
    assert first.returncode == 0, first.stderr
    assert "tables in database audit:" in first.stdout
    assert (out / catalog.DATABASE_FOLDER).is_dir()
    assert list(work.iterdir()) == []

    # --output given: the catalog is asked beside the audit, its refusal waited for before
    # the first commit: nothing committed in the other folder, no runs row there either
    other = tmp_path / "other"
    elsewhere = ["run", "--input", str(dump), "--run-id", "r2", "--database", "audit"]
    status, lines = _reader_fails([*elsewhere, "--output", str(other)], work, env)
    shown = ("Picked up JAVA_TOOL", "[read+audit]")  # the audit may end before the catalog
    assert (status, [n for n in lines if not n.startswith(shown)]) == (
        2,
        [
            f"offsets: database 'audit' has tables of another folder than {other}:"
            f" {dict(sorted((n, str(out / n)) for n in [*DECIDED_TABLES, 'lag', 'runs']))};"
            " give that folder as --output, or another --database"
        ],
    )
    assert sorted(other.glob("*/_delta_log")) == []

    status, lines = _reader_fails(
        ["run", "--input", str(dump), "--run-id", "r1", "--database", "other"], work, env
    )
    assert (status, [n for n in lines if not n.startswith("Picked up JAVA_TOOL")]) == (
        2,
        [
            "offsets: the catalog has no database 'other' and no warehouse folder to create it"
            " in (spark.sql.warehouse.dir); give --output PATH for its tables, or --warehouse"
        ],
    )
    assert list(work.iterdir()) == []


def _reader_fails(args: list[str], cwd: Path, env: dict[str, str] | None = None):
    """`offsets ARGS` in its own process (the JVM's stderr included): status and stderr lines.
    The timeout is a hang guard only (a metastore that never answers held Hive's client for
    10 minutes and more)."""
    done = subprocess.run(
        [str(BIN / "offsets"), *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=180,
        cwd=cwd,
    )
    return done.returncode, said(done.stderr)


FENCE_CHECK = ["fence-check", "--group", "g", "--member", "", "--member-epoch", "-1"]
FENCE_CHECK += ["--topic", "t", "--partition", "0"]
# `run` asks the catalog through its own session (catalog.run_root), the readers (fetch,
# fence-check, lag, prune) through app.tables_root: `run` and one reader against each fault
# (each command is a JVM start, ~10-25 s on the shared machine)
CATALOG_COMMANDS = {
    "closed ports": [["run"], ["lag"]],
    "a listener that never answers": [["run"], FENCE_CHECK],
}


@pytest.mark.parametrize("fault", sorted(CATALOG_COMMANDS))
def test_a_metastore_service_that_cannot_be_reached_is_one_line_and_exit_3(
    tmp_path: Path, fault: str
) -> None:
    """A user's spark-defaults naming a Hive metastore service that cannot be reached: every
    URI a closed loopback port, or the last one a socket that listens and never answers
    (with a user and password in it). Each command exits 3 (input not readable) with one line
    naming the URIs (no password) and what failed, in seconds: refused connections before a
    JVM starts, a silent one through Hive's client asked once with a short socket timeout (not
    retried for minutes). Nothing in the working directory."""
    conf, work, dump = tmp_path / "conf", tmp_path / "work", tmp_path / "dump"
    conf.mkdir()
    work.mkdir()
    generate_dump(str(dump), groups=2, records=40, seed=5, partitions=1)
    first, second = (f"127.0.0.1:{port}" for port in free_ports(2))
    silent = None
    if fault == "a listener that never answers":
        silent = socket.create_server(("127.0.0.1", 0))  # listens; never accepts nor replies
        second = f"127.0.0.1:{silent.getsockname()[1]}"
    secret = "hive:s3cret@" if silent is not None else ""
    given = f"thrift://{first},thrift://{secret}{second}"
    (conf / "spark-defaults.conf").write_text(
        f"spark.sql.catalogImplementation hive\nspark.hadoop.hive.metastore.uris {given}\n"
    )
    failed = (
        "no answer within 5s (hive.metastore.client.socket.timeout)"
        if silent is not None
        else "Connection refused"
    )
    expected = (
        f"offsets: the catalog cannot be reached (metastore thrift://{first}, thrift://{second}):"
        f" {failed}"
    )
    try:
        for command in CATALOG_COMMANDS[fault]:
            if command == ["run"]:
                command = ["run", "--input", str(dump), "--run-id", "r1"]
            args = [*command, "--database", "audit"]
            status, lines = _reader_fails(args, work, {"SPARK_CONF_DIR": str(conf)})
            assert (status, lines) == (3, [expected]), command
            assert list(work.iterdir()) == [], command  # no derby.log, no metastore_db
    finally:
        if silent is not None:
            silent.close()


def test_a_local_catalog_that_cannot_be_read_is_one_line_and_exit_3(tmp_path: Path) -> None:
    """A local catalog folder (--warehouse) that holds no Derby database: one line, exit 3
    (input not readable), and nothing left in the working directory."""
    warehouse = tmp_path / "warehouse"
    (warehouse / catalog.METASTORE_FOLDER).mkdir(parents=True)  # not a Derby database
    by_name = ["--database", "audit", "--warehouse", str(warehouse)]
    status, lines = _reader_fails([*FENCE_CHECK, *by_name], tmp_path)
    assert status == 3, lines
    metastore = warehouse / catalog.METASTORE_FOLDER
    assert lines == [f"offsets: the catalog in {metastore} cannot be read: not a Derby database"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["warehouse"]


def _latest_views_follow_the_runs_table(spark, root: str) -> None:
    """The latest_<table> views pick the run `offsets_lib.io.runs.latest_run` picks, when they
    are read: runs rows published after r1 (no new audit run) move them or not."""
    from offsets_lib.io import runs

    def latest(table: str) -> list[str]:
        spec = TABLES[table]
        return _rows(spark.table(f"audit.latest_{table}").toArrow(), spec.columns)

    def of_run(table: str, run_id: str) -> list[str]:
        return _rows(sink.read_table(root, table, run_id=run_id), TABLES[table].columns)

    r1 = runs.latest_run(root)
    assert r1["run_id"] == "r1"
    assert latest("offsets") == of_run("offsets", "r1") != []
    assert latest("lag") == of_run("lag", "r1") != []
    # a failed run after r1 and a succeeded one before it: r1 stays the latest
    later, earlier = r1["finished_at"] + timedelta(hours=1), r1["finished_at"] - timedelta(hours=1)
    sink.publish_run({"run_id": "r2-failed", "status": "failed", "finished_at": later}, output=root)
    sink.publish_run({"run_id": "r0", "status": "succeeded", "finished_at": earlier}, output=root)
    assert runs.latest_run(root)["run_id"] == "r1"
    assert [r["run_id"] for r in spark.table("audit.latest_runs").collect()] == ["r1"]
    # a succeeded run after r1 that wrote no offsets: the views show it, hence no offsets
    sink.publish_run({"run_id": "r3", "status": "succeeded", "finished_at": later}, output=root)
    assert runs.latest_run(root)["run_id"] == "r3"
    assert [r["run_id"] for r in spark.table("audit.latest_runs").collect()] == ["r3"]
    assert latest("offsets") == latest("lag") == []


def _an_older_releases_views_of_internal_tables_are_dropped(spark) -> None:
    """A ``latest__kept`` view as an earlier release created it (with its definition digest) is
    dropped by the next views' creation; a user's own ``latest_`` view stays."""
    from offsets_lib.io import catalog

    ours = f"TBLPROPERTIES ('{catalog.DEFINITION_PROPERTY}' = '0123456789abcdef')"
    spark.sql(f"CREATE VIEW audit.latest__kept {ours} AS SELECT * FROM audit.runs")
    spark.sql("CREATE VIEW audit.latest_mine AS SELECT * FROM audit.runs")
    views = catalog.create_latest_views(spark, "audit", ["offsets", "runs"])
    assert views == ["audit.latest_offsets", "audit.latest_runs"]
    shown = {r["viewName"] for r in spark.sql("SHOW VIEWS IN audit").collect()}
    assert "latest__kept" not in shown
    assert {"latest_mine", "latest_offsets", "latest_runs"} <= shown
    spark.sql("DROP VIEW audit.latest_mine")
