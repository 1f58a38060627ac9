"""The decoder rules of records.md sections 3, 7, 8 and 11, one behaviour per test."""

from __future__ import annotations

import uuid

import pytest

from offsets_lib import wire

KEY_1 = bytes.fromhex("0001000367727000066f726465727300000003")  # E2 key
V3 = bytes.fromhex("000300000000000004d20000000500000000018bcfe56800")  # E3 value
V4 = bytes.fromhex("000400000000000004d200000005010000018bcfe5680000")  # E4a value


H = bytes.fromhex
ERRORS = [
    (None, V3, "null key"),
    (b"", V3, "empty key"),
    (b"\x00", V3, "truncated: record type needs 2 bytes at byte 0, 1 left"),
    (H("0063"), V3, "unknown record type 99"),
    (H("0001012c6161616161"), V3, "length 300 of group exceeds the 5 bytes left at byte 2"),
    (KEY_1, b"", "zero-length value (not a tombstone)"),
    (KEY_1, b"\x00", "truncated: value version needs 2 bytes at byte 0, 1 left"),
    (KEY_1, H("0007") + V3[2:], "unknown value version 7 for OffsetCommit (valid 0-4)"),
    (KEY_1, H("ffff") + V3[2:], "unknown value version -1 for OffsetCommit (valid 0-4)"),
    (KEY_1, V3[:-6], "truncated: commitTimestamp needs 8 bytes at byte 16, 2 left"),
    (KEY_1, H("00000000000000000002000380ff00"), "invalid UTF-8 in metadata at byte 12"),
    (KEY_1, H("00030000000000000001ffffffffffff"), "null in non-nullable field metadata"),
    (KEY_1, H("0003000000000000000100000000fffe"), "negative length -2 of metadata at byte 14"),
    (H("0003"), V3, "truncated: length of GroupId needs 2 bytes at byte 2, 0 left"),
]


@pytest.mark.parametrize(("key", "value", "error"), ERRORS)
def test_precise_errors(key, value, error: str) -> None:
    record = wire.decode_record(key, value)
    assert record.error == error


def test_uvarint_is_at_most_five_bytes() -> None:
    raw = V4[:14] + b"\x80\x80\x80\x80\x80\x01" + V4[15:]
    assert wire.decode_value(1, raw).error == "uvarint of metadata longer than 5 bytes at byte 14"


def test_huge_array_count_is_rejected_before_allocating() -> None:
    raw = bytes.fromhex("0003") + b"\x00\x08consumer" + bytes(4) + b"\xff\xff" * 2
    raw += bytes.fromhex("0000018bcfe56800") + bytes.fromhex("7fffffff")
    result = wire.decode_value(2, raw)
    assert result.error == "count 2147483647 of members exceeds the 0 bytes left at byte 28"


def test_trailing_bytes_are_accepted_and_counted() -> None:
    record = wire.decode_record(KEY_1 + b"xy", V3 + b"abc")
    assert record.error is None
    assert record.key_trailing_bytes == 2 and record.trailing_bytes == 3
    assert record.value["offset"] == 1234


def test_unknown_tags_are_skipped_and_counted_missing_tags_default() -> None:
    # E4a with a tagged section holding unknown tag 5 (3 bytes) and no topicId (tag 0).
    raw = V4[:-1] + bytes.fromhex("0105") + b"\x03abc"
    result = wire.decode_value(1, raw)
    assert result.error is None and result.unknown_tags == 1 and result.trailing_bytes == 0
    assert result.fields["topicId"] == uuid.UUID(int=0)


def test_known_tag_is_parsed_inside_its_declared_size() -> None:
    # topicId declared with size 18: the uuid is read, the 2 extra bytes skipped.
    tid = uuid.uuid4()
    raw = V4[:-1] + bytes.fromhex("010012") + tid.bytes + b"\xee\xee"
    result = wire.decode_value(1, raw)
    assert result.error is None and result.fields["topicId"] == tid
    short = V4[:-1] + bytes.fromhex("010008") + tid.bytes
    assert wire.decode_value(1, short).error.startswith("truncated: topicId needs 16 bytes")


def test_tag_size_beyond_the_value_is_an_error() -> None:
    raw = V4[:-1] + bytes.fromhex("01057f") + b"ab"
    assert (
        wire.decode_value(1, raw).error == "size 127 of tag 5 exceeds the 2 bytes left at byte 25"
    )


def test_type0_key_value_uses_the_offset_commit_table_of_its_version() -> None:
    key0 = bytes.fromhex("0000000367727000066f726465727300000003")
    record = wire.decode_record(key0, V3)
    assert record.error is None and record.record_type == 0 and record.version == 3
    assert record.value["leaderEpoch"] == 5


def test_nullable_struct_marker() -> None:
    fields = {"InstanceId": None, "RackId": None, "ClientId": "c", "ClientHost": "h",
              "RebalanceTimeoutMs": 1, "TopologyEpoch": 2, "ProcessId": "p",
              "UserEndpoint": None, "ClientTags": []}  # fmt: skip
    raw = wire.encode_value(19, 0, fields)
    assert raw[-3:] == b"\xff\x01\x00"  # int8 -1 marker, empty ClientTags, no tags
    assert wire.decode_value(19, raw).fields["UserEndpoint"] is None
    fields["UserEndpoint"] = {"Host": "x", "Port": 65535}
    decoded = wire.decode_value(19, wire.encode_value(19, 0, fields))
    assert decoded.fields["UserEndpoint"] == {"Host": "x", "Port": 65535}


def _historical(record_type: int) -> str:
    return wire.RECORD_TYPES[record_type].historical[0].label


@pytest.mark.parametrize(
    ("record_type", "fields", "label"),
    [
        (4, {"Epoch": 3, "Topics": []}, "3.6-3.7 early access"),
        (7, {"Error": 0, "TopicPartitions": [], "MetadataVersion": 1, "MetadataBytes": b"m"},
         "3.6-3.7 early access"),
        (8, {"MemberEpoch": 3, "PreviousMemberEpoch": 2, "TargetMemberEpoch": 3,
             "AssignedPartitions": [{"TopicId": uuid.uuid4(), "Partitions": [0]}],
             "PartitionsPendingRevocation": [], "PartitionsPendingAssignment": [], "Error": 0,
             "MetadataVersion": 0, "MetadataBytes": b""}, "3.6-3.7 early access"),
        (5, {"ClientId": "c", "ClientHost": "h", "SubscribedTopicNames": ["t"],
             "Assignors": [{"Name": "uniform", "MinimumVersion": 0, "MaximumVersion": 1,
                            "Reason": 0, "Version": 1, "Metadata": b""}]},
         "3.6-3.7 early access"),
        (11, {"Epoch": 4}, "4.0 early access"),
        (15, {"InitializedTopics": [{"TopicId": uuid.uuid4(), "TopicName": "t", "Partitions": [1]}],
              "DeletingTopics": []}, "4.0 early access"),
    ],
)  # fmt: skip
def test_historical_layout_fallback(record_type: int, fields: dict, label: str) -> None:
    assert _historical(record_type) == label
    raw = wire.encode_value(record_type, 0, fields, layout=label)
    decoded = wire.decode_value(record_type, raw)
    assert decoded.error is None and decoded.layout == label and decoded.trailing_bytes == 0
    for name, value in fields.items():
        assert decoded.fields[name] == value


def test_current_layout_wins_when_it_fits() -> None:
    raw = wire.encode_value(11, 0, {"Epoch": 4, "MetadataHash": 9})
    decoded = wire.decode_value(11, raw)
    assert decoded.layout == "current" and decoded.fields == {"Epoch": 4, "MetadataHash": 9}


def test_assignment_rules() -> None:
    assert wire.decode_assignment(b"") == {"version": None, "error": None, "trailing_bytes": 0}
    negative = wire.decode_assignment(bytes.fromhex("ffff00000000ffffffff"))
    assert negative["error"] == "negative version -1 for ConsumerProtocolAssignment"
    newer = bytes.fromhex("0009") + bytes.fromhex("00000000ffffffff") + b"future"
    decoded = wire.decode_assignment(newer)
    assert decoded["version"] == 9 and decoded["error"] is None
    assert decoded["trailing_bytes"] == 6 and decoded["AssignedPartitions"] == []
    assert wire.decode_subscription(b"")["error"] == "empty payload"


def test_control_records() -> None:
    key, value = wire.encode_control("ABORT", 3)
    assert key.hex() == "00000000" and value.hex() == "000000000003"
    assert wire.decode_control(key, value) == wire.DecodedControl("ABORT", 0, 0, 3, None)
    newer = wire.decode_control(bytes.fromhex("00050001"), value)
    assert newer.type == "COMMIT" and newer.version == 5
    assert wire.decode_control(bytes.fromhex("00000009"), None).type == "UNKNOWN"
    assert wire.decode_control(bytes.fromhex("0000"), None).error.startswith("truncated")
    with pytest.raises(wire.EncodeError):
        wire.encode_control("LEADER_CHANGE")


def test_writer_rejects_bad_input() -> None:
    with pytest.raises(wire.EncodeError, match="unknown field"):
        wire.encode_value(1, 3, {"offset": 1, "bogus": 2})
    with pytest.raises(wire.EncodeError, match="null in non-nullable field metadata"):
        wire.encode_value(1, 3, {"metadata": None})
    with pytest.raises(wire.EncodeError, match="cannot write"):
        wire.encode_value(1, 3, {"offset": 2**63})
    with pytest.raises(wire.EncodeError, match="unknown value version 5"):
        wire.encode_value(1, 5, {})
    with pytest.raises(wire.EncodeError, match="no layout"):
        wire.encode_value(1, 3, {}, layout="3.6-3.7 early access")
    with pytest.raises(wire.EncodeError, match="unknown record type"):
        wire.encode_key(42, {})


def test_writer_omits_default_tags_and_sorts_tags() -> None:
    base = {"Epoch": 1, "MetadataHash": 2}
    assert wire.encode_value(17, 0, base).hex().endswith("00")
    raw = wire.encode_value(17, 0, {**base, "FailedDescriptionTopologyEpoch": 5,
                                    "ValidatedTopologyEpoch": 7})  # fmt: skip
    assert raw[14:].hex() == "02" + "000400000007" + "030400000005"


def test_to_jsonable() -> None:
    tid = uuid.UUID("5f3b0e2a-9c4d-4e1f-8a7b-6c5d4e3f2a1b")
    record = wire.decode_record(KEY_1, None)
    assert wire.to_jsonable({"a": b"\x01\xff", "b": [tid, (1, None)], "c": record})["b"] == [
        "5f3b0e2a-9c4d-4e1f-8a7b-6c5d4e3f2a1b",
        [1, None],
    ]
    assert wire.to_jsonable(b"\x01\xff") == "01ff"
    assert wire.to_jsonable(record)["key"] == {"group": "grp", "topic": "orders", "partition": 3}


def test_reader_accepts_tags_in_any_order() -> None:
    head = wire.encode_value(17, 0, {"Epoch": 1, "MetadataHash": 2})[:-1]
    raw = head + bytes.fromhex("02" + "030400000005" + "000400000007")
    decoded = wire.decode_value(17, raw)
    assert decoded.error is None
    assert decoded.fields["FailedDescriptionTopologyEpoch"] == 5
    assert decoded.fields["ValidatedTopologyEpoch"] == 7
    assert decoded.fields["StoredDescriptionTopologyEpoch"] == -1
    assert decoded.fields["LastAssignmentConfigs"] is None
