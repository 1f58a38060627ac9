"""Decisions the broker makes on cases no golden scenario covers, through the production path:
one audit task (`task_audit.task_tables`, which applies the EXP/ODEL/DEL rules) and the rows
it writes of each table (`table_rows.table_rows`).

Each case is its own group in one small log, audited once per coordinator.
"""

from __future__ import annotations

import pytest

from offsets_lib.audit import task_audit
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.rules import Params
from offsets_lib.audit.table_rows import table_rows
from offsets_lib.audit.tables import table_spec
from offsets_lib.io.delta_schema import arrow_schema
from tests.log_builder import batch, commit, group_record, marker, tombstone

pytestmark = pytest.mark.spark
DAY = 86_400_000
RETENTION = 7 * DAY
AS_OF = 10 * DAY  # every commit below (commit time 1000 ms) is older than the retention
P = 7


def _streams_group(group: str, *, validated: int) -> list[dict]:
    """A streams group with one reconciled member and a topology of epoch 1."""
    subtopology = {
        "SubtopologyId": "0", "SourceTopics": ["orders"], "SourceTopicRegex": [],
        "StateChangelogTopics": [], "RepartitionSinkTopics": [], "RepartitionSourceTopics": [],
        "CopartitionGroups": [],
    }  # fmt: skip
    metadata = {"Epoch": 3, "MetadataHash": 0, "ValidatedTopologyEpoch": validated}
    member = {"ClientId": "c", "ProcessId": "p", "TopologyEpoch": 1}
    assignment = {"MemberEpoch": 3, "PreviousMemberEpoch": 2, "State": 1}  # 1 = STABLE (G-T4)
    return [
        group_record(17, group, metadata),
        group_record(23, group, {"Epoch": 1, "Subtopologies": [subtopology]}),
        group_record(20, group, {"AssignmentEpoch": 3}),
        group_record(19, group, member, MemberId="s"),
        group_record(22, group, assignment, MemberId="s"),
    ]


LOG = [
    # pending: an old committed offset and an open transaction on the same partition
    commit(10, group="pending"), commit(11, P, group="pending"),
    # recreated: a tombstone between a transaction's offset and its commit marker
    commit(50, P + 1, group="recreated"), tombstone(group="recreated"), marker(P + 1),
    # simple: a group that only commits offsets (generation -1 commits), all expired
    commit(5, group="simple"),
    # streams-not-ready: members, but topology epoch 1 is not validated (0)
    *_streams_group("streams-not-ready", validated=0),
    commit(1, group="streams-not-ready", topic="orders"),
    commit(2, group="streams-not-ready", topic="old"),
    # streams-empty: its only member left; its offsets expired
    group_record(17, "streams-empty", {"Epoch": 4, "MetadataHash": 0}),
    commit(3, group="streams-empty"),
    # share: an Empty share group
    group_record(11, "share", {"Epoch": 1, "MetadataHash": 0}),
    # streams-plugin: Empty, its offset expired, written under a topology-description plugin
    group_record(17, "streams-plugin",
                 {"Epoch": 4, "MetadataHash": 0, "StoredDescriptionTopologyEpoch": 2}),
    commit(4, group="streams-plugin"),
    # unloadable (LOG-6): its member's tombstones and the target-assignment tombstone were
    # compacted away before the group tombstone (log offsets 18-20)
    group_record(3, "unloadable", {"Epoch": 1}),
    group_record(5, "unloadable", {"ClientId": "c", "SubscribedTopicNames": ["orders"]},
                 MemberId="m"),
    group_record(3, "unloadable", None),
]  # fmt: skip


def _decide(coordinator: Coordinator) -> dict[str, list[dict]]:
    params = Params(retention_ms=RETENTION, as_of_ms=AS_OF)
    tables = task_audit.task_tables(iter([batch(LOG)]), coordinator=coordinator, params=params)
    names = ("offsets", "offset_decisions", "groups", "group_decisions", "load_failures")
    return {
        name: table_rows(
            name,
            tables,
            run_id="r",
            as_of_ms=AS_OF,
            schema=arrow_schema(table_spec(name), with_comments=False),
        )
        .drop_columns(["run_id", "as_of"])
        .to_pylist()
        for name in names
    }


@pytest.fixture(scope="module")
def decided() -> dict[Coordinator, dict[str, list[dict]]]:
    return {c: _decide(c) for c in (Coordinator.NEW, Coordinator.CLASSIC_2_4)}


def _offsets(tables: dict, group: str) -> dict[str, tuple]:
    return {
        r["topic"]: (r["expired"], r["rule"], r["delete_error"])
        for r in tables["offset_decisions"]
        if r["group_id"] == group
    }


def _group(tables: dict, name: str) -> dict:
    (row,) = [r for r in tables["group_decisions"] if r["group_id"] == name]
    return row


def test_open_transaction_keeps_the_committed_offset_from_expiring(decided) -> None:
    """New coordinator: EXP-TXN-PENDING (the sweep skips the partition) and no group deletion.
    Scala: no such row, the committed offset expires, but the pending offset keeps the group."""
    new, scala = decided[Coordinator.NEW], decided[Coordinator.CLASSIC_2_4]
    assert _offsets(new, "pending") == {"orders": (False, "EXP-TXN-PENDING", None)}
    assert _group(new, "pending")["blocked_by"] == "PENDING_TRANSACTION"
    assert _offsets(scala, "pending") == {"orders": (True, "EXP-SIMPLE-COMMIT-TS", None)}
    assert _group(scala, "pending")["blocked_by"] == "PENDING_TRANSACTION"


def test_transaction_committed_after_a_tombstone(decided) -> None:
    """TXN-4 (new) wipes the pending offset; the Scala loader re-creates it (semantics.md 1.3)."""
    new, scala = decided[Coordinator.NEW], decided[Coordinator.CLASSIC_2_4]
    assert [r for r in new["offsets"] if r["group_id"] == "recreated"] == []
    (row,) = [r for r in scala["offsets"] if r["group_id"] == "recreated"]
    assert row["committed_offset"] == 50


def test_simple_group_deletion_by_coordinator(decided) -> None:
    """KAFKA-16543: a generation-0 (simple) group gets a GroupMetadata tombstone from the new
    coordinator only (DEL-NEW vs DEL-CLASSIC)."""
    assert _group(decided[Coordinator.NEW], "simple")["deleted"] is True
    scala = _group(decided[Coordinator.CLASSIC_2_4], "simple")
    assert (scala["deleted"], scala["blocked_by"]) == (False, "GENERATION_0_NO_TOMBSTONE")


def test_streams_and_share_groups(decided) -> None:
    """G-T5/G-T6/G-T7, share groups, and 4.1: offsets of every group type are expired."""
    new = decided[Coordinator.NEW]
    groups = {r["group_id"]: r for r in new["groups"]}
    assert groups["streams-not-ready"]["state"] == "NotReady"
    assert groups["streams-not-ready"]["subscribed_topics"] == ["orders"]
    assert _offsets(new, "streams-not-ready") == {
        "orders": (False, "EXP-SUBSCRIBED", "GROUP_SUBSCRIBED_TO_TOPIC"),
        "old": (True, "EXP-MODERN-COMMIT-TS", None),
    }
    assert _group(new, "streams-not-ready")["blocked_by"] == "NOT_EMPTY"
    assert (groups["streams-empty"]["state"], groups["streams-empty"]["subscribed_topics"]) == (
        "Empty", [],
    )  # fmt: skip
    assert _offsets(new, "streams-empty") == {"orders": (True, "EXP-MODERN-COMMIT-TS", None)}
    assert _group(new, "streams-empty")["deleted"] is True
    assert (groups["share"]["group_type"], groups["share"]["state"]) == ("share", "Empty")
    assert _group(new, "share")["blocked_by"] == "SHARE_GROUP"


def test_a_stored_topology_description_keeps_the_streams_group(decided) -> None:
    """DEL-STREAMS-PLUGIN: its expired offset goes, the group stays at T (deletes_at null)."""
    new = decided[Coordinator.NEW]
    assert _offsets(new, "streams-plugin") == {"orders": (True, "EXP-MODERN-COMMIT-TS", None)}
    row = _group(new, "streams-plugin")
    assert (row["deleted"], row["deletes_at"], row["rule"], row["blocked_by"]) == (
        False, None, "DEL-STREAMS-PLUGIN", "TOPOLOGY_DESCRIPTION_STORED",
    )  # fmt: skip


def test_a_group_tombstone_the_loader_refuses_is_reported(decided) -> None:
    """LOG-6: one load_failures row per failed check; the group is Dead with a note."""
    new = decided[Coordinator.NEW]
    assert sorted(new["load_failures"], key=lambda r: r["failed_check"]) == [
        {"offsets_partition": 0, "group_id": "unloadable",
         "failed_check": "GROUP_TOMBSTONE_WITHOUT_TARGET_ASSIGNMENT_TOMBSTONE",
         "log_offset": 20, "member_id": None, "detail": "target assignment epoch 1"},
        {"offsets_partition": 0, "group_id": "unloadable",
         "failed_check": "GROUP_TOMBSTONE_WITH_MEMBERS", "log_offset": 20, "member_id": None,
         "detail": "members m remain"},
    ]  # fmt: skip
    (group,) = [r for r in new["groups"] if r["group_id"] == "unloadable"]
    assert group["state"] == "Dead"
    assert group["state_notes"].startswith("LOG-6: the broker fails to load offsets partition 0")
    assert decided[Coordinator.CLASSIC_2_4]["load_failures"] == []
