"""EXP-EMPTY-V3-COMMIT-TS: Kafka 2.3's loader (also 2.4.0-2.6.0's) reads the state timestamp of
a GroupMetadataValue v2 only, so under `classic-2.1` and `classic-2.4.0-2.6.0` an Empty group
whose last value is v3 expires by commit time, and one whose last value is v2 (or any group
under `classic-2.4`) by its state time.

One task's audit over real record bytes (`task_audit.audit_records`, then `decided`)."""

from __future__ import annotations

import pytest

from offsets_lib import wire
from offsets_lib.audit import task_audit
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.rules import DAY_MS, Params
from tests.log_builder import Record, batch, commit

COMMIT_MS = 1 * DAY_MS  # the group's only offset was committed on day 1
STATE_MS = 10 * DAY_MS  # it became Empty on day 10
PARAMS = Params(retention_ms=7 * DAY_MS, as_of_ms=12 * DAY_MS)


def empty_group(version: int) -> Record:
    """An Empty consumer group's GroupMetadataValue of schema `version` (2 or 3)."""
    fields = {
        "protocolType": "consumer",
        "generation": 4,
        "protocol": None,
        "leader": None,
        "currentStateTimestamp": STATE_MS,
        "members": [],
    }
    key = wire.encode_key(2, {"group": "g"})
    return {"key": key, "value": wire.encode_value(2, version, fields), "producer_id": -1}


def decide(version: int, coordinator: Coordinator) -> tuple[tuple, tuple]:
    """(rule, expires_at_ms, expired) of the offset; (state timestamp, deleted, deletes_at_ms)
    of its group."""
    log = [commit(50, commit_ms=COMMIT_MS), empty_group(version)]
    tables = task_audit.decided(
        task_audit.audit_records([batch(log)], coordinator=coordinator),
        coordinator=coordinator,
        params=PARAMS,
    )
    (offset,) = tables[task_audit.OFFSET].to_pylist()
    (group,) = tables[task_audit.GROUP].to_pylist()
    return (
        (offset["rule"], offset["expires_at_ms"], offset["expired"]),
        (group["current_state_timestamp_ms"], group["deleted"], group["deletes_at_ms"]),
    )


@pytest.mark.parametrize(
    "coordinator", [Coordinator.CLASSIC_2_1, Coordinator.CLASSIC_2_4_0_TO_2_6_0]
)
def test_a_v3_group_under_kafka_2_3_to_2_6_0_expires_by_commit_time(coordinator) -> None:
    """classic-2.1 (Kafka 2.3) and classic-2.4.0-2.6.0 share the loader."""
    assert decide(3, coordinator) == (
        ("EXP-EMPTY-V3-COMMIT-TS", 8 * DAY_MS, True),
        (STATE_MS, True, 8 * DAY_MS),  # the stored time stays in `groups`
    )


@pytest.mark.parametrize(
    ("version", "coordinator"),
    [
        (2, Coordinator.CLASSIC_2_1),
        (3, Coordinator.CLASSIC_2_4),
        (2, Coordinator.CLASSIC_2_4),
        (2, Coordinator.CLASSIC_2_4_0_TO_2_6_0),
    ],
)
def test_a_v2_group_or_classic_2_4_keeps_the_state_time(version, coordinator) -> None:
    assert decide(version, coordinator) == (
        ("EXP-EMPTY-STATE-TS", 17 * DAY_MS, False),
        (STATE_MS, False, 17 * DAY_MS),
    )


def test_the_replayed_group_carries_its_value_version() -> None:
    for version in (2, 3):
        log = [commit(50, commit_ms=COMMIT_MS), empty_group(version)]
        tables = task_audit.audit_records([batch(log)], coordinator=Coordinator.CLASSIC_2_1)
        assert tables[task_audit.GROUP].column("metadata_value_version").to_pylist() == [version]
