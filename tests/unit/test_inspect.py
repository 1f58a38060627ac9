"""`offsets inspect` (no Spark): dumps written with pyarrow from golden-scenario rows."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from offsets_lib import wire
from offsets_lib.cli import main
from offsets_lib.tools.dump_reader import read_records
from tests.reference import scenario as sc
from tests.unit.conftest import SHARED, shared_path

SCENARIOS = sorted((SHARED / "spec" / "scenarios").glob("*.json"))
BATCH_COLUMNS = ("producer_id", "producer_epoch", "is_transactional", "is_control")


def scenario_rows(stem: str) -> list[dict]:
    path = shared_path("spec", "scenarios", f"{stem}.json")
    return sc.scenario_rows(json.loads(path.read_text()))


def write_dump(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def inspect(*args: str | Path, code: int = 0) -> list[str]:
    result = CliRunner().invoke(main, ["inspect", *map(str, args)])
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    assert result.stderr == ""
    return result.stdout.splitlines()


def strip_batch_columns(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in BATCH_COLUMNS} for row in rows]


# --- exact lines ------------------------------------------------------------------------------

EXPECTED_07 = [
    'p=0 o=0 2023-11-07T22:13:20Z OffsetCommit[1] group=g1 topic=orders partition=0 -> v3 offset=990 leaderEpoch=-1 metadata="" commitTimestamp=2023-11-07T22:13:20Z',  # noqa: E501
    "p=0 o=1 2023-10-25T22:13:20Z GroupMetadata[2] group=g1 -> v3 protocolType=consumer generation=5 protocol=range leader=m1 currentStateTimestamp=2023-10-25T22:13:20Z members=[m1 client=client-m1 host=/10.0.0.12 rebalanceTimeout=300000 sessionTimeout=45000 subscription=v1[orders] assignment=v1[orders-0]]",  # noqa: E501
    'p=0 o=2 2023-11-05T22:13:20Z OffsetCommit[1] group=g1 topic=orders partition=1 -> v3 offset=900 leaderEpoch=4 metadata="" commitTimestamp=2023-11-05T22:13:20Z',  # noqa: E501
    "p=0 o=3 2023-11-06T22:13:20Z GroupMetadata[2] group=g1 -> v3 protocolType=consumer generation=6 protocol=null leader=null currentStateTimestamp=2023-11-06T22:13:20Z members=[]",  # noqa: E501
    'p=0 o=4 2023-11-13T22:13:20Z OffsetCommit[1] group=g1 topic=orders partition=0 -> v3 offset=1000 leaderEpoch=4 metadata="" commitTimestamp=2023-11-13T22:13:20Z',  # noqa: E501
]

EXPECTED_20 = [
    'p=0 o=0 2023-11-07T22:13:20Z OffsetCommit[1] group=g1 topic=orders partition=0 -> v3 offset=10 leaderEpoch=-1 metadata="" commitTimestamp=2023-11-07T22:13:20Z',  # noqa: E501
    'p=0 o=1 2023-11-12T22:13:20Z OffsetCommit[1] group=g1 topic=orders partition=0 -> v3 offset=10 leaderEpoch=-1 metadata="" commitTimestamp=2023-11-12T22:13:20Z',  # noqa: E501
    'p=0 o=2 2023-11-13T22:13:20Z OffsetCommit[1] group=g1 topic=orders partition=0 -> v3 offset=20 leaderEpoch=-1 metadata="" commitTimestamp=2023-11-13T22:13:20Z [txn producer=7 epoch=0]',  # noqa: E501
    'p=0 o=3 2023-11-13T22:13:20Z OffsetCommit[1] group=g1 topic=orders partition=1 -> v3 offset=5 leaderEpoch=-1 metadata="" commitTimestamp=2023-11-13T22:13:20Z [txn producer=7 epoch=0]',  # noqa: E501
    "p=0 o=4 2023-11-13T22:13:20.010Z CONTROL COMMIT producer=7 epoch=0 coordinatorEpoch=0",
]

EXPECTED_24 = [
    "p=0 o=0 2023-10-14T22:13:20Z ConsumerGroupMetadata[3] GroupId=g1 -> v0 Epoch=3",
    "p=0 o=1 2023-10-14T22:13:20Z ConsumerGroupMemberMetadata[5] GroupId=g1 MemberId=m1 -> v0 InstanceId=null RackId=null ClientId=client-m1 ClientHost=/10.0.0.12 SubscribedTopicNames=[orders] SubscribedTopicRegex=null RebalanceTimeoutMs=300000 ServerAssignor=uniform",  # noqa: E501
    "p=0 o=2 2023-10-14T22:13:20Z ConsumerGroupTargetAssignmentMetadata[6] GroupId=g1 -> v0 AssignmentEpoch=3",  # noqa: E501
    "p=0 o=3 2023-10-14T22:13:20Z ConsumerGroupCurrentMemberAssignment[8] GroupId=g1 MemberId=m1 -> v0 MemberEpoch=3 PreviousMemberEpoch=2 State=0 AssignedPartitions=[{TopicId=3f1c9a2e-5b7d-4e10-9a3b-0c2d4e6f8a01 Partitions=[0,1]}] PartitionsPendingRevocation=[]",  # noqa: E501
    'p=0 o=4 2023-10-15T22:13:20Z OffsetCommit[1] group=g1 topic=orders partition=0 -> v3 offset=70 leaderEpoch=2 metadata="" commitTimestamp=2023-10-15T22:13:20Z',  # noqa: E501
    'p=0 o=5 2023-10-15T22:13:20Z OffsetCommit[1] group=g1 topic=payments partition=0 -> v3 offset=8 leaderEpoch=-1 metadata="" commitTimestamp=2023-10-15T22:13:20Z',  # noqa: E501
    'p=0 o=6 2023-11-12T22:13:20Z OffsetCommit[1] group=g1 topic=payments partition=1 -> v3 offset=9 leaderEpoch=-1 metadata="" commitTimestamp=2023-11-12T22:13:20Z',  # noqa: E501
]

EXPECTED_28 = [  # the scenario lists (0, 1) last: inspect sorts by partition, then offset
    'p=0 o=0 2023-11-06T22:13:20Z OffsetCommit[1] group=g-a topic=orders partition=0 -> v3 offset=1 leaderEpoch=-1 metadata="" commitTimestamp=2023-11-06T22:13:20Z',  # noqa: E501
    'p=0 o=1 2023-11-13T22:13:20Z OffsetCommit[1] group=g-a topic=orders partition=1 -> v3 offset=5 leaderEpoch=-1 metadata="" commitTimestamp=2023-11-13T22:13:20Z',  # noqa: E501
    "p=1 o=0 2023-11-05T22:13:20Z GroupMetadata[2] group=g-b -> v3 protocolType=consumer generation=2 protocol=null leader=null currentStateTimestamp=2023-11-05T22:13:20Z members=[]",  # noqa: E501
    'p=1 o=1 2023-11-12T22:13:20Z OffsetCommit[1] group=g-b topic=orders partition=0 -> v3 offset=2 leaderEpoch=-1 metadata="" commitTimestamp=2023-11-12T22:13:20Z',  # noqa: E501
    "p=2 o=0 2023-11-05T22:13:20Z GroupMetadata[2] group=g-c -> v3 protocolType=consumer generation=5 protocol=range leader=m1 currentStateTimestamp=2023-11-05T22:13:20Z members=[m1 client=client-m1 host=/10.0.0.12 rebalanceTimeout=300000 sessionTimeout=45000 subscription=v1[orders] assignment=v1[orders-0]]",  # noqa: E501
    'p=2 o=1 2023-11-05T22:13:20Z OffsetCommit[1] group=g-c topic=orders partition=0 -> v3 offset=3 leaderEpoch=-1 metadata="" commitTimestamp=2023-11-05T22:13:20Z',  # noqa: E501
    'p=2 o=2 2023-11-05T22:13:20Z OffsetCommit[1] group=g-c topic=refunds partition=0 -> v3 offset=4 leaderEpoch=-1 metadata="" commitTimestamp=2023-11-05T22:13:20Z',  # noqa: E501
]


@pytest.mark.parametrize(
    ("stem", "expected"),
    [
        ("07-empty-group-uses-state-timestamp", EXPECTED_07),
        ("20-transaction-committed", EXPECTED_20),
        ("24-consumer-group-subscribed-and-unsubscribed", EXPECTED_24),
        ("28-multiple-groups-and-offsets-partitions", EXPECTED_28),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_exact_lines(tmp_path: Path, stem: str, expected: list[str]) -> None:
    dump = write_dump(tmp_path / "dump.parquet", scenario_rows(stem))
    lines = inspect("--input", dump)
    assert len(lines) == len(expected)
    for got, want in zip(lines, expected, strict=True):
        assert got == want


def test_classic_and_transactional_scenarios_in_one_folder(tmp_path: Path) -> None:
    """Two files in one folder are merged by (partition, offset); both start at offset 0."""
    write_dump(tmp_path / "dump" / "a.parquet", scenario_rows("20-transaction-committed"))
    write_dump(
        tmp_path / "dump" / "b.parquet", scenario_rows("07-empty-group-uses-state-timestamp")
    )
    lines = inspect("--input", tmp_path / "dump")
    assert sorted(lines) == sorted(EXPECTED_07 + EXPECTED_20)
    positions = [tuple(line.split()[:2]) for line in lines]
    assert positions == sorted(positions, key=lambda p: int(p[1][2:]))


# --- every scenario decodes ---------------------------------------------------------------------


def test_all_scenarios_print_decoded(tmp_path: Path) -> None:
    shared_path("spec", "scenarios")
    assert len(SCENARIOS) == 31
    for path in SCENARIOS:
        scenario = json.loads(path.read_text())
        dump = write_dump(tmp_path / f"{path.stem}.parquet", sc.scenario_rows(scenario))
        lines = inspect("--input", dump)
        records = sorted(scenario["records"], key=lambda r: (r.get("partition", 0), r["offset"]))
        assert len(lines) == len(records), path.stem
        for rec, line in zip(records, lines, strict=True):
            assert "REJECTED" not in line, (path.stem, line)
            assert line.startswith(f"p={rec.get('partition', 0)} o={rec['offset']} 20"), line
            if rec["type"] == "control":
                assert f"CONTROL {rec['marker'].upper()} " in line, line
                continue
            name = wire.RECORD_TYPES[sc.RECORD_TYPE_BY_NAME[rec["type"]]].name
            assert f" {name}[" in line, line
            if rec.get("value") is None:
                assert line.endswith(" -> TOMBSTONE"), line
            else:
                assert f" -> v{rec['value']['version']}" in line, line
                assert "undecodable" not in line, line


def test_all_scenarios_glob(tmp_path: Path) -> None:
    """A glob over 31 files: every record printed once, in (partition, offset) order."""
    total = 0
    for path in SCENARIOS:
        rows = sc.scenario_rows(json.loads(path.read_text()))
        total += len(rows)
        write_dump(tmp_path / f"{path.stem}.parquet", rows)
    lines = inspect("--input", tmp_path / "*.parquet")
    assert len(lines) == total
    assert not [line for line in lines if "REJECTED" in line]
    keys = [(int(line.split()[0][2:]), int(line.split()[1][2:])) for line in lines]
    assert keys == sorted(keys)


# --- undecodable records ------------------------------------------------------------------------

KEY = wire.encode_key(1, {"group": "g1", "topic": "orders", "partition": 0})
VALUE = wire.encode_value(
    1, 3, {"offset": 42, "leaderEpoch": 5, "metadata": "", "commitTimestamp": 1699913600000}
)


def corrupt_rows() -> list[dict]:
    cases = [
        (b"\x00\x63\x00\x01g", b"\x00\x01" + b"x" * 40),  # unknown record type
        (KEY, b"\x00\x07\x00"),  # unknown value version
        (KEY, VALUE[:-3]),  # truncated value
        (None, VALUE),  # null key
        (b"", VALUE),  # empty key
        (KEY[:-2], VALUE),  # truncated key
        (KEY + b"\x01", VALUE + b"\xff\xff"),  # trailing bytes: decoded, but noted
        (KEY, b""),  # zero-length value is not a tombstone
        (KEY, VALUE),
    ]
    ts = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=1699913600000)
    return [
        {"key": k, "value": v, "topic": sc.TOPIC, "partition": 0, "offset": i, "timestamp": ts}
        for i, (k, v) in enumerate(cases)
    ]


EXPECTED_CORRUPT = [
    "p=0 o=0 2023-11-13T22:13:20Z REJECTED unknown record type 99 key=0063000167 value=0001787878787878787878787878787878787878787878787878787878787878...(42 bytes)",  # noqa: E501
    "p=0 o=1 2023-11-13T22:13:20Z OffsetCommit[1] group=g1 topic=orders partition=0 -> REJECTED unknown value version 7 for OffsetCommit (valid 0-4) value=000700",  # noqa: E501
    "p=0 o=2 2023-11-13T22:13:20Z OffsetCommit[1] group=g1 topic=orders partition=0 -> REJECTED truncated: commitTimestamp needs 8 bytes at byte 16, 5 left value=0003000000000000002a0000000500000000018bca",  # noqa: E501
    "p=0 o=3 2023-11-13T22:13:20Z REJECTED null key key=null value=0003000000000000002a0000000500000000018bcabf0c00",  # noqa: E501
    'p=0 o=4 2023-11-13T22:13:20Z REJECTED empty key key="" value=0003000000000000002a0000000500000000018bcabf0c00',  # noqa: E501
    "p=0 o=5 2023-11-13T22:13:20Z REJECTED truncated: partition needs 4 bytes at byte 14, 2 left key=00010002673100066f72646572730000 value=0003000000000000002a0000000500000000018bcabf0c00",  # noqa: E501
    'p=0 o=6 2023-11-13T22:13:20Z OffsetCommit[1] group=g1 topic=orders partition=0 (+1 trailing key bytes) -> v3 offset=42 leaderEpoch=5 metadata="" commitTimestamp=2023-11-13T22:13:20Z (+2 trailing bytes)',  # noqa: E501
    'p=0 o=7 2023-11-13T22:13:20Z OffsetCommit[1] group=g1 topic=orders partition=0 -> REJECTED zero-length value (not a tombstone) value=""',  # noqa: E501
    'p=0 o=8 2023-11-13T22:13:20Z OffsetCommit[1] group=g1 topic=orders partition=0 -> v3 offset=42 leaderEpoch=5 metadata="" commitTimestamp=2023-11-13T22:13:20Z',  # noqa: E501
]


def test_corrupt_records_rejected_with_reason(tmp_path: Path) -> None:
    dump = write_dump(tmp_path / "bad.parquet", corrupt_rows())
    lines = inspect("--input", dump)
    assert len(lines) == len(EXPECTED_CORRUPT)
    for got, want in zip(lines, EXPECTED_CORRUPT, strict=True):
        assert got == want
    # the reasons are the codec's own, word for word
    for row, line in zip(corrupt_rows(), lines, strict=True):
        error = wire.decode_record(row["key"], row["value"]).error
        assert (error is None) == ("REJECTED" not in line)
        if error is not None:
            assert f"REJECTED {error} " in line


def test_corrupt_control_record(tmp_path: Path) -> None:
    rows = scenario_rows("20-transaction-committed")
    rows[-1]["key"] = b"\x00"
    dump = write_dump(tmp_path / "d.parquet", rows)
    last = inspect("--input", dump)[-1]
    reason = wire.decode_control(b"\x00", rows[-1]["value"]).error
    assert reason
    assert last == (
        f"p=0 o=4 2023-11-13T22:13:20.010Z CONTROL REJECTED {reason} key=00 value=000000000000"
    )


# --- options ------------------------------------------------------------------------------------


def test_group_filter(tmp_path: Path) -> None:
    rows = scenario_rows("28-multiple-groups-and-offsets-partitions") + corrupt_rows()[:2]
    rows[-1]["partition"], rows[-2]["partition"] = 5, 5
    dump = write_dump(tmp_path / "d.parquet", rows)
    assert inspect("--input", dump, "--group", "g-c") == EXPECTED_28[4:]
    # a record whose value failed still has a key: it belongs to its group
    g1 = inspect("--input", dump, "--group", "g1")
    assert g1 == [EXPECTED_CORRUPT[1].replace("p=0 o=1", "p=5 o=1")]
    assert inspect("--input", dump, "--group", "nope") == []
    kip848 = write_dump(
        tmp_path / "k.parquet", scenario_rows("24-consumer-group-subscribed-and-unsubscribed")
    )
    assert inspect("--input", kip848, "--group", "g1") == EXPECTED_24  # GroupId keys too


def test_group_filter_skips_control_records(tmp_path: Path) -> None:
    dump = write_dump(tmp_path / "d.parquet", scenario_rows("20-transaction-committed"))
    assert inspect("--input", dump, "--group", "g1") == EXPECTED_20[:4]


def test_limit(tmp_path: Path) -> None:
    dump = write_dump(
        tmp_path / "d.parquet", scenario_rows("28-multiple-groups-and-offsets-partitions")
    )
    assert inspect("--input", dump, "--limit", "3") == EXPECTED_28[:3]
    assert inspect("--input", dump, "--limit", "0") == []
    assert inspect("--input", dump, "--limit", "100") == EXPECTED_28
    assert inspect("--input", dump, "--group", "g-c", "--limit", "1") == EXPECTED_28[4:5]


def test_json(tmp_path: Path) -> None:
    rows = scenario_rows("20-transaction-committed") + corrupt_rows()[:1]
    rows[-1]["offset"] = 5
    for col in BATCH_COLUMNS:
        rows[-1][col] = None
    rows += scenario_rows("07-empty-group-uses-state-timestamp")[1:2]
    rows[-1]["offset"] = 6
    rows[-1].update(producer_id=-1, producer_epoch=0, is_transactional=False, is_control=False)
    dump = write_dump(tmp_path / "d.parquet", rows)
    objs = [json.loads(line) for line in inspect("--input", dump, "--json")]
    assert len(objs) == 7
    first = objs[0]
    assert first == {
        "partition": 0,
        "offset": 0,
        "timestamp": "2023-11-07T22:13:20Z",
        "timestamp_ms": 1699395200000,
        "producer_id": -1,
        "producer_epoch": 0,
        "is_transactional": False,
        "is_control": False,
        "record_type": 1,
        "record_name": "OffsetCommit",
        "group_id": "g1",
        "key": {"group": "g1", "topic": "orders", "partition": 0},
        "version": 3,
        "layout": "current",
        "tombstone": False,
        "value": {
            "offset": 10,
            "leaderEpoch": -1,
            "metadata": "",
            "commitTimestamp": 1699395200000,
            "expireTimestamp": -1,
            "topicId": "00000000-0000-0000-0000-000000000000",
        },
        "trailing_bytes": 0,
        "key_trailing_bytes": 0,
        "unknown_tags": 0,
        "error": None,
    }
    assert objs[2]["is_transactional"] is True and objs[2]["producer_id"] == 7
    control = objs[4]
    assert control["record_name"] == "CONTROL" and control["control"] == "COMMIT"
    assert control["record_type"] is None and control["error"] is None
    assert control["timestamp"] == "2023-11-13T22:13:20.010Z"
    rejected = objs[5]
    assert rejected["error"] == "unknown record type 99"
    assert rejected["record_type"] == 99 and rejected["key_hex"] == "0063000167"
    assert rejected["value_hex"] == "0001" + "78" * 40
    group = objs[6]
    assert group["record_name"] == "GroupMetadata" and group["group_id"] == "g1"
    member = group["value"]["members"][0]
    assert member["memberId"] == "m1" and member["clientHost"] == "/10.0.0.12"
    assert wire.decode_subscription(bytes.fromhex(member["subscription"]))["Topics"] == ["orders"]
    assert group["value"]["currentStateTimestamp"] == 1698272000000


def test_json_with_group_and_limit(tmp_path: Path) -> None:
    dump = write_dump(
        tmp_path / "d.parquet", scenario_rows("28-multiple-groups-and-offsets-partitions")
    )
    objs = [
        json.loads(x) for x in inspect("--input", dump, "--json", "--group", "g-c", "--limit", "2")
    ]
    assert [(o["partition"], o["offset"], o["group_id"]) for o in objs] == [
        (2, 0, "g-c"),
        (2, 1, "g-c"),
    ]
    assert objs[1]["value"]["offset"] == 3 and objs[1]["key"]["topic"] == "orders"


# --- dump shapes --------------------------------------------------------------------------------


def test_dump_without_batch_metadata_columns(tmp_path: Path) -> None:
    """A Spark Kafka-source dump has no batch metadata: no txn suffix, no control decoding."""
    rows = strip_batch_columns(scenario_rows("20-transaction-committed"))
    dump = write_dump(tmp_path / "d.parquet", rows)
    assert "producer_id" not in pq.read_schema(dump).names
    lines = inspect("--input", dump)
    assert lines[:4] == [line.replace(" [txn producer=7 epoch=0]", "") for line in EXPECTED_20[:4]]
    # a marker in such a dump is not known to be one: it is decoded as a (broken) record key
    assert lines[4].startswith("p=0 o=4 2023-11-13T22:13:20.010Z REJECTED ")


def test_files_with_and_without_batch_columns_merge(tmp_path: Path) -> None:
    write_dump(tmp_path / "d" / "a.parquet", scenario_rows("20-transaction-committed"))
    rows = strip_batch_columns(scenario_rows("07-empty-group-uses-state-timestamp"))
    write_dump(tmp_path / "d" / "b.parquet", rows)
    assert sorted(inspect("--input", tmp_path / "d")) == sorted(EXPECTED_07 + EXPECTED_20)


def test_unordered_files_are_sorted(tmp_path: Path) -> None:
    rows = scenario_rows("28-multiple-groups-and-offsets-partitions")
    random.Random(3).shuffle(rows)
    write_dump(tmp_path / "d" / "part-0.parquet", rows[:4])
    write_dump(tmp_path / "d" / "part-1.parquet", rows[4:])
    (tmp_path / "d" / "_SUCCESS").write_text("")
    assert inspect("--input", tmp_path / "d") == EXPECTED_28
    # small batches: sorted and unsorted files are streamed batch by batch and merged
    got = list(read_records([str(tmp_path / "d")], batch_size=1))
    assert [(r.partition, r.offset) for r in got] == sorted((r.partition, r.offset) for r in got)


def test_hive_partitioned_folder(tmp_path: Path) -> None:
    """A folder written with partitionBy("partition"): the column comes from the path."""
    table = pa.Table.from_pylist(scenario_rows("28-multiple-groups-and-offsets-partitions"))
    pq.write_to_dataset(table, tmp_path / "d", partition_cols=["partition"])
    assert inspect("--input", tmp_path / "d") == EXPECTED_28


def test_several_inputs(tmp_path: Path) -> None:
    a = write_dump(
        tmp_path / "a.parquet", scenario_rows("24-consumer-group-subscribed-and-unsubscribed")
    )
    b = write_dump(
        tmp_path / "b.parquet", scenario_rows("28-multiple-groups-and-offsets-partitions")
    )
    lines = inspect("--input", a, "--input", b)
    assert sorted(lines) == sorted(EXPECTED_24 + EXPECTED_28)


def test_timestamp_units_and_absent_timestamp(tmp_path: Path) -> None:
    rows = scenario_rows("24-consumer-group-subscribed-and-unsubscribed")[:1]
    table = pa.Table.from_pylist(rows)
    idx = table.schema.get_field_index("timestamp")
    ms = pa.array([1697321600123], pa.int64())
    for col in (pa.array([1697321600123], pa.timestamp("ms")), ms):
        pq.write_table(table.set_column(idx, "timestamp", col), tmp_path / "t.parquet")
        line = inspect("--input", tmp_path / "t.parquet")[0]
        assert line.startswith("p=0 o=0 2023-10-14T22:13:20.123Z ConsumerGroupMetadata[3]")
    pq.write_table(table.remove_column(idx), tmp_path / "t.parquet")
    assert inspect("--input", tmp_path / "t.parquet")[0].startswith("p=0 o=0 - ConsumerGroup")


# --- errors -------------------------------------------------------------------------------------


def test_missing_input_exits_3(tmp_path: Path) -> None:
    for missing in (tmp_path / "nope.parquet", tmp_path / "nope" / "*.parquet"):
        result = CliRunner().invoke(main, ["inspect", "--input", str(missing)])
        assert result.exit_code == 3
        assert result.stdout == ""
        assert result.stderr == f"offsets: parquet input not found: {missing}\n"


def test_unreadable_input_exits_3(tmp_path: Path) -> None:
    (tmp_path / "x.parquet").write_text("not parquet")
    result = CliRunner().invoke(main, ["inspect", "--input", str(tmp_path / "x.parquet")])
    assert result.exit_code == 3
    assert result.stderr.startswith(f"offsets: parquet input not readable: {tmp_path}/x.parquet: ")
    assert result.stderr.count("\n") == 1

    rows = [
        {k: v for k, v in r.items() if k != "key"}
        for r in scenario_rows("20-transaction-committed")
    ]
    write_dump(tmp_path / "nokey.parquet", rows)
    result = CliRunner().invoke(main, ["inspect", "--input", str(tmp_path / "nokey.parquet")])
    assert result.exit_code == 3
    assert result.stderr == (
        f"offsets: parquet input lacks required column 'key': {tmp_path}/nokey.parquet\n"
    )

    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(main, ["inspect", "--input", str(tmp_path / "empty")])
    assert result.exit_code == 3
    assert result.stderr == f"offsets: parquet input has no Parquet files: {tmp_path}/empty\n"


@pytest.mark.parametrize(
    "args",
    [[], ["--input", "x", "--limit", "-1"], ["--input", "x", "--limit", "many"], ["--bogus"]],
)
def test_bad_usage_exits_2(args: list[str]) -> None:
    result = CliRunner().invoke(main, ["inspect", *args])
    assert result.exit_code == 2


def test_broken_pipe_is_quiet(tmp_path: Path) -> None:
    """`offsets inspect ... | head -1`: no traceback, no 'Exception ignored' at exit."""
    base = scenario_rows("07-empty-group-uses-state-timestamp")
    rows = [dict(base[i % len(base)], offset=i) for i in range(3000)]
    dump = write_dump(tmp_path / "big.parquet", rows)
    code = "from offsets_lib.cli import main; main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "inspect", "--input", str(dump)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0
    assert first.startswith(b"p=0 o=0 ")
    assert err == b""
