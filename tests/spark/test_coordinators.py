"""Coordinator-specific loader rules that no golden scenario covers, on the functional core."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from offsets_lib import wire
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.rules import Params
from tests.reference.decode import decode_records
from tests.reference.spark_audit import audit

pytestmark = pytest.mark.spark
DAY = 86_400_000
T = 1_700_000_000_000


def _raw(spark, records):
    rows = [
        (key, value, "__consumer_offsets", 0, i, datetime.fromtimestamp(T / 1000, UTC), 0)
        for i, (key, value) in enumerate(records)
    ]
    schema = (
        "key binary, value binary, topic string, partition int, offset long,"
        " timestamp timestamp, timestampType int"
    )
    return spark.createDataFrame(rows, schema)


def _commit(group: str, topic: str, ts: int) -> tuple[bytes, bytes]:
    key = wire.encode_key(1, {"group": group, "topic": topic, "partition": 0})
    fields = {"offset": 5, "leaderEpoch": -1, "metadata": "", "commitTimestamp": ts}
    return key, wire.encode_value(1, 3, fields)


def _empty_group(group: str) -> tuple[bytes, bytes]:
    fields = {"protocolType": "consumer", "generation": 3, "protocol": None, "leader": None,
              "currentStateTimestamp": T - 2 * DAY, "members": []}  # fmt: skip
    return wire.encode_key(2, {"group": group}), wire.encode_value(2, 3, fields)


def _groups(spark, records, coordinator):
    frames = audit(decode_records(_raw(spark, records)), coordinator=coordinator,
                   params=Params(retention_ms=7 * DAY, as_of_ms=T)).frames  # fmt: skip
    return {r["group_id"]: r.asDict() for r in frames["groups"].collect()}


@pytest.mark.parametrize(
    ("coordinator", "state", "generation"),
    [
        (Coordinator.NEW, "Dead", None),
        (Coordinator.CLASSIC_2_4, "Empty", 0),
        (Coordinator.PRE_2_1, "Empty", 0),
    ],
)
def test_offsets_left_after_a_group_tombstone(spark, coordinator, state, generation) -> None:
    """New coordinator: orphaned (G-S3); Scala: a new simple group at load (G-S2)."""
    group_key, group_value = _empty_group("g")
    records = [(group_key, group_value), _commit("g", "orders", T - DAY), (group_key, None)]
    row = _groups(spark, records, coordinator)["g"]
    assert (row["state"], row["generation"], row["protocol_type"]) == (state, generation, None)


@pytest.mark.parametrize("coordinator", [Coordinator.NEW, Coordinator.CLASSIC_2_4])
def test_group_whose_offsets_were_all_deleted(spark, coordinator) -> None:
    """New coordinator: the simple group keeps existing (G-S1); Scala: nothing to load (G-S2)."""
    key, value = _commit("s", "orders", T - DAY)
    row = _groups(spark, [(key, value), (key, None)], coordinator)["s"]
    assert row["state"] == ("Empty" if coordinator is Coordinator.NEW else "Dead")


@pytest.mark.slow  # 20-250 s on 2 busy cores: `make test` runs it, `make test-fast` not
def test_modern_records_are_skipped_by_the_scala_coordinator(spark) -> None:
    metadata = (wire.encode_key(3, {"GroupId": "c"}), wire.encode_value(3, 0, {"Epoch": 4}))
    records = [metadata, _commit("c", "orders", T - DAY)]
    assert _groups(spark, records, Coordinator.NEW)["c"]["group_type"] == "consumer"
    scala = _groups(spark, records, Coordinator.CLASSIC_2_4)["c"]
    assert (scala["group_type"], scala["state"], scala["protocol_type"]) == (
        "classic",
        "Empty",
        None,
    )
