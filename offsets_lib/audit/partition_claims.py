"""LOG-7: the partitions a consumer group's members hold, as the new coordinator's loader tracks
them (`ConsumerGroup.currentPartitionEpoch`), and the claims that make it fail the load.

Every replayed member record (ConsumerGroupMemberMetadata, type 5, and
ConsumerGroupCurrentMemberAssignment, type 8) updates the member: the loader first releases the
partitions the member held (assigned and pending revocation, at its member epoch), then claims
those of the updated member at its new member epoch. The map is keyed by partition alone: a
release removes a partition only where it is held at the released epoch. A claim of a partition
held at an equal or higher epoch fails the load of the whole offsets partition in every 4.x
release; one held at a lower epoch is overwritten from 4.0.2, 4.1.2 and 4.2.0 on, and fails the
load in the releases before (up to 4.0.1, 4.1.0-4.1.1), which refuse any held partition.
Streams groups only log a warning, share groups do not track epochs: consumer groups only.

Without an earlier failing claim every held partition is held at its holder's epoch, so the
releases of those older brokers (which fail on an epoch that does not match) fail nowhere else.
The replay collects each group's member updates (`MemberUpdate`); `failed_claims` checks those
of every group of a task at once, from the columns the current assignments were read into.

The load_failures rows of every rule are named here too (`rule_of`, `refusing_brokers`), with
DEC-LIMIT's (`READER_LIMIT_REFUSERS`, `reader_limit_failure`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib.audit.arrays import stable_order
from offsets_lib.wire.codec import READER_LIMIT_CHECKS

CLAIM_OVER_EQUAL_OR_HIGHER_EPOCH = "ASSIGNMENT_CLAIMS_PARTITION_HELD_AT_EQUAL_OR_HIGHER_EPOCH"
CLAIM_OVER_LOWER_EPOCH = "ASSIGNMENT_CLAIMS_PARTITION_HELD_AT_LOWER_EPOCH"
CLAIM_CHECKS = (CLAIM_OVER_EQUAL_OR_HIGHER_EPOCH, CLAIM_OVER_LOWER_EPOCH)
# LOG-8 (replay.holds_another_type): a modern group's record for an id another type holds
RECORD_OF_ANOTHER_GROUP_TYPE = "RECORD_FOR_GROUP_OF_ANOTHER_TYPE"


class ReadAssignment:
    """A current-assignment value read as columns (row `row` of `read`, wire.layout_read): its
    epochs and state at hand, its partitions converted to Python only when a caller asks
    (a member's row); LOG-7 takes them from the columns (`failed_claims`). Read like the
    codec's dict (`get`)."""

    __slots__ = ("_value", "read", "row", "scalars")

    def __init__(self, read: pa.StructArray, row: int, scalars: dict[str, Any]) -> None:
        self.read, self.row, self.scalars = read, row, scalars
        self._value: dict[str, Any] | None = None

    def get(self, name: str, default: Any = None) -> Any:
        """`dict.get` of the codec's value (a field present but null is None, not `default`)."""
        if name in self.scalars:
            return self.scalars[name]
        if self._value is None:
            self._value = self.read.slice(self.row, 1).to_pylist()[0]
        return self._value.get(name, default)

    @staticmethod
    def of(read: pa.StructArray) -> list[ReadAssignment]:
        """One per row of `read`."""
        names = ("MemberEpoch", "PreviousMemberEpoch", "State")
        columns = [read.field(name).to_pylist() for name in names]
        return [
            ReadAssignment(read, row, dict(zip(names, scalars, strict=True)))
            for row, scalars in enumerate(zip(*columns, strict=True))
        ]


Assignment = dict[str, Any] | ReadAssignment


class MemberUpdate(NamedTuple):
    """One replayed consumer-group member record, as LOG-7 sees it: the member's assignment
    before and after it (`updated_assignment`), in the group it updates (`held`: the replayed
    group object, whose partitions each update releases and claims)."""

    held: object
    old: Assignment | None
    new: Assignment | None


_LISTS = ("AssignedPartitions", "PartitionsPendingRevocation")


def failed_claims(updates: Sequence[MemberUpdate]) -> dict[int, list[tuple[str, str]]]:
    """LOG-7 over many groups' member updates (each group's in replay order) at once: by update
    index, its failed checks as (check, detail), in the order of its claims.

    Each update releases the old assignment's partitions (AssignedPartitions, then
    PartitionsPendingRevocation: a partition in both is claimed twice) where they are held at
    its member epoch, then claims the new one's: a claim of a held partition fails, and the
    partition is taken anyway (the releases from 4.0.2/4.1.2/4.2.0 overwrite a lower holder;
    the older ones have stopped by then). Per partition of a group, the holder after any step is
    the last claim's epoch unless a release at exactly that epoch came after it: so one stable
    sort of every release and claim by (group, topic, partition), a running maximum (the
    partition's last claim) and a running count of the releases that free it decide every
    claim. The partitions of the values read as columns (`ReadAssignment`: a task's ~8k values
    hold ~170k partitions) are taken from the columns, the others' from their dicts.
    Measured (the largest task of the 10M bench: 10,354 updates of 7,973 values): 0.10-0.12
    CPU-s claiming partition by partition in a dict, 0.045 s here."""
    # long: the values' partitions as flat arrays, the updates as runs of them, one sort
    if not updates:
        return {}
    steps = [value for update in updates for value in (update.old, update.new)]
    # each distinct value once (by identity; an empty one claims nothing), each group's by its
    # replayed group object
    value_ids = np.array([id(v) if v else 0 for v in steps], dtype=np.uint64)
    distinct, first_step, step_value = np.unique(value_ids, return_index=True, return_inverse=True)
    step_value = step_value.astype(np.int64)
    if len(distinct) and distinct[0] == 0:  # the empty values (id 0, first): -1, others from 0
        step_value -= 1
        first_step = first_step[1:]
    values = [steps[i] for i in first_step.tolist()]
    value_epoch = np.array([v.get("MemberEpoch", 0) for v in values] + [0], dtype=np.int64)
    step_epoch = value_epoch[step_value]  # an empty value (-1) has the last: 0
    held_ids = np.array([id(update.held) for update in updates], dtype=np.uint64)
    step_held = np.repeat(np.unique(held_ids, return_inverse=True)[1].astype(np.int64), 2)
    owner, topic_code, partition, names = _value_partitions(values)
    counts = np.bincount(owner, minlength=len(values)).astype(np.int64)
    firsts = np.r_[0, np.cumsum(counts)[:-1]] if len(values) else counts
    counted = counts[np.maximum(step_value, 0)] if len(values) else np.zeros_like(step_value)
    lengths = np.where(step_value >= 0, counted, 0)
    step = np.repeat(np.arange(len(step_value)), lengths)
    within = np.arange(len(step)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    entry = firsts[step_value[step]] + within
    is_claim = (step % 2) == 1  # steps alternate: release (old), claim (new)
    epoch = step_epoch[step]
    key = _packed((step_held[step], topic_code[entry], partition[entry]))
    order = stable_order(key)  # each partition's releases and claims in order
    n = len(order)
    position = np.arange(n)
    key = key[order]
    starts = np.r_[True, key[1:] != key[:-1]] if n else position > 0
    first = np.maximum.accumulate(np.where(starts, position, 0))
    claims_sorted, epochs = is_claim[order], epoch[order]
    last_claim = np.maximum.accumulate(np.where(claims_sorted, position, -1))
    last_claim = np.where(last_claim >= first, last_claim, -1)
    # a release at the epoch of the partition's last claim frees it
    frees = ~claims_sorted & (last_claim >= 0)
    frees &= epochs == epochs[np.maximum(last_claim, 0)]
    freed = np.cumsum(frees)
    before = np.r_[-1, last_claim[:-1]] if n else last_claim  # the claim before each row
    before = np.where(position > first, before, -1)
    held = claims_sorted & (before >= 0)
    held &= freed[np.maximum(position - 1, 0)] == freed[np.maximum(before, 0)]
    failing = np.sort(order[held])
    holder = np.empty(len(step), dtype=np.int64)
    holder[order] = epochs[np.maximum(before, 0)]
    out: dict[int, list[tuple[str, str]]] = {}
    for at in failing.tolist():
        claimed, was = int(epoch[at]), int(holder[at])
        check = CLAIM_OVER_EQUAL_OR_HIGHER_EPOCH if was >= claimed else CLAIM_OVER_LOWER_EPOCH
        what = f"{names[topic_code[entry[at]]]}-{partition[entry[at]]}"
        out.setdefault(int(step[at]) // 2, []).append(
            (check, f"{what} claimed at epoch {claimed}, held at epoch {was}")
        )
    return out


def _packed(columns: tuple[np.ndarray, ...]) -> np.ndarray:
    """One int64 per row that orders the rows as the columns do, lexicographically (dense
    codes instead where their bits do not fit in 63)."""
    if not len(columns[0]):
        return np.zeros(0, np.int64)
    shifted = [c - c.min() for c in columns]
    bits = [int(c.max()).bit_length() for c in shifted]
    if sum(bits) > 63:
        order = np.lexsort(columns[::-1])
        rows = np.stack([c[order] for c in columns])
        new = np.r_[True, np.any(rows[:, 1:] != rows[:, :-1], axis=0)]
        packed = np.empty(len(order), np.int64)
        packed[order] = np.cumsum(new) - 1
        return packed
    packed = np.zeros(len(columns[0]), np.int64)
    for column, width in zip(shifted, bits, strict=True):
        packed = (packed << width) | column
    return packed


def _value_partitions(
    values: list[Assignment],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """(value index, topic code, partition) of every partition the values claim, value by value
    in claim order, and the topic ids by code: from the columns for the values read as columns,
    else from the dicts. The topic ids are encoded per assignment entry, not per partition (the
    largest 10M task's ~170k claimed partitions lie in far fewer entries)."""
    from_read = [i for i, v in enumerate(values) if isinstance(v, ReadAssignment)]
    others = [i for i, v in enumerate(values) if not isinstance(v, ReadAssignment)]
    owners, topic_ids, entry_of, partitions = [], [], [], []
    reads = {id(values[i].read): values[i].read for i in from_read}
    for key, read in reads.items():
        mine = [i for i in from_read if id(values[i].read) == key]
        rows = read.take(pa.array([values[i].row for i in mine]))
        index = np.asarray(mine, dtype=np.int64)
        for name in _LISTS:
            lists = rows.field(name)
            entries = pc.list_flatten(lists)
            numbers = entries.field("Partitions")
            of_entry = np.asarray(pc.list_parent_indices(numbers), dtype=np.int64)
            of_value = np.asarray(pc.list_parent_indices(lists), dtype=np.int64)
            owners.append(index[of_value[of_entry]])
            topic_ids.append(pc.fill_null(entries.field("TopicId"), "None").cast(pa.string()))
            entry_of.append(of_entry)
            partitions.append(np.asarray(pc.list_flatten(numbers), dtype=np.int64))
    for i in others:
        for name in _LISTS:
            for entry in values[i].get(name) or []:
                numbers = entry.get("Partitions") or []
                owners.append(np.full(len(numbers), i, dtype=np.int64))
                topic_ids.append(pa.array([str(entry.get("TopicId"))], pa.string()))
                entry_of.append(np.zeros(len(numbers), dtype=np.int64))
                partitions.append(np.asarray(numbers, dtype=np.int64))
    if not owners:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), []
    encoded = pc.dictionary_encode(pa.concat_arrays(topic_ids))
    entry_code = np.asarray(encoded.indices, dtype=np.int64)
    first_entry = np.cumsum([0, *(len(ids) for ids in topic_ids[:-1])])
    topic = np.concatenate(
        [entry_code[first + e] for first, e in zip(first_entry, entry_of, strict=True)]
    )
    owner = np.concatenate(owners)
    by_value = np.argsort(owner, kind="stable")  # each value's AssignedPartitions first
    names = encoded.dictionary.to_pylist()
    return owner[by_value], topic[by_value], np.concatenate(partitions)[by_value], names


def member_epoch(assignment: Assignment | None) -> int:
    """The member epoch partitions are held at (a member without an assignment value has the
    builder's 0 and holds none)."""
    return (assignment or {}).get("MemberEpoch", 0)


MEMBER_UPDATE_TYPES = (5, 8)  # member metadata and current assignments: what LOG-7 replays


def replays_member_update(record_type: int, is_tombstone: bool, member_known: bool) -> bool:
    """Whether a consumer-group record updates a member's partitions in the loader: member
    metadata and current-assignment values (creating the member), and their tombstones for a
    member the group has (a tombstone for an unknown member is ignored)."""
    if record_type not in MEMBER_UPDATE_TYPES:
        return False
    return member_known or not is_tombstone


def updated_assignment(
    record_type: int, is_tombstone: bool, old: dict[str, Any] | None, value: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The member's assignment after the record: a current-assignment value replaces it, its
    tombstone empties it (epoch -1), member metadata keeps it, a member tombstone removes it."""
    if record_type == 8:
        return {"MemberEpoch": -1} if is_tombstone else (value or {})
    return None if is_tombstone else old


LOWER_EPOCH_REFUSERS = "a broker up to 4.0.1 or of 4.1.0-4.1.1"


def detail(check: str, what: str) -> str:
    """A load_failures detail: a lower-epoch claim fails only on the releases that refuse it."""
    if check == CLAIM_OVER_LOWER_EPOCH:
        return f"{what} (refused by {LOWER_EPOCH_REFUSERS})"
    return what


READER_LIMIT_REFUSERS = "a broker of 4.2.2+, 4.3.2+ or 4.4.0+"


def reader_limit_failure(
    log_offset: int | None, member_id: str | None, reader_limit: str
) -> dict[str, Any]:
    """DEC-LIMIT: the load_failures element of a record whose `reader_limit` (the decoded
    column, 'CHECK: what') is set; the detail names the releases that refuse it."""
    check, _, what = reader_limit.partition(": ")
    return {
        "failed_check": check,
        "log_offset": log_offset,
        "member_id": member_id,
        "detail": f"{what} (refused by {READER_LIMIT_REFUSERS})",
    }


def rule_of(check: str) -> str:
    """The rule a load_failures check belongs to: LOG-7's claims, LOG-8's type clash,
    DEC-LIMIT's reader limits, else LOG-6's tombstones."""
    if check in CLAIM_CHECKS:
        return "LOG-7"
    if check == RECORD_OF_ANOTHER_GROUP_TYPE:
        return "LOG-8"
    return "DEC-LIMIT" if check in READER_LIMIT_CHECKS else "LOG-6"


def checks_by_rule(failures: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """The distinct failed checks of `failures` (load_failures elements), sorted, by rule."""
    out: dict[str, list[str]] = {}
    for check in sorted({f["failed_check"] for f in failures}):
        out.setdefault(rule_of(check), []).append(check)
    return dict(sorted(out.items()))


def refusing_brokers(checks: Iterable[str]) -> str:
    """Who fails the load for these checks of one rule: every broker of the regime, unless
    only lower-epoch claims fail, or the checks are DEC-LIMIT's."""
    checks = set(checks)
    if checks == {CLAIM_OVER_LOWER_EPOCH}:
        return LOWER_EPOCH_REFUSERS
    return READER_LIMIT_REFUSERS if checks <= set(READER_LIMIT_CHECKS) else "the broker"
