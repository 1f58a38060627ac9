"""The `metrics` table frame (KIP-496 meters rebuilt from the log), on a hand-made dump."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from offsets_lib.audit.tables import TABLES
from offsets_lib.io.sources.parquet import read_parquet_dump
from tests.reference import scenario
from tests.reference.decode import decode_records
from tests.reference.frames import conform
from tests.reference.spark_audit import metrics_frame

pytestmark = pytest.mark.spark

H0 = 1_699_999_200_000  # 2023-11-14T22:00:00Z, an hour boundary
H1 = H0 + 3_600_000
MIN = 60_000


def commit(group: str, partition: int, value: bool = True) -> dict:
    return {
        "type": "offset_commit",
        "key": {"group": group, "topic": "t", "partition": partition},
        "value": {
            "version": 3,
            "offset": 1,
            "leader_epoch": -1,
            "metadata": "",
            "commit_timestamp_ms": H0,
        }
        if value
        else None,
    }


def group_metadata(members: int) -> dict:
    member = {
        "member_id": "m1",
        "group_instance_id": None,
        "client_id": "c",
        "client_host": "/h",
        "rebalance_timeout_ms": 1000,
        "session_timeout_ms": 1000,
        "subscription": {"version": 1, "topics": ["t"], "user_data": None, "owned_partitions": []},
        "assignment": {"version": 1, "partitions": [], "user_data": None},
    }
    return {
        "type": "group_metadata",
        "key": {"group": "a"},
        "value": {
            "version": 3,
            "protocol_type": "consumer",
            "generation": 1 + members,
            "protocol": "range" if members else None,
            "leader": "m1" if members else None,
            "current_state_timestamp_ms": H0,
            "members": [member] * members,
        },
    }


# (offsets-topic partition, log time, record); offsets are assigned per partition in order
RECORDS = [
    (0, H0 + 1 * MIN, commit("a", 0)),  # creates simple group a
    (0, H0 + 2 * MIN, group_metadata(1)),  # a completed rebalance
    (0, H0 + 3 * MIN, commit("a", 0)),
    (0, H0 + 4 * MIN, commit("a", 0, value=False)),  # offset tombstone
    (0, H1 + 1 * MIN, {"type": "group_metadata", "key": {"group": "a"}, "value": None}),
    (0, H1 + 2 * MIN, group_metadata(0)),  # re-created, Empty: not a rebalance
    (0, H1 + 3 * MIN, commit("a", 1)),
    (1, H0 + 1 * MIN, commit("x", 0, value=False)),  # a tombstone creates nothing
    (
        1,
        H0 + 5 * MIN,
        {
            "type": "consumer_group_metadata",
            "key": {"group_id": "c"},
            "value": {"version": 0, "epoch": 1},
        },
    ),
    (
        1,
        H0 + 6 * MIN,
        {
            "type": "consumer_group_member_metadata",
            "key": {"group_id": "c", "member_id": "m1"},
            "value": {
                "version": 0,
                "instance_id": None,
                "rack_id": None,
                "client_id": "c",
                "client_host": "/h",
                "subscribed_topic_names": ["t"],
                "subscribed_topic_regex": None,
                "rebalance_timeout_ms": 1000,
                "server_assignor": None,
            },
        },
    ),
    (
        1,
        H1 + 5 * MIN,
        {
            "type": "consumer_group_member_metadata",
            "key": {"group_id": "c", "member_id": "m1"},
            "value": None,
        },
    ),
    (1, H1 + 6 * MIN, {"type": "consumer_group_metadata", "key": {"group_id": "c"}, "value": None}),
]

EXPECTED = {  # (hour, partition): commits, tombstones, rebalances, created, deleted
    (H0, 0): (2, 1, 1, 1, 0),
    (H1, 0): (1, 0, 0, 1, 1),
    (H0, 1): (0, 1, 0, 1, 0),
    (H1, 1): (0, 0, 0, 0, 1),
}


@pytest.fixture(scope="module")
def decoded(spark, tmp_path_factory: pytest.TempPathFactory):
    next_offset = {0: 0, 1: 0}
    records = []
    for partition, ts, record in RECORDS:
        records.append(
            {**record, "partition": partition, "offset": next_offset[partition], "timestamp_ms": ts}
        )
        next_offset[partition] += 1
    rows = scenario.scenario_rows({"records": records})
    rows.append({**rows[-1], "key": b"\x00\x63\x00", "value": b"\x00", "offset": 99})  # reject
    path = tmp_path_factory.mktemp("metrics") / "dump.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return decode_records(read_parquet_dump(spark, [str(path)])).cache()


def _rows(frame) -> dict:
    return {
        (r["hour_ms"], r["offsets_partition"]): (
            r["offset_commits"],
            r["offset_tombstones"],
            r["group_metadata_writes"],
            r["groups_created"],
            r["groups_deleted"],
        )
        for r in frame.withColumn("hour_ms", F.unix_millis("hour")).collect()
    }


def test_metrics_per_hour_and_partition(spark, decoded) -> None:
    assert decoded.filter(F.col("error").isNotNull()).count() == 1  # the reject is not counted
    assert _rows(metrics_frame(decoded)) == EXPECTED
    # the hour is the UTC hour whatever the session time zone (India is UTC+05:30)
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Asia/Kolkata")
    try:
        assert _rows(metrics_frame(decoded)) == EXPECTED
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)


def test_metrics_frame_conforms_to_the_metrics_table(decoded) -> None:
    frame = conform(metrics_frame(decoded), "metrics", run_id="r1", as_of_ms=H1)
    assert frame.columns == TABLES["metrics"].columns
    assert {r["run_id"] for r in frame.select("run_id").collect()} == {"r1"}
