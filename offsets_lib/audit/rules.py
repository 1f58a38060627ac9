"""The broker's decisions at `as_of` (semantics.md sections 4-6): one named predicate per row.

Each decision-table row is a `Rule`: its row id (the value of the `rule` column), the condition
under which it is the first row that matches, and what it decides. Rows are evaluated top to
bottom exactly as the tables list them, per coordinator (audit.coordinator).
The file stays whole (~580 lines): the rows are read against semantics.md's tables in order,
with each row next to the ones it follows.

The rules run in the audit tasks, on the Arrow tables of one task's offsets and groups (every
offset of a group is in its group's task), so the decision tables are written by the tasks
like the other tables. Measured on 2 cores: applying them as Spark column
expressions to the staged results afterwards was a fixed ~3 s of a 7.6 s 1M-record run (plans,
a broadcast join and two more table writes) and ~9 s of an incremental Kafka run.

Conditions follow SQL's three-valued logic, as the tables read (`pc.and_kleene`, `pc.invert`):
a fact that is unknown (null) never makes a row match, and neither does its negation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import reduce

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib.audit.arrays import as_bools, key_strings
from offsets_lib.audit.coordinator import Coordinator

DAY_MS = 86_400_000
Condition = pa.Array | pa.ChunkedArray  # booleans; null = unknown (does not match)
_INT64_MAX = np.iinfo(np.int64).max


@dataclass(frozen=True)
class Params:
    retention_ms: int
    as_of_ms: int


@dataclass(frozen=True)
class Deadline:
    """Epoch milliseconds per row; `valid` False = never (null)."""

    ms: np.ndarray
    valid: np.ndarray

    @classmethod
    def of(cls, column: pa.Array | pa.ChunkedArray) -> Deadline:
        valid = np.asarray(pc.is_valid(column), dtype=bool)
        return cls(np.asarray(pc.fill_null(column, 0), dtype=np.int64), valid)

    @classmethod
    def never(cls, rows: int) -> Deadline:
        return cls(np.zeros(rows, dtype=np.int64), np.zeros(rows, dtype=bool))

    def plus(self, ms: int) -> Deadline:
        """`try_add`: a deadline past the int64 range is never (null), not an overflow."""
        fits = self.ms <= _INT64_MAX - ms if ms >= 0 else self.ms >= np.iinfo(np.int64).min - ms
        return Deadline(
            np.where(fits & self.valid, self.ms + np.where(fits, ms, 0), 0), self.valid & fits
        )

    def or_else(self, other: Deadline) -> Deadline:
        """`coalesce(self, other)`."""
        return Deadline(np.where(self.valid, self.ms, other.ms), self.valid | other.valid)

    def array(self) -> pa.Array:
        return pa.array(self.ms, pa.int64(), mask=~self.valid)


@dataclass(frozen=True)
class Rule:
    """One row of an EXP table: when it applies, whether the offset is expired, and when."""

    id: str
    doc: str
    applies: Callable[[pa.Table], Condition]
    expires_at_ms: Callable[[pa.Table, Params], Deadline]  # invalid = never in the current state
    strict: bool = False  # pre-2.1 compares expireTs < T; every other row uses >=


def _all(*conditions: Condition) -> Condition:
    return reduce(pc.and_kleene, conditions)


def _not(condition: Condition) -> Condition:
    return pc.invert(condition)


def _is(table: pa.Table, column: str, value: str) -> Condition:
    return pc.equal(table.column(column), value)


def _true(table: pa.Table) -> Condition:
    return pa.array(np.ones(table.num_rows, dtype=bool))


def _first_match(conditions: Sequence[Condition]) -> np.ndarray:
    """Per row, the index of the first condition that is true (null counts as false); -1 if
    none is."""
    first = np.full(len(conditions[0]) if conditions else 0, -1, dtype=np.int64)
    for index in range(len(conditions) - 1, -1, -1):
        first[np.asarray(pc.fill_null(conditions[index], False), dtype=bool)] = index
    return first


def _labels(names: Sequence[str | None], chosen: np.ndarray) -> pa.Array:
    """names[chosen] per row, null where chosen is -1 (or the name is None)."""
    return pa.array([*names, None], pa.string()).take(
        pa.array(np.where(chosen < 0, len(names), chosen))
    )


# ---- facts about the offset's group ---------------------------------------------------------


def is_classic(t: pa.Table) -> Condition:
    return _is(t, "group_type", "classic")


def is_modern_with_offsets(t: pa.Table) -> Condition:
    """Consumer and streams groups: the groups whose unsubscribed offsets expire by commit time."""
    return pc.or_kleene(_is(t, "group_type", "consumer"), _is(t, "group_type", "streams"))


def has_protocol_type(t: pa.Table) -> Condition:
    return pc.is_valid(t.column("protocol_type"))


def is_empty(t: pa.Table) -> Condition:
    return _is(t, "state", "Empty")


def is_stable(t: pa.Table) -> Condition:
    return _is(t, "state", "Stable")


def is_consumer_protocol(t: pa.Table) -> Condition:
    return _is(t, "protocol_type", "consumer")


def has_known_subscriptions(t: pa.Table) -> Condition:
    """The group's subscriptions are known (its `subscribed_topics` is not null)."""
    return pc.fill_null(t.column("has_known_subscriptions"), False)


def topic_in_subscriptions(t: pa.Table) -> Condition:
    """The offset's topic is in the group's `subscribed_topics`."""
    return pc.fill_null(t.column("is_topic_subscribed"), False)


def is_subscribed(coordinator: Coordinator) -> Callable[[pa.Table], Condition]:
    """`isSubscribedToTopic` (semantics.md 2.2 for classic groups, G-M7 and 2.4 for modern ones).

    Unknown subscriptions of a classic group count as subscribed for the Scala coordinator, and
    for the new one only when the protocol type is `consumer`.
    """

    def condition(t: pa.Table) -> Condition:
        unknown = _all(is_classic(t), _not(has_known_subscriptions(t)))
        unknown_counts_as = _true(t) if coordinator.is_scala else is_consumer_protocol(t)
        return pc.if_else(
            pc.fill_null(unknown, False),
            pc.fill_null(unknown_counts_as, False),
            topic_in_subscriptions(t),
        )

    return condition


def has_explicit_expiry(t: pa.Table) -> Condition:
    return pc.is_valid(t.column("expire_timestamp_ms"))


def has_state_timestamp(t: pa.Table) -> Condition:
    return pc.is_valid(t.column("current_state_timestamp_ms"))


def loader_skips_v3_state_timestamp(t: pa.Table) -> Condition:
    """Kafka 2.3's loader reads `current_state_timestamp` only from a GroupMetadataValue v2
    (`GroupMetadataManager.readGroupMessageValue`, `version == 2`), not from the v3 that 2.3
    writes: a group loaded from a v3 value has no state timestamp."""
    return pc.equal(t.column("metadata_value_version"), 3)


def consumer_stable_with_known_subscriptions(t: pa.Table) -> Condition:
    return _all(is_classic(t), is_consumer_protocol(t), is_stable(t), has_known_subscriptions(t))


# ---- EXP rows ---------------------------------------------------------------------------------


def _never(t: pa.Table, _: Params) -> Deadline:
    return Deadline.never(t.num_rows)


def _commit_plus_retention(t: pa.Table, p: Params) -> Deadline:
    return Deadline.of(t.column("commit_timestamp_ms")).plus(p.retention_ms)


def _state_plus_retention(t: pa.Table, p: Params) -> Deadline:
    return Deadline.of(t.column("current_state_timestamp_ms")).plus(p.retention_ms)


def _explicit(t: pa.Table, _: Params) -> Deadline:
    return Deadline.of(t.column("expire_timestamp_ms"))


EXP_SHARE_NEVER = Rule(
    "EXP-SHARE-NEVER",
    "Share groups are skipped by the expiration job.",
    lambda t: _is(t, "group_type", "share"),
    _never,
)
EXP_NO_CONDITION_NEW = Rule(
    "EXP-NO-CONDITION",
    "Classic group with a protocol type that is neither Empty nor a Stable consumer group with"
    " known subscriptions: nothing of the group expires.",
    lambda t: _all(
        is_classic(t),
        has_protocol_type(t),
        _not(is_empty(t)),
        _not(consumer_stable_with_known_subscriptions(t)),
    ),
    _never,
)
EXP_SUBSCRIBED_NEW = Rule(
    "EXP-SUBSCRIBED",
    "The group is subscribed to the offset's topic.",
    is_subscribed(Coordinator.NEW),
    _never,
)
EXP_TXN_PENDING = Rule(
    "EXP-TXN-PENDING",
    "A transactional offset for the partition is pending (new coordinator).",
    lambda t: pc.fill_null(t.column("has_pending_transaction"), False),
    _never,
)
EXP_EXPLICIT = Rule(
    "EXP-EXPLICIT",
    "OffsetCommitValue v1 carries its own expireTimestamp: T >= expireTs.",
    has_explicit_expiry,
    _explicit,
)
EXP_EMPTY_STATE_TS = Rule(
    "EXP-EMPTY-STATE-TS",
    "Empty classic group with a protocol type and a state timestamp.",
    lambda t: _all(is_classic(t), has_protocol_type(t), is_empty(t), has_state_timestamp(t)),
    _state_plus_retention,
)
EXP_EMPTY_COMMIT_TS = Rule(
    "EXP-EMPTY-COMMIT-TS",
    "Empty classic group whose value (v0/v1) has no state timestamp.",
    lambda t: _all(is_classic(t), has_protocol_type(t), is_empty(t), _not(has_state_timestamp(t))),
    _commit_plus_retention,
)
EXP_SIMPLE_COMMIT_TS = Rule(
    "EXP-SIMPLE-COMMIT-TS",
    "Classic group without protocol type (offsets only): commit time.",
    lambda t: _all(is_classic(t), _not(has_protocol_type(t))),
    _commit_plus_retention,
)
EXP_STABLE_UNSUBSCRIBED = Rule(
    "EXP-STABLE-UNSUBSCRIBED",
    "Stable classic consumer group, topic no longer subscribed.",
    lambda t: _all(consumer_stable_with_known_subscriptions(t), _not(topic_in_subscriptions(t))),
    _commit_plus_retention,
)
EXP_MODERN_COMMIT_TS = Rule(
    "EXP-MODERN-COMMIT-TS",
    "Consumer or streams group, topic not subscribed, any state.",
    is_modern_with_offsets,
    _commit_plus_retention,
)
# Scala coordinator variants of the rows whose condition differs by coordinator.
EXP_NO_CONDITION_2_1 = Rule(
    "EXP-NO-CONDITION",
    "2.1: every non-Empty group with a protocol type keeps everything.",
    lambda t: _all(has_protocol_type(t), _not(is_empty(t))),
    _never,
)
EXP_EMPTY_V3_COMMIT_TS = Rule(
    "EXP-EMPTY-V3-COMMIT-TS",
    "2.1 (Kafka 2.3's loader): Empty classic group with a protocol type loaded from a"
    " GroupMetadataValue v3, whose state timestamp the loader does not read: commit time.",
    lambda t: _all(
        is_classic(t), has_protocol_type(t), is_empty(t), loader_skips_v3_state_timestamp(t)
    ),
    _commit_plus_retention,
)
EXP_NO_CONDITION_2_4 = Rule(
    "EXP-NO-CONDITION",
    "2.4: non-Empty groups with a protocol type, except Stable consumer"
    " groups with known subscriptions.",
    lambda t: _all(
        has_protocol_type(t),
        _not(is_empty(t)),
        _not(consumer_stable_with_known_subscriptions(t)),
    ),
    _never,
)
EXP_SUBSCRIBED_2_4 = Rule(
    "EXP-SUBSCRIBED",
    "2.4: Stable consumer group with known subscriptions, topic subscribed.",
    lambda t: _all(consumer_stable_with_known_subscriptions(t), topic_in_subscriptions(t)),
    _never,
)
EXP_PRE21_EXPIRE_TS = Rule(
    "EXP-PRE21-EXPIRE-TS",
    "Pre-2.1: every offset expires at its own expireTs (v0 and later: commitTs + retention),"
    " compared strictly.",
    _true,
    lambda t, p: _explicit(t, p).or_else(_commit_plus_retention(t, p)),
    strict=True,
)

EXPIRATION_TABLES: dict[Coordinator, Sequence[Rule]] = {
    Coordinator.NEW: (
        EXP_SHARE_NEVER,
        EXP_NO_CONDITION_NEW,
        EXP_SUBSCRIBED_NEW,
        EXP_TXN_PENDING,
        EXP_EXPLICIT,
        EXP_EMPTY_STATE_TS,
        EXP_EMPTY_COMMIT_TS,
        EXP_SIMPLE_COMMIT_TS,
        EXP_STABLE_UNSUBSCRIBED,
        EXP_MODERN_COMMIT_TS,
    ),
    Coordinator.CLASSIC_2_4: (
        EXP_NO_CONDITION_2_4,
        EXP_SUBSCRIBED_2_4,
        EXP_EXPLICIT,
        EXP_EMPTY_STATE_TS,
        EXP_EMPTY_COMMIT_TS,
        EXP_SIMPLE_COMMIT_TS,
        EXP_STABLE_UNSUBSCRIBED,
    ),
    Coordinator.CLASSIC_2_1: (
        EXP_NO_CONDITION_2_1,
        EXP_EXPLICIT,
        EXP_EMPTY_V3_COMMIT_TS,
        EXP_EMPTY_STATE_TS,
        EXP_EMPTY_COMMIT_TS,
        EXP_SIMPLE_COMMIT_TS,
    ),
    Coordinator.PRE_2_1: (EXP_PRE21_EXPIRE_TS,),
}


def with_expiration(offsets: pa.Table, *, coordinator: Coordinator, params: Params) -> pa.Table:
    """Add `rule`, `expires_at_ms` and `expired` (at as_of) from the first matching EXP row.

    An offset that no row matches keeps `rule`, `expires_at_ms` and `expired` null; that cannot
    happen for a group that exists (every table ends with a row for each remaining case).
    """
    table = EXPIRATION_TABLES[coordinator]
    fired = _first_match([row.applies(offsets) for row in table])
    deadline = Deadline.never(offsets.num_rows)
    for index, row in enumerate(table):
        chosen = fired == index
        if not chosen.any():
            continue
        at = row.expires_at_ms(offsets, params)
        # strict rows expire when deadline < T, i.e. from deadline + 1 on
        at = at.plus(1) if row.strict else at
        deadline = Deadline(
            np.where(chosen, at.ms, deadline.ms), np.where(chosen, at.valid, deadline.valid)
        )
    is_decided = fired >= 0
    expired = deadline.valid & (params.as_of_ms >= deadline.ms)
    return (
        offsets.append_column("rule", _labels([row.id for row in table], fired))
        .append_column("expires_at_ms", deadline.array())
        .append_column("expired", pa.array(expired, pa.bool_(), mask=~is_decided))
    )


# ---- ODEL rows ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeleteRule:
    id: str
    doc: str
    applies: Callable[[pa.Table], Condition]
    error: str | None


ODEL_INVALID = DeleteRule(
    "ODEL-INVALID", "Empty group id.", lambda t: _is(t, "group_id", ""), "INVALID_GROUP_ID"
)
ODEL_NOTFOUND = DeleteRule(
    "ODEL-NOTFOUND",
    "No such group, a Dead group, or (new coordinator) a share group.",
    lambda t: pc.or_kleene(
        pc.or_kleene(pc.is_null(t.column("state")), _is(t, "state", "Dead")),
        _is(t, "group_type", "share"),
    ),
    "GROUP_ID_NOT_FOUND",
)
ODEL_NONEMPTY_NEW = DeleteRule(
    "ODEL-NONEMPTY",
    "Non-Empty classic group whose protocol type is not consumer.",
    lambda t: _all(
        is_classic(t), _not(is_empty(t)), _not(pc.fill_null(is_consumer_protocol(t), False))
    ),
    "NON_EMPTY_GROUP",
)
ODEL_SUBSCRIBED_NEW = DeleteRule(
    "ODEL-SUBSCRIBED",
    "The group is subscribed to the topic.",
    is_subscribed(Coordinator.NEW),
    "GROUP_SUBSCRIBED_TO_TOPIC",
)
ODEL_OK = DeleteRule("ODEL-OK", "Admissible: a tombstone would be written.", _true, None)
ODEL_OK_EMPTY_2_4 = DeleteRule(
    "ODEL-OK", "2.4: Empty group, every partition admissible.", is_empty, None
)
ODEL_SUBSCRIBED_2_4 = DeleteRule(
    "ODEL-SUBSCRIBED",
    "2.4: non-Empty consumer group subscribed to the topic (unknown counts).",
    lambda t: _all(
        pc.fill_null(is_consumer_protocol(t), False), is_subscribed(Coordinator.CLASSIC_2_4)(t)
    ),
    "GROUP_SUBSCRIBED_TO_TOPIC",
)
ODEL_OK_CONSUMER_2_4 = DeleteRule(
    "ODEL-OK",
    "2.4: non-Empty consumer group, topic not subscribed.",
    lambda t: pc.fill_null(is_consumer_protocol(t), False),
    None,
)
ODEL_NONEMPTY_2_4 = DeleteRule(
    "ODEL-NONEMPTY", "2.4: any other non-Empty group.", _true, "NON_EMPTY_GROUP"
)
ODEL_UNSUPPORTED = DeleteRule(
    "ODEL-UNSUPPORTED",
    "Before 2.4 there is no OffsetDelete API (semantics.md section 11, decision 8).",
    _true,
    "UNSUPPORTED_VERSION",
)

OFFSET_DELETE_TABLES: dict[Coordinator, Sequence[DeleteRule]] = {
    Coordinator.NEW: (ODEL_INVALID, ODEL_NOTFOUND, ODEL_NONEMPTY_NEW, ODEL_SUBSCRIBED_NEW, ODEL_OK),
    Coordinator.CLASSIC_2_4: (
        ODEL_INVALID,
        ODEL_NOTFOUND,
        ODEL_OK_EMPTY_2_4,
        ODEL_SUBSCRIBED_2_4,
        ODEL_OK_CONSUMER_2_4,
        ODEL_NONEMPTY_2_4,
    ),
    Coordinator.CLASSIC_2_1: (ODEL_UNSUPPORTED,),
    Coordinator.PRE_2_1: (ODEL_UNSUPPORTED,),
}


def with_offset_delete(offsets: pa.Table, *, coordinator: Coordinator) -> pa.Table:
    """Add `delete_error` (null = OffsetDelete would succeed) and `delete_rule` (ODEL row id)."""
    table = OFFSET_DELETE_TABLES[coordinator]
    fired = _first_match([row.applies(offsets) for row in table])
    return offsets.append_column(
        "delete_error", _labels([row.error for row in table], fired)
    ).append_column("delete_rule", _labels([row.id for row in table], fired))


# ---- DEL rows -----------------------------------------------------------------------------------

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
    Blocker("DEAD", lambda g: _is(g, "state", "Dead")),
    Blocker("SHARE_GROUP", lambda g: _is(g, "group_type", "share")),
    Blocker("NOT_EMPTY", lambda g: _not(is_empty(g))),
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
    return pc.fill_null(pc.and_kleene(_is(g, "group_type", "streams"), stored), False)


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
                pc.fill_null(_not(decided_offsets.column("expired")), False), pa.int64()
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
    blocked = _first_match(conditions)
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
        .append_column("blocked_by", _labels(reasons, blocked))
    )
