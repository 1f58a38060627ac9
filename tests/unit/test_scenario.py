"""Every golden scenario encodes with the project's codec and decodes back to its own values."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from offsets_lib import wire
from tests.reference import scenario as sc
from tests.unit.conftest import SHARED, shared_path

SCENARIOS = sorted((SHARED / "spec" / "scenarios").glob("*.json"))


def assert_matches(expected: Any, actual: Any, where: str = "") -> None:
    """Equal, except that keys only in `expected` may hold an empty value: the scenario may
    spell out a field its version does not carry (e.g. owned_partitions [] in a v0 blob)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for k in actual:
            assert k in expected, f"{where}.{k} decoded but not in the scenario"
            assert_matches(expected[k], actual[k], f"{where}.{k}")
        for k in set(expected) - set(actual):
            assert expected[k] in (None, [], {}), f"{where}.{k} lost in encoding"
    elif isinstance(expected, list) and isinstance(actual, list):
        assert len(expected) == len(actual), where
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            assert_matches(e, a, f"{where}[{i}]")
    else:
        assert expected == actual, where


def test_all_scenarios_present() -> None:
    shared_path("spec", "scenarios")
    assert len(SCENARIOS) == 31


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_scenario_records_roundtrip(path: Path) -> None:
    scenario = json.loads(path.read_text())
    rows = sc.scenario_rows(scenario)
    assert len(rows) == len(scenario["records"])
    for rec, row in zip(scenario["records"], rows, strict=True):
        where = f"{path.stem}@{rec['offset']}"
        if rec["type"] == "control":
            marker = wire.decode_control(row["key"], row["value"])
            assert marker.error is None and marker.type == rec["marker"].upper(), where
            continue
        record = wire.decode_record(row["key"], row["value"])
        assert record.error is None, (where, record.error)
        assert record.trailing_bytes == 0 and record.layout == "current"
        rt = wire.RECORD_TYPES[record.record_type]
        assert sc.RECORD_TYPE_BY_NAME[rec["type"]] == record.record_type
        assert sc.from_fields(rt.key, 0, record.key) == rec["key"], where
        if rec["value"] is None:
            assert record.is_tombstone and row["value"] is None, where
            continue
        value_message = wire.RECORD_TYPES[rt.value_from or rt.type].value
        decoded = {"version": record.version}
        decoded.update(sc.from_fields(value_message, record.version, record.value))
        assert_matches(rec["value"], decoded, where)


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_scenario_row_shape(path: Path) -> None:
    scenario = json.loads(path.read_text())
    rows = sc.scenario_rows(scenario)
    batch = sc.has_batch_metadata(scenario)
    base = {"key", "value", "topic", "partition", "offset", "timestamp", "timestampType"}
    extra = {"producer_id", "producer_epoch", "is_transactional", "is_control"}
    for rec, row in zip(scenario["records"], rows, strict=True):
        assert set(row) == (base | extra if batch else base)
        assert row["topic"] == "__consumer_offsets" and row["timestampType"] == 0
        assert row["partition"] == rec.get("partition", 0) and row["offset"] == rec["offset"]
        assert isinstance(row["key"], bytes)
        assert row["timestamp"].tzinfo is UTC
        assert int(row["timestamp"].timestamp() * 1000) == rec["timestamp_ms"]
        if batch:
            assert row["producer_id"] == rec.get("producer_id", -1)
            assert row["is_control"] == (rec["type"] == "control")
            assert row["is_transactional"] == ("producer_id" in rec)


def test_batch_metadata_detection() -> None:
    plain = {"records": [{"type": "offset_commit"}]}
    assert not sc.has_batch_metadata(plain)
    assert sc.has_batch_metadata({"records": [{"type": "offset_commit", "producer_id": 3}]})
    assert sc.has_batch_metadata({"records": [{"type": "control", "marker": "abort"}]})


def test_name_mapping_rule_and_overrides() -> None:
    assert sc.snake("SubscribedTopicRegex") == "subscribed_topic_regex"
    assert sc.snake("leaderEpoch") == "leader_epoch"
    assert sc.RECORD_TYPE_BY_NAME["offset_commit"] == 1
    assert sc.RECORD_TYPE_BY_NAME["consumer_group_regular_expression"] == 16
    regex = wire.RECORD_TYPES[16]
    rec = {
        "type": "consumer_group_regular_expression",
        "offset": 0,
        "timestamp_ms": 0,
        "key": {"group_id": "g", "regular_expression": "o.*"},
        "value": {"version": 0, "topics": ["orders"], "regex_version": 4, "timestamp": 9},
    }
    key, value = sc.encode_record(rec)
    decoded = wire.decode_record(key, value)
    assert decoded.value == {"Topics": ["orders"], "Version": 4, "Timestamp": 9}
    assert sc.from_fields(regex.value, 0, decoded.value)["regex_version"] == 4
    with pytest.raises(ValueError, match="unknown scenario field"):
        sc.encode_record({**rec, "value": {"version": 0, "bogus": 1}})


def test_timestamp_is_exact_utc() -> None:
    rows = sc.scenario_rows(
        {"records": [{"type": "control", "marker": "commit", "offset": 1, "timestamp_ms": 1}]}
    )
    assert rows[0]["timestamp"] == datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC)
