"""`offsets fetch`, `offsets fence-check` and TABLES.md on tables written by a real `offsets run`.

One dump, built once for the module: golden scenarios 17, 20, 22, 24 and 25 (each on its own
range of offsets-topic partitions, group ids prefixed with the scenario number) plus a few
records for fencing (a KIP-1251 consumer group with assignment epochs, a classic group with
members, a share group) and for Kafka 4.4's rows (an offset of a re-created topic, a group
tombstone the loader refuses, a streams group under a topology-description plugin). One CLI run
writes the tables; every test only reads them.

Run this file as a script to regenerate the column reference of TABLES.md:
``PYTHONPATH=. .venv/bin/python tests/spark/test_fetch_cli.py``.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from offsets_lib.audit.tables import TABLES, table_spec
from offsets_lib.cli import main
from offsets_lib.io import delta_schema, sink
from offsets_lib.tools.fetch import fetch_offsets
from tests.reference import scenario
from tests.spec_data import scenario_dir

ROOT = Path(__file__).resolve().parents[2]
SCENARIO_DIR = scenario_dir()
TABLES_MD = ROOT / "TABLES.md"
RUN_ID = "fetch-cli"
AS_OF_MS = 1_700_000_000_000
ORDERS_ID = "3f1c9a2e-5b7d-4e10-9a3b-0c2d4e6f8a01"
OLD_ORDERS_ID = "5d2a8f10-0c4e-4b7a-9f3d-2e6b8c1a7d44"  # "orders" before it was re-created
BEGIN, END = "<!-- BEGIN GENERATED COLUMNS -->", "<!-- END GENERATED COLUMNS -->"


# ---- TABLES.md column reference (generated from offsets_lib/audit/tables.TABLES) -------------


def render_columns() -> str:
    """The generated part of TABLES.md: every table and column with its comment."""
    out = [BEGIN, ""]
    for spec in TABLES.values():
        out += [f"### `{spec.name}`", "", spec.comment, ""]
        out += ["| column | type | null | meaning |", "|---|---|---|---|"]
        for f in spec.schema.fields:
            comment = " ".join(f.metadata["comment"].split()).replace("|", "\\|")
            null = "yes" if f.nullable else "no"
            out.append(f"| `{f.name}` | `{f.dataType.simpleString()}` | {null} | {comment} |")
        partitions = ", ".join(f"`{c}`" for c in spec.partition_by)
        out += ["", f"Partitioned by {partitions}.", ""]
    out.append(END)
    return "\n".join(out)


def regenerate_tables_md() -> None:
    text = TABLES_MD.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    TABLES_MD.write_text(text[:start] + render_columns() + text[end:])


def test_tables_md_column_reference_is_generated_from_tables_py() -> None:
    """No Spark needed: TABLES.md documents every column exactly as tables.py comments it."""
    text = TABLES_MD.read_text()
    assert render_columns() in text, (
        "TABLES.md is out of date: run `.venv/bin/python tests/spark/test_fetch_cli.py`"
    )
    for spec in TABLES.values():
        for column in spec.columns:
            assert f"| `{column}` |" in text, (spec.name, column)


# ---- the dump ----------------------------------------------------------------------------------


def _prefixed(spec: dict, prefix: str) -> dict:
    spec = json.loads(json.dumps(spec))
    for record in spec["records"]:
        for field in ("group", "group_id"):
            if field in record.get("key", {}):
                record["key"][field] = prefix + record["key"][field]
    return spec


def _ts(offset: int) -> int:
    return AS_OF_MS - 86_400_000 + offset


FENCE_RECORDS = [
    # consumer group "cg": KIP-1251 epochs; topic names known from the partition metadata
    {
        "type": "consumer_group_metadata",
        "key": {"group_id": "cg"},
        "value": {"version": 0, "epoch": 5},
    },
    {
        "type": "consumer_group_partition_metadata",
        "key": {"group_id": "cg"},
        "value": {
            "version": 0,
            "topics": [
                {
                    "topic_id": ORDERS_ID,
                    "topic_name": "orders",
                    "num_partitions": 3,
                    "partition_metadata": [],
                }
            ],
        },
    },
    {
        "type": "consumer_group_member_metadata",
        "key": {"group_id": "cg", "member_id": "m1"},
        "value": {
            "version": 0,
            "instance_id": None,
            "rack_id": None,
            "client_id": "c",
            "client_host": "/10.0.0.1",
            "subscribed_topic_names": ["orders"],
            "subscribed_topic_regex": None,
            "rebalance_timeout_ms": 300000,
            "server_assignor": "uniform",
        },
    },
    {
        "type": "consumer_group_target_assignment_metadata",
        "key": {"group_id": "cg"},
        "value": {"version": 0, "assignment_epoch": 5},
    },
    {
        "type": "consumer_group_current_member_assignment",
        "key": {"group_id": "cg", "member_id": "m1"},
        "value": {
            "version": 0,
            "member_epoch": 5,
            "previous_member_epoch": 4,
            "state": 0,
            "assigned_partitions": [
                {"topic_id": ORDERS_ID, "partitions": [0, 1], "assignment_epochs": [3, 5]}
            ],
            "partitions_pending_revocation": [
                {"topic_id": ORDERS_ID, "partitions": [2], "assignment_epochs": [4]}
            ],
        },
    },
    {
        "type": "offset_commit",
        "key": {"group": "cg", "topic": "orders", "partition": 0},
        "value": {
            "version": 3,
            "offset": 42,
            "leader_epoch": 1,
            "metadata": "",
            "commit_timestamp_ms": AS_OF_MS - 1000,
        },
    },
    # classic group "cl": generation 4, members m1 (dynamic) and s1 (static inst-1)
    {
        "type": "group_metadata",
        "key": {"group": "cl"},
        "value": {
            "version": 3,
            "protocol_type": "consumer",
            "generation": 4,
            "protocol": "range",
            "leader": "m1",
            "current_state_timestamp_ms": AS_OF_MS - 5000,
            "members": [
                {
                    "member_id": mid,
                    "group_instance_id": inst,
                    "client_id": "c",
                    "client_host": "/10.0.0.2",
                    "rebalance_timeout_ms": 300000,
                    "session_timeout_ms": 45000,
                    "subscription": {
                        "version": 1,
                        "topics": ["orders"],
                        "user_data": None,
                        "owned_partitions": [],
                    },
                    "assignment": {
                        "version": 1,
                        "partitions": [{"topic": "orders", "partitions": [p]}],
                        "user_data": None,
                    },
                }
                for mid, inst, p in (("m1", None, 0), ("s1", "inst-1", 1))
            ],
        },
    },
    # "cl" still has an offset of a topic it no longer subscribes to: expires in 1 h
    {
        "type": "offset_commit",
        "key": {"group": "cl", "topic": "old", "partition": 0},
        "value": {
            "version": 3,
            "offset": 7,
            "leader_epoch": -1,
            "metadata": "",
            "commit_timestamp_ms": AS_OF_MS - 7 * 86_400_000 + 3_600_000,
        },
    },
    # simple group "soon": its only offset expires in 2 h, and the group with it
    {
        "type": "offset_commit",
        "key": {"group": "soon", "topic": "orders", "partition": 0},
        "value": {
            "version": 3,
            "offset": 1,
            "leader_epoch": -1,
            "metadata": "",
            "commit_timestamp_ms": AS_OF_MS - 7 * 86_400_000 + 7_200_000,
        },
    },
    # share group "sg"
    {
        "type": "share_group_metadata",
        "key": {"group_id": "sg"},
        "value": {"version": 0, "epoch": 1},
    },
    # simple group "tid": an offset of topic id OLD_ORDERS_ID (value v4), of a topic since
    # deleted and re-created (FETCH-TOPICID)
    {
        "type": "offset_commit",
        "key": {"group": "tid", "topic": "orders", "partition": 0},
        "value": {
            "version": 4,
            "offset": 17,
            "leader_epoch": 2,
            "metadata": "",
            "commit_timestamp_ms": AS_OF_MS - 1000,
            "topic_id": OLD_ORDERS_ID,
        },
    },
    # "unloadable" (LOG-6): its member's tombstones were compacted away, the group's survived
    {
        "type": "consumer_group_metadata",
        "key": {"group_id": "unloadable"},
        "value": {"version": 0, "epoch": 1},
    },
    {
        "type": "consumer_group_target_assignment_metadata",
        "key": {"group_id": "unloadable"},
        "value": None,
    },
    {
        "type": "consumer_group_member_metadata",
        "key": {"group_id": "unloadable", "member_id": "m1"},
        "value": {
            "version": 0,
            "instance_id": None,
            "rack_id": None,
            "client_id": "c",
            "client_host": "/10.0.0.3",
            "subscribed_topic_names": ["orders"],
            "subscribed_topic_regex": None,
            "rebalance_timeout_ms": 300000,
            "server_assignor": "uniform",
        },
    },
    {"type": "consumer_group_metadata", "key": {"group_id": "unloadable"}, "value": None},
    # "plugin" (DEL-STREAMS-PLUGIN): an Empty streams group written under a topology-description
    # plugin; its only offset expired
    {
        "type": "streams_group_metadata",
        "key": {"group_id": "plugin"},
        "value": {
            "version": 0,
            "epoch": 3,
            "metadata_hash": 0,
            "stored_description_topology_epoch": 2,
        },
    },
    {
        "type": "offset_commit",
        "key": {"group": "plugin", "topic": "orders", "partition": 0},
        "value": {
            "version": 3,
            "offset": 5,
            "leader_epoch": -1,
            "metadata": "",
            "commit_timestamp_ms": AS_OF_MS - 8 * 86_400_000,
        },
    },
]


def _dump_rows() -> list[dict]:
    rows = []
    specs = []
    for index, number in enumerate((17, 20, 22, 24, 25)):
        (path,) = SCENARIO_DIR.glob(f"{number}-*.json")
        specs.append((index, _prefixed(json.loads(path.read_text()), f"s{number}-")))
    fence = {
        "records": [{**r, "offset": i, "timestamp_ms": _ts(i)} for i, r in enumerate(FENCE_RECORDS)]
    }
    specs.append((len(specs), fence))
    for index, spec in specs:
        for row in scenario.scenario_rows(spec):
            row["partition"] += index * 10
            rows.append(row)
    for r in rows:  # one schema per dump
        if "is_control" not in r:
            r.update(producer_id=-1, producer_epoch=-1, is_transactional=False, is_control=False)
    return rows


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("fetch_cli")
    pq.write_table(pa.Table.from_pylist(_dump_rows()), root / "dump.parquet")
    output = str(root / "tables")
    result = invoke(
        "run",
        "--source",
        "parquet",
        "--input",
        str(root / "dump.parquet"),
        "--output",
        output,
        "--as-of",
        str(AS_OF_MS),
        "--retention",
        "7d",
        "--run-id",
        RUN_ID,
    )
    assert result.exit_code == 0, result.output
    (root / "run-output.txt").write_text(result.output)
    # a lag partition for the run, as an audit task writes it (log-end offsets known here)
    lag_spec = table_spec("lag")
    lag_schema = pa.schema(
        [f.with_nullable(True) for f in delta_schema.arrow_schema(lag_spec, with_comments=False)]
    )
    lag = pa.Table.from_pylist(
        [
            {
                "group_id": "s20-g1",
                "topic": "orders",
                "partition": 0,
                "committed_offset": 20,
                "log_end_offset": 25,
                "lag": 5,
                "as_of": datetime.fromtimestamp(1_700_000_000, UTC),
                "run_id": RUN_ID,
            }
        ],
        schema=lag_schema,
    )
    written = sink.write_task_files(lag, lag_spec, output=output, run_id=RUN_ID)
    sink.write_run_tables(
        {"lag": [sink.add_action(w, RUN_ID) for w in written]}, output=output, run_id=RUN_ID
    )
    # a later failed run must not be read by default
    sink.publish_run(
        {
            "run_id": "broken",
            "status": "failed",
            "finished_at": datetime(2030, 1, 1, tzinfo=UTC),
            "error": "boom",
        },
        output=output,
    )
    return output


pytestmark_spark = pytest.mark.spark


# ---- fetch -------------------------------------------------------------------------------------


@pytestmark_spark
# ---- the column reference against the data ------------------------------------------------


def _never_null(field) -> bool:
    """What TABLES.md promises is always set: a column marked `no` in its null column, or
    whose comment says "Never null"."""
    return not field.nullable or "never null" in field.metadata["comment"].lower()


def test_columns_the_doc_says_are_always_set_have_no_null(tables: str) -> None:
    from offsets_lib.io import storage

    checked, nulls, filled = 0, {}, set()
    for spec in TABLES.values():
        uri = storage.table_uri(tables, spec.name)
        if not storage.is_delta_table(uri):
            continue
        data = storage.delta_dataset(uri).to_table()
        for f in spec.schema.fields:
            if _never_null(f) and f.name in data.column_names:
                checked += 1
                count = data.column(f.name).null_count
                if count:
                    nulls[f"{spec.name}.{f.name}"] = count
        filled |= {spec.name} if data.num_rows else set()
    assert (nulls, checked >= 20) == ({}, True)
    assert {"offsets", "groups", "members", "offset_decisions", "group_decisions"} <= filled


def test_classic_members_have_no_member_epoch_as_the_doc_says(tables: str) -> None:
    """members.member_epoch: null for classic members; their generation is groups'."""
    from offsets_lib.io import storage

    members = storage.delta_dataset(storage.table_uri(tables, "members")).to_table()
    groups = storage.delta_dataset(storage.table_uri(tables, "groups")).to_table()
    classic = {
        (g["group_id"], g["generation"])
        for g in groups.to_pylist()
        if g["group_type"] == "classic" and g["protocol_type"] is not None
    }
    generation = dict(classic)
    rows = [m for m in members.to_pylist() if m["group_id"] in generation]
    assert {
        (m["group_id"], m["member_id"], m["member_epoch"]) for m in rows if m["group_id"] == "cl"
    } == {
        ("cl", "m1", None),
        ("cl", "s1", None),
    }
    assert generation["cl"] == 4
    assert [m for m in rows if m["member_epoch"] is not None] == []


def test_fetch_all_groups_describe_table(tables: str) -> None:
    result = invoke("fetch", "--output", tables, "--all-groups")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "LAST-COMMIT",
        "EXPIRES-AT",
    ]
    rows = {tuple(line.split()[:4]) for line in lines[1:]}
    assert ("s20-g1", "orders", "0", "20") in rows
    assert ("s22-g1", "orders", "0", "10") in rows  # the pending transaction is not a value
    assert ("cg", "orders", "0", "42") in rows
    assert not any(r[0] == "s17-g1" for r in rows)  # Dead groups are not listed
    lag_line = next(line for line in lines if line.startswith("s20-g1") and " orders " in line)
    assert lag_line.split()[4:8] == ["25", "5", "2023-11-13T22:13:20Z", "2023-11-20T22:13:20Z"]
    assert "run fetch-cli" in result.stderr


@pytestmark_spark
def test_fetch_json_partitions_and_nogroup(tables: str) -> None:
    result = invoke(
        "fetch",
        "--output",
        tables,
        "--json",
        "--group",
        "s20-g1:orders:0,1,7",
        "--group",
        "s17-g1:orders:0",
        "--group",
        "sg",
        "--group",
        "absent:orders:3",
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert (doc["run_id"], doc["as_of"]) == (RUN_ID, "2023-11-14T22:13:20Z")
    by_group = {g["group_id"]: g for g in doc["groups"]}
    assert [
        (p["partition"], p["committed_offset"], p["rule"]) for p in by_group["s20-g1"]["partitions"]
    ] == [(0, 20, "FETCH-OK"), (1, 5, "FETCH-OK"), (7, -1, "FETCH-NONE")]
    assert by_group["s20-g1"]["partitions"][0]["expires_at"] == "2023-11-20T22:13:20Z"
    assert by_group["s20-g1"]["partitions"][0]["lag"] == 5
    for gid in ("s17-g1", "absent"):
        (p,) = by_group[gid]["partitions"]
        assert (
            by_group[gid]["rule"],
            p["committed_offset"],
            p["leader_epoch"],
            p["metadata"],
            p["error"],
        ) == ("FETCH-NOGROUP", -1, -1, "", None)
    assert by_group["sg"]["rule"] == "FETCH-NOGROUP" and by_group["sg"]["partitions"] == []


@pytestmark_spark
def test_fetch_require_stable(tables: str) -> None:
    result = invoke("fetch", "--output", tables, "--group", "s22-g1", "--require-stable")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split()[-1] == "ERROR"
    cells = {tuple(line.split()[1:3]): line.split() for line in lines[1:]}
    assert cells[("orders", "0")][3] == "-" and cells[("orders", "0")][-1] == (
        "UNSTABLE_OFFSET_COMMIT"
    )
    assert cells[("orders", "1")][3] == "3" and cells[("orders", "1")][-1] == "-"
    # the Python API answers the same, and leader epochs/metadata come from the offsets table
    (g,) = fetch_offsets(tables, ["s24-g1:orders:0"])
    (p,) = g.partitions
    assert (p.committed_offset, p.leader_epoch, p.rule, g.group_type) == (
        70,
        2,
        "FETCH-OK",
        "consumer",
    )


@pytestmark_spark
def test_fetch_exit_3_without_tables_or_run(tables: str, tmp_path: Path) -> None:
    missing = invoke("fetch", "--output", str(tmp_path), "--all-groups")
    assert missing.exit_code == 3
    assert missing.stderr.strip().count("\n") == 0 and "no tables under" in missing.stderr
    failed = invoke("fetch", "--output", tables, "--all-groups", "--run-id", "broken")
    assert failed.exit_code == 3 and "status 'failed'" in failed.stderr
    unknown = invoke("fetch", "--output", tables, "--group", "x", "--run-id", "nope")
    assert unknown.exit_code == 3 and "not found" in unknown.stderr
    usage = invoke("fetch", "--output", tables)
    assert usage.exit_code == 2


@pytestmark_spark
def test_a_run_to_a_file_uri_is_read_back_from_its_folder(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``file:/x`` (Spark's form) and ``file:///x`` name the folder /x for the writers and the
    readers alike, never a folder ``file:`` below the working directory."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "uri-tables"
    rows = [r for r in _dump_rows() if 10 <= r["partition"] < 20]  # scenario 20 only
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "dump.parquet")
    result = invoke(
        "run",
        "--source",
        "parquet",
        "--input",
        str(tmp_path / "dump.parquet"),
        "--output",
        f"file:{folder}",
        "--as-of",
        str(AS_OF_MS),
        "--run-id",
        "file-uri",
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dump.parquet", "uri-tables"]
    assert (folder / "offsets" / "_delta_log").is_dir()
    assert (folder / "runs" / "_delta_log").is_dir()
    fetched = invoke(
        "fetch", "--output", f"file://{folder}", "--json", "--group", "s20-g1:orders:0"
    )
    assert fetched.exit_code == 0, fetched.output
    doc = json.loads(fetched.stdout)
    (group,) = doc["groups"]
    assert doc["run_id"] == "file-uri"
    assert [(p["partition"], p["committed_offset"]) for p in group["partitions"]] == [(0, 20)]


# ---- fence-check --------------------------------------------------------------------------------


def fence(tables: str, *args: str):
    return invoke("fence-check", "--output", tables, *args)


@pytestmark_spark
@pytest.mark.parametrize(
    ("args", "strict", "relaxed"),
    [
        (
            [
                "--group",
                "cg",
                "--member",
                "m1",
                "--member-epoch",
                "4",
                "--topic",
                "orders",
                "--partition",
                "0",
            ],
            "STALE_MEMBER_EPOCH (FEN-M5)",
            "ACCEPTED (FEN-R5)",
        ),
        (
            [
                "--group",
                "cg",
                "--member",
                "m1",
                "--member-epoch",
                "4",
                "--topic",
                "orders",
                "--partition",
                "1",
            ],
            "STALE_MEMBER_EPOCH (FEN-M5)",
            "STALE_MEMBER_EPOCH (FEN-R4)",
        ),
        (
            [
                "--group",
                "cg",
                "--member",
                "m1",
                "--member-epoch",
                "4",
                "--topic",
                "orders",
                "--partition",
                "2",
                "--transactional",
                "--api-version",
                "5",
            ],
            "ILLEGAL_GENERATION (FEN-M5)",
            "ACCEPTED (FEN-R5)",
        ),
        (
            [
                "--group",
                "cg",
                "--member",
                "m1",
                "--member-epoch",
                "4",
                "--topic",
                "orders",
                "--partition",
                "2",
                "--transactional",
            ],
            "STALE_MEMBER_EPOCH (FEN-M5)",
            "ACCEPTED (FEN-R5)",
        ),
        (
            [
                "--group",
                "cg",
                "--member",
                "m1",
                "--member-epoch",
                "4",
                "--topic",
                "payments",
                "--partition",
                "0",
            ],
            "STALE_MEMBER_EPOCH (FEN-M5)",
            "STALE_MEMBER_EPOCH (FEN-R3)",
        ),
        (
            [
                "--group",
                "cg",
                "--member",
                "m1",
                "--member-epoch",
                "5",
                "--topic",
                "orders",
                "--partition",
                "0",
            ],
            "ACCEPTED (FEN-M6)",
            "ACCEPTED (FEN-R1)",
        ),
        (
            [
                "--group",
                "cg",
                "--member",
                "zz",
                "--member-epoch",
                "5",
                "--topic",
                "orders",
                "--partition",
                "0",
            ],
            "UNKNOWN_MEMBER_ID (FEN-M3)",
            "UNKNOWN_MEMBER_ID (FEN-M3)",
        ),
        (
            [
                "--group",
                "cl",
                "--member",
                "m1",
                "--member-epoch",
                "3",
                "--topic",
                "orders",
                "--partition",
                "0",
            ],
            "ILLEGAL_GENERATION (FEN-C6)",
            "ILLEGAL_GENERATION (FEN-C6)",
        ),
        (
            [
                "--group",
                "cl",
                "--member",
                "m9",
                "--member-epoch",
                "4",
                "--topic",
                "orders",
                "--partition",
                "0",
                "--instance-id",
                "inst-1",
            ],
            "FENCED_INSTANCE_ID (FEN-C4)",
            "FENCED_INSTANCE_ID (FEN-C4)",
        ),
        (
            [
                "--group",
                "sg",
                "--member",
                "m1",
                "--member-epoch",
                "1",
                "--topic",
                "orders",
                "--partition",
                "0",
            ],
            "GROUP_ID_NOT_FOUND (FEN-G4)",
            "GROUP_ID_NOT_FOUND (FEN-G4)",
        ),
        (
            [
                "--group",
                "s17-g1",
                "--member",
                "",
                "--member-epoch",
                "-1",
                "--topic",
                "orders",
                "--partition",
                "0",
            ],
            "ACCEPTED (FEN-G1)",
            "ACCEPTED (FEN-G1)",
        ),
        (
            [
                "--group",
                "nope",
                "--member",
                "m1",
                "--member-epoch",
                "2",
                "--topic",
                "orders",
                "--partition",
                "0",
            ],
            "GROUP_ID_NOT_FOUND (FEN-G2)",
            "GROUP_ID_NOT_FOUND (FEN-G2)",
        ),
        (
            [
                "--group",
                "nope",
                "--member",
                "m1",
                "--member-epoch",
                "2",
                "--topic",
                "orders",
                "--partition",
                "0",
                "--transactional",
            ],
            "GROUP_ID_NOT_FOUND (FEN-G3T)",
            "GROUP_ID_NOT_FOUND (FEN-G3T)",
        ),
        (
            [
                "--group",
                "nope",
                "--member",
                "m1",
                "--member-epoch",
                "2",
                "--topic",
                "orders",
                "--partition",
                "0",
                "--transactional",
                "--coordinator",
                "classic-2.4",
            ],
            "ILLEGAL_GENERATION (FEN-G3)",
            "ILLEGAL_GENERATION (FEN-G3)",
        ),
    ],
    ids=[
        "R5",
        "R4",
        "R5-pending-txn-v5",
        "R5-pending-txn-v6",
        "R3",
        "R1",
        "M3",
        "C6",
        "C4",
        "G4",
        "G1-dead",
        "G2",
        "G3T-txn-v6",
        "G3-txn-classic-2.4",
    ],
)
def test_fence_check(tables: str, args: list[str], strict: str, relaxed: str) -> None:
    result = fence(tables, *args)
    # the coordinator's (here the new one's relaxed) rule decides: 0 accepted, 6 fenced
    assert result.exit_code == (0 if relaxed.startswith("ACCEPTED") else 6), result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"strict: {strict}"
    assert lines[1] == f"relaxed: {relaxed}"
    verdict = "no" if relaxed.startswith("ACCEPTED") else "yes"
    assert lines[-1].startswith(f"fenced: {verdict} (")


@pytestmark_spark
def test_fence_check_json_and_unnamed_topics(tables: str) -> None:
    # s24's member has topic ids only (no partition metadata, v3 commits): relaxed is undecided
    result = fence(
        tables,
        "--group",
        "s24-g1",
        "--member",
        "m1",
        "--member-epoch",
        "2",
        "--topic",
        "orders",
        "--partition",
        "0",
        "--json",
    )
    doc = json.loads(result.stdout)
    assert doc["strict"]["outcome"] == "STALE_MEMBER_EPOCH"
    assert (doc["relaxed"]["outcome"], doc["relaxed"]["rule"]) == ("UNDECIDED", "FEN-R3")
    assert (doc["coordinator"], doc["decided_by"], doc["fenced"]) == ("new", "relaxed", None)
    assert doc["request"]["api_version"] == 10  # the newest OffsetCommit the coordinator speaks
    assert result.exit_code == 7  # the tables cannot tell
    by_id = fence(
        tables,
        "--group",
        "s24-g1",
        "--member",
        "m1",
        "--member-epoch",
        "2",
        "--topic",
        ORDERS_ID,
        "--partition",
        "0",
    )
    # no assignment epochs recorded: the member epoch 3 is the assignment epoch -> stale
    assert by_id.stdout.splitlines()[1] == "relaxed: STALE_MEMBER_EPOCH (FEN-R4)"
    missing = fence(
        str(Path(tables).parent / "none"),
        "--group",
        "g",
        "--member",
        "m",
        "--member-epoch",
        "1",
        "--topic",
        "t",
        "--partition",
        "0",
    )
    assert missing.exit_code == 3
    too_new = fence(
        tables,
        *("--group", "cg", "--member", "m1", "--member-epoch", "5", "--topic", "orders"),
        *("--partition", "0", "--transactional", "--coordinator", "classic-2.4"),
        *("--api-version", "6"),
    )
    assert too_new.exit_code == 2
    assert "classic-2.4 coordinator answers TxnOffsetCommit v0-v4" in too_new.stderr


# ---- Kafka 4.4's rows: FETCH-TOPICID, LOG-6, DEL-STREAMS-PLUGIN ---------------------------------

NEW_ORDERS_ID = "0b9e7c34-6a51-4f2d-8e0a-3c5b7d9f1e22"  # "orders" re-created


def _fetched(tables: str, *args: str) -> list[tuple]:
    result = invoke("fetch", "--output", tables, *args, "--json")
    assert result.exit_code == 0, result.output
    (group,) = json.loads(result.stdout)["groups"]
    return [
        (p["topic"], p["partition"], p["committed_offset"], p["rule"], p["topic_id"])
        for p in group["partitions"]
    ]


@pytestmark_spark
def test_fetch_by_topic_id(tables: str) -> None:
    """FETCH-TOPICID: by the id the offset was stored with, the offset; by the re-created
    topic's id, -1 with a note; by name, the offset."""
    kafka_form = base64.urlsafe_b64encode(uuid.UUID(NEW_ORDERS_ID).bytes).decode().rstrip("=")
    by_new = _fetched(tables, "--group", "tid:orders:0", "--topic-id", f"orders={kafka_form}")
    assert by_new == [("orders", 0, -1, "FETCH-TOPICID", NEW_ORDERS_ID)]
    by_old = _fetched(tables, "--group", "tid:orders:0", "--topic-id", f"orders={OLD_ORDERS_ID}")
    assert by_old == [("orders", 0, 17, "FETCH-OK", OLD_ORDERS_ID)]
    assert _fetched(tables, "--group", "tid:orders:0") == [("orders", 0, 17, "FETCH-OK", None)]
    text = invoke("fetch", "--output", tables, "--group", "tid:orders:0", "--topic-id",
                  f"orders={NEW_ORDERS_ID}")  # fmt: skip
    assert text.stdout.splitlines()[1].split()[:4] == ["tid", "orders", "0", "-"]
    note = f"the offset was committed for topic id {OLD_ORDERS_ID}, not {NEW_ORDERS_ID}"
    assert note in text.stderr
    bad = invoke("fetch", "--output", tables, "--group", "tid", "--topic-id", "orders=nope")
    assert bad.exit_code == 2
    assert "--topic-id 'orders=nope': topic id 'nope': expected" in bad.stderr


@pytestmark_spark
def test_load_failures_table_and_summary(tables: str) -> None:
    """LOG-6: the partition the broker would not load is in the run's summary and the
    load_failures table; DEL-STREAMS-PLUGIN keeps the streams group."""
    rows = sink.read_table(tables, "load_failures", run_id=RUN_ID).to_pylist()
    partition = rows[0]["offsets_partition"]
    assert sorted(
        (r["group_id"], r["failed_check"], r["member_id"], r["detail"]) for r in rows
    ) == [
        ("unloadable", "GROUP_TOMBSTONE_WITH_MEMBERS", None, "members m1 remain"),
    ]
    # the group tombstone, third from the end of FENCE_RECORDS (record i at log offset i)
    assert [r["log_offset"] for r in rows] == [len(FENCE_RECORDS) - 3]
    summary = (Path(tables).parent / "run-output.txt").read_text().splitlines()
    assert (
        f"the broker would fail to load offsets partition {partition} because of group"
        " 'unloadable' (GROUP_TOMBSTONE_WITH_MEMBERS, LOG-6)"
    ) in summary
    assert "load_failures" in summary[-1]  # among the tables written
    groups = {
        r["group_id"]: r for r in sink.read_table(tables, "groups", run_id=RUN_ID).to_pylist()
    }
    assert groups["unloadable"]["state"] == "Dead"
    assert f"offsets partition {partition}" in groups["unloadable"]["state_notes"]
    decisions = {
        r["group_id"]: r
        for r in sink.read_table(tables, "group_decisions", run_id=RUN_ID).to_pylist()
    }
    plugin = decisions["plugin"]
    assert (plugin["deleted"], plugin["deletes_at"], plugin["rule"], plugin["blocked_by"]) == (
        False, None, "DEL-STREAMS-PLUGIN", "TOPOLOGY_DESCRIPTION_STORED",
    )  # fmt: skip


# ---- TABLES.md queries ------------------------------------------------------------------------


def md_queries(dialect: str) -> dict[str, str]:
    """```sql <dialect> blocks of TABLES.md, keyed by their first line `-- query: NAME`."""
    blocks = re.findall(rf"```sql {dialect}\n(.*?)```", TABLES_MD.read_text(), re.S)
    out = {}
    for block in blocks:
        name = re.match(r"-- query: (\S+)", block).group(1)
        out[name] = block
    return out


EXPECTED_QUERIES = {"latest-run", "expiring-24h", "stale-subscriptions", "groups-deleted-soon"}


def _check_query_results(results: dict[str, list[dict]]) -> None:
    assert [r["run_id"] for r in results["latest-run"]] == [RUN_ID]
    soon = [(r["group_id"], r["topic"], r["partition"]) for r in results["expiring-24h"]]
    assert soon == [("cl", "old", 0), ("soon", "orders", 0)]  # ordered by expires_at
    stale = {
        (r["group_id"], r["topic"], r["partition"], r["rule"])
        for r in results["stale-subscriptions"]
    }
    assert stale == {
        ("cl", "old", 0, "EXP-STABLE-UNSUBSCRIBED"),
        ("s24-g1", "payments", 0, "EXP-MODERN-COMMIT-TS"),
        ("s24-g1", "payments", 1, "EXP-MODERN-COMMIT-TS"),
    }
    assert [r["group_id"] for r in results["groups-deleted-soon"]] == ["soon"]


@pytestmark_spark
def test_tables_md_duckdb_queries_run_on_real_tables(tables: str) -> None:
    import duckdb
    from deltalake import DeltaTable

    queries = md_queries("duckdb")
    assert set(queries) == EXPECTED_QUERIES
    con = duckdb.connect()
    for name in ("runs", "offsets", "offset_decisions", "groups", "group_decisions"):
        dataset = DeltaTable(sink.table_uri(tables, name)).to_pyarrow_dataset()
        con.register(f"{name}_ds", dataset)
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM {name}_ds")
    results = {}
    for name, sql in queries.items():
        cursor = con.execute(sql)
        columns = [d[0] for d in cursor.description]
        results[name] = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    _check_query_results(results)


@pytestmark_spark
def test_tables_md_spark_sql_queries_run_on_real_tables(spark, tables: str) -> None:
    queries = md_queries("spark")
    assert set(queries) == EXPECTED_QUERIES
    views = ("runs", "offsets", "offset_decisions", "groups", "group_decisions")
    try:
        for name in views:
            rows = sink.read_table(tables, name).to_pylist()
            spark.createDataFrame(rows, schema=TABLES[name].schema).createOrReplaceTempView(name)
        results = {
            name: [r.asDict() for r in spark.sql(sql).collect()] for name, sql in queries.items()
        }
    finally:  # the worker's session is shared: a later test lists its catalog's tables
        for name in views:
            spark.catalog.dropTempView(name)
    _check_query_results(results)


if __name__ == "__main__":
    regenerate_tables_md()
    print(f"regenerated the column reference of {TABLES_MD}")
