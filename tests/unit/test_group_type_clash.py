"""LOG-8 through the task audit (values as the layout walk leaves them: GroupMetadata read from
its bytes): a consumer-group record for an id a classic group holds fails the load unless the
classic group is simple. Shrunk from the differential check against a real 4.4.0 broker
(tests/broker/generated.py, 5,000 groups: "Group gen-1-14 is not a consumer group", a member
record, type 5, after the group's GroupMetadata value; the audit predicted no failure)."""

from __future__ import annotations

from offsets_lib import wire
from offsets_lib.audit import task_audit
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.partition_claims import RECORD_OF_ANOTHER_GROUP_TYPE
from offsets_lib.audit.replay import GROUP_KEEPS_TARGET_EPOCH
from tests.log_builder import batch, classic_group_value, commit, group_record

NEW = Coordinator.NEW
MEMBER = {"ClientId": "c", "SubscribedTopicNames": ["orders"]}


def classic(members: int, protocol_type: str = "consumer") -> dict:
    value = classic_group_value(
        members, protocol_type=protocol_type, protocol="range", generation=2, state_ms=1
    )
    return {"key": wire.encode_key(2, {"group": "g"}), "value": value, "producer_id": -1}


def failures(log: list) -> list[tuple]:
    (group,) = task_audit.audit_records([batch(log)], coordinator=NEW)[task_audit.GROUP].to_pylist()
    return [(f["failed_check"], f["log_offset"], f["member_id"]) for f in group["load_failures"]]


def test_a_member_record_for_a_classic_group_fails_the_load() -> None:
    member = group_record(5, "g", MEMBER, MemberId="m9")
    assert failures([classic(1), member]) == [(RECORD_OF_ANOTHER_GROUP_TYPE, 1, "m9")]
    assert failures([classic(0), member]) == [(RECORD_OF_ANOTHER_GROUP_TYPE, 1, "m9")]


def test_a_simple_classic_group_is_replaced() -> None:
    """No protocol type and no members (`isSimpleGroup`), or offsets only."""
    member = group_record(5, "g", MEMBER, MemberId="m9")
    assert failures([classic(0, protocol_type=""), member]) == []
    assert failures([commit(5), member]) == []


def test_a_tombstone_replaces_a_simple_classic_group_whichever_way_it_is_simple() -> None:
    """G-U4 takes the same `isSimpleGroup` as LOG-8: a lone consumer-group tombstone swaps in
    an Empty consumer group, whose target epoch it leaves (LOG-6), after a GroupMetadata value
    of no protocol type and no members as after offsets alone."""
    tombstone = group_record(3, "g", None)
    assert failures([commit(5), tombstone]) == [(GROUP_KEEPS_TARGET_EPOCH, 1, None)]
    assert failures([classic(0, protocol_type=""), tombstone]) == [
        (GROUP_KEEPS_TARGET_EPOCH, 1, None)
    ]
    assert failures([classic(0), tombstone]) == [(RECORD_OF_ANOTHER_GROUP_TYPE, 1, None)]
