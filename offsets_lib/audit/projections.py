"""Which column of the audit tasks' results each table column is (pure; no Spark).

The tables `offsets`, `offset_decisions`, `groups`, `members`, `group_decisions`,
`load_failures`, `unread_marker_offsets` and `rejects` are plain projections of the tasks'
result tables (task_audit.KIND_ARROW, decisions included): renamed columns, epoch milliseconds
shown as UTC timestamps, members, load failures and unread-marker offsets unnested. The projections
are defined here once: `table_rows` applies them to Arrow tables, so that an audit task
writes those tables' files itself (for either writer).
"""

from __future__ import annotations

from dataclasses import dataclass

from offsets_lib.audit.task_audit import GROUP, OFFSET, REJECT

# Spark timestamps are microseconds in an int64: milliseconds beyond this cannot be represented
# (such a decodable but absurd value becomes null instead of failing the run).
MAX_TIMESTAMP_MS = 9_223_372_036_854_775


@dataclass(frozen=True)
class ProjectedColumn:
    """Table column `name` <- result column `source`, as a timestamp if `is_epoch_ms`."""

    name: str
    source: str
    is_epoch_ms: bool = False


def _same(*names: str) -> tuple[ProjectedColumn, ...]:
    return tuple(ProjectedColumn(n, n) for n in names)


_OFFSETS_PARTITION = ProjectedColumn("offsets_partition", "log_partition")

# table -> (result kind, columns)
PROJECTIONS: dict[str, tuple[str, tuple[ProjectedColumn, ...]]] = {
    "offsets": (
        OFFSET,
        (
            *_same("group_id", "topic", "partition", "committed_offset", "leader_epoch"),
            *_same("metadata"),
            ProjectedColumn("commit_timestamp", "commit_timestamp_ms", is_epoch_ms=True),
            ProjectedColumn("expire_timestamp", "expire_timestamp_ms", is_epoch_ms=True),
            _OFFSETS_PARTITION,
            *_same("log_offset", "topic_id", "value_version", "has_pending_transaction"),
        ),
    ),
    "offset_decisions": (
        OFFSET,
        (
            *_same("group_id", "topic", "partition", "expired"),
            ProjectedColumn("expires_at", "expires_at_ms", is_epoch_ms=True),
            *_same("rule", "delete_error", "delete_rule"),
            _OFFSETS_PARTITION,
        ),
    ),
    "groups": (
        GROUP,
        (
            *_same("group_id", "group_type", "protocol_type", "state", "generation"),
            *_same("subscribed_topics"),
            ProjectedColumn(
                "current_state_timestamp", "current_state_timestamp_ms", is_epoch_ms=True
            ),
            _OFFSETS_PARTITION,
            *_same("protocol", "leader", "member_count", "target_assignment_epoch"),
            *_same("offset_count", "has_pending_transactions", "state_notes"),
        ),
    ),
    "group_decisions": (
        GROUP,
        (
            *_same("group_id", "deleted"),
            ProjectedColumn("deletes_at", "deletes_at_ms", is_epoch_ms=True),
            ProjectedColumn("rule", "deletion_rule"),
            *_same("group_type", "state", "blocked_by"),
            _OFFSETS_PARTITION,
        ),
    ),
    "rejects": (
        REJECT,
        (
            _OFFSETS_PARTITION,
            ProjectedColumn("offsets_offset", "log_offset"),
            *_same("key", "value", "error"),
            ProjectedColumn("offsets_timestamp", "log_timestamp_ms", is_epoch_ms=True),
            ProjectedColumn("record_type", "record_type"),
        ),
    ),
    # one row per element of the group's `members` list: these columns, then the member's fields
    "members": (GROUP, (ProjectedColumn("group_id", "group_id"), _OFFSETS_PARTITION)),
    # one row per element of the group's `load_failures` list (LOG-6), the same way
    "load_failures": (GROUP, (_OFFSETS_PARTITION, ProjectedColumn("group_id", "group_id"))),
    # one row per element of the group's `unread_marker_offsets` list (TXN-MARKER-UNREAD)
    "unread_marker_offsets": (
        GROUP,
        (_OFFSETS_PARTITION, *_same("group_id", "is_group_in_doubt")),
    ),
}
MEMBERS_LIST = "members"
# tables of one row per element of a list column of their kind: table -> list column
EXPLODED: dict[str, str] = {
    "members": MEMBERS_LIST,
    "load_failures": "load_failures",
    "unread_marker_offsets": "unread_marker_offsets",
}
# the elements' fields shown as UTC timestamps (the other fields keep their names)
EXPLODED_EPOCH_MS: dict[str, tuple[ProjectedColumn, ...]] = {
    "unread_marker_offsets": (
        ProjectedColumn("commit_timestamp", "commit_timestamp_ms", is_epoch_ms=True),
        ProjectedColumn("expire_timestamp", "expire_timestamp_ms", is_epoch_ms=True),
        ProjectedColumn("log_timestamp", "log_timestamp_ms", is_epoch_ms=True),
    ),
}
