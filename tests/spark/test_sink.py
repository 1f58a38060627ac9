"""The Delta sink: executors write Parquet, delta-rs commits one transaction per table."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.transaction import AddAction
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from offsets_lib.audit.tables import TABLES, TableSpec
from offsets_lib.io import catalog, delta_schema, sink, spark_writer

pytestmark = pytest.mark.spark

AS_OF = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
TS = datetime(2024, 5, 30, 8, 15, 30, 123456, tzinfo=UTC)  # sub-millisecond on purpose
OFFSET_KEYS = ["group_id", "topic", "partition"]

CONTRACT = {
    "offsets": "group_id topic partition committed_offset leader_epoch metadata commit_timestamp "
    "expire_timestamp run_id as_of",
    "groups": "group_id group_type protocol_type state generation subscribed_topics "
    "current_state_timestamp run_id as_of",
    "members": "group_id member_id group_instance_id client_id client_host subscribed_topics "
    "assigned_partitions member_epoch run_id as_of",
    "offset_decisions": "group_id topic partition expired expires_at rule delete_error "
    "run_id as_of",
    "group_decisions": "group_id deleted deletes_at rule run_id as_of",
    "rejects": "offsets_partition offsets_offset key value error run_id",
    "runs": "run_id status started_at finished_at as_of source records_read records_decoded "
    "records_rejected",
}


def offset_row(group: str, topic: str, partition: int, offset: int, run_id: str) -> dict[str, Any]:
    """One row of the offsets table, in column order."""
    return {
        "group_id": group,
        "topic": topic,
        "partition": partition,
        "committed_offset": offset,
        "leader_epoch": None if offset % 2 else 7,
        "metadata": "",
        "commit_timestamp": TS,
        "expire_timestamp": None,
        "offsets_partition": 3,
        "log_offset": 1000 + offset,
        "topic_id": None,
        "value_version": 3,
        "has_pending_transaction": False,
        "run_id": run_id,
        "as_of": AS_OF,
    }


def files(spec: TableSpec, rows: list[dict[str, Any]], out: str, run_id: str) -> list[AddAction]:
    """The rows as an audit task writes them (`sink.write_task_files`), two files when there
    are two rows or more: the add actions the run commits."""
    schema = pa.schema(
        [f.with_nullable(True) for f in delta_schema.arrow_schema(spec, with_comments=False)]
    )
    table = pa.Table.from_pylist(rows, schema=schema)
    half = (len(rows) + 1) // 2
    written = [
        w
        for part in (table.slice(0, half), table.slice(half))
        for w in sink.write_task_files(part, spec, output=out, run_id=run_id)
    ]
    return [sink.add_action(w, run_id) for w in written]


def frame(
    spark: SparkSession, spec: TableSpec, rows: list[dict[str, Any]], scratch: Path, run_id: str
) -> DataFrame:
    """The rows as Delta's Spark writer gets them: the files of a task (`files`, under
    `scratch`) read as one frame (`spark_writer.files_frame`)."""
    root = str(scratch / "task-files" / spec.name)
    actions = files(spec, rows, root, run_id)
    return spark_writer.files_frame(spark, spec.name, actions, root=root, run_id=run_id)


def rows_of(table: pa.Table, keys: list[str]) -> list[dict[str, Any]]:
    return table.sort_by([(k, "ascending") for k in keys]).to_pylist()


def reorder(rows: list[dict[str, Any]], spec: TableSpec) -> list[dict[str, Any]]:
    # delta-rs returns partition columns last
    return [{c: r[c] for c in spec.columns} for r in rows]


# ---- the declared tables (no Spark) -----------------------------------------------------------


def _all_fields(dtype: T.DataType) -> list[T.StructField]:
    if isinstance(dtype, T.ArrayType):
        return _all_fields(dtype.elementType)
    if isinstance(dtype, T.StructType):
        return [f for field in dtype.fields for f in [field, *_all_fields(field.dataType)]]
    return []


def test_tables_hold_contract_columns_with_comments() -> None:
    assert set(TABLES) == {*CONTRACT, "lag", "metrics", "load_failures", "unread_marker_offsets"}
    for name, required in CONTRACT.items():
        missing = set(required.split()) - set(TABLES[name].columns)
        assert not missing, (name, missing)
    for spec in TABLES.values():
        assert spec.partition_by == ("run_id",)
        assert all(f.metadata.get("comment") for f in _all_fields(spec.schema)), spec.name
    groups = TABLES["groups"].schema
    assert groups["subscribed_topics"].dataType == T.ArrayType(T.StringType())
    assigned = TABLES["members"].schema["assigned_partitions"].dataType.elementType
    assert [(f.name, f.dataType.simpleString()) for f in assigned.fields] == [
        ("topic", "string"),
        ("topic_id", "string"),
        ("partition", "int"),
        ("assignment_epoch", "int"),
    ]
    assert TABLES["offsets"].schema["as_of"].dataType == T.TimestampType()


def test_spark_delta_sql_is_quoted() -> None:
    assert spark_writer.replace_where("a'b\\c") == "run_id = 'a\\'b\\\\c'"
    ddl = spark_writer.create_table_sql(TABLES["rejects"], "/t/re`jects")
    assert ddl.startswith("CREATE TABLE IF NOT EXISTS delta.`/t/re``jects` (")
    assert "`run_id` string NOT NULL COMMENT 'Id of the run" in ddl
    assert "PARTITIONED BY (`run_id`)" in ddl


# ---- writing with Spark ----------------------------------------------------------------------


def test_create_rerun_replaces_and_new_run_appends(spark: SparkSession, tmp_path: Path) -> None:
    spec, out = TABLES["offsets"], str(tmp_path)

    def write(rows: list[dict[str, Any]], run_id: str) -> dict[str, int]:
        return sink.write_run_tables(
            {"offsets": files(spec, rows, out, run_id)}, output=out, run_id=run_id
        )

    first = [offset_row("g1", "t", p, 10 + p, "r1") for p in range(3)]
    assert write(first, "r1") == {"offsets": 0}
    assert rows_of(sink.read_table(out, "offsets"), OFFSET_KEYS) == first

    # rerun of r1 with other rows: replaces them, adds none
    rerun = [offset_row("g1", "t", 0, 99, "r1"), offset_row("g2", "u", 5, 1, "r1")]
    assert write(rerun, "r1") == {"offsets": 1}
    assert rows_of(sink.read_table(out, "offsets"), OFFSET_KEYS) == rerun

    # the same rerun again is idempotent; a second run appends
    assert write(rerun, "r1") == {"offsets": 2}
    second = [offset_row("g3", "t", 0, 5, "r2")]
    assert write(second, "r2") == {"offsets": 3}
    assert sink.read_table(out, "offsets").num_rows == 3
    assert rows_of(sink.read_table(out, "offsets", run_id="r1"), OFFSET_KEYS) == rerun
    assert rows_of(sink.read_table(out, "offsets", run_id="r2"), OFFSET_KEYS) == second

    dt = DeltaTable(os.path.join(out, "offsets"))
    assert dt.version() == 3
    history = dt.history()  # newest first
    assert [h["run_id"] for h in history] == ["r2", "r1", "r1", "r1"]
    assert history[0]["num_records"] == "1"
    assert history[0]["userMetadata"] == "r2"


def test_schema_and_comments_round_trip(spark: SparkSession, tmp_path: Path) -> None:
    spec, out = TABLES["offsets"], str(tmp_path)
    for run_id in ("a", "b"):  # create, then an overwrite commit: comments must survive both
        rows = [offset_row("g", "t", 0, 1, run_id)]
        sink.write_run_tables(
            {"offsets": files(spec, rows, out, run_id)}, output=out, run_id=run_id
        )
    dt = DeltaTable(os.path.join(out, "offsets"))
    fields = json.loads(dt.schema().to_json())["fields"]
    assert [f["name"] for f in fields] == spec.columns
    assert {f["name"]: f["metadata"].get("comment") for f in fields} == {
        f.name: f.metadata["comment"] for f in spec.schema.fields
    }
    assert dt.metadata().description == spec.comment
    assert dt.metadata().partition_columns == ["run_id"]
    assert delta_schema.arrow_schema(spec).equals(
        pa.schema(dt.schema().to_arrow()), check_metadata=True
    )


def test_nested_columns_and_several_tables(spark: SparkSession, tmp_path: Path) -> None:
    out = str(tmp_path)
    members = TABLES["members"]
    member = dict.fromkeys(members.columns)
    member.update(
        group_id="g",
        member_id="m-1",
        subscribed_topics=["a", "b"],
        assigned_partitions=[
            {"topic": "a", "topic_id": None, "partition": 0, "assignment_epoch": None},
            {"topic": "b", "topic_id": "u-1", "partition": 2, "assignment_epoch": 4},
        ],
        member_epoch=4,
        run_id="r",
        as_of=AS_OF,
    )
    unknown = {**member, "member_id": "m-2", "subscribed_topics": None, "assigned_partitions": []}
    rejects = TABLES["rejects"]
    reject = {
        "offsets_partition": 0,
        "offsets_offset": 17,
        "key": b"\x00\x63",
        "value": None,
        "error": "unknown record type 99",
        "offsets_timestamp": TS,
        "record_type": 99,
        "run_id": "r",
    }
    versions = sink.write_run_tables(
        {
            "members": files(members, [member, unknown], out, "r"),
            "rejects": files(rejects, [reject], out, "r"),
        },
        output=out,
        run_id="r",
    )
    assert versions == {"members": 0, "rejects": 0}
    got = reorder(rows_of(sink.read_table(out, "members"), ["member_id"]), members)
    assert got == [member, unknown]
    assert sink.read_table(out, "rejects").to_pylist() == [reject]


def test_empty_frame_still_makes_a_table_and_clears_the_run(
    spark: SparkSession, tmp_path: Path
) -> None:
    spec, out = TABLES["offsets"], str(tmp_path)
    assert sink.write_run_tables({"offsets": []}, output=out, run_id="r") == {"offsets": 0}
    table = sink.read_table(out, "offsets")
    assert table.num_rows == 0
    assert set(table.column_names) == set(spec.columns)

    rows = [offset_row("g", "t", 0, 1, "r"), offset_row("g", "t", 1, 1, "keep")]
    sink.write_run_tables({"offsets": files(spec, rows[:1], out, "r")}, output=out, run_id="r")
    kept = files(spec, rows[1:], out, "keep")
    sink.write_run_tables({"offsets": kept}, output=out, run_id="keep")
    sink.write_run_tables({"offsets": []}, output=out, run_id="r")  # the run now has no rows
    assert sink.read_table(out, "offsets").to_pylist() == rows[1:]


def test_frame_schema_mismatch_is_rejected(spark: SparkSession, tmp_path: Path) -> None:
    spec, out = TABLES["offsets"], str(tmp_path)
    good = frame(spark, spec, [offset_row("g", "t", 0, 1, "r")], tmp_path, "r")
    bad = good.withColumn("partition", good["partition"].cast("string")).drop("as_of")
    with pytest.raises(delta_schema.SchemaMismatchError) as err:
        spark_writer.write_with_spark_delta(spark, bad, "offset_decisions", output=out, run_id="r")
    message = str(err.value)
    assert "'offset_decisions'" in message
    assert "column partition: expected int, got string" in message
    assert "missing column as_of timestamp" in message
    assert not (tmp_path / "offset_decisions").exists()  # checked before anything is written


def test_existing_table_with_other_schema_is_rejected(spark: SparkSession, tmp_path: Path) -> None:
    spec, out = TABLES["offsets"], str(tmp_path)
    alien = pa.table({"group_id": ["g"], "partition": pa.array([0], pa.int64()), "run_id": ["x"]})
    write_deltalake(str(tmp_path / "offsets"), alien, partition_by=["run_id"])
    good = files(spec, [offset_row("g", "t", 0, 1, "r")], out, "r")
    expected = r"column partition: expected int32, got int64"
    with pytest.raises(delta_schema.SchemaMismatchError, match=expected):
        sink.write_run_tables({"offsets": good}, output=out, run_id="r")
    assert DeltaTable(str(tmp_path / "offsets")).version() == 0


def test_rows_of_another_run_are_refused(tmp_path: Path) -> None:
    spec, out = TABLES["offsets"], str(tmp_path)
    with pytest.raises(ValueError, match="rows with run_id \\['other'\\]"):
        files(spec, [offset_row("g", "t", 0, 1, "other")], out, "r")
    no_as_of = {**offset_row("g", "t", 0, 1, "r"), "as_of": None}
    with pytest.raises(ValueError, match="null values in non-nullable columns \\['as_of'\\]"):
        files(spec, [no_as_of], out, "r")
    assert not (tmp_path / "offsets").exists()


def test_special_characters_in_run_id_and_other_readers(
    spark: SparkSession, tmp_path: Path
) -> None:
    spec, out = TABLES["offsets"], str(tmp_path)
    run_id = "manual__2024-06-01T00:00:00+00:00 / é'%20=x"
    rows = [offset_row("g", "t", p, 5 * p, run_id) for p in range(4)]
    plain = [offset_row("g", "t", 0, 1, "plain")]
    sink.write_run_tables({"offsets": files(spec, rows, out, run_id)}, output=out, run_id=run_id)
    sink.write_run_tables({"offsets": files(spec, plain, out, "plain")}, output=out, run_id="plain")
    sink.write_run_tables({"offsets": files(spec, rows, out, run_id)}, output=out, run_id=run_id)
    assert rows_of(sink.read_table(out, "offsets", run_id=run_id), OFFSET_KEYS) == rows
    path = os.path.join(out, "offsets")
    assert sorted(d for d in os.listdir(path) if d.startswith("run_id=")) == [
        "run_id=manual__2024-06-01T00%3A00%3A00%2B00%3A00%20%2F%20%C3%A9%27%2520%3Dx",
        "run_id=plain",
    ]

    dataset = DeltaTable(path).to_pyarrow_dataset()  # noqa: F841 (used by DuckDB below)
    counts = duckdb.sql(
        "select run_id, count(*) n, sum(committed_offset) s from dataset group by 1 order by 1"
    ).fetchall()
    assert counts == [(run_id, 4, 30), ("plain", 1, 1)]

    frame_pl = pl.read_delta(path).sort("run_id", "partition")
    assert frame_pl.height == 5
    assert frame_pl["run_id"].to_list() == [run_id] * 4 + ["plain"]
    # stats must not prune a row whose timestamp has microseconds (max rounded up to the ms)
    hit = pl.scan_delta(path).filter(pl.col("commit_timestamp") == TS).collect()
    assert hit.height == 5


def test_publish_run_writes_the_runs_row_last(spark: SparkSession, tmp_path: Path) -> None:
    out = str(tmp_path)
    with pytest.raises(ValueError, match="publish_run"):
        sink.write_run_tables({"runs": []}, output=out, run_id="r")
    row = {
        "run_id": "r",
        "status": "failed",
        "started_at": AS_OF,
        "as_of": AS_OF,
        "source": "parquet",
        "records_read": 10,
        "tables_written": ["offsets"],
    }
    assert sink.publish_run(row, output=out) == 0
    final = {**row, "status": "succeeded", "finished_at": AS_OF, "error": None}
    assert sink.publish_run(final, output=out) == 1
    got = sink.read_table(out, "runs").to_pylist()
    assert got == [{c: final.get(c) for c in TABLES["runs"].columns}]
    with pytest.raises(delta_schema.SchemaMismatchError, match="unknown columns \\['nope'\\]"):
        sink.publish_run({**row, "nope": 1}, output=out)
    with pytest.raises(ValueError, match="non-empty"):
        sink.publish_run({**row, "run_id": ""}, output=out)
    failed_early = {"run_id": "r0", "status": "failed", "error": "input not readable"}
    assert sink.publish_run(failed_early, output=out) == 2  # as_of may be null in runs only


def _spark_rows(spark: SparkSession, uri: str, spec: TableSpec) -> list[dict[str, Any]]:
    df = spark.read.format("delta").load(uri).select(*spec.columns)
    return [r.asDict(recursive=True) for r in df.collect()]


def _sorted(rows: list[dict[str, Any]], keys: list[str]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: tuple(str(r[k]) for k in keys))


def test_spark_writer_creates_replaces_and_appends(spark: SparkSession, tmp_path: Path) -> None:
    assert spark_writer.delta_spark_available(spark)  # the session of job/session.py loads Delta
    spec, out = TABLES["offsets"], str(tmp_path)

    def write(rows: list[dict[str, Any]], run_id: str) -> None:
        spark_writer.write_with_spark_delta(
            spark, frame(spark, spec, rows, tmp_path, run_id), "offsets", output=out, run_id=run_id
        )

    first = [offset_row("g1", "t", p, 10 + p, "r1") for p in range(3)]
    write(first, "r1")
    rerun = [offset_row("g1", "t", 0, 99, "r1"), offset_row("g2", "u", 5, 1, "r1")]
    write(rerun, "r1")  # replaces r1's rows, adds none
    second = [offset_row("g3", "t", 0, 5, "r2")]
    write(second, "r2")
    assert rows_of(sink.read_table(out, "offsets"), OFFSET_KEYS) == _sorted(
        rerun + second, OFFSET_KEYS
    )
    dt = DeltaTable(os.path.join(out, "offsets"))
    assert [h.get("userMetadata") for h in dt.history()][:3] == ["r2", "r1", "r1"]
    with pytest.raises(Exception, match="rows with run_id \\['r1'\\] in a write for run_id 'r3'"):
        spark_writer.write_with_spark_delta(
            spark, frame(spark, spec, first, tmp_path, "r1"), "offsets", output=out, run_id="r3"
        )
    with pytest.raises(delta_schema.SchemaMismatchError):
        spark_writer.write_with_spark_delta(
            spark,
            frame(spark, spec, first, tmp_path, "r1").drop("topic"),
            "offsets",
            output=out,
            run_id="r1",
        )


def _delta_rs_view(path: str) -> dict[str, Any]:
    dt = DeltaTable(path)
    fields = json.loads(dt.schema().to_json())["fields"]
    return {
        "columns": [(f["name"], json.dumps(f["type"]), f["nullable"]) for f in fields],
        "comments": {f["name"]: f["metadata"].get("comment") for f in fields},
        "description": dt.metadata().description,
        "partitions": list(dt.metadata().partition_columns),
    }


def _spark_view(spark: SparkSession, path: str) -> dict[str, Any]:
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()
    schema = spark.read.format("delta").load(path).schema
    return {
        "columns": [(f.name, f.dataType.simpleString()) for f in schema.fields],
        "comments": {f.name: f.metadata.get("comment") for f in schema.fields},
        "description": detail["description"],
        "partitions": list(detail["partitionColumns"]),
    }


def test_both_writers_give_tables_read_identically(spark: SparkSession, tmp_path: Path) -> None:
    """delta-rs (fast path for paths) and Delta's Spark writer (catalog tables) write the same
    tables: Spark-Delta, delta-rs and DuckDB read the same schema, comments, partitioning and
    rows from both."""
    members = TABLES["members"]
    member = dict.fromkeys(members.columns)
    member.update(
        group_id="g",
        member_id="m1",
        subscribed_topics=["t", "u"],
        assigned_partitions=[{"topic": "t", "partitions": [0, 1]}],
        member_epoch=3,
        run_id="r",
        as_of=AS_OF,
    )
    frames = {
        "offsets": (TABLES["offsets"], [offset_row("g", "t", p, 7 * p, "r") for p in range(3)]),
        "members": (members, [member]),
    }
    by_rs, by_spark = str(tmp_path / "rs"), str(tmp_path / "spark")
    sink.write_run_tables(
        {n: files(spec, rows, by_rs, "r") for n, (spec, rows) in frames.items()},
        output=by_rs,
        run_id="r",
    )
    for name, (spec, rows) in frames.items():
        spark_writer.write_with_spark_delta(
            spark, frame(spark, spec, rows, tmp_path, "r"), name, output=by_spark, run_id="r"
        )
    runs_row = {"run_id": "r", "status": "succeeded", "started_at": AS_OF, "records_read": 3}
    sink.publish_run(runs_row, output=by_rs)
    spark_writer.publish_run_with_spark(spark, runs_row, output=by_spark)
    frames["runs"] = (TABLES["runs"], [])

    for name, (spec, _rows) in frames.items():
        rs_path, spark_path = sink.table_uri(by_rs, name), sink.table_uri(by_spark, name)
        assert _delta_rs_view(rs_path) == _delta_rs_view(spark_path), name
        assert _spark_view(spark, rs_path) == _spark_view(spark, spark_path), name
        view = _spark_view(spark, spark_path)
        assert view["comments"] == {f.name: f.metadata["comment"] for f in spec.schema.fields}
        assert (view["description"], view["partitions"]) == (spec.comment, ["run_id"])
        keys = spec.columns[:3]
        assert _sorted(_spark_rows(spark, rs_path, spec), keys) == _sorted(
            _spark_rows(spark, spark_path, spec), keys
        )
        rs_rows = [
            reorder(rows_of(sink.read_table(p, name), keys), spec) for p in (by_rs, by_spark)
        ]
        assert rs_rows[0] == rs_rows[1]
        duck = []
        for path in (rs_path, spark_path):
            dataset = DeltaTable(path).to_pyarrow_dataset()  # noqa: F841 (read by DuckDB)
            cols = ", ".join(f'"{c}"' for c in spec.columns)
            duck.append(duckdb.sql(f"select {cols} from dataset order by all").fetchall())
        assert duck[0] == duck[1]
    assert _spark_rows(spark, sink.table_uri(by_spark, "offsets"), TABLES["offsets"])


def test_spark_writer_registers_catalog_tables(spark: SparkSession, tmp_path: Path) -> None:
    """--database: managed tables in the database, or external ones at --output."""
    spec = TABLES["offsets"]
    rows = [offset_row("g", "t", 0, 1, "r")]
    location = catalog.ensure_database(spark, "audit_managed")
    assert catalog.ensure_database(spark, "audit_managed") == location  # idempotent
    for _ in range(2):  # a rerun replaces
        spark_writer.write_with_spark_delta(
            spark,
            frame(spark, spec, rows, tmp_path, "r"),
            "offsets",
            output=None,
            run_id="r",
            database="audit_managed",
        )
    got = spark.table("audit_managed.offsets").select("group_id", "committed_offset", "run_id")
    assert [tuple(r) for r in got.collect()] == [("g", 1, "r")]
    detail = spark.sql("DESCRIBE DETAIL audit_managed.offsets").first()
    assert detail["location"] == f"file:{location}/offsets"  # managed: in the database's folder
    assert rows_of(sink.read_table(location, "offsets"), OFFSET_KEYS) == rows
    assert spark.sql("DESCRIBE DETAIL audit_managed.offsets").first()["description"] == spec.comment

    external = str(tmp_path / "ext")
    catalog.ensure_database(spark, "audit_external")
    spark_writer.write_with_spark_delta(
        spark,
        frame(spark, spec, rows, tmp_path, "r"),
        "offsets",
        output=external,
        run_id="r",
        database="audit_external",
    )
    table = spark.catalog.getTable("audit_external.offsets")
    assert table.tableType == "EXTERNAL"
    assert rows_of(sink.read_table(external, "offsets"), OFFSET_KEYS) == rows


def test_choose_writer_is_the_one_place() -> None:
    assert sink.choose_writer(None) == sink.DEFAULT_WRITER == "delta-rs"
    assert sink.choose_writer("spark") == "spark"
    assert sink.choose_writer("delta-rs") == "delta-rs"
    with pytest.raises(ValueError, match="expected one of"):
        sink.choose_writer("parquet")


def test_delta_rs_tables_are_registered_once_where_they_are(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A catalog run writes with delta-rs at the tables' folder (`run_root_and_entries`), then
    registers the tables the catalog lacks, external at that folder; Spark reads them by name."""
    spec = TABLES["offsets"]
    rows = [offset_row("g", "t", p, 7 * p, "r") for p in range(3)]
    location = catalog.ensure_database(spark, "audit_rs")
    # nothing registered yet
    assert catalog.run_root_and_entries(spark, "audit_rs", None)[0] == location
    root = str(tmp_path / "tables")
    assert catalog.run_root_and_entries(spark, "audit_rs", root)[0] == root
    sink.write_run_tables({"offsets": files(spec, rows, root, "r")}, output=root, run_id="r")
    sink.publish_run(
        {"run_id": "r", "status": "succeeded", "started_at": AS_OF, "records_read": 3}, output=root
    )
    names = ["offsets", "runs", "groups"]  # no groups table under root: not registered
    assert catalog.register_tables(spark, names, output=root, database="audit_rs") == names[:2]
    assert catalog.register_tables(spark, names, output=root, database="audit_rs") == []
    assert spark.catalog.getTable("audit_rs.offsets").tableType == "EXTERNAL"
    got = spark.table("audit_rs.offsets").select(*spec.columns).toArrow()
    assert rows_of(got, OFFSET_KEYS) == rows_of(sink.read_table(root, "offsets"), OFFSET_KEYS)
    assert spark.sql("DESCRIBE DETAIL audit_rs.offsets").first()["description"] == spec.comment
    # where the catalog has them: the next run's folder, and no other --output
    assert catalog.run_root_and_entries(spark, "audit_rs", None)[0] == root
    assert catalog.run_root_and_entries(spark, "audit_rs", root)[0] == root
    with pytest.raises(ValueError, match="has tables of another folder than"):
        catalog.run_root_and_entries(spark, "audit_rs", str(tmp_path / "elsewhere"))[0]
