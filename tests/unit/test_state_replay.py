"""Group replay over partly compacted, inconsistent logs (KAFKA-19862).

A dump of a compacted topic may hold member records whose group record was compacted away,
offsets of a deleted group, epochs that go backwards, tombstones for keys never written... The
broker's loader (semantics.md sections 1-2) copes with each; `replay.replay_group` must return
the same group, and never raise. Events are built the way the pipeline builds them: real record
bytes from the codec, decoded, value fields through `wire.to_jsonable` and JSON.
"""

from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offsets_lib import wire
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.group_rows import GROUP_STATE_ARROW
from offsets_lib.audit.partition_claims import RECORD_OF_ANOTHER_GROUP_TYPE as CLASH
from offsets_lib.audit.replay import (
    GROUP_KEEPS_TARGET_EPOCH,
    OFFSET_SUMMARY,
    Event,
    needed_records,
    replay_group,
)
from tests.reference.decode import classic_group_row
from tests.reference.spark_audit import replay_batches
from tests.unit.strategies import message_values

TOPIC_ID = uuid.UUID(int=0xA1)
G = "g"


def ev(offset: int, record_type: int, value: dict | None = None, **key: str) -> Event:
    """One record of group `g` as the pipeline hands it to the replay (None value = tombstone)."""
    key_fields = {"group" if record_type == 2 else "GroupId": G, **key}
    key_bytes = wire.encode_key(record_type, key_fields)
    version = 3 if record_type == 2 else 0
    value_bytes = None if value is None else wire.encode_value(record_type, version, value)
    decoded = wire.decode_record(key_bytes, value_bytes)
    assert decoded.error is None, decoded.error
    fields = (
        None if decoded.value is None else json.loads(json.dumps(wire.to_jsonable(decoded.value)))
    )
    return Event(
        log_offset=offset,
        record_type=record_type,
        is_tombstone=decoded.is_tombstone,
        member_id=decoded.key.get("MemberId"),
        regular_expression=decoded.key.get("RegularExpression"),
        value=fields,
    )


def offsets_at(offset: int) -> Event:
    """The pipeline's summary event: the group's newest offset-commit value is at `offset`."""
    return Event(log_offset=offset, record_type=OFFSET_SUMMARY)


def classic(offset: int, members: int = 0) -> Event:
    return ev(
        offset,
        2,
        {
            "protocolType": "consumer",
            "generation": 3,
            "protocol": "range",
            "leader": "c-0" if members else None,
            "currentStateTimestamp": 1_000,
            "members": [
                {
                    "memberId": f"c-{i}",
                    "clientId": "cl",
                    "clientHost": "/h",
                    "rebalanceTimeout": 1,
                    "sessionTimeout": 1,
                    "subscription": wire.encode_subscription(0, {"Topics": ["t"]}),
                    "assignment": b"",
                }
                for i in range(members)
            ],
        },
    )


def member(offset: int, member_id: str, topics=("t",)) -> Event:
    return ev(
        offset, 5, {"ClientId": "cl", "SubscribedTopicNames": list(topics)}, MemberId=member_id
    )


def assignment(offset: int, member_id: str, epoch: int, partitions=(0,), state_code=0) -> Event:
    value = {
        "MemberEpoch": epoch,
        "PreviousMemberEpoch": epoch - 1,
        "State": state_code,
        "AssignedPartitions": [{"TopicId": TOPIC_ID, "Partitions": list(partitions)}]
        if partitions
        else [],
    }
    return ev(offset, 8, value, MemberId=member_id)


def replay(*events: Event, scala: bool = False) -> dict:
    coordinator = Coordinator.CLASSIC_2_4 if scala else Coordinator.NEW
    row = replay_group(7, G, events, coordinator=coordinator, classic_row=classic_group_row)
    pa.RecordBatch.from_pylist([row], schema=GROUP_STATE_ARROW)  # the row fits the Spark schema
    return row


def members_of(row: dict) -> dict[str, dict]:
    return {m["member_id"]: m for m in row["members"]}


# ---- member records without their group record --------------------------------------------


def test_member_records_without_any_group_record_create_the_consumer_group():
    """G-M1: any consumer-group value creates the group; G-M2/G-M3: the group epoch defaults
    to 0, the assignment epoch to the coordinator's initial 1."""
    row = replay(member(10, "m1"), assignment(11, "m1", epoch=0))
    assert (row["group_type"], row["generation"], row["target_assignment_epoch"]) == (
        "consumer",
        0,
        1,
    )
    assert row["state"] == "Reconciling"  # member epoch 0 != target epoch 1 (G-M6)
    assert list(members_of(row)) == ["m1"]
    assert row["subscribed_topics"] == ["t"]


def test_assignment_for_an_unknown_member_does_not_make_a_member():
    """G-M4: members are the ids whose last member-metadata record is a value."""
    row = replay(
        ev(1, 3, {"Epoch": 2}),
        ev(2, 6, {"AssignmentEpoch": 2}),
        member(3, "m1"),
        assignment(4, "m1", epoch=2),
        assignment(5, "ghost", epoch=2, partitions=(1,)),  # no member record, ever
    )
    assert list(members_of(row)) == ["m1"]
    assert row["member_count"] == 1
    assert row["state"] == "Stable"


def test_only_assignment_records_give_an_empty_consumer_group():
    row = replay(assignment(4, "ghost", epoch=5), ev(5, 7, {"TopicPartitions": []}, MemberId="x"))
    assert (row["group_type"], row["state"], row["member_count"]) == ("consumer", "Empty", 0)


# ---- offsets of a deleted group (G-S1, G-S3) ------------------------------------------------


def test_offsets_before_a_classic_group_tombstone_are_orphaned():
    """G-S3: the tombstone removes the group; its earlier offsets do not bring it back."""
    row = replay(classic(1, members=1), offsets_at(5), ev(9, 2, None))
    assert row["state"] == "Dead"


def test_offsets_before_a_consumer_group_tombstone_are_orphaned():
    row = replay(
        ev(1, 3, {"Epoch": 1}), member(2, "m1"), offsets_at(5), ev(8, 5, None, MemberId="m1"),
        ev(9, 3, None),
    )  # fmt: skip
    assert row["state"] == "Dead"


def test_an_offset_after_the_tombstone_recreates_a_simple_group():
    """G-S1: an offset value replayed when no group exists creates an Empty simple group."""
    row = replay(classic(1, members=1), ev(9, 2, None), offsets_at(12))
    assert (row["group_type"], row["protocol_type"], row["state"], row["generation"]) == (
        "classic",
        None,
        "Empty",
        0,
    )


def test_group_tombstone_then_late_member_records_of_the_deleted_group():
    """Partly compacted deletion: member tombstones/values after the group tombstone."""
    row = replay(
        ev(1, 3, {"Epoch": 4}), member(2, "m1"), ev(9, 3, None), ev(10, 5, None, MemberId="m1")
    )
    assert row["state"] == "Dead"  # a tombstone never creates a group
    row = replay(ev(1, 3, {"Epoch": 4}), ev(9, 3, None), member(10, "m2"))
    assert (row["group_type"], row["generation"], list(members_of(row))) == ("consumer", 0, ["m2"])


# ---- epochs out of order --------------------------------------------------------------------


def test_group_epoch_going_backwards_takes_the_last_record():
    """G-M2: the epoch of the LAST consumer_group_metadata value, even if it is smaller."""
    row = replay(
        ev(1, 3, {"Epoch": 7}), ev(2, 6, {"AssignmentEpoch": 4}), member(3, "m1"),
        assignment(4, "m1", epoch=4), ev(5, 3, {"Epoch": 4}),
    )  # fmt: skip
    assert (row["generation"], row["target_assignment_epoch"], row["state"]) == (4, 4, "Stable")


def test_target_epoch_above_group_epoch_and_member_epoch_above_target():
    row = replay(
        ev(1, 3, {"Epoch": 3}), ev(2, 6, {"AssignmentEpoch": 9}), member(3, "m1"),
        assignment(4, "m1", epoch=12),
    )  # fmt: skip
    assert (row["generation"], row["target_assignment_epoch"]) == (3, 9)
    assert row["state"] == "Reconciling"  # not Assigning (3 < 9); member epoch 12 != 9
    assert members_of(row)["m1"]["member_epoch"] == 12


def test_group_epoch_above_target_is_assigning():
    row = replay(
        ev(1, 6, {"AssignmentEpoch": 5}), ev(2, 3, {"Epoch": 6}), member(3, "m1"),
        assignment(4, "m1", epoch=5),
    )  # fmt: skip
    assert row["state"] == "Assigning"


def test_two_members_claiming_the_same_partition_do_not_fail_the_replay():
    """KAFKA-19862: the record unassigning a partition from its old owner can be missing. The
    replay goes on (the broker's load fails: LOG-7, below)."""
    row = replay(
        ev(1, 3, {"Epoch": 2}), ev(2, 6, {"AssignmentEpoch": 2}),
        member(3, "m1"), member(4, "m2"),
        assignment(5, "m1", epoch=2, partitions=(0, 1)),
        assignment(6, "m2", epoch=2, partitions=(1, 2)),  # partition 1 still owned by m1
    )  # fmt: skip
    owned = {
        m: [p["partition"] for p in r["assigned_partitions"]] for m, r in members_of(row).items()
    }
    assert owned == {"m1": [0, 1], "m2": [1, 2]}
    assert row["state"] == "Stable"


# ---- group type changes without the expected tombstones (G-U1, G-U2) -------------------------


def test_consumer_records_after_a_classic_group_without_its_tombstone():
    """G-U1 normally has a GroupMetadata tombstone first; without it the broker's loader stops
    at the first consumer record (LOG-8); the reader keeps going (the consumer group wins),
    notes it in `state_notes` and lists the record in `load_failures`."""
    row = replay(classic(1, members=1), offsets_at(2), ev(3, 3, {"Epoch": 1}), member(4, "m1"))
    assert (row["group_type"], row["generation"], list(members_of(row))) == ("consumer", 1, ["m1"])
    assert "G-U1" in row["state_notes"]
    held = "consumer group record for an id a classic group holds"
    assert failures(row) == [(CLASH, 3, None, held)]
    assert "LOG-8: the broker fails to load offsets partition 7 (" in row["state_notes"]


def test_a_modern_record_for_an_id_another_type_holds_fails_the_load():
    """LOG-8 (`getOrMaybeCreatePersisted*Group`, "Group g is not a consumer group"): values and
    tombstones alike; an Empty classic group of protocol type "consumer" is not simple. The
    member record is the 4.4.0 broker's failure on the generated logs (gen-1-14)."""
    held = "consumer group record for an id a classic group holds"
    with_members = replay(classic(1, members=2), member(2, "m9"))
    assert failures(with_members) == [(CLASH, 2, "m9", held)]
    assert failures(replay(classic(1), ev(2, 8, None, MemberId="m1"))) == [(CLASH, 2, "m1", held)]
    streams_value = {"Epoch": 1, "MetadataHash": 0}
    streams = replay(ev(1, 3, {"Epoch": 1}), ev(2, 17, streams_value))
    assert failures(streams) == [
        (CLASH, 2, None, "streams group record for an id a consumer group holds")
    ]


def test_a_simple_classic_group_is_replaced_without_failing():
    """LOG-8's exception (`isSimpleGroup`): offsets only, or a GroupMetadata value of no
    protocol type and no members."""
    value = {"protocolType": "", "generation": 0, "currentStateTimestamp": -1, "members": []}
    for before in ([offsets_at(1)], [ev(1, 2, value)], [offsets_at(1), ev(2, 2, value)]):
        row = replay(*before, ev(3, 3, {"Epoch": 1}), member(4, "m1"))
        assert (row["group_type"], row["load_failures"]) == ("consumer", [])


def test_classic_record_after_a_consumer_group_without_its_tombstones():
    row = replay(ev(1, 3, {"Epoch": 1}), member(2, "m1"), classic(3, members=2))
    assert (row["group_type"], row["state"], row["member_count"]) == ("classic", "Stable", 2)
    assert "G-U2" in row["state_notes"]


def test_simple_group_replaced_by_a_consumer_group_is_not_noted_as_inconsistent():
    row = replay(offsets_at(1), ev(2, 3, {"Epoch": 1}))
    assert (row["group_type"], row["state"]) == ("consumer", "Empty")


# ---- tombstones for keys that were never written --------------------------------------------


def test_tombstones_for_keys_never_written():
    only_tombstones = replay(
        ev(1, 5, None, MemberId="m9"), ev(2, 8, None, MemberId="m9"),
        ev(3, 16, None, RegularExpression="x.*"), ev(4, 6, None), ev(5, 3, None), ev(6, 2, None),
    )  # fmt: skip
    assert only_tombstones["state"] == "Dead"  # nothing creates a group; Dead row, no crash

    row = replay(
        ev(1, 3, {"Epoch": 1}), member(2, "m1"), assignment(3, "m1", epoch=1),
        ev(4, 5, None, MemberId="never"), ev(5, 8, None, MemberId="never"),
        ev(6, 16, None, RegularExpression="never.*"), ev(7, 7, None, MemberId="never"),
    )  # fmt: skip
    assert list(members_of(row)) == ["m1"]
    assert row["target_assignment_epoch"] == 1  # no target-assignment record at all


def test_target_assignment_tombstone_resets_to_minus_one():
    row = replay(ev(1, 3, {"Epoch": 1}), ev(2, 6, {"AssignmentEpoch": 1}), ev(3, 6, None))
    assert row["target_assignment_epoch"] == -1  # G-M3


def test_classic_tombstone_for_a_group_never_written_then_offsets():
    assert replay(ev(1, 2, None))["state"] == "Dead"
    assert replay(ev(1, 2, None), offsets_at(2))["state"] == "Empty"


# ---- any sequence of group records: never a crash -------------------------------------------

_TYPES = (2, 3, 4, 5, 6, 7, 8, 16, 9, 10, 11, 17, 19, 23)


@st.composite
def group_event(draw, types: tuple[int, ...] = _TYPES, members: int = 3) -> Event:
    record_type = draw(st.sampled_from((*types, OFFSET_SUMMARY)))
    if record_type == OFFSET_SUMMARY:
        return offsets_at(0)
    rt = wire.RECORD_TYPES[record_type]
    member_ids = st.integers(0, members - 1)
    key = {f.name: f"m{draw(member_ids)}" for f in rt.key.fields if f.name == "MemberId"}
    if any(f.name == "RegularExpression" for f in rt.key.fields):
        key["RegularExpression"] = draw(st.sampled_from(["a.*", "b.*"]))
    for f in rt.key.fields:  # other key fields of share/streams records
        if f.name not in {"GroupId", "group", "MemberId", "RegularExpression"}:
            key[f.name] = draw(st.sampled_from(["x", "y"])) if f.type == "string" else 0
    if draw(st.booleans()):
        return ev(0, record_type, None, **key)
    value_message = wire.RECORD_TYPES[rt.value_from or record_type].value
    version = 3 if record_type == 2 else value_message.valid[0]
    return ev(0, record_type, draw(message_values(value_message, version)), **key)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(group_event(), max_size=14), scala=st.booleans())
def test_any_sequence_of_group_records_replays_without_error(events, scala):
    for offset, event in enumerate(events):
        event.log_offset = offset
    row = replay(*events, scala=scala)
    assert row["state"] in {
        "Dead", "Empty", "Stable", "Assigning", "Reconciling", "NotReady",
    }  # fmt: skip
    assert row["group_id"] == G


def test_replay_batches_handles_many_groups_and_partitions():
    """The mapInArrow body: several groups, interleaved partitions, one row per group."""
    records = []
    for partition in (0, 1):
        for group in ("a", "b"):
            records.append(
                {
                    "log_partition": partition,
                    "group_id": group,
                    "log_offset": 1,
                    "record_type": 3,
                    "is_tombstone": False,
                    "member_id": None,
                    "regular_expression": None,
                    "value_json": json.dumps({"Epoch": 5}),
                }
            )
    batch = pa.RecordBatch.from_pylist(records)
    rows = [r for b in replay_batches(iter([batch])) for r in b.to_pylist()]
    assert [(r["log_partition"], r["group_id"], r["generation"]) for r in rows] == [
        (0, "a", 5),
        (0, "b", 5),
        (1, "a", 5),
        (1, "b", 5),
    ]


# ---- G-M4: a member that leaves ---------------------------------------------------------------


def test_current_assignment_tombstone_resets_the_member_to_epoch_minus_one():
    """G-M4: the tombstone keeps the member, with member and previous epoch -1 and no
    partitions; its state stays; -1 never equals the target epoch, so the group reconciles."""
    row = replay(
        ev(1, 3, {"Epoch": 2}), ev(2, 6, {"AssignmentEpoch": 2}), member(3, "m1"),
        member(4, "m2"), assignment(5, "m1", epoch=2), assignment(6, "m2", epoch=2),
        ev(7, 8, None, MemberId="m2"),
    )  # fmt: skip
    left = members_of(row)["m2"]
    assert (left["member_epoch"], left["previous_member_epoch"], left["member_state"]) == (
        -1, -1, "STABLE",
    )  # fmt: skip
    assert (left["assigned_partitions"], left["partitions_pending_revocation"]) == ([], [])
    assert (row["member_count"], row["state"]) == (2, "Reconciling")


def test_static_member_temporary_leave_keeps_the_member_with_epoch_minus_two():
    """G-M4: consumerGroupStaticMemberGroupLeave writes a current-assignment value, epoch -2."""
    row = replay(
        ev(1, 3, {"Epoch": 2}), ev(2, 6, {"AssignmentEpoch": 2}), member(3, "m1"),
        assignment(4, "m1", epoch=2), assignment(5, "m1", epoch=-2, partitions=()),
    )  # fmt: skip
    assert members_of(row)["m1"]["member_epoch"] == -2
    assert (row["member_count"], row["state"]) == (1, "Reconciling")


def test_member_without_current_assignment_has_the_member_defaults():
    """ConsumerGroupMember.Builder: epoch 0, previous epoch -1, state STABLE."""
    row = replay(ev(1, 3, {"Epoch": 0}), member(2, "m1"))
    m1 = members_of(row)["m1"]
    assert (m1["member_epoch"], m1["previous_member_epoch"], m1["member_state"]) == (
        0, -1, "STABLE",
    )  # fmt: skip
    assert row["state"] == "Reconciling"  # member epoch 0, initial assignment epoch 1 (G-M3)


# ---- streams groups (G-T1..G-T8) -------------------------------------------------------------


def streams_member(offset: int, member_id: str) -> Event:
    return ev(
        offset, 19, {"ClientId": "cl", "ProcessId": "p", "TopologyEpoch": 1}, MemberId=member_id
    )


def streams_assignment(offset: int, member_id: str, epoch: int, state_code: int = 1) -> Event:
    value = {"MemberEpoch": epoch, "PreviousMemberEpoch": epoch - 1, "State": state_code}
    return ev(offset, 22, value, MemberId=member_id)


def topology(offset: int, epoch: int = 1) -> Event:
    def info(name: str) -> dict:
        return {"Name": name, "Partitions": 1, "ReplicationFactor": 1, "TopicConfigs": []}

    subtopologies = [
        {"SubtopologyId": "0", "SourceTopics": ["orders"], "SourceTopicRegex": ["re.*"],
         "StateChangelogTopics": [info("app-store-changelog")],
         "RepartitionSinkTopics": ["app-by-key-repartition"], "RepartitionSourceTopics": [],
         "CopartitionGroups": []},
        {"SubtopologyId": "1", "SourceTopics": [], "SourceTopicRegex": [],
         "StateChangelogTopics": [], "RepartitionSinkTopics": [],
         "RepartitionSourceTopics": [info("app-by-key-repartition")], "CopartitionGroups": []},
    ]  # fmt: skip
    return ev(offset, 23, {"Epoch": epoch, "Subtopologies": subtopologies})


def streams_group(*, validated: int | None = 1, epoch: int = 3, target: int = 3) -> list[Event]:
    metadata = {"Epoch": epoch, "MetadataHash": 0}
    if validated is not None:
        metadata["ValidatedTopologyEpoch"] = validated
    return [
        ev(1, 17, metadata), topology(2), ev(3, 20, {"AssignmentEpoch": target}),
        streams_member(4, "s1"), streams_assignment(5, "s1", epoch=target),
    ]  # fmt: skip


def test_streams_group_states():
    """G-T5, first that holds: Empty, NotReady, Assigning, Reconciling, Stable."""
    assert replay(ev(1, 17, {"Epoch": 3}), topology(2))["state"] == "Empty"
    stable = replay(*streams_group())
    assert (stable["group_type"], stable["protocol_type"], stable["state"]) == (
        "streams", "streams", "Stable",
    )  # fmt: skip
    assert stable["generation"] == 3
    assert replay(*streams_group(epoch=4))["state"] == "Assigning"
    for code in (2, 3, 0):  # UNREVOKED_TASKS, UNRELEASED_TASKS, and 0 (STABLE only for consumers)
        events = [*streams_group(), streams_assignment(6, "s1", epoch=3, state_code=code)]
        assert replay(*events)["state"] == "Reconciling", code


def test_streams_group_not_ready():
    """G-T5: no topology, or a topology epoch the coordinator has not validated (G-T3: an
    absent ValidatedTopologyEpoch, as 4.1 writes it, is -1)."""
    for events in (
        streams_group(validated=None),
        streams_group(validated=0),
        [*streams_group(), ev(6, 23, None)],  # topology tombstone
        [e for e in streams_group() if e.record_type != 23],
    ):
        row = replay(*events)
        assert row["state"] == "NotReady"
    # NotReady groups are subscribed (G-T6); without a topology there is nothing to subscribe to
    assert replay(*streams_group(validated=0))["subscribed_topics"] == [
        "app-by-key-repartition", "orders",
    ]  # fmt: skip
    no_topology = [e for e in streams_group() if e.record_type != 23]
    assert replay(*no_topology)["subscribed_topics"] == []


def test_streams_member_states_are_named_with_the_streams_codes():
    """G-T4: 1 STABLE, 2 UNREVOKED_TASKS, 3 UNRELEASED_TASKS."""
    for code, name in ((1, "STABLE"), (2, "UNREVOKED_TASKS"), (3, "UNRELEASED_TASKS")):
        events = [*streams_group(), streams_assignment(6, "s1", epoch=3, state_code=code)]
        assert members_of(replay(*events))["s1"]["member_state"] == name


def test_streams_subscribed_topics_are_source_and_repartition_source_topics():
    """G-T6: not changelog topics, not regex sources, not repartition sinks (by themselves)."""
    assert replay(*streams_group())["subscribed_topics"] == ["app-by-key-repartition", "orders"]
    emptied = replay(
        *streams_group(), ev(6, 22, None, MemberId="s1"), ev(7, 19, None, MemberId="s1")
    )
    assert (emptied["state"], emptied["subscribed_topics"]) == ("Empty", [])  # G-T8


def test_streams_group_replaces_a_simple_group():
    """G-U3/G-U4: offsets first made a simple group; the streams records replace it quietly."""
    row = replay(offsets_at(0), *streams_group())
    assert (row["group_type"], row["state"], row["state_notes"]) == ("streams", "Stable", None)


def test_consumer_group_replaces_a_simple_group_of_a_compacted_log():
    """G-U4: the GroupMetadata tombstone between the offsets and the group was compacted away."""
    row = replay(offsets_at(0), ev(2, 3, {"Epoch": 1}), member(3, "m1"), assignment(4, "m1", 0))
    assert (row["group_type"], row["generation"], row["state_notes"]) == ("consumer", 1, None)


# ---- share groups -----------------------------------------------------------------------------


def test_share_group_states():
    assert replay(ev(1, 11, {"Epoch": 2}))["state"] == "Empty"
    row = replay(
        ev(1, 11, {"Epoch": 2}),
        ev(2, 10, {"ClientId": "c", "SubscribedTopicNames": ["t"]}, MemberId="m"),
    )
    assert (row["group_type"], row["protocol_type"], row["state"], row["subscribed_topics"]) == (
        "share", "share", "Stable", ["t"],
    )  # fmt: skip


def test_share_group_never_replaces_another_group():
    """2.4: getOrMaybeCreateShareGroup fails on a group of another type, even a simple one."""
    row = replay(offsets_at(0), ev(1, 11, {"Epoch": 2}))
    assert (row["group_type"], row["protocol_type"], row["state"]) == ("classic", None, "Empty")
    assert "share" in row["state_notes"]
    held = "share group record for an id a classic group holds"
    assert failures(row) == [(CLASH, 1, None, held)]  # the loader stops there (LOG-8)
    row = replay(ev(1, 3, {"Epoch": 1}), member(2, "m1"), ev(3, 11, {"Epoch": 2}))
    assert (row["group_type"], row["member_count"]) == ("consumer", 1)
    held = "share group record for an id a consumer group holds"
    assert failures(row) == [(CLASH, 3, None, held)]


# ---- what an incremental run keeps of a group: `needed_records` -----------------------------

# consumer and streams groups (a share group keeps every record), the classic records that
# replace them, and target-assignment members (7), which only the LOG-6 checks read
_KEPT_TYPES = (2, 3, 4, 5, 6, 7, 8, 16, 17, 19, 20, 22, 23)


def _replays_like_the_whole_history(history: list[Event], later: list[Event], scala: bool):
    events = [*history, *later]
    for offset, event in enumerate(events):
        event.log_offset = offset
    needed = needed_records(history)
    kept = [event for event, is_needed in zip(history, needed, strict=True) if is_needed]
    assert replay(*kept, *later, scala=scala) == replay(*events, scala=scala)
    return kept


@pytest.mark.slow  # hypothesis fuzzing, seconds per case: `make test`, not test-fast
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=st.lists(group_event(_KEPT_TYPES), max_size=18),
    later=st.lists(group_event(_KEPT_TYPES), max_size=6),
    scala=st.booleans(),
)
def test_the_needed_records_and_any_later_ones_replay_like_the_whole_history(history, later, scala):
    """An incremental run keeps only the needed records of a modern group; whatever records
    follow, the group replays as from its whole history (state, members, notes)."""
    _replays_like_the_whole_history(history, later, scala)


@st.composite
def member_level_event(draw) -> Event:
    """A consumer group's record of the kinds that read and write members and assignments
    (G-M4), of one of two members, or a group epoch or classic record; values built directly
    (not through the codec), so that many sequences are tried."""
    record_type = draw(st.sampled_from((2, 3, 6, 5, 5, 5, 8, 8, 8)))
    member_id = draw(st.sampled_from(("a", "a", "b")))
    n = draw(st.integers(1, 3))
    values = {
        2: {"protocolType": "consumer", "generation": n, "members": []},
        3: {"Epoch": n},
        5: {"ClientId": f"c{n}", "SubscribedTopicNames": ["t"]},
        6: {"AssignmentEpoch": n},
        8: {"MemberEpoch": n, "PreviousMemberEpoch": n - 1, "State": n % 2,
            "AssignedPartitions": []},
    }  # fmt: skip
    is_tombstone = draw(st.booleans())
    return Event(
        log_offset=0,
        record_type=record_type,
        is_tombstone=is_tombstone,
        member_id=member_id if record_type in (5, 8) else None,
        value=None if is_tombstone else values[record_type],
    )


@pytest.mark.slow  # hypothesis fuzzing, seconds per case: `make test`, not test-fast
@settings(max_examples=3000)
@given(
    history=st.lists(member_level_event(), min_size=3, max_size=10),
    later=st.lists(member_level_event(), max_size=4),
)
def test_the_needed_member_records_replay_like_the_whole_history(history, later):
    _replays_like_the_whole_history(history, later, scala=False)


def test_a_member_left_by_its_assignment_tombstone_is_replayed_as_left():
    """G-M4 reads whether the member exists: the member record before the tombstone is needed
    although a newer one replaces it."""
    history = [ev(0, 3, {"Epoch": 1}), member(1, "a"), ev(2, 8, None, MemberId="a"), member(3, "a")]
    kept = _replays_like_the_whole_history(history, [], scala=False)
    assert [e.log_offset for e in kept] == [0, 1, 2, 3]
    assert members_of(replay(*kept))["a"]["member_epoch"] == -1


def test_a_member_tombstone_for_a_removed_member_keeps_the_removal():
    """LOG-6 reads whether the member is there: the broker ignores a tombstone for a member it
    does not have, so the tombstone that removed the member before a stray assignment is
    needed; without it the last tombstone would fail the load (member epoch 1)."""
    history = [
        member(0, "a"),
        ev(1, 8, None, MemberId="a"),
        ev(2, 5, None, MemberId="a"),
        ev(3, 8, {"MemberEpoch": 1, "PreviousMemberEpoch": 0, "State": 1,
                  "AssignedPartitions": []}, MemberId="a"),
        ev(4, 5, None, MemberId="a"),
    ]  # fmt: skip
    kept = _replays_like_the_whole_history(history, [], scala=False)
    assert replay(*kept)["load_failures"] == []


def test_a_tombstone_that_replaces_a_simple_group_is_kept():
    """A consumer-group tombstone replaces a simple group (replaces_simple_group): the
    target-assignment tombstone written on it decides whether a later group tombstone passes
    LOG-6, so it is kept although it changes no cell another record wrote."""
    history = [offsets_at(0), ev(1, 6, None), ev(2, 4, None)]
    kept = _replays_like_the_whole_history(history, [ev(3, 3, None)], scala=False)
    assert [e.log_offset for e in kept] == [0, 1, 2]
    assert replay(*kept, ev(3, 3, None))["state"] == "Dead"
    without = replay(offsets_at(0), ev(3, 3, None))["load_failures"]  # the tombstones dropped
    assert [f["failed_check"] for f in without] == [GROUP_KEEPS_TARGET_EPOCH]


def test_the_scala_loader_keeps_a_simple_group_under_consumer_tombstones():
    """The Scala coordinators skip record types >= 3: the simple group stays."""
    row = replay(offsets_at(0), ev(1, 6, None), ev(2, 3, None), scala=True)
    assert (row["group_type"], row["state"], row["load_failures"]) == ("classic", "Empty", [])


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=st.lists(group_event(), max_size=14),
    later=st.lists(group_event(), max_size=5),
)
def test_the_needed_records_of_any_group_family_replay_like_the_whole_history(history, later):
    _replays_like_the_whole_history(history, later, scala=False)


def test_a_group_that_rebalanced_many_times_keeps_what_its_state_needs():
    """Every rebalance writes the group's epoch, the target epoch, the members' target and
    current assignments again: of 20 rebalances of two members, the records of the last
    one (and each member's metadata) are kept, however many came before. The last target
    assignment of a (100) is kept for the LOG-6 check of a later member tombstone of a."""
    history = [ev(0, 3, {"Epoch": 1}), member(1, "a"), member(2, "b")]
    for epoch in range(1, 21):
        history += [
            ev(0, 3, {"Epoch": epoch}),
            ev(0, 6, {"AssignmentEpoch": epoch}),
            ev(0, 7, {"TopicPartitions": []}, MemberId="a"),
            assignment(0, "a", epoch),
            assignment(0, "b", epoch, partitions=(1,)),
        ]
    history.append(ev(0, 8, None, MemberId="b"))  # b leaves: G-M4 reads its last assignment
    kept = _replays_like_the_whole_history(history, [], scala=False)
    by_offset = {e.log_offset: e.record_type for e in kept}
    assert by_offset == {0: 3, 1: 5, 2: 5, 98: 3, 99: 6, 100: 7, 101: 8, 102: 8, 103: 8}


# ---- LOG-6: tombstones the new coordinator refuses to replay -------------------------------


def target_member(offset: int, member_id: str) -> Event:
    return ev(offset, 7, {"TopicPartitions": []}, MemberId=member_id)


def leaves(offset: int, member_id: str) -> list[Event]:
    """What the coordinator writes when a member leaves: current-assignment, target-assignment
    and member tombstones, in that order."""
    return [
        ev(offset, 8, None, MemberId=member_id),
        ev(offset + 1, 7, None, MemberId=member_id),
        ev(offset + 2, 5, None, MemberId=member_id),
    ]


def consumer_group_with(*member_ids: str) -> list[Event]:
    events = [ev(0, 3, {"Epoch": 1}), ev(1, 6, {"AssignmentEpoch": 1})]
    for i, member_id in enumerate(member_ids):
        events += [
            member(10 + 3 * i, member_id),
            target_member(11 + 3 * i, member_id),
            assignment(12 + 3 * i, member_id, 1, partitions=(i,)),
        ]
    return events


def failures(row: dict) -> list[tuple]:
    return [tuple(failure.values()) for failure in row["load_failures"]]


def test_a_group_deleted_as_the_coordinator_writes_it_loads():
    """W-2: each member's tombstones, then the target-assignment metadata tombstone, then the
    group's: every check passes."""
    events = [*consumer_group_with("a", "b"), *leaves(20, "a"), *leaves(30, "b")]
    row = replay(*events, ev(40, 6, None), ev(41, 3, None))
    assert (row["state"], row["load_failures"], row["state_notes"]) == ("Dead", [], None)


def test_a_group_tombstone_while_members_remain_fails_the_load():
    """LOG-6, as partial compaction leaves it: the members' tombstones are gone, the group's
    survived. Reported with the check and the record; the group is still removed."""
    row = replay(*consumer_group_with("b", "a"), ev(40, 6, None), ev(41, 3, None))
    assert failures(row) == [
        ("GROUP_TOMBSTONE_WITH_MEMBERS", 41, None, "members a, b remain"),
        ("GROUP_TOMBSTONE_WITH_TARGET_ASSIGNMENT_MEMBERS", 41, None, "target assignment of a, b"),
    ]
    assert row["state"] == "Dead"
    assert row["state_notes"] == (
        "LOG-6: the broker fails to load offsets partition 7 (GROUP_TOMBSTONE_WITH_MEMBERS, "
        "GROUP_TOMBSTONE_WITH_TARGET_ASSIGNMENT_MEMBERS; table load_failures)"
    )


def test_a_group_tombstone_without_the_target_assignment_tombstone_fails_the_load():
    events = [*consumer_group_with("a"), *leaves(20, "a"), ev(41, 3, None)]
    assert failures(replay(*events)) == [
        ("GROUP_TOMBSTONE_WITHOUT_TARGET_ASSIGNMENT_TOMBSTONE", 41, None,
         "target assignment epoch 1"),
    ]  # fmt: skip


def test_a_member_tombstone_before_its_assignment_tombstones_fails_the_load():
    """The member's epoch is not -1 (no current-assignment tombstone before), and it is still
    in the target assignment (no target-assignment member tombstone before)."""
    row = replay(*consumer_group_with("a"), ev(20, 5, None, MemberId="a"))
    assert failures(row) == [
        ("MEMBER_TOMBSTONE_WITH_EPOCH_NOT_MINUS_ONE", 20, "a", "member epoch 1"),
        (
            "MEMBER_TOMBSTONE_WITH_TARGET_ASSIGNMENT",
            20,
            "a",
            "the member is in the target assignment",
        ),
    ]
    only_target = [*consumer_group_with("a"), ev(20, 8, None, MemberId="a")]
    row = replay(*only_target, ev(21, 5, None, MemberId="a"))
    assert [f[0] for f in failures(row)] == ["MEMBER_TOMBSTONE_WITH_TARGET_ASSIGNMENT"]
    # a member without a current-assignment record has the builder's epoch 0
    row = replay(ev(0, 3, {"Epoch": 1}), member(1, "a"), ev(2, 5, None, MemberId="a"))
    assert failures(row) == [
        ("MEMBER_TOMBSTONE_WITH_EPOCH_NOT_MINUS_ONE", 2, "a", "member epoch 0")
    ]


def test_tombstones_the_broker_ignores_fail_no_check():
    """A member tombstone for an unknown member, a group tombstone for an absent group, and the
    Scala coordinators (which read no modern record) load."""
    row = replay(*consumer_group_with("a"), ev(20, 5, None, MemberId="zz"))
    assert row["load_failures"] == []
    assert replay(ev(0, 3, None), ev(1, 5, None, MemberId="a"))["load_failures"] == []
    group_tombstone = [*consumer_group_with("a"), ev(41, 3, None)]
    assert replay(*group_tombstone, scala=True)["load_failures"] == []


def test_streams_and_share_groups_have_the_same_checks():
    streams = replay(*streams_group(), ev(9, 17, None))
    assert [f[0] for f in failures(streams)] == [
        "GROUP_TOMBSTONE_WITH_MEMBERS",
        "GROUP_TOMBSTONE_WITHOUT_TARGET_ASSIGNMENT_TOMBSTONE",
    ]
    share = replay(
        ev(0, 11, {"Epoch": 1}),
        ev(1, 10, {"ClientId": "c", "SubscribedTopicNames": ["t"]}, MemberId="s"),
        ev(2, 10, None, MemberId="s"),
    )
    assert failures(share) == [
        ("MEMBER_TOMBSTONE_WITH_EPOCH_NOT_MINUS_ONE", 2, "s", "member epoch 0")
    ]


def test_a_group_that_fails_a_check_keeps_every_record_in_an_incremental_run():
    """The partition stays unloadable while these records are in the log: the kept records
    must fail the same check in the next run."""
    history = [*consumer_group_with("a"), ev(20, 5, None, MemberId="a")]
    assert needed_records(history) == [True] * len(history)


def test_the_streams_stored_description_epoch_is_read():
    """DEL-STREAMS-PLUGIN reads StoredDescriptionTopologyEpoch (tag 2, 4.4.0; absent = -1)."""
    events = streams_group()
    assert replay(*events)["stored_description_topology_epoch"] == -1
    stored = ev(1, 17, {"Epoch": 3, "MetadataHash": 0, "ValidatedTopologyEpoch": 1,
                        "StoredDescriptionTopologyEpoch": 1})  # fmt: skip
    assert replay(stored, *events[1:])["stored_description_topology_epoch"] == 1
    assert replay(*consumer_group_with("a"))["stored_description_topology_epoch"] is None


# ---- LOG-7: a current assignment claiming a partition another member holds ----------------

TP = f"{TOPIC_ID}-"


def two_members(epoch_a: int, epoch_b: int) -> list[Event]:
    """a holds partitions 0 and 1 at `epoch_a`; b's assignment then claims 1 and 2 at
    `epoch_b`, a's release of partition 1 compacted away."""
    return [
        ev(1, 3, {"Epoch": 9}), ev(2, 6, {"AssignmentEpoch": 9}),
        member(3, "a"), member(4, "b"),
        assignment(5, "a", epoch=epoch_a, partitions=(0, 1)),
        assignment(6, "b", epoch=epoch_b, partitions=(1, 2)),
    ]  # fmt: skip


def test_a_claim_of_a_partition_held_at_an_equal_or_higher_epoch_fails_the_load():
    """Every 4.x broker: 'Cannot set the epoch of T-1 to 5 because the partition is still owned
    at epoch E' for E >= 5."""
    for held in (5, 6):
        row = replay(*two_members(held, 5))
        assert failures(row) == [
            ("ASSIGNMENT_CLAIMS_PARTITION_HELD_AT_EQUAL_OR_HIGHER_EPOCH", 6, "b",
             f"{TP}1 claimed at epoch 5, held at epoch {held}"),
        ]  # fmt: skip
        assert row["state_notes"] == (
            "LOG-7: the broker fails to load offsets partition 7 "
            "(ASSIGNMENT_CLAIMS_PARTITION_HELD_AT_EQUAL_OR_HIGHER_EPOCH; table load_failures)"
        )


def test_a_claim_over_a_lower_epoch_fails_only_on_the_releases_before_the_fix():
    """Overwritten from 4.0.2, 4.1.2 and 4.2.0; up to 4.0.1 and in 4.1.0-4.1.1 it fails."""
    row = replay(*two_members(4, 5))
    assert failures(row) == [
        ("ASSIGNMENT_CLAIMS_PARTITION_HELD_AT_LOWER_EPOCH", 6, "b",
         f"{TP}1 claimed at epoch 5, held at epoch 4 "
         "(refused by a broker up to 4.0.1 or of 4.1.0-4.1.1)"),
    ]  # fmt: skip
    assert row["state_notes"] == (
        "LOG-7: a broker up to 4.0.1 or of 4.1.0-4.1.1 fails to load offsets partition 7 "
        "(ASSIGNMENT_CLAIMS_PARTITION_HELD_AT_LOWER_EPOCH; table load_failures)"
    )


def test_a_holder_overwritten_at_a_higher_epoch_fails_when_its_metadata_is_replayed_again():
    """b took partition 1 over at epoch 5 (a held it at 4): a's later member metadata record
    re-claims a's partitions at 4 (its release of 1 at 4 no longer matches), now under b's 5."""
    row = replay(*two_members(4, 5), member(7, "a"))
    assert [(f[0], f[1], f[2]) for f in failures(row)] == [
        ("ASSIGNMENT_CLAIMS_PARTITION_HELD_AT_LOWER_EPOCH", 6, "b"),
        ("ASSIGNMENT_CLAIMS_PARTITION_HELD_AT_EQUAL_OR_HIGHER_EPOCH", 7, "a"),
    ]


def test_claims_released_as_the_coordinator_writes_them_load():
    """A partition moves from a to b: a's new assignment (epoch 6, without it) comes first, so
    b's claim at 6 finds it free; a member's tombstones release what it held; a partition
    both assigned and pending revocation is one claim too many."""
    moved = [
        *two_members(5, 5)[:5],
        assignment(6, "a", epoch=6, partitions=(0,)),
        assignment(7, "b", epoch=6, partitions=(1, 2)),
        *leaves(8, "b"),
        assignment(11, "a", epoch=7, partitions=(0, 1, 2)),
    ]
    assert replay(*moved)["load_failures"] == []
    both = {
        "MemberEpoch": 3, "PreviousMemberEpoch": 2, "State": 1,
        "AssignedPartitions": [{"TopicId": TOPIC_ID, "Partitions": [0]}],
        "PartitionsPendingRevocation": [{"TopicId": TOPIC_ID, "Partitions": [0]}],
    }  # fmt: skip
    assert failures(replay(ev(1, 8, both, MemberId="a"))) == [
        ("ASSIGNMENT_CLAIMS_PARTITION_HELD_AT_EQUAL_OR_HIGHER_EPOCH", 1, "a",
         f"{TP}0 claimed at epoch 3, held at epoch 3"),
    ]  # fmt: skip


def test_streams_groups_and_the_scala_coordinators_do_not_check_claims():
    assert replay(*two_members(5, 5), scala=True)["load_failures"] == []
    a = {"MemberEpoch": 2, "PreviousMemberEpoch": 1, "State": 1,
         "ActiveTasks": [{"SubtopologyId": "s", "Partitions": [0]}]}  # fmt: skip
    streams = replay(ev(1, 22, a, MemberId="a"), ev(2, 22, a, MemberId="b"))
    assert streams["load_failures"] == []


def test_the_releases_that_refuse_lower_epoch_claims():
    from tests.reference.releases import refuses_lower_epoch_claims

    refusing = [r for r in ((4, 0, 0), (4, 0, 1), (4, 0, 2), (4, 1, 0), (4, 1, 1), (4, 1, 2),
                            (4, 2, 0), (4, 4, 0)) if refuses_lower_epoch_claims(r)]  # fmt: skip
    assert refusing == [(4, 0, 0), (4, 0, 1), (4, 1, 0), (4, 1, 1)]


# ---- EV-EMPTY-EPOCH: the last member's leave, as 4.3.2+ and 4.4.0+ write it ----------------


def test_an_empty_group_shows_which_broker_wrote_its_last_leave():
    """4.3.2+/4.4.0+ follow the last member's tombstones with the group epoch and the target
    assignment at that epoch; older brokers bump only the group epoch."""
    before = [*consumer_group_with("a"), *leaves(20, "a"), ev(23, 3, {"Epoch": 2})]
    older = replay(*before)
    assert (older["state"], older["generation"], older["target_assignment_epoch"]) == (
        "Empty", 2, 1,
    )  # fmt: skip
    assert older["state_notes"] == (
        "EV-EMPTY-EPOCH: group epoch 2 ahead of assignment epoch 1: last written by a broker "
        "before 4.3.2, not damage"
    )
    newer = replay(*before, ev(24, 6, {"AssignmentEpoch": 2}))
    assert (newer["state"], newer["load_failures"]) == ("Empty", [])
    assert newer["state_notes"] == (
        "EV-EMPTY-EPOCH: the last member's leave wrote assignment epoch 2: written by 4.3.2+ "
        "or 4.4.0+"
    )
    # no leave replayed, or members left: no evidence
    assert replay(ev(0, 3, {"Epoch": 1}), ev(1, 6, {"AssignmentEpoch": 1}))["state_notes"] is None
    assert replay(*consumer_group_with("a"))["state_notes"] is None


def test_a_group_never_assigned_has_the_initial_assignment_epoch():
    """G-M3 (shrunk from the generated logs on 4.4.0, 5,000 groups: 11 Empty consumer groups
    whose log has group epochs but no target-assignment value): the broker describes assignment
    epoch 1 (`TargetAssignmentMetadata.INITIAL`), not 0, whatever the group epoch became."""
    once = replay(ev(1, 3, {"Epoch": 1}), offsets_at(2))
    assert (once["state"], once["generation"], once["target_assignment_epoch"]) == ("Empty", 1, 1)
    assert once["state_notes"] in (None, "")
    twice = replay(ev(1, 3, {"Epoch": 1}), offsets_at(2), ev(3, 3, {"Epoch": 2}))
    assert (twice["generation"], twice["target_assignment_epoch"]) == (2, 1)
    assert twice["state_notes"].startswith("EV-EMPTY-EPOCH: group epoch 2 ahead of assignment")


def test_records_of_types_the_coordinator_skips_make_no_group():
    """Types 9 and 18 (share and streams partition metadata, removed before 4.1 and never
    released) are unknown to the new coordinator, which skips them (shrunk from the generated
    logs on 4.4.0: the broker answered Dead where the job showed an Empty group)."""
    assert replay(ev(1, 9, {"Topics": []}))["state"] == "Dead"
    assert replay(ev(1, 18, {"Topics": []}))["state"] == "Dead"
    row = replay(ev(1, 11, {"Epoch": 2}), ev(2, 9, {"Topics": []}), ev(3, 9, None))
    assert (row["group_type"], row["state"], row["generation"]) == ("share", "Empty", 2)
