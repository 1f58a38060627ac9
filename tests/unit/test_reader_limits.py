"""DEC-LIMIT: counts the generated readers of 4.2.2+, 4.3.2+ and 4.4.0 refuse, noted per record by
every decode path (codec, compiled readers, layout walk, fast path) and predicted as a load
failure of the offsets partition; the record still decodes as older brokers read it."""

from __future__ import annotations

import struct
import uuid

import numpy as np
import pyarrow as pa
import pytest

from offsets_lib import wire
from offsets_lib.audit import task_audit
from offsets_lib.wire import api, codec, layout_scan
from tests import log_builder
from tests.reference import releases

REFUSED_BY = "(refused by a broker of 4.2.2+, 4.3.2+ or 4.4.0+)"
TOPIC_ID = uuid.UUID(int=7)


def uvarint(n: int) -> bytes:
    writer = codec.Writer()
    writer.uvarint(n)
    return bytes(writer.out)


def metadata_value(tag_section: bytes) -> bytes:
    """ConsumerGroupMetadataValue v0 (Epoch 5) with `tag_section` for its empty one."""
    value = wire.encode_value(3, 0, {"Epoch": 5})
    assert value.endswith(b"\x00")
    return value[:-1] + tag_section


def unknown_tags(count: int) -> bytes:
    """A tagged-field section of `count` unknown tags (tag 100) of size 0."""
    return uvarint(count) + b"\x64\x00" * count


NEGATIVE = b"\x80\x80\x80\x80\x08"  # uvarint 2**31: Java's readUnsignedVarint gives -2**31
OVER_BYTES = b"\x05\x64\x00"  # five tags declared, one present


def assignment_value(partitions: int) -> bytes:
    """ConsumerGroupCurrentMemberAssignmentValue v0, epoch 3, partitions 0..n-1 of one topic
    (built with one partition, then its array widened in place: 4 MB without a Python loop)."""
    value = wire.encode_value(8, 0, assignment(partitions=[7]))
    one = b"\x02" + struct.pack(">i", 7)
    assert value.count(one) == 1
    wide = np.arange(partitions, dtype=">i4").tobytes()
    return value.replace(one, uvarint(partitions + 1) + wide)


def assignment(partitions: list[int]) -> dict:
    return {
        "MemberEpoch": 3, "PreviousMemberEpoch": 2, "State": 0,
        "AssignedPartitions": [{"TopicId": TOPIC_ID, "Partitions": partitions}],
        "PartitionsPendingRevocation": [],
    }  # fmt: skip


METADATA_KEY = wire.encode_key(3, {"GroupId": "g"})
ASSIGNMENT_KEY = wire.encode_key(8, {"GroupId": "g", "MemberId": "m"})
CASES = {
    "10000 tags": (METADATA_KEY, metadata_value(unknown_tags(10_000)), None, None),
    "10001 tags": (
        METADATA_KEY,
        metadata_value(unknown_tags(10_001)),
        None,
        "TAGGED_FIELD_COUNT_OVER_10000: tagged-field count 10001 in a tagged-field section",
    ),
    "negative": (
        METADATA_KEY,
        metadata_value(NEGATIVE),
        "tagged-field count 2147483648 exceeds the 0 bytes left at byte 11",
        "TAGGED_FIELD_COUNT_NEGATIVE: tagged-field count -2147483648 in a tagged-field section",
    ),
    "over bytes": (
        METADATA_KEY,
        metadata_value(OVER_BYTES),
        "tagged-field count 5 exceeds the 2 bytes left at byte 7",
        "TAGGED_FIELD_COUNT_OVER_REMAINING_BYTES: tagged-field count 5 in a tagged-field "
        "section, 2 bytes left",
    ),
    "1000000 elements": (ASSIGNMENT_KEY, assignment_value(1_000_000), None, None),
    "1000001 elements": (
        ASSIGNMENT_KEY,
        assignment_value(1_000_001),
        None,
        "ARRAY_OVER_1000000_ELEMENTS: 1000001 elements in Partitions",
    ),
}


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "codec"])
@pytest.mark.parametrize("case", list(CASES))
def test_each_reader_notes_the_limit_and_decodes_as_before(case, compiled, monkeypatch):
    key, value, error, limit = CASES[case]
    monkeypatch.setattr(api, "_COMPILED", compiled)
    record = wire.decode_record(key, value)
    assert (record.error, record.reader_limit) == (error, limit)
    assert wire.decode_value(record.record_type, value).reader_limit == limit
    if error is None and key == METADATA_KEY:
        assert (record.value, record.unknown_tags) == (
            {"Epoch": 5, "MetadataHash": 0},
            int(case.split()[0]),
        )
    if error is None and key == ASSIGNMENT_KEY:
        assert len(record.value["AssignedPartitions"][0]["Partitions"]) == int(case.split()[0])


def test_the_layout_walk_leaves_every_record_over_a_limit_to_the_codec():
    keys = pa.array([CASES[c][0] for c in CASES], pa.binary())
    values = pa.array([CASES[c][1] for c in CASES], pa.binary())
    walked = layout_scan.scan_records(keys, values)
    # the walk vouches only for records without unknown tags within the limits
    assert walked.rows.tolist() == [list(CASES).index("1000000 elements")]


def test_the_predicate_on_counts_already_read():
    counts = np.array([0, 10_000, 10_001, 2**31, 2**32 - 1])
    assert codec.exceeds_reader_limits(counts, 20_000).tolist() == [0, 0, 1, 1, 1]
    assert codec.exceeds_reader_limits(5, 4) and not codec.exceeds_reader_limits(4, 4)
    assert codec.exceeds_reader_limits(np.array([1_000_000, 1_000_001])).tolist() == [0, 1]


def test_releases_that_refuse():
    refused = [r for r in [(4, 2, 1), (4, 2, 2), (4, 3, 0), (4, 3, 1), (4, 3, 2), (4, 4, 0)]
               if releases.refuses_reader_limits(r)]  # fmt: skip
    assert refused == [(4, 2, 2), (4, 3, 2), (4, 4, 0)]


def load_failures(records: list[dict], coordinator=None) -> list[tuple]:
    kwargs = {} if coordinator is None else {"coordinator": coordinator}
    groups = task_audit.audit_records([log_builder.batch(records)], **kwargs)[task_audit.GROUP]
    return [
        (row["group_id"], row["state"], row["state_notes"], *failure.values())
        for row in groups.to_pylist()
        for failure in row["load_failures"]
    ]


def test_a_metadata_value_over_the_tag_limit_fails_the_load_and_keeps_its_group():
    over = {"key": METADATA_KEY, "value": CASES["10001 tags"][1], "producer_id": -1}
    note = (
        "EV-EMPTY-EPOCH: group epoch 5 ahead of assignment epoch 1: last written by a broker "
        "before 4.3.2, not damage; "
        "DEC-LIMIT: a broker of 4.2.2+, 4.3.2+ or 4.4.0+ fails to load offsets partition 0 "
        "(TAGGED_FIELD_COUNT_OVER_10000; table load_failures)"
    )
    assert load_failures([log_builder.commit(5), over]) == [
        ("g", "Empty", note, "TAGGED_FIELD_COUNT_OVER_10000", 1, None,
         f"tagged-field count 10001 in a tagged-field section {REFUSED_BY}"),
    ]  # fmt: skip


def test_an_offset_commit_and_a_rejected_record_over_a_limit_fail_the_load():
    commit = log_builder.commit(5)
    value = commit["value"]  # OffsetCommitValue v3: not flexible; v4 is
    v4 = wire.encode_value(1, 4, {"offset": 5, "leaderEpoch": -1, "metadata": "",
                                  "commitTimestamp": 1_000})  # fmt: skip
    assert v4.endswith(b"\x00") and value != v4
    flagged = {**commit, "value": v4[:-1] + unknown_tags(10_001)}
    rejected = {"key": METADATA_KEY, "value": CASES["over bytes"][1], "producer_id": -1}
    rows = load_failures([flagged, rejected])
    assert [row[3:] for row in rows] == [
        ("TAGGED_FIELD_COUNT_OVER_10000", 0, None,
         f"tagged-field count 10001 in a tagged-field section {REFUSED_BY}"),
        ("TAGGED_FIELD_COUNT_OVER_REMAINING_BYTES", 1, None,
         f"tagged-field count 5 in a tagged-field section, 2 bytes left {REFUSED_BY}"),
    ]  # fmt: skip
    assert rows[0][:2] == ("g", "Empty")  # the offset's simple group stays


def test_an_assignment_over_the_array_limit_fails_the_load():
    over = {"key": ASSIGNMENT_KEY, "value": CASES["1000001 elements"][1], "producer_id": -1}
    assert [row[3:] for row in load_failures([over])] == [
        ("ARRAY_OVER_1000000_ELEMENTS", 0, "m",
         f"1000001 elements in Partitions {REFUSED_BY}"),
    ]  # fmt: skip


def test_a_scala_coordinator_predicts_no_reader_limit_failure():
    from offsets_lib.audit.coordinator import Coordinator

    over = {"key": METADATA_KEY, "value": CASES["10001 tags"][1], "producer_id": -1}
    assert load_failures([log_builder.commit(5), over], Coordinator.CLASSIC_2_4) == []
