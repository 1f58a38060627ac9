"""The broker's decisions at `as_of` (semantics.md sections 4-6): one named predicate per row.

Each decision-table row is a `Rule`: its row id (the value of the `rule` column), the condition
under which it is the first row that matches, and what it decides. Rows are evaluated top to
bottom exactly as the tables list them, per coordinator (audit.coordinator).

The rules run in the audit tasks, on the Arrow tables of one task's offsets and groups (every
offset of a group is in its group's task), so the decision tables are written by the tasks
like the other tables. Measured on 2 cores: applying them as Spark column
expressions to the staged results afterwards was a fixed ~3 s of a 7.6 s 1M-record run (plans,
a broadcast join and two more table writes) and ~9 s of an incremental Kafka run.

Here are the offsets' rows (EXP, ODEL) and the facts about an offset's group they read; the
groups' rows (DEL) are in group_deletion.py, and the three-valued conditions all of them are
written in are in conditions.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib.audit.conditions import (
    Condition,
    Deadline,
    all_of,
    always,
    equals,
    first_match,
    negate,
    row_labels,
)
from offsets_lib.audit.coordinator import Coordinator

DAY_MS = 86_400_000


@dataclass(frozen=True)
class Params:
    retention_ms: int
    as_of_ms: int


@dataclass(frozen=True)
class Rule:
    """One row of an EXP table: when it applies, whether the offset is expired, and when."""

    id: str
    doc: str
    applies: Callable[[pa.Table], Condition]
    expires_at_ms: Callable[[pa.Table, Params], Deadline]  # invalid = never in the current state
    strict: bool = False  # pre-2.1 compares expireTs < T; every other row uses >=


# ---- facts about the offset's group ---------------------------------------------------------


def is_classic(t: pa.Table) -> Condition:
    return equals(t, "group_type", "classic")


def is_modern_with_offsets(t: pa.Table) -> Condition:
    """Consumer and streams groups: the groups whose unsubscribed offsets expire by commit time."""
    return pc.or_kleene(equals(t, "group_type", "consumer"), equals(t, "group_type", "streams"))


def has_protocol_type(t: pa.Table) -> Condition:
    return pc.is_valid(t.column("protocol_type"))


def is_empty(t: pa.Table) -> Condition:
    return equals(t, "state", "Empty")


def is_stable(t: pa.Table) -> Condition:
    return equals(t, "state", "Stable")


def is_consumer_protocol(t: pa.Table) -> Condition:
    return equals(t, "protocol_type", "consumer")


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
        unknown = all_of(is_classic(t), negate(has_known_subscriptions(t)))
        unknown_counts_as = always(t) if coordinator.is_scala else is_consumer_protocol(t)
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
    """The loader of Kafka 2.3 to 2.6 reads `current_state_timestamp` only from a
    GroupMetadataValue v2 (`GroupMetadataManager.readGroupMessageValue`, `version == 2`), not
    from the v3 that 2.3+ writes: a group loaded from a v3 value has no state timestamp."""
    return pc.equal(t.column("metadata_value_version"), 3)


def consumer_stable_with_known_subscriptions(t: pa.Table) -> Condition:
    return all_of(is_classic(t), is_consumer_protocol(t), is_stable(t), has_known_subscriptions(t))


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
    lambda t: equals(t, "group_type", "share"),
    _never,
)
EXP_NO_CONDITION_NEW = Rule(
    "EXP-NO-CONDITION",
    "Classic group with a protocol type that is neither Empty nor a Stable consumer group with"
    " known subscriptions: nothing of the group expires.",
    lambda t: all_of(
        is_classic(t),
        has_protocol_type(t),
        negate(is_empty(t)),
        negate(consumer_stable_with_known_subscriptions(t)),
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
    lambda t: all_of(is_classic(t), has_protocol_type(t), is_empty(t), has_state_timestamp(t)),
    _state_plus_retention,
)
EXP_EMPTY_COMMIT_TS = Rule(
    "EXP-EMPTY-COMMIT-TS",
    "Empty classic group whose value (v0/v1) has no state timestamp.",
    lambda t: all_of(
        is_classic(t), has_protocol_type(t), is_empty(t), negate(has_state_timestamp(t))
    ),
    _commit_plus_retention,
)
EXP_SIMPLE_COMMIT_TS = Rule(
    "EXP-SIMPLE-COMMIT-TS",
    "Classic group without protocol type (offsets only): commit time.",
    lambda t: all_of(is_classic(t), negate(has_protocol_type(t))),
    _commit_plus_retention,
)
EXP_STABLE_UNSUBSCRIBED = Rule(
    "EXP-STABLE-UNSUBSCRIBED",
    "Stable classic consumer group, topic no longer subscribed.",
    lambda t: all_of(
        consumer_stable_with_known_subscriptions(t), negate(topic_in_subscriptions(t))
    ),
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
    lambda t: all_of(has_protocol_type(t), negate(is_empty(t))),
    _never,
)
EXP_EMPTY_V3_COMMIT_TS = Rule(
    "EXP-EMPTY-V3-COMMIT-TS",
    "Kafka 2.3-2.6's loader: Empty classic group with a protocol type loaded from a"
    " GroupMetadataValue v3, whose state timestamp the loader does not read: commit time.",
    lambda t: all_of(
        is_classic(t), has_protocol_type(t), is_empty(t), loader_skips_v3_state_timestamp(t)
    ),
    _commit_plus_retention,
)
EXP_NO_CONDITION_2_4 = Rule(
    "EXP-NO-CONDITION",
    "2.4: non-Empty groups with a protocol type, except Stable consumer"
    " groups with known subscriptions.",
    lambda t: all_of(
        has_protocol_type(t),
        negate(is_empty(t)),
        negate(consumer_stable_with_known_subscriptions(t)),
    ),
    _never,
)
EXP_SUBSCRIBED_2_4 = Rule(
    "EXP-SUBSCRIBED",
    "2.4: Stable consumer group with known subscriptions, topic subscribed.",
    lambda t: all_of(consumer_stable_with_known_subscriptions(t), topic_in_subscriptions(t)),
    _never,
)
EXP_PRE21_EXPIRE_TS = Rule(
    "EXP-PRE21-EXPIRE-TS",
    "Pre-2.1: every offset expires at its own expireTs (v0 and later: commitTs + retention),"
    " compared strictly.",
    always,
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
    Coordinator.CLASSIC_2_4_0_TO_2_6_0: (
        EXP_NO_CONDITION_2_4,
        EXP_SUBSCRIBED_2_4,
        EXP_EXPLICIT,
        EXP_EMPTY_V3_COMMIT_TS,
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
    fired = first_match([row.applies(offsets) for row in table])
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
        offsets.append_column("rule", row_labels([row.id for row in table], fired))
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
    "ODEL-INVALID", "Empty group id.", lambda t: equals(t, "group_id", ""), "INVALID_GROUP_ID"
)
ODEL_NOTFOUND = DeleteRule(
    "ODEL-NOTFOUND",
    "No such group, a Dead group, or (new coordinator) a share group.",
    lambda t: pc.or_kleene(
        pc.or_kleene(pc.is_null(t.column("state")), equals(t, "state", "Dead")),
        equals(t, "group_type", "share"),
    ),
    "GROUP_ID_NOT_FOUND",
)
ODEL_NONEMPTY_NEW = DeleteRule(
    "ODEL-NONEMPTY",
    "Non-Empty classic group whose protocol type is not consumer.",
    lambda t: all_of(
        is_classic(t), negate(is_empty(t)), negate(pc.fill_null(is_consumer_protocol(t), False))
    ),
    "NON_EMPTY_GROUP",
)
ODEL_SUBSCRIBED_NEW = DeleteRule(
    "ODEL-SUBSCRIBED",
    "The group is subscribed to the topic.",
    is_subscribed(Coordinator.NEW),
    "GROUP_SUBSCRIBED_TO_TOPIC",
)
ODEL_OK = DeleteRule("ODEL-OK", "Admissible: a tombstone would be written.", always, None)
ODEL_OK_EMPTY_2_4 = DeleteRule(
    "ODEL-OK", "2.4: Empty group, every partition admissible.", is_empty, None
)
ODEL_SUBSCRIBED_2_4 = DeleteRule(
    "ODEL-SUBSCRIBED",
    "2.4: non-Empty consumer group subscribed to the topic (unknown counts).",
    lambda t: all_of(
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
    "ODEL-NONEMPTY", "2.4: any other non-Empty group.", always, "NON_EMPTY_GROUP"
)
ODEL_UNSUPPORTED = DeleteRule(
    "ODEL-UNSUPPORTED",
    "Before 2.4 there is no OffsetDelete API (semantics.md section 11, decision 8).",
    always,
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
OFFSET_DELETE_TABLES[Coordinator.CLASSIC_2_4_0_TO_2_6_0] = OFFSET_DELETE_TABLES[
    Coordinator.CLASSIC_2_4
]


def with_offset_delete(offsets: pa.Table, *, coordinator: Coordinator) -> pa.Table:
    """Add `delete_error` (null = OffsetDelete would succeed) and `delete_rule` (ODEL row id)."""
    table = OFFSET_DELETE_TABLES[coordinator]
    fired = first_match([row.applies(offsets) for row in table])
    return offsets.append_column(
        "delete_error", row_labels([row.error for row in table], fired)
    ).append_column("delete_rule", row_labels([row.id for row in table], fired))
