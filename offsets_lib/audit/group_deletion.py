"""Whether a cleanup at `as_of` deletes each group, and when it would (semantics.md DEL rows).

One `Blocker` per reason a group stays, reported first-match; DEL-NEW / DEL-CLASSIC /
DEL-STREAMS-PLUGIN name the row that decided (`deletion_rule`). The offsets' expiry
(rules.with_expiration) comes first: a group waits for its last offset to expire.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib.audit.arrays import as_bools, key_strings
from offsets_lib.audit.conditions import (
    Condition,
    Deadline,
    equals,
    first_match,
    negate,
    row_labels,
)
from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.rules import is_empty

DEL_NEW = "DEL-NEW"
DEL_CLASSIC = "DEL-CLASSIC"
DEL_STREAMS_PLUGIN = "DEL-STREAMS-PLUGIN"


@dataclass(frozen=True)
class Blocker:
    """Why a group is not deleted (the `blocked_by` column), when `applies`; the first that
    applies is reported, none = the group is deleted."""

    reason: str
    applies: Callable[[pa.Table], Condition]


def _has(column: str) -> Callable[[pa.Table], Condition]:
    return lambda g: pc.greater(g.column(column), 0)


# EXP-NO-CONDITION only applies to non-Empty groups, so NOT_EMPTY already covers it.
DELETION_BLOCKERS: Sequence[Blocker] = (
    Blocker("DEAD", lambda g: equals(g, "state", "Dead")),
    Blocker("SHARE_GROUP", lambda g: equals(g, "group_type", "share")),
    Blocker("NOT_EMPTY", lambda g: negate(is_empty(g))),
    Blocker(
        "PENDING_TRANSACTION", lambda g: pc.fill_null(g.column("has_pending_transactions"), False)
    ),
    Blocker("OFFSETS_NEVER_EXPIRE", _has("_never")),
    Blocker("OFFSETS_NOT_EXPIRED", _has("_unexpired")),
)


def has_stored_topology_description(g: pa.Table) -> Condition:
    """DEL-STREAMS-PLUGIN: a streams group whose metadata stores a topology-description epoch
    other than -1 (tag 2, 4.4.0, KIP-1331) was written under a topology-description plugin: the
    cleanup that would delete it first clears the epoch, and a later one deletes the group."""
    stored = pc.not_equal(g.column("stored_description_topology_epoch"), -1)
    return pc.fill_null(pc.and_kleene(equals(g, "group_type", "streams"), stored), False)


# DEL-STREAMS-PLUGIN: reported after every other blocker, and it makes deletes_at unknown (null)
TOPOLOGY_PLUGIN = Blocker("TOPOLOGY_DESCRIPTION_STORED", has_stored_topology_description)
# DEL-CLASSIC: a tombstone is written only for groups with generation > 0
GENERATION_0 = Blocker(
    "GENERATION_0_NO_TOMBSTONE", lambda g: pc.less_equal(pc.fill_null(g.column("generation"), 0), 0)
)


def _offset_facts_by_group(groups: pa.Table, decided_offsets: pa.Table) -> pa.Table:
    """Per group (row of `groups`): its offsets, the unexpired ones, those that never expire,
    and the latest expiry (`_offsets`, `_unexpired`, `_never`, `_last_expiry_ms`)."""
    facts = pa.table(
        {
            "log_partition": decided_offsets.column("log_partition"),
            "group_id": decided_offsets.column("group_id"),
            "offsets": pa.array(np.ones(decided_offsets.num_rows, dtype=np.int64)),
            "unexpired": pc.cast(
                pc.fill_null(negate(decided_offsets.column("expired")), False), pa.int64()
            ),
            "never": pc.cast(pc.is_null(decided_offsets.column("expires_at_ms")), pa.int64()),
            "expires_at_ms": decided_offsets.column("expires_at_ms"),
        }
    )
    summed = facts.group_by(["log_partition", "group_id"], use_threads=False).aggregate(
        [("offsets", "sum"), ("unexpired", "sum"), ("never", "sum"), ("expires_at_ms", "max")]
    )
    at = pc.index_in(
        key_strings(groups.column("log_partition"), groups.column("group_id")),
        value_set=key_strings(summed.column("log_partition"), summed.column("group_id")),
    )
    return pa.table(
        {
            "_offsets": pc.fill_null(summed.column("offsets_sum").take(at), 0),
            "_unexpired": pc.fill_null(summed.column("unexpired_sum").take(at), 0),
            "_never": pc.fill_null(summed.column("never_sum").take(at), 0),
            "_last_expiry_ms": summed.column("expires_at_ms_max").take(at),
        }
    )


def with_group_deletion(
    groups: pa.Table, decided_offsets: pa.Table, *, coordinator: Coordinator, as_of_ms: int
) -> pa.Table:
    """Add whether a cleanup run at as_of deletes each group (DEL-NEW / DEL-CLASSIC /
    DEL-STREAMS-PLUGIN) and when it would: `deleted`, `deletes_at_ms`, `deletion_rule`,
    `blocked_by`.

    `decided_offsets` are the groups' offsets after `with_expiration`. `deletes_at_ms` is the
    earliest time the group would be deleted if nothing else happens: the latest expiry of its
    offsets (or as_of when it qualifies without offsets); null when some offset never expires
    or the group can never be deleted in its current state.
    """
    facts = _offset_facts_by_group(groups, decided_offsets)
    g = pa.table(
        {
            **{n: groups.column(n) for n in groups.column_names},
            **{n: facts.column(n) for n in facts.column_names},
        }
    )
    blockers = [
        *DELETION_BLOCKERS,
        *([GENERATION_0] if coordinator.is_scala else [TOPOLOGY_PLUGIN]),
    ]
    conditions = [b.applies(g) for b in blockers]
    blocked = first_match(conditions)
    # a group blocked only by offsets that will expire is deleted when the last one does
    reasons = [b.reason for b in blockers]
    waits_for_expiry = (blocked < 0) | (blocked == reasons.index("OFFSETS_NOT_EXPIRED"))
    has_offsets = np.asarray(facts.column("_offsets"), dtype=np.int64) > 0
    last = Deadline.of(facts.column("_last_expiry_ms"))
    plugin = (
        np.zeros(groups.num_rows, dtype=bool)
        if coordinator.is_scala
        else as_bools(conditions[blockers.index(TOPOLOGY_PLUGIN)])
    )
    deletes_at = Deadline(
        np.where(has_offsets, last.ms, as_of_ms),
        waits_for_expiry & np.where(has_offsets, last.valid, True) & ~plugin,
    )
    rule = DEL_CLASSIC if coordinator.is_scala else DEL_NEW
    rules = np.where(plugin, DEL_STREAMS_PLUGIN, rule)
    return (
        groups.append_column("deleted", pa.array(blocked < 0))
        .append_column("deletes_at_ms", deletes_at.array())
        .append_column("deletion_rule", pa.array(rules.tolist(), pa.string()))
        .append_column("blocked_by", row_labels(reasons, blocked))
    )
