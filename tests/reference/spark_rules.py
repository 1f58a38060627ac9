"""Reference (tests only): the broker's decisions (semantics.md sections 4-6) as Spark column
predicates, one per decision-table row.

`offsets run` decides in its audit tasks with Arrow (`offsets_lib.audit.rules`); the reference
audit (`spark_audit`) decides with these, so the tests compare two implementations of every
EXP, ODEL and DEL row. The group deletion's rule id is in `deletion_rule`, as in the tasks'
group results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.rules import Params


@dataclass(frozen=True)
class Rule:
    """One row of an EXP table: when it applies, whether the offset is expired, and when."""

    id: str
    doc: str
    applies: Callable[[], Column]
    expires_at_ms: Callable[[Params], Column]  # null = never under the current state
    strict: bool = False  # pre-2.1 compares expireTs < T; every other row uses >=


def _c(name: str) -> Column:
    return F.col(name)


# ---- facts about the offset's group ---------------------------------------------------------


def is_classic() -> Column:
    return _c("group_type") == "classic"


def is_modern_with_offsets() -> Column:
    """Consumer and streams groups: the groups whose unsubscribed offsets expire by commit time."""
    return _c("group_type").isin("consumer", "streams")


def has_protocol_type() -> Column:
    return _c("protocol_type").isNotNull()


def is_empty() -> Column:
    return _c("state") == "Empty"


def is_stable() -> Column:
    return _c("state") == "Stable"


def is_consumer_protocol() -> Column:
    return _c("protocol_type") == "consumer"


def has_known_subscriptions() -> Column:
    """The group's subscriptions are known (`subscribed_topics` is not null)."""
    return F.coalesce(_c("has_known_subscriptions"), F.lit(False))


def topic_in_subscriptions() -> Column:
    """The offset's topic is in the group's `subscribed_topics`."""
    return F.coalesce(_c("is_topic_subscribed"), F.lit(False))


def subscription_facts(subscribed_topics: Column, topic: Column) -> dict[str, Column]:
    """The two subscription facts the rules read, from a group's topics and an offset's topic."""
    return {
        "has_known_subscriptions": subscribed_topics.isNotNull(),
        "is_topic_subscribed": F.coalesce(F.array_contains(subscribed_topics, topic), F.lit(False)),
    }


def is_subscribed(coordinator: Coordinator) -> Column:
    """`isSubscribedToTopic` (semantics.md 2.2 for classic groups, G-M7 and 2.4 for modern ones).

    Unknown subscriptions of a classic group count as subscribed for the Scala coordinator, and
    for the new one only when the protocol type is `consumer`.
    """
    unknown_counts_as = F.lit(True) if coordinator.is_scala else is_consumer_protocol()
    return F.when(
        is_classic() & ~has_known_subscriptions(), F.coalesce(unknown_counts_as, F.lit(False))
    ).otherwise(topic_in_subscriptions())


def has_explicit_expiry() -> Column:
    return _c("expire_timestamp_ms").isNotNull()


def has_state_timestamp() -> Column:
    return _c("current_state_timestamp_ms").isNotNull()


def loader_skips_v3_state_timestamp() -> Column:
    """Kafka 2.3's loader reads the state timestamp of a GroupMetadataValue v2 only."""
    return _c("metadata_value_version") == 3


def consumer_stable_with_known_subscriptions() -> Column:
    return is_classic() & is_consumer_protocol() & is_stable() & has_known_subscriptions()


# ---- EXP rows ---------------------------------------------------------------------------------


def _never(_: Params) -> Column:
    return F.lit(None).cast("long")


def _commit_plus_retention(p: Params) -> Column:
    # try_add: a deadline past the int64 range is "never" (null), not an overflow error
    return F.try_add(_c("commit_timestamp_ms"), F.lit(p.retention_ms))


def _state_plus_retention(p: Params) -> Column:
    return F.try_add(_c("current_state_timestamp_ms"), F.lit(p.retention_ms))


def _explicit(_: Params) -> Column:
    return _c("expire_timestamp_ms")


EXP_SHARE_NEVER = Rule(
    "EXP-SHARE-NEVER",
    "Share groups are skipped by the expiration job.",
    lambda: _c("group_type") == "share",
    _never,
)
EXP_NO_CONDITION_NEW = Rule(
    "EXP-NO-CONDITION",
    "Classic group with a protocol type that is neither Empty nor a Stable consumer group with"
    " known subscriptions: nothing of the group expires.",
    lambda: (
        is_classic()
        & has_protocol_type()
        & ~is_empty()
        & ~consumer_stable_with_known_subscriptions()
    ),
    _never,
)
EXP_SUBSCRIBED_NEW = Rule(
    "EXP-SUBSCRIBED",
    "The group is subscribed to the offset's topic.",
    lambda: is_subscribed(Coordinator.NEW),
    _never,
)
EXP_TXN_PENDING = Rule(
    "EXP-TXN-PENDING",
    "A transactional offset for the partition is pending (new coordinator).",
    lambda: F.coalesce(_c("has_pending_transaction"), F.lit(False)),
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
    lambda: is_classic() & has_protocol_type() & is_empty() & has_state_timestamp(),
    _state_plus_retention,
)
EXP_EMPTY_COMMIT_TS = Rule(
    "EXP-EMPTY-COMMIT-TS",
    "Empty classic group whose value (v0/v1) has no state timestamp.",
    lambda: is_classic() & has_protocol_type() & is_empty() & ~has_state_timestamp(),
    _commit_plus_retention,
)
EXP_SIMPLE_COMMIT_TS = Rule(
    "EXP-SIMPLE-COMMIT-TS",
    "Classic group without protocol type (offsets only): commit time.",
    lambda: is_classic() & ~has_protocol_type(),
    _commit_plus_retention,
)
EXP_STABLE_UNSUBSCRIBED = Rule(
    "EXP-STABLE-UNSUBSCRIBED",
    "Stable classic consumer group, topic no longer subscribed.",
    lambda: consumer_stable_with_known_subscriptions() & ~topic_in_subscriptions(),
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
    lambda: has_protocol_type() & ~is_empty(),
    _never,
)
EXP_EMPTY_V3_COMMIT_TS = Rule(
    "EXP-EMPTY-V3-COMMIT-TS",
    "2.1 (Kafka 2.3's loader): Empty classic group with a protocol type loaded from a"
    " GroupMetadataValue v3, whose state timestamp the loader does not read: commit time.",
    lambda: is_classic() & has_protocol_type() & is_empty() & loader_skips_v3_state_timestamp(),
    _commit_plus_retention,
)
EXP_NO_CONDITION_2_4 = Rule(
    "EXP-NO-CONDITION",
    "2.4: non-Empty groups with a protocol type, except Stable consumer"
    " groups with known subscriptions.",
    lambda: has_protocol_type() & ~is_empty() & ~consumer_stable_with_known_subscriptions(),
    _never,
)
EXP_SUBSCRIBED_2_4 = Rule(
    "EXP-SUBSCRIBED",
    "2.4: Stable consumer group with known subscriptions, topic subscribed.",
    lambda: consumer_stable_with_known_subscriptions() & topic_in_subscriptions(),
    _never,
)
EXP_PRE21_EXPIRE_TS = Rule(
    "EXP-PRE21-EXPIRE-TS",
    "Pre-2.1: every offset expires at its own expireTs (v0 and later: commitTs + retention),"
    " compared strictly.",
    lambda: F.lit(True),
    lambda p: F.coalesce(_c("expire_timestamp_ms"), _commit_plus_retention(p)),
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


def with_expiration(offsets: DataFrame, *, coordinator: Coordinator, params: Params) -> DataFrame:
    """Add `rule`, `expires_at_ms` and `expired` (at as_of) from the first matching EXP row.

    The first matching row's id is computed once; the deadline and the verdict follow from the
    id (row ids are unique within a coordinator's table), which keeps the expression small enough
    for Spark's code generation. An offset that no row matches keeps `rule` null; that cannot
    happen for a group that exists, and the pipeline asserts it.
    """
    table = EXPIRATION_TABLES[coordinator]
    assert len({row.id for row in table}) == len(table), f"duplicate EXP row ids in {coordinator}"
    rule = F.lit(None).cast("string")
    for row in reversed(table):
        rule = F.when(row.applies(), F.lit(row.id)).otherwise(rule)
    fired = F.col("rule")
    expires_at = F.lit(None).cast("long")
    for row in table:
        at = row.expires_at_ms(params)
        # strict rows expire when deadline < T, i.e. from deadline + 1 on
        deadline = F.try_add(at, F.lit(1)) if row.strict else at
        expires_at = F.when(fired == row.id, deadline).otherwise(expires_at)
    expired = F.when(
        fired.isNotNull(),
        F.coalesce(F.lit(params.as_of_ms) >= F.col("expires_at_ms"), F.lit(False)),
    )
    return (
        offsets.withColumn("rule", rule)
        .withColumn("expires_at_ms", expires_at)
        .withColumn("expired", expired)
    )


# ---- ODEL rows ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeleteRule:
    id: str
    doc: str
    applies: Callable[[], Column]
    error: str | None


ODEL_INVALID = DeleteRule(
    "ODEL-INVALID", "Empty group id.", lambda: _c("group_id") == "", "INVALID_GROUP_ID"
)
ODEL_NOTFOUND = DeleteRule(
    "ODEL-NOTFOUND",
    "No such group, a Dead group, or (new coordinator) a share group.",
    lambda: _c("state").isNull() | (_c("state") == "Dead") | (_c("group_type") == "share"),
    "GROUP_ID_NOT_FOUND",
)
ODEL_NONEMPTY_NEW = DeleteRule(
    "ODEL-NONEMPTY",
    "Non-Empty classic group whose protocol type is not consumer.",
    lambda: is_classic() & ~is_empty() & ~F.coalesce(is_consumer_protocol(), F.lit(False)),
    "NON_EMPTY_GROUP",
)
ODEL_SUBSCRIBED_NEW = DeleteRule(
    "ODEL-SUBSCRIBED",
    "The group is subscribed to the topic.",
    lambda: is_subscribed(Coordinator.NEW),
    "GROUP_SUBSCRIBED_TO_TOPIC",
)
ODEL_OK = DeleteRule(
    "ODEL-OK", "Admissible: a tombstone would be written.", lambda: F.lit(True), None
)
ODEL_OK_EMPTY_2_4 = DeleteRule(
    "ODEL-OK", "2.4: Empty group, every partition admissible.", is_empty, None
)
ODEL_SUBSCRIBED_2_4 = DeleteRule(
    "ODEL-SUBSCRIBED",
    "2.4: non-Empty consumer group subscribed to the topic (unknown counts).",
    lambda: (
        F.coalesce(is_consumer_protocol(), F.lit(False)) & is_subscribed(Coordinator.CLASSIC_2_4)
    ),
    "GROUP_SUBSCRIBED_TO_TOPIC",
)
ODEL_OK_CONSUMER_2_4 = DeleteRule(
    "ODEL-OK",
    "2.4: non-Empty consumer group, topic not subscribed.",
    lambda: F.coalesce(is_consumer_protocol(), F.lit(False)),
    None,
)
ODEL_NONEMPTY_2_4 = DeleteRule(
    "ODEL-NONEMPTY", "2.4: any other non-Empty group.", lambda: F.lit(True), "NON_EMPTY_GROUP"
)
ODEL_UNSUPPORTED = DeleteRule(
    "ODEL-UNSUPPORTED",
    "Before 2.4 there is no OffsetDelete API (semantics.md section 11, decision 8).",
    lambda: F.lit(True),
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


def with_offset_delete(offsets: DataFrame, *, coordinator: Coordinator) -> DataFrame:
    """Add `delete_error` (null = OffsetDelete would succeed) and `delete_rule` (ODEL row id)."""
    error = F.lit(None).cast("string")
    rule = F.lit(None).cast("string")
    for row in reversed(OFFSET_DELETE_TABLES[coordinator]):
        error = F.when(row.applies(), F.lit(row.error).cast("string")).otherwise(error)
        rule = F.when(row.applies(), F.lit(row.id)).otherwise(rule)
    return offsets.withColumns({"delete_error": error, "delete_rule": rule})


# ---- DEL rows -----------------------------------------------------------------------------------

DEL_NEW = "DEL-NEW"
DEL_CLASSIC = "DEL-CLASSIC"
DEL_STREAMS_PLUGIN = "DEL-STREAMS-PLUGIN"


def group_deletion(
    groups: DataFrame, decided_offsets: DataFrame, *, coordinator: Coordinator, as_of_ms: int
) -> DataFrame:
    """Whether a cleanup run at as_of deletes each group (DEL-NEW / DEL-CLASSIC /
    DEL-STREAMS-PLUGIN), and when it would.

    `deletes_at_ms` is the earliest time the group would be deleted if nothing else happens: the
    latest expiry of its offsets (or as_of when it qualifies without offsets); null when some
    offset never expires or the group can never be deleted in its current state.
    """
    per_group = decided_offsets.groupBy("log_partition", "group_id").agg(
        F.count(F.lit(1)).alias("_offsets"),
        F.count(F.when(~F.col("expired"), 1)).alias("_unexpired"),
        F.count(F.when(F.col("expires_at_ms").isNull(), 1)).alias("_never"),
        F.max("expires_at_ms").alias("_last_expiry_ms"),
    )
    g = groups.join(per_group, ["log_partition", "group_id"], "left").fillna(
        0, ["_offsets", "_unexpired", "_never"]
    )
    is_dead = _c("state") == "Dead"
    pending = F.coalesce(_c("has_pending_transactions"), F.lit(False))
    blocked_by = (
        F.when(is_dead, F.lit("DEAD"))
        .when(_c("group_type") == "share", F.lit("SHARE_GROUP"))
        .when(~is_empty(), F.lit("NOT_EMPTY"))
        .when(pending, F.lit("PENDING_TRANSACTION"))
        .when(_c("_never") > 0, F.lit("OFFSETS_NEVER_EXPIRE"))
        .when(_c("_unexpired") > 0, F.lit("OFFSETS_NOT_EXPIRED"))
    )
    # DEL-STREAMS-PLUGIN: a streams group with a stored topology-description epoch (not -1)
    has_plugin = F.lit(False)
    if coordinator.is_scala:
        # DEL-CLASSIC: a tombstone is written only for groups with generation > 0
        blocked_by = F.coalesce(
            blocked_by,
            F.when(F.coalesce(_c("generation"), F.lit(0)) <= 0, F.lit("GENERATION_0_NO_TOMBSTONE")),
        )
    else:
        has_plugin = F.coalesce(
            (_c("group_type") == "streams") & (_c("stored_description_topology_epoch") != -1),
            F.lit(False),
        )
        blocked_by = F.coalesce(
            blocked_by, F.when(has_plugin, F.lit("TOPOLOGY_DESCRIPTION_STORED"))
        )
    # EXP-NO-CONDITION only applies to non-Empty groups, so NOT_EMPTY already covers it.
    deletes_at = F.when(
        ~has_plugin & (blocked_by.isNull() | (blocked_by == "OFFSETS_NOT_EXPIRED")),
        F.when(_c("_offsets") > 0, _c("_last_expiry_ms")).otherwise(F.lit(as_of_ms)),
    )
    rule = F.lit(DEL_CLASSIC if coordinator.is_scala else DEL_NEW)
    return g.select(
        "log_partition",
        "group_id",
        "group_type",
        "state",
        blocked_by.isNull().alias("deleted"),
        deletes_at.alias("deletes_at_ms"),
        F.when(has_plugin, F.lit(DEL_STREAMS_PLUGIN)).otherwise(rule).alias("deletion_rule"),
        blocked_by.alias("blocked_by"),
    )
