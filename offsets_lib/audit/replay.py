"""Group state as the coordinator's loader rebuilds it (semantics.md section 2, rows G-*).

The replay is a pure function over one group's records in log order. Group-level records are a
small share of a dump, so they are replayed in Python; offset commits enter only as one summary
event per group (the log offset of its newest offset-commit value), which is all the loader
needs from them to decide whether a "simple" group exists (G-S1/G-S2). The rows it emits, and
those of groups without modern records, are built in group_rows.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from offsets_lib.audit import partition_claims
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.group_rows import (
    CLASSIC,
    CONSUMER,
    LOAD_FAILURE,
    SHARE,
    STREAMS,
    dead_group_row,
    member_row,
    partition_row,
    simple_group_row,
)
from offsets_lib.audit.partition_claims import RECORD_OF_ANOTHER_GROUP_TYPE

OFFSET_SUMMARY = -1  # pseudo record type: "an offset-commit value was replayed at this offset"
READER_LIMIT = -2  # pseudo record type: a record only DEC-LIMIT reads (offset commit, rejected)
# Record types of each modern group family: (metadata record, every record of the family).
# Types 9 and 18 (partition metadata removed before 4.1 and never released) are unknown to the
# coordinator, which skips them (records.md section 8; found by the generated logs on 4.4.0).
_MODERN_TYPES = {
    CONSUMER: (3, {3, 4, 5, 6, 7, 8, 16}),
    SHARE: (11, {10, 11, 12, 13, 14, 15}),
    STREAMS: (17, {17, 19, 20, 21, 22, 23}),
}
_FAMILY_OF = {t: fam for fam, (_, types) in _MODERN_TYPES.items() for t in types}
# the families whose records replace a simple classic group (`isSimpleGroup`, G-U4; streams
# from 4.3 on: 4.1 refuses them, LOG-8); a share group replaces none
REPLACE_SIMPLE_GROUPS = frozenset({CONSUMER, STREAMS})
# Member-state codes of the current-assignment records (records.md, types 8, 14 and 22).
_MEMBER_STATES = {
    CONSUMER: {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 127: "UNKNOWN"},
    SHARE: {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 127: "UNKNOWN"},
    STREAMS: {1: "STABLE", 2: "UNREVOKED_TASKS", 3: "UNRELEASED_TASKS", 127: "UNKNOWN"},
}
_STABLE_MEMBER_STATE = {CONSUMER: 0, SHARE: 0, STREAMS: 1}
# G-M4: a current-assignment tombstone leaves the member with these epochs (Kafka's
# LEAVE_GROUP_MEMBER_EPOCH); a member that has no current-assignment record yet has the member
# builder's defaults (epoch 0, previous epoch -1, state STABLE).
LEFT_MEMBER_EPOCH = -1
_NEW_MEMBER_EPOCHS = (0, -1)
EVERY_VALUE_TYPES = frozenset({4, 8})
"""Record types whose every value the replay reads (topic names accumulate; LOG-7 claims the
partitions of every current assignment of a consumer group in turn). Of any
other type it reads only the newest value of each key: an older value of the same key is
replaced, or its group dropped, before the group's row is built, so a caller may pass
`value=None` for those (batch_decode.decode_task_records does)."""
RAW_VALUE_TYPES = frozenset({2, 8})
"""Read from the raw bytes as columns, so the task's decoding leaves them undecoded where the
layout walk vouches for them (the event then holds a `RawValue`): GroupMetadata (a classic
group's last value, read with every other group's: group_rows.classic_group_rows) and the
consumer groups' current assignments (group_results reads them all at once, topic ids as
text)."""
LAST_VALUE_TYPES = frozenset({8, 14, 22})
"""Current-assignment records: a tombstone keeps the member's state from the value before it
(G-M4), so the replay also reads the newest value of each such key."""

# LOG-6: the new coordinator refuses to replay these tombstones (IllegalStateException in
# GroupMetadataManager.replay) and so fails to load the whole offsets partition; the ids name the
# check in the `load_failures` table. A group tombstone (types 3, 11, 17) while the group still
# has members, or target-assignment members, or a target-assignment epoch (its tombstone, types
# 6, 12, 20, was not replayed first); a member tombstone (types 5, 10, 19) whose member epoch is
# not -1 (no current-assignment tombstone first) or whose member is still in the target assignment.
GROUP_HAS_MEMBERS = "GROUP_TOMBSTONE_WITH_MEMBERS"
GROUP_HAS_TARGET_MEMBERS = "GROUP_TOMBSTONE_WITH_TARGET_ASSIGNMENT_MEMBERS"
GROUP_KEEPS_TARGET_EPOCH = "GROUP_TOMBSTONE_WITHOUT_TARGET_ASSIGNMENT_TOMBSTONE"
MEMBER_EPOCH_NOT_LEFT = "MEMBER_TOMBSTONE_WITH_EPOCH_NOT_MINUS_ONE"
MEMBER_IN_TARGET = "MEMBER_TOMBSTONE_WITH_TARGET_ASSIGNMENT"
_TARGET_MEMBER_TYPES = frozenset({7, 13, 21})


@dataclass
class _Modern:
    """A KIP-848 consumer, streams or share group being replayed."""

    family: str
    epoch: int = 0
    # G-M3: without a target-assignment value, the coordinator's initial assignment epoch: 1
    # (`TargetAssignmentMetadata.INITIAL`, 4.3.0 on; 4.0-4.2 started at 0)
    target_epoch: int = 1
    members: dict[str, dict[str, Any]] = field(default_factory=dict)
    assignments: dict[str, dict[str, Any]] = field(default_factory=dict)
    regexes: dict[str, list[str]] = field(default_factory=dict)
    topic_names: dict[str, str] = field(default_factory=dict)
    # streams (G-T2, G-T3): the topology's epoch and subscribed topics (None: no topology), and
    # the topology epoch the coordinator validated (-1 when never validated)
    topology_epoch: int | None = None
    topology_topics: list[str] = field(default_factory=list)
    validated_topology_epoch: int = -1
    # DEL-STREAMS-PLUGIN: the topology epoch a description plugin holds (-1: none, -2: uncertain)
    stored_description_topology_epoch: int = -1
    # members of the target assignment (types 7, 13, 21), read only by the LOG-6 checks
    target_members: set[str] = field(default_factory=set)
    # EV-EMPTY-EPOCH: a member tombstone was replayed, and a target-assignment value after it
    member_left: bool = False
    target_after_leave: bool = False


@dataclass(frozen=True)
class RawValue:
    """A value left undecoded (RAW_VALUE_TYPES): the decoded table's row that holds it."""

    row: int


@dataclass(slots=True)
class Event:
    """One group-level record of the log, in the shape the replay needs."""

    log_offset: int | None
    record_type: int
    is_tombstone: bool = False
    member_id: str | None = None
    regular_expression: str | None = None
    value: dict[str, Any] | RawValue | partition_claims.ReadAssignment | None = None
    value_version: int | None = None
    reader_limit: str | None = None  # DEC-LIMIT: the decoded column (wire.codec.reader_limit)


def replay_group(
    log_partition: int,
    group_id: str,
    events: Iterable[Event],
    *,
    coordinator: Coordinator = Coordinator.NEW,
    classic_row: Callable[[Any, int | None], dict[str, Any]],
) -> dict[str, Any]:
    """Replay one group's records in log order and return its row (state Dead when absent).

    A Scala coordinator (`coordinator.is_scala`) skips record types >= 3. `classic_row` builds
    a classic group's row from its last GroupMetadata value and that value's version (a caller
    replaying many groups collects them instead, to build their rows as columns).
    """
    replayed = replay_steps(
        log_partition, group_id, events, coordinator=coordinator, classic_row=classic_row
    )
    return replayed.finished(partition_claims.failed_claims(replayed.updates))


@dataclass
class Replayed:
    """A group replayed but for its LOG-7 check (`replay_steps`), which a caller replaying many
    groups makes for all of them at once (partition_claims.failed_claims)."""

    row: dict[str, Any]  # without state_notes and load_failures
    log_partition: int
    notes: list[str]
    failures: list[dict[str, Any]]  # the other checks', in log order
    updates: list[partition_claims.MemberUpdate]
    # per update: where its failures go among `failures` (after the event's others), and the
    # update's log offset and member id
    places: list[tuple[int, int | None, str]]

    def finished(
        self, claims: Mapping[int, list[tuple[str, str]]], first: int = 0
    ) -> dict[str, Any]:
        """The group's row, with the failed claims of its updates (`claims` by update index,
        its first update at `first`) among its load failures, and the notes they call for."""
        failures, done = [], 0
        for i, (place, log_offset, member_id) in enumerate(self.places):
            failed = claims.get(first + i)
            if failed:
                failures += self.failures[done:place]
                failures += [
                    dict(zip(LOAD_FAILURE.names,
                             (check, log_offset, member_id, partition_claims.detail(check, what)),
                             strict=True))
                    for check, what in failed
                ]  # fmt: skip
                done = place
        failures += self.failures[done:]
        notes = self.notes + _load_failure_notes(self.log_partition, failures)
        self.row["state_notes"] = "; ".join(notes) or None
        self.row["load_failures"] = failures
        return self.row


def replay_steps(
    log_partition: int,
    group_id: str,
    events: Iterable[Event],
    *,
    coordinator: Coordinator = Coordinator.NEW,
    classic_row: Callable[[Any, int | None], dict[str, Any]],
) -> Replayed:
    """`replay_group` up to the LOG-7 check: the group's member updates are collected."""
    # long: the loader's one dispatch over record types, in log order, read against the loader
    # The classic group is its last GroupMetadata value ({} = a simple group without one). Each
    # value replaces the whole group, so only the last one is parsed, once, after the replay.
    classic: dict[str, Any] | None = None
    classic_version: int | None = None
    modern: _Modern | None = None
    removed_at = -1
    notes: list[str] = []
    failures: list[dict[str, Any]] = []
    updates: list[partition_claims.MemberUpdate] = []
    places: list[tuple[int, int | None, str]] = []
    reads_modern_records = coordinator.reads_modern_records
    for event in events:
        kind = event.record_type
        if event.reader_limit is not None and reads_modern_records:
            failures.append(
                partition_claims.reader_limit_failure(
                    event.log_offset, event.member_id, event.reader_limit
                )
            )
        if kind == READER_LIMIT:
            continue
        if kind == OFFSET_SUMMARY:
            # G-S1/G-S2: an offset value for a group id without any group creates a simple group
            if (
                classic is None
                and modern is None
                and event.log_offset is not None
                and event.log_offset > removed_at
            ):
                classic = {}
            continue
        if kind == 2:
            if event.is_tombstone:
                classic, removed_at = None, event.log_offset
            else:
                if modern is not None:
                    notes.append("classic group record while a modern group existed (G-U2)")
                    modern = None
                classic = event.value or {"protocolType": ""}
                classic_version = event.value_version
            continue
        family = _FAMILY_OF.get(kind)
        if family is None or not reads_modern_records:
            continue
        metadata_type = _MODERN_TYPES[family][0]
        if holds_another_type(family, classic, modern):
            held = modern.family if modern is not None else CLASSIC
            detail = f"{family} group record for an id a {held} group holds"
            failures.append(_failure(RECORD_OF_ANOTHER_GROUP_TYPE, event, event.member_id, detail))
        if event.is_tombstone and replaces_simple_group(family, classic, modern):
            classic, modern = None, _Modern(family)
        if modern is not None and modern.family == family:
            failures += load_check_failures(modern, event)
        if event.is_tombstone and kind == metadata_type:
            if modern is not None and modern.family == family:
                modern, removed_at = None, event.log_offset
            continue
        if event.is_tombstone and (modern is None or modern.family != family):
            continue  # deleting something of a group that does not exist: nothing happens
        if modern is None or modern.family != family:
            if family == SHARE and (classic is not None or modern is not None):
                # a share group never takes over an id another group holds (2.4, G-U3)
                notes.append("share group records for an id held by another group were ignored")
                continue
            if classic:  # G-U1/G-U3 replace an Empty classic group after its tombstone; a simple
                # group ({}) needs none (G-U4: its tombstone may have been compacted away)
                notes.append(f"{family} group records replaced a classic group (G-U1)")
            classic = None
            modern = _Modern(family)
        update = _member_update(modern, event)
        if update is not None:
            updates.append(update)
            places.append((len(failures), event.log_offset, event.member_id or ""))
        _apply_modern(modern, event)
    if classic is not None:
        row = classic_row(classic, classic_version) if classic else simple_group_row()
    elif modern is not None:
        row = _modern_row(modern)
        notes += _writer_evidence(modern, row["state"])
    else:
        row = dead_group_row()
    row.update(log_partition=log_partition, group_id=group_id)
    return Replayed(row, log_partition, notes, failures, updates, places)


def replaces_simple_group(
    family: str, classic: dict[str, Any] | RawValue | None, modern: _Modern | None
) -> bool:
    """G-U4 for tombstones: a consumer- or streams-group tombstone of an id held only by a
    simple group (`is_simple_group`) first replaces it with an Empty group of its family (G-M3's
    initial target-assignment epoch), as a value does: the new coordinator's replay looks the
    group up with `getOrMaybeCreatePersisted*Group`, which swaps a simple group even for a
    tombstone (streams: 4.3+). So tombstones 6, 4, 3 (streams:
    20, 17) remove the group (Dead: no DEL-NEW tombstone left to write), and a lone tombstone 3
    fails LOG-6 (no target-assignment tombstone)."""
    return family in REPLACE_SIMPLE_GROUPS and modern is None and is_simple_group(classic)


def is_simple_group(classic: Any) -> bool:
    """`ClassicGroup.isSimpleGroup`: offsets only (`classic == {}`), or a GroupMetadata value
    of no protocol type and no members. A value the replay did not read (not a dict) is not
    (`needed_records` keeps it)."""
    if classic == {}:
        return True
    return (
        isinstance(classic, dict)
        and classic.get("members", [0]) == []
        and not classic.get("protocolType")
    )


def holds_another_type(family: str, classic: Any, modern: _Modern | None) -> bool:
    """LOG-8: the new coordinator's replay of a `family` record (value or tombstone) fails the
    load when the id is held by a group of another type (`getOrMaybeCreatePersisted*Group`:
    IllegalStateException "Group g is not a consumer group"). Consumer and streams records
    replace a simple classic group instead (`is_simple_group`); share records replace none."""
    if modern is not None:
        return modern.family != family
    if classic is None:
        return False
    return family not in REPLACE_SIMPLE_GROUPS or not is_simple_group(classic)


def _failure(check: str, event: Event, member_id: str | None, detail: str) -> dict[str, Any]:
    return dict(zip(LOAD_FAILURE.names, (check, event.log_offset, member_id, detail), strict=True))


def load_check_failures(group: _Modern, event: Event) -> list[dict[str, Any]]:
    """LOG-6: the new coordinator's replay checks that `event`, a record of `group`'s own family,
    fails (empty when it passes or is not a group or member tombstone). A member tombstone for
    a member the group does not have is ignored by the broker, and so here."""
    if not event.is_tombstone:
        return []
    kind, member_id = event.record_type, event.member_id or ""
    failed: list[tuple[str, str | None, str]] = []
    if kind == _MODERN_TYPES[group.family][0]:
        if group.members:
            failed.append((GROUP_HAS_MEMBERS, None, f"members {_some(group.members)} remain"))
        if group.target_members:
            names = _some(group.target_members)
            failed.append((GROUP_HAS_TARGET_MEMBERS, None, f"target assignment of {names}"))
        if group.target_epoch != -1:
            failed.append(
                (GROUP_KEEPS_TARGET_EPOCH, None, f"target assignment epoch {group.target_epoch}")
            )
    elif kind in (5, 10, 19) and member_id in group.members:
        epoch = _state_and_epoch(group, member_id)[1]
        if epoch != LEFT_MEMBER_EPOCH:
            failed.append((MEMBER_EPOCH_NOT_LEFT, member_id, f"member epoch {epoch}"))
        if member_id in group.target_members:
            failed.append((MEMBER_IN_TARGET, member_id, "the member is in the target assignment"))
    return [_failure(check, event, member, detail) for check, member, detail in failed]


def _member_update(group: _Modern, event: Event) -> partition_claims.MemberUpdate | None:
    """LOG-7: what a consumer-group member record releases and claims (audit.partition_claims),
    or None for a record that claims nothing."""
    if group.family != CONSUMER or event.record_type not in partition_claims.MEMBER_UPDATE_TYPES:
        return None  # most records: no member lookup
    member_id = event.member_id or ""
    known = member_id in group.members or member_id in group.assignments
    if not partition_claims.replays_member_update(event.record_type, event.is_tombstone, known):
        return None
    old = group.assignments.get(member_id)
    new = partition_claims.updated_assignment(
        event.record_type, event.is_tombstone, old, event.value
    )
    return partition_claims.MemberUpdate(group, old, new)


def _load_failure_notes(log_partition: int, failures: list[dict[str, Any]]) -> list[str]:
    """One note per rule whose checks fail (LOG-6, LOG-7, LOG-8), naming the checks."""
    notes = []
    for rule, checks in partition_claims.checks_by_rule(failures).items():
        who = partition_claims.refusing_brokers(checks)
        notes.append(
            f"{rule}: {who} fails to load offsets partition {log_partition} "
            f"({', '.join(checks)}; table load_failures)"
        )
    return notes


def _writer_evidence(group: _Modern, state: str) -> list[str]:
    """EV-EMPTY-EPOCH: from 4.3.2 and 4.4.0 the last member's leave also writes the target
    assignment at the new group epoch; an Empty group whose group epoch is ahead of its
    assignment epoch was last written by an older broker (evidence, not damage)."""
    if state != "Empty":
        return []
    if group.epoch > group.target_epoch >= 0:
        return [
            f"EV-EMPTY-EPOCH: group epoch {group.epoch} ahead of assignment epoch "
            f"{group.target_epoch}: last written by a broker before 4.3.2, not damage"
        ]
    if group.target_after_leave and group.target_epoch == group.epoch:
        return [
            f"EV-EMPTY-EPOCH: the last member's leave wrote assignment epoch {group.epoch}: "
            "written by 4.3.2+ or 4.4.0+"
        ]
    return []


def _some(member_ids: Iterable[str], shown: int = 3) -> str:
    """A few member ids for a message, sorted: 'a, b, c and 2 more'."""
    ids = sorted(member_ids)
    more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
    return ", ".join(ids[:shown]) + more


def _apply_modern(group: _Modern, event: Event) -> None:
    """Apply one consumer/streams/share record (G-M1..G-M5 and their analogues)."""
    kind, value, member_id = event.record_type, event.value or {}, event.member_id or ""
    if kind in (3, 11, 17):
        group.epoch = value.get("Epoch", 0)
        if kind == 17:  # G-T3: absent (written by 4.1) = -1
            validated = value.get("ValidatedTopologyEpoch")
            group.validated_topology_epoch = -1 if validated is None else validated
            stored = value.get("StoredDescriptionTopologyEpoch")  # absent (before 4.4) = -1
            group.stored_description_topology_epoch = -1 if stored is None else stored
    elif kind in (6, 12, 20):
        group.target_epoch = -1 if event.is_tombstone else value.get("AssignmentEpoch", 0)
        group.target_after_leave = group.member_left and not event.is_tombstone
    elif kind in (5, 10, 19):
        if event.is_tombstone:  # the member is gone, with its current assignment
            group.member_left, group.target_after_leave = True, False
            group.members.pop(member_id, None)
            group.assignments.pop(member_id, None)
        else:
            group.members[member_id] = value
    elif kind in _TARGET_MEMBER_TYPES:
        if event.is_tombstone:
            group.target_members.discard(member_id)
        else:
            group.target_members.add(member_id)
    elif kind in (8, 14, 22):
        if not event.is_tombstone:
            group.assignments[member_id] = value
        elif member_id in group.members or member_id in group.assignments:
            # G-M4: the member is reset, not removed
            group.assignments[member_id] = _left(group, group.assignments.get(member_id))
    elif kind == 16:
        if event.is_tombstone:
            group.regexes.pop(event.regular_expression or "", None)
        else:
            group.regexes[event.regular_expression or ""] = list(value.get("Topics") or [])
    elif kind == 4 and not event.is_tombstone:
        for topic in value.get("Topics") or []:
            group.topic_names[str(topic.get("TopicId"))] = topic.get("TopicName")
    elif kind == 23:
        group.topology_epoch = None if event.is_tombstone else value.get("Epoch", 0)
        group.topology_topics = [] if event.is_tombstone else _topology_topics(value)


# What each record of a modern group's own family writes and reads of the replayed state
# (`_apply_modern`), for `needed_records`: cells are ("epoch",), ("target",), ("member", id),
# ("assignment", id), ("regex", expression), ("topology",). The types not listed change nothing
# once the group exists (target-assignment member records, partition-metadata tombstones, ...),
# except partition-metadata values (4), whose topic names accumulate: always needed.
_EPOCH, _TARGET, _TOPOLOGY = ("epoch",), ("target",), ("topology",)
_GROUP_CHECK_CELLS = frozenset({"member", "target_member", "target"})  # LOG-6 group tombstone
_ALWAYS_NEEDED_TYPES = frozenset({4})


def _cells(event: Event) -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...]]:
    """(written, read) cells of `event`, a record of the group's current family."""
    kind = event.record_type
    member, assignment = ("member", event.member_id or ""), ("assignment", event.member_id or "")
    if kind in (3, 11, 17):  # a value: metadata tombstones are handled before
        return ((_EPOCH, ("validated",)) if kind == 17 else (_EPOCH,)), ()
    if kind in _TARGET_MEMBER_TYPES:  # read by the LOG-6 checks of later tombstones
        return (("target_member", event.member_id or ""),), ()
    if kind in (6, 12, 20):
        return (_TARGET,), ()
    if kind in (5, 10, 19):  # LOG-6: a tombstone reads whether the member is there (the
        # broker ignores one for a member it does not have), its epoch and its target
        if event.is_tombstone:
            target_member = ("target_member", event.member_id or "")
            return (member, assignment), (member, assignment, target_member)
        return (member,), ()
    if kind in (8, 14, 22):  # G-M4: a tombstone reads the member and its assignment
        return (assignment,), ((member, assignment) if event.is_tombstone else ())
    if kind == 16:
        return (("regex", event.regular_expression or ""),), ()
    if kind == 23:
        return (_TOPOLOGY,), ()
    return (), ()


def needed_records(events: list[Event]) -> list[bool]:
    """Which of one group's records (in log order) a replay of them followed by any later
    records needs: dropping the others leaves `replay_group`'s state (and so its row, and what
    any later record does to it) as it was. What an incremental run keeps of a modern group,
    whose records would otherwise all be kept, run after run (every rebalance writes epochs and
    assignments again).

    A record is needed when it creates or removes a group, replaces one family by another,
    changes a classic group or leaves a note (the structure is replayed exactly), or when it
    writes a cell of the group's state (`_cells`) that a later needed record reads or that
    survives to the end. A share group's records are all needed (whether one takes over an id
    depends on offset commits, which are not among these records), and so are those of a group
    that may fail a LOG-6 check (replayed without values, the checks fail wherever a value
    might make them fail): the partition stays unloadable while these records are in the log."""
    # long: one backward pass whose cases mirror replay_group's, to be read side by side
    if any(_FAMILY_OF.get(e.record_type) == SHARE for e in events):
        return [True] * len(events)
    if replay_group(-1, "", events, classic_row=lambda _v, _version: simple_group_row())[
        "load_failures"
    ]:
        return [True] * len(events)
    # forward: which records change the group's existence (family), as the replay does
    modern: str | None = None
    needed = [False] * len(events)
    resets = [False] * len(events)
    regular: list[bool] = [False] * len(events)
    for i, event in enumerate(events):
        kind = event.record_type
        family = _FAMILY_OF.get(kind)
        if kind == 2:  # a value replaces a modern group (G-U2); a tombstone leaves it
            needed[i] = True
            if not event.is_tombstone:
                resets[i], modern = True, None
        elif family is None or (kind in _ALWAYS_NEEDED_TYPES and not event.is_tombstone):
            needed[i] = True  # offsets' summary, unknown types; accumulating topic names
            if family is not None and modern != family:
                resets[i], modern = True, family
        elif event.is_tombstone and modern is None and family in REPLACE_SIMPLE_GROUPS:
            # may replace a simple group (replaces_simple_group; whether one exists depends
            # on the offsets' summary): kept, and it resets nothing of another family
            needed[i] = True
        elif event.is_tombstone and (kind == _MODERN_TYPES[family][0] or modern != family):
            if modern == family:  # the group is removed; else nothing happens
                needed[i] = resets[i] = True
                modern = None
        elif modern != family:  # creates the group (or replaces another family's)
            needed[i] = resets[i] = True
            modern = family
        else:
            regular[i] = True
    # backward: a regular record is needed when it writes a cell still live after it. Before a
    # reset every cell is dead, except what a group tombstone's LOG-6 checks read (its members,
    # target-assignment members and target epoch) and what needed records before it read.
    dead: set[tuple[str, ...]] = set()
    alive: set[tuple[str, ...]] = set()
    alive_kinds: frozenset[str] = frozenset()
    all_dead = False
    for i in range(len(events) - 1, -1, -1):
        if resets[i]:
            all_dead, dead, alive = True, set(), set()
            is_group_tombstone = events[i].is_tombstone and events[i].record_type != 2
            alive_kinds = _GROUP_CHECK_CELLS if is_group_tombstone else frozenset()
        elif regular[i]:
            written, read = _cells(events[i])
            if any(
                cell not in dead and (not all_dead or cell in alive or cell[0] in alive_kinds)
                for cell in written
            ):
                needed[i] = True
                dead.update(written)
                dead.difference_update(read)
                alive.update(read)
    return needed


def _left(group: _Modern, assignment: dict[str, Any] | None) -> dict[str, Any]:
    """G-M4: a current-assignment tombstone sets member epoch and previous epoch to -1 and
    clears the partitions; the member's state stays what it was."""
    state = (assignment or {}).get("State", _STABLE_MEMBER_STATE[group.family])
    return {"MemberEpoch": LEFT_MEMBER_EPOCH, "PreviousMemberEpoch": LEFT_MEMBER_EPOCH,
            "State": state}  # fmt: skip


def _topology_topics(value: dict[str, Any]) -> list[str]:
    """Streams: source topics and repartition source topics of every subtopology."""
    topics: set[str] = set()
    for sub in value.get("Subtopologies") or []:
        topics.update(sub.get("SourceTopics") or [])
        topics.update(t.get("Name") for t in sub.get("RepartitionSourceTopics") or [])
    return sorted(t for t in topics if t)


def _modern_row(group: _Modern) -> dict[str, Any]:
    """G-M6 / G-T5 (state) and G-M7 / G-T6 (subscriptions) for a replayed modern group."""
    members = [_modern_member(group, mid, meta) for mid, meta in sorted(group.members.items())]
    if group.family == STREAMS:
        # G-T6: the topology's source and repartition source topics (none without one, or Empty)
        subscribed = group.topology_topics if members else []
    else:
        subscribed = sorted(
            {t for m in members for t in m["subscribed_topics"] or []}
            | {t for topics in group.regexes.values() for t in topics}
        )
    return {
        "group_type": group.family,
        "protocol_type": "consumer" if group.family == CONSUMER else group.family,
        "state": _modern_state(group, members),
        "generation": group.epoch,
        "protocol": None,
        "leader": None,
        "subscribed_topics": subscribed,
        "current_state_timestamp_ms": None,  # G-M8: not stored for modern groups
        "metadata_value_version": None,
        "target_assignment_epoch": group.target_epoch,
        "member_count": len(members),
        "members": members,
        "stored_description_topology_epoch": (
            group.stored_description_topology_epoch if group.family == STREAMS else None
        ),
    }


def _modern_state(group: _Modern, members: list[dict[str, Any]]) -> str:
    """G-M6 (consumer), G-T5 (streams), share groups: the first state that holds."""
    if not members:
        return "Empty"
    if group.family == SHARE:  # 2.4: Empty or Stable
        return "Stable"
    if group.family == STREAMS and (
        group.topology_epoch is None or group.topology_epoch != group.validated_topology_epoch
    ):
        return "NotReady"
    if group.epoch > group.target_epoch:
        return "Assigning"
    stable = (_STABLE_MEMBER_STATE[group.family], group.target_epoch)  # G-T4 "reconciled"
    if any(_state_and_epoch(group, m["member_id"]) != stable for m in members):
        return "Reconciling"
    return "Stable"


def _state_and_epoch(group: _Modern, member_id: str) -> tuple[int | None, int | None]:
    """A member's state code and member epoch (G-M5/G-T4), the builder's defaults without a
    current-assignment record."""
    assignment = group.assignments.get(member_id)
    if assignment is None:
        return _STABLE_MEMBER_STATE[group.family], _NEW_MEMBER_EPOCHS[0]
    return assignment.get("State"), assignment.get("MemberEpoch")


def _modern_member(group: _Modern, member_id: str, meta: dict[str, Any]) -> dict[str, Any]:
    assignment = group.assignments.get(member_id)
    if assignment is None:  # no current-assignment record yet: the member builder's defaults
        (epoch, previous), state_code = _NEW_MEMBER_EPOCHS, _STABLE_MEMBER_STATE[group.family]
    else:
        epoch = assignment.get("MemberEpoch")
        previous = assignment.get("PreviousMemberEpoch")
        state_code = assignment.get("State")
    classic_meta = meta.get("ClassicMemberMetadata") or {}
    return member_row(
        member_id=member_id,
        group_instance_id=meta.get("InstanceId"),
        client_id=meta.get("ClientId"),
        client_host=meta.get("ClientHost"),
        rack_id=meta.get("RackId"),
        subscribed_topics=sorted(set(meta.get("SubscribedTopicNames") or [])),
        subscribed_topic_regex=meta.get("SubscribedTopicRegex"),
        assigned_partitions=_assigned(group, (assignment or {}).get("AssignedPartitions")),
        partitions_pending_revocation=_assigned(
            group, (assignment or {}).get("PartitionsPendingRevocation")
        ),
        member_epoch=epoch,
        previous_member_epoch=previous,
        member_state=_MEMBER_STATES[group.family].get(state_code)
        if state_code is not None
        else None,
        rebalance_timeout_ms=meta.get("RebalanceTimeoutMs"),
        session_timeout_ms=classic_meta.get("SessionTimeoutMs"),
        server_assignor=meta.get("ServerAssignor"),
    )


def _assigned(group: _Modern, topics: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Flatten per-topic assignments; KIP-1251 assignment epochs are kept per partition."""
    out = []
    for tp in topics or []:
        topic_id = tp.get("TopicId")
        name = group.topic_names.get(str(topic_id)) if topic_id else tp.get("SubtopologyId")
        epochs = tp.get("AssignmentEpochs")
        for i, p in enumerate(tp.get("Partitions") or []):
            epoch = epochs[i] if epochs is not None and i < len(epochs) else None
            out.append(partition_row(name, str(topic_id) if topic_id else None, p, epoch))
    return out
