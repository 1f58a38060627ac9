"""LOG-7 partition by partition, as the new coordinator's loader walks it
(`ConsumerGroup.currentPartitionEpoch`): the reference `partition_claims.failed_claims` is
compared against."""

from __future__ import annotations

from typing import Any

from offsets_lib.audit.partition_claims import (
    CLAIM_OVER_EQUAL_OR_HIGHER_EPOCH,
    CLAIM_OVER_LOWER_EPOCH,
    MemberUpdate,
    member_epoch,
)


def claimed(assignment: dict[str, Any] | None) -> list[tuple[str, int]]:
    """AssignedPartitions, then PartitionsPendingRevocation (a partition in both: twice)."""
    out: list[tuple[str, int]] = []
    for name in ("AssignedPartitions", "PartitionsPendingRevocation"):
        for topic in (assignment or {}).get(name) or []:
            out += [(str(topic.get("TopicId")), p) for p in topic.get("Partitions") or []]
    return out


def walked_claims(updates: list[MemberUpdate]) -> dict[int, list[tuple[str, str]]]:
    """Each update releases its old partitions held at the old epoch, then claims the new ones:
    a claim of a held partition fails, and takes the partition anyway."""
    held: dict[int, dict[tuple[str, int], int]] = {}
    out: dict[int, list[tuple[str, str]]] = {}
    for i, update in enumerate(updates):
        partitions = held.setdefault(id(update.held), {})
        old_epoch = member_epoch(update.old)
        for partition in claimed(update.old):
            if partitions.get(partition) == old_epoch:
                del partitions[partition]
        epoch = member_epoch(update.new)
        for topic, number in claimed(update.new):
            holder = partitions.get((topic, number))
            if holder is not None:
                check = (
                    CLAIM_OVER_EQUAL_OR_HIGHER_EPOCH if holder >= epoch else CLAIM_OVER_LOWER_EPOCH
                )
                detail = f"{topic}-{number} claimed at epoch {epoch}, held at epoch {holder}"
                out.setdefault(i, []).append((check, detail))
            partitions[(topic, number)] = epoch
    return out
