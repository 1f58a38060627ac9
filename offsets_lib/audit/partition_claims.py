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

The load_failures rows of every rule are named here too (`rule_of`, `refusing_brokers`), with
DEC-LIMIT's (`READER_LIMIT_REFUSERS`, `reader_limit_failure`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from offsets_lib.wire.codec import READER_LIMIT_CHECKS

Partition = tuple[str, int]  # (topic id, partition)

CLAIM_OVER_EQUAL_OR_HIGHER_EPOCH = "ASSIGNMENT_CLAIMS_PARTITION_HELD_AT_EQUAL_OR_HIGHER_EPOCH"
CLAIM_OVER_LOWER_EPOCH = "ASSIGNMENT_CLAIMS_PARTITION_HELD_AT_LOWER_EPOCH"
CLAIM_CHECKS = (CLAIM_OVER_EQUAL_OR_HIGHER_EPOCH, CLAIM_OVER_LOWER_EPOCH)
# LOG-8 (replay.holds_another_type): a modern group's record for an id another type holds
RECORD_OF_ANOTHER_GROUP_TYPE = "RECORD_FOR_GROUP_OF_ANOTHER_TYPE"


def claims(assignment: dict[str, Any] | None) -> list[Partition]:
    """The partitions an assignment value claims: AssignedPartitions, then
    PartitionsPendingRevocation (a partition in both is claimed twice)."""
    if not assignment:
        return []
    out: list[Partition] = []
    for name in ("AssignedPartitions", "PartitionsPendingRevocation"):
        for topic in assignment.get(name) or []:
            topic_id = str(topic.get("TopicId"))
            out += [(topic_id, p) for p in topic.get("Partitions") or []]
    return out


def member_epoch(assignment: dict[str, Any] | None) -> int:
    """The member epoch partitions are held at (a member without an assignment value has the
    builder's 0 and holds none)."""
    return (assignment or {}).get("MemberEpoch", 0)


def reassign(
    held: dict[Partition, int],
    old: dict[str, Any] | None,
    new: dict[str, Any] | None,
) -> list[tuple[str, str]]:
    """Release `old`'s partitions and claim `new`'s in `held` (updated in place, as the releases
    from 4.0.2/4.1.2/4.2.0 do: a lower holder is overwritten; after a failing claim the
    partition is taken anyway, the broker has stopped by then). Returns the failed LOG-7 checks
    as (check, detail)."""
    old_epoch = member_epoch(old)
    for partition in claims(old):
        if held.get(partition) == old_epoch:
            del held[partition]
    epoch = member_epoch(new)
    failed: list[tuple[str, str]] = []
    for partition in claims(new):
        holder = held.get(partition)
        if holder is not None:
            check = CLAIM_OVER_EQUAL_OR_HIGHER_EPOCH if holder >= epoch else CLAIM_OVER_LOWER_EPOCH
            topic_id, number = partition
            failed.append(
                (check, f"{topic_id}-{number} claimed at epoch {epoch}, held at epoch {holder}")
            )
        held[partition] = epoch
    return failed


def replays_member_update(record_type: int, is_tombstone: bool, member_known: bool) -> bool:
    """Whether a consumer-group record updates a member's partitions in the loader: member
    metadata and current-assignment values (creating the member), and their tombstones for a
    member the group has (a tombstone for an unknown member is ignored)."""
    if record_type not in (5, 8):
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
