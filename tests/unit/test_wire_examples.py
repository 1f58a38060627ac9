"""The worked examples of records.md section 10: decode to the documented values, re-encode
to the same bytes. Hex strings and values are copied from the spec (facts, not code)."""

from __future__ import annotations

import uuid

import pytest

from offsets_lib import wire

TS = 1700000000000
TOPIC_ID = uuid.UUID("5f3b0e2a-9c4d-4e1f-8a7b-6c5d4e3f2a1b")
ZERO = uuid.UUID(int=0)


def offset_value(offset, metadata, leader_epoch=-1, expire=-1, topic_id=ZERO) -> dict:
    return {
        "offset": offset,
        "leaderEpoch": leader_epoch,
        "metadata": metadata,
        "commitTimestamp": TS,
        "expireTimestamp": expire,
        "topicId": topic_id,
    }


E6_SUB = "00000000000100066f7264657273ffffffff"
E6_ASSIGN = "00000000000100066f7264657273000000020000000000000001ffffffff"
E7_SUB = "00010000000100066f7264657273ffffffff0000000100066f7264657273000000020000000000000001"
E7_ASSIGN = "00010000000100066f7264657273000000020000000000000001ffffffff"


def member(sub: str, assign: str, *, rebalance: int, session: int, host="/10.0.0.1") -> dict:
    return {
        "memberId": "m-1",
        "groupInstanceId": None,
        "clientId": "c",
        "clientHost": host,
        "rebalanceTimeout": rebalance,
        "sessionTimeout": session,
        "subscription": bytes.fromhex(sub),
        "assignment": bytes.fromhex(assign),
    }


KEYS = [
    ("E1", "0000000367727000066f726465727300000003", 0,
     {"group": "grp", "topic": "orders", "partition": 3}),
    ("E2", "0001000367727000066f726465727300000003", 1,
     {"group": "grp", "topic": "orders", "partition": 3}),
    ("E6", "00020003677270", 2, {"group": "grp"}),
    ("E10", "0005000367727000026d31", 5, {"GroupId": "grp", "MemberId": "m1"}),
    ("E11", "0008000367727000026d31", 8, {"GroupId": "grp", "MemberId": "m1"}),
    ("E12", "00030003677270", 3, {"GroupId": "grp"}),
]  # fmt: skip

VALUES = [
    ("E1", 0, "0000000000000000002a00000000018bcfe56800", 0, offset_value(42, "")),
    ("E2", 1, "000100000000000004d200016d0000018bcfe568000000018bd50bc400", 1,
     offset_value(1234, "m", expire=1700086400000)),
    ("E3", 1, "000300000000000004d20000000500000000018bcfe56800", 3,
     offset_value(1234, "", leader_epoch=5)),
    ("E4a", 1, "000400000000000004d200000005010000018bcfe5680000", 4,
     offset_value(1234, "", leader_epoch=5)),
    ("E4b", 1, "000400000000000004d200000005010000018bcfe56800010010" + TOPIC_ID.hex, 4,
     offset_value(1234, "", leader_epoch=5, topic_id=TOPIC_ID)),
    ("E6", 2, "00000008636f6e73756d657200000001000572616e676500036d2d310000000100036d2d3100016300"
     "092f31302e302e302e31000027100000001200000000000100066f7264657273ffffffff0000001e000000"
     "00000100066f7264657273000000020000000000000001ffffffff", 0,
     {"protocolType": "consumer", "generation": 1, "protocol": "range", "leader": "m-1",
      "currentStateTimestamp": -1,
      "members": [member(E6_SUB, E6_ASSIGN, rebalance=-1, session=10000)]}),
    ("E7", 2, "00030008636f6e73756d657200000005000572616e676500036d2d310000018bcfe56800000000010003"
     "6d2d31ffff00016300092f31302e302e302e31000493e00000afc80000002a" + E7_SUB + "0000001e"
     + E7_ASSIGN, 3,
     {"protocolType": "consumer", "generation": 5, "protocol": "range", "leader": "m-1",
      "currentStateTimestamp": TS,
      "members": [member(E7_SUB, E7_ASSIGN, rebalance=300000, session=45000)]}),
    ("E8", 2, "00030008636f6e73756d657200000006ffffffff0000018bcfe5680000000000", 3,
     {"protocolType": "consumer", "generation": 6, "protocol": None, "leader": None,
      "currentStateTimestamp": TS, "members": []}),
    ("E9", 2, "000409636f6e73756d65720000000600000000018bcfe568000100", 4,
     {"protocolType": "consumer", "generation": 6, "protocol": None, "leader": None,
      "currentStateTimestamp": TS, "members": []}),
    ("E10a", 5,
     "0000000002630a2f31302e302e302e3102076f726465727300000493e008756e69666f726d00", 0,
     {"InstanceId": None, "RackId": None, "ClientId": "c", "ClientHost": "/10.0.0.1",
      "SubscribedTopicNames": ["orders"], "SubscribedTopicRegex": None,
      "RebalanceTimeoutMs": 300000, "ServerAssignor": "uniform", "ClassicMemberMetadata": None}),
    ("E10b", 5,
     "0000000002630a2f31302e302e302e3102076f726465727300000493e000010021010000afc802067261"
     "6e67651300000000000100066f7264657273ffffffff0000", 0,
     {"InstanceId": None, "RackId": None, "ClientId": "c", "ClientHost": "/10.0.0.1",
      "SubscribedTopicNames": ["orders"], "SubscribedTopicRegex": None,
      "RebalanceTimeoutMs": 300000, "ServerAssignor": None,
      "ClassicMemberMetadata": {"SessionTimeoutMs": 45000, "SupportedProtocols": [
          {"Name": "range", "Metadata": bytes.fromhex(E6_SUB)}]}}),
    ("E11", 8, "0000000000070000000600025f3b0e2a9c4d4e1f8a7b6c5d4e3f2a1b03000000000000000101000903"
     "00000005000000070100", 0,
     {"MemberEpoch": 7, "PreviousMemberEpoch": 6, "State": 0,
      "AssignedPartitions": [{"TopicId": TOPIC_ID, "Partitions": [0, 1],
                              "AssignmentEpochs": [5, 7]}],
      "PartitionsPendingRevocation": []}),
    ("E12", 3, "0000000000070100080123456789abcdef", 0,
     {"Epoch": 7, "MetadataHash": 81985529216486895}),
]  # fmt: skip

SUBSCRIPTIONS = [
    ("E6", E6_SUB, 0, {"Topics": ["orders"], "UserData": None}),
    ("E7", E7_SUB, 1,
     {"Topics": ["orders"], "UserData": None,
      "OwnedPartitions": [{"Topic": "orders", "Partitions": [0, 1]}]}),
]  # fmt: skip

ASSIGNMENTS = [
    ("E6", E6_ASSIGN, 0,
     {"AssignedPartitions": [{"Topic": "orders", "Partitions": [0, 1]}], "UserData": None}),
    ("E7", E7_ASSIGN, 1,
     {"AssignedPartitions": [{"Topic": "orders", "Partitions": [0, 1]}], "UserData": None}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "hex_", "record_type", "expected"), KEYS, ids=[k[0] for k in KEYS]
)
def test_key_example(name: str, hex_: str, record_type: int, expected: dict) -> None:
    decoded = wire.decode_key(bytes.fromhex(hex_))
    assert decoded == wire.DecodedKey(record_type, expected, None, 0)
    assert wire.encode_key(record_type, expected).hex() == hex_


@pytest.mark.parametrize(
    ("name", "record_type", "hex_", "version", "expected"), VALUES, ids=[v[0] for v in VALUES]
)
def test_value_example(name: str, record_type: int, hex_: str, version: int, expected: dict):
    decoded = wire.decode_value(record_type, bytes.fromhex(hex_))
    assert decoded.error is None
    assert decoded.version == version
    assert decoded.layout == "current"
    assert decoded.trailing_bytes == 0
    assert decoded.fields == expected
    assert wire.encode_value(record_type, version, expected).hex() == hex_


@pytest.mark.parametrize(("name", "hex_", "version", "expected"), SUBSCRIPTIONS, ids=["E6", "E7"])
def test_subscription_example(name: str, hex_: str, version: int, expected: dict) -> None:
    decoded = wire.decode_subscription(bytes.fromhex(hex_))
    assert decoded["version"] == version and decoded["error"] is None
    for field, value in expected.items():
        assert decoded[field] == value
    assert wire.encode_subscription(version, expected).hex() == hex_


@pytest.mark.parametrize(("name", "hex_", "version", "expected"), ASSIGNMENTS, ids=["E6", "E7"])
def test_assignment_example(name: str, hex_: str, version: int, expected: dict) -> None:
    decoded = wire.decode_assignment(bytes.fromhex(hex_))
    assert decoded == {"version": version, "error": None, "trailing_bytes": 0, **expected}
    assert wire.encode_assignment(version, expected).hex() == hex_


@pytest.mark.parametrize(
    "key_hex",
    ["0001000367727000066f726465727300000003", "00020003677270"],
    ids=["E5-offset", "E5-group"],
)
def test_tombstone_example(key_hex: str) -> None:
    record = wire.decode_record(bytes.fromhex(key_hex), None)
    assert record.is_tombstone and record.error is None and record.value is None
    zero_length = wire.decode_record(bytes.fromhex(key_hex), b"")
    assert zero_length.error == "zero-length value (not a tombstone)"
    assert not zero_length.is_tombstone
