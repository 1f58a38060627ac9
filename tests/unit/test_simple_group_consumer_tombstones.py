"""Consumer-group tombstones replayed on a simple group (offsets only), shrunk from the
differential check against a real 4.4.0 broker (tests/broker/generated.py, 5,000 groups: one
disagreement). Kafka's new coordinator replays a consumer-group record of a group that exists
as a simple classic group by replacing it with a consumer group
(`GroupMetadataManager.getOrMaybeCreatePersistedConsumerGroup`), so:

- offsets committed and deleted, then tombstones 6, 4, 3: the group is gone after the load
  (the 4.4.0 broker writes no group tombstone at its cleanup; the audit keeps an Empty classic
  group and predicts one, DEL-NEW);
- an offset committed, then a lone tombstone 3: the load of the partition fails (LOG-6,
  "Received a tombstone record to delete group ... but did not receive
  ConsumerGroupTargetAssignmentMetadataValue tombstone"; the audit predicts no failure).

The rule lives in the replay (offsets_lib/audit/replay.py, `replaces_simple_group`). A group
the broker removed is a Dead row of the groups table (contract.md: Dead groups included), like
a consumer group removed by its own tombstones, with nothing left to delete."""

from __future__ import annotations

from offsets_lib.audit import task_audit
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.rules import DAY_MS, Params
from tests.log_builder import batch, commit, group_record, tombstone

PARAMS = Params(retention_ms=7 * DAY_MS, as_of_ms=2 * DAY_MS)
NEW = Coordinator.NEW


def audit(log: list) -> dict:
    return task_audit.decided(
        task_audit.audit_records([batch(log)], coordinator=NEW), coordinator=NEW, params=PARAMS
    )


def test_consumer_tombstones_remove_a_simple_group() -> None:
    log = [commit(5), tombstone(), *(group_record(t, "g", None) for t in (6, 4, 3))]
    groups = audit(log)[task_audit.GROUP].to_pylist()
    fields = ("group_id", "group_type", "state", "load_failures", "deleted", "blocked_by")
    assert [tuple(g[f] for f in fields) for g in groups] == [
        ("g", "classic", "Dead", [], False, "DEAD")
    ]


def test_a_lone_group_tombstone_on_a_simple_group_fails_the_load() -> None:
    (group,) = audit([commit(5), group_record(3, "g", None)])[task_audit.GROUP].to_pylist()
    assert [(f["failed_check"], f["log_offset"]) for f in group["load_failures"]] == [
        ("GROUP_TOMBSTONE_WITHOUT_TARGET_ASSIGNMENT_TOMBSTONE", 1)
    ]


def test_streams_tombstones_remove_a_simple_group() -> None:
    """The same for a streams group's tombstones (20, 17, 23; `getOrMaybeCreatePersisted
    StreamsGroup` swaps a simple group from 4.3 on): found on 4.4.0 at 5,000 groups (gen-1-3585,
    whose streams values the compaction-like gaps removed; the audit predicted DEL-NEW)."""
    log = [commit(5), tombstone(), *(group_record(t, "g", None) for t in (20, 17, 23))]
    groups = audit(log)[task_audit.GROUP].to_pylist()
    fields = ("group_id", "group_type", "state", "load_failures", "deleted", "blocked_by")
    assert [tuple(g[f] for f in fields) for g in groups] == [
        ("g", "classic", "Dead", [], False, "DEAD")
    ]
