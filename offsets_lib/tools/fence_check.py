"""Would an offset commit be fenced? The FEN rows (`tools.fence`) applied to one run's tables.

Reads the group and its members with delta-rs and pyarrow (`tools.run_tables`, no Spark), asks
both rules (strict and relaxed) and says which one the chosen coordinator applies.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.tools.fence import decide_relaxed, decide_strict
from offsets_lib.tools.fence_inputs import (
    CommitRequest,
    Decision,
    FencingGroup,
    FencingMember,
    PartitionEpoch,
    is_fenced,
    newest_version,
)
from offsets_lib.tools.run_tables import (
    RunSnapshot,
    choose_group_rows,
    read_run_rows,
    run_coordinator,
    topic_ids_for,
)

_MEMBER_COLUMNS = [
    "group_id",
    "member_id",
    "group_instance_id",
    "member_epoch",
    "session_timeout_ms",
    "assigned_partitions",
    "partitions_pending_revocation",
    "offsets_partition",
]


@dataclass(frozen=True)
class FenceCheck:
    """Both rules' decisions on one commit, and which one the coordinator applies."""

    run: RunSnapshot
    coordinator: Coordinator
    group: FencingGroup | None
    request: CommitRequest
    decisions: dict[str, Decision]  # "strict" and "relaxed"
    deciding: str  # the key of `decisions` the coordinator applies

    @property
    def fenced(self) -> bool | None:
        """True: the broker answers an error; False: it accepts; None: the tables cannot tell."""
        return is_fenced(self.decisions[self.deciding])


def _epochs(values: list[dict[str, Any]] | None) -> tuple[PartitionEpoch, ...]:
    return tuple(
        PartitionEpoch(v["topic"], v["topic_id"], v["partition"], v["assignment_epoch"])
        for v in values or ()
    )


def load_fencing_group(run: RunSnapshot, group_id: str) -> FencingGroup | None:
    """A group and its members as the run saw them. Returns the group, or None when it is absent or
    Dead (the FEN rows take a Dead group as absent)."""
    rows = read_run_rows(
        run,
        "groups",
        ["group_id", "group_type", "state", "generation", "offsets_partition"],
        [group_id],
    )
    row, _ = choose_group_rows(rows)
    if row is None or row["state"] == "Dead":
        return None
    members = tuple(
        FencingMember(
            member_id=m["member_id"],
            member_epoch=m["member_epoch"],
            instance_id=m["group_instance_id"],
            # ClassicMemberMetadata (session timeout) marks a classic-protocol member
            uses_classic_protocol=row["group_type"] == "consumer"
            and m["session_timeout_ms"] is not None,
            assigned=(
                None if m["assigned_partitions"] is None else _epochs(m["assigned_partitions"])
            ),
            pending_revocation=_epochs(m["partitions_pending_revocation"]),
        )
        for m in read_run_rows(run, "members", _MEMBER_COLUMNS, [group_id])
        if m["offsets_partition"] == row["offsets_partition"]
    )
    return FencingGroup(
        group_id=group_id,
        group_type=row["group_type"],
        state=row["state"],
        generation=row["generation"],
        members=members,
    )


def java_length(text: str) -> int:
    """Java's ``String.length()`` of a text: UTF-16 code units, what offset.metadata.max.bytes
    is compared with."""
    return len(text.encode("utf-16-le")) // 2


def check_commit(
    run: RunSnapshot,
    *,
    group_id: str,
    member_id: str,
    member_epoch: int,
    topic: str,
    partition: int,
    transactional: bool = False,
    instance_id: str | None = None,
    coordinator: str | None = None,
    api_version: int | None = None,
    metadata: str = "",
) -> FenceCheck:
    """Decide one OffsetCommit (or TxnOffsetCommit) against the run's tables: the strict and
    relaxed decisions and the one the coordinator applies (strict for the Scala coordinators).

    ``member_epoch`` is the generation of a classic group (-1: none); ``coordinator`` None is the
    run's own (`runs.coordinator`); ``api_version`` None the newest it answers (ValueError,
    one line, outside that); FEN-G5 compares ``metadata``'s Java length.
    """
    chosen = Coordinator(coordinator or run_coordinator(run) or Coordinator.NEW)
    newest = newest_version(chosen, transactional=transactional)
    version = newest if api_version is None else api_version
    if not 0 <= version <= newest:
        kind = "TxnOffsetCommit" if transactional else "OffsetCommit"
        raise ValueError(
            f"--api-version {version}: the {chosen} coordinator answers {kind} v0-v{newest}"
        )
    group = load_fencing_group(run, group_id)
    if group is not None and group.group_type == "consumer":
        ids = topic_ids_for(run, topic)
        if ids:
            group = replace(group, topic_ids={topic: ids})
    request = CommitRequest(
        group_id=group_id,
        member_id=member_id,
        member_epoch=member_epoch,
        topic=topic,
        partition=partition,
        transactional=transactional,
        instance_id=instance_id,
        api_version=version,
        metadata_length=java_length(metadata),
    )
    decisions = {"strict": decide_strict(group, request), "relaxed": decide_relaxed(group, request)}
    deciding = "strict" if chosen.is_scala else "relaxed"
    return FenceCheck(run, chosen, group, request, decisions, deciding)
