"""The decision rows the audit tasks apply (Arrow, `offsets_lib.audit.rules`) against the
reference's Spark column predicates (`tests/reference/spark_rules.py`), on every combination of
the facts they read: unknown (null) facts, deadlines past the int64 range, every coordinator."""

from __future__ import annotations

import itertools

import pyarrow as pa
import pytest

from offsets_lib.audit import group_deletion, rules
from offsets_lib.audit.coordinator import Coordinator
from tests.reference import spark_rules

pytestmark = pytest.mark.spark

MAX = 2**63 - 1
PARAMS = rules.Params(retention_ms=7 * rules.DAY_MS, as_of_ms=20 * rules.DAY_MS)
GROUP_TYPES = ("classic", "consumer", "streams", "share", None)
STATES = ("Empty", "Stable", "Dead", "PreparingRebalance", None)

OFFSET_FACTS = pa.schema(
    [
        ("log_partition", pa.int32()),
        ("group_id", pa.string()),
        ("topic", pa.string()),
        ("group_type", pa.string()),
        ("state", pa.string()),
        ("protocol_type", pa.string()),
        ("has_known_subscriptions", pa.bool_()),
        ("is_topic_subscribed", pa.bool_()),
        ("has_pending_transaction", pa.bool_()),
        ("expire_timestamp_ms", pa.int64()),
        ("commit_timestamp_ms", pa.int64()),
        ("current_state_timestamp_ms", pa.int64()),
        ("metadata_value_version", pa.int16()),
    ]
)


def _offsets() -> pa.Table:
    grid = itertools.product(
        GROUP_TYPES,
        STATES,
        ("consumer", "connect", None),
        (True, False, None),
        (True, False, None),
        (True, False, None),
        (None, 5 * rules.DAY_MS, MAX),
        (None, 0, MAX - 1000),
        (None, 10 * rules.DAY_MS),
        (None, 3),  # EXP-EMPTY-V3-COMMIT-TS reads version 3 (classic-2.1)
    )
    names = OFFSET_FACTS.names[3:]
    rows = [
        {"log_partition": i % 3, "group_id": ("" if i % 97 == 0 else f"g{i % 500}"),
         "topic": "t", **dict(zip(names, facts, strict=True))}
        for i, facts in enumerate(grid)
    ]  # fmt: skip
    return pa.Table.from_pylist(rows, schema=OFFSET_FACTS)


def _sorted(table: pa.Table, columns: list[str]) -> list[dict]:
    return table.select(["row", *columns]).sort_by("row").to_pylist()


@pytest.mark.parametrize("coordinator", list(Coordinator))
def test_expiration_and_offset_delete_equal_the_reference(spark, coordinator) -> None:
    offsets = _offsets()
    offsets = offsets.append_column("row", pa.array(range(offsets.num_rows), pa.int64()))
    decided = rules.with_offset_delete(
        rules.with_expiration(offsets, coordinator=coordinator, params=PARAMS),
        coordinator=coordinator,
    )
    expected = spark_rules.with_offset_delete(
        spark_rules.with_expiration(
            spark.createDataFrame(offsets), coordinator=coordinator, params=PARAMS
        ),
        coordinator=coordinator,
    ).toArrow()
    columns = ["rule", "expires_at_ms", "expired", "delete_error", "delete_rule"]
    assert _sorted(decided, columns) == _sorted(expected, columns)
    past_int64 = [
        r["expires_at_ms"]
        for r in decided.to_pylist()
        if r["commit_timestamp_ms"] == MAX - 1000
        and r["expire_timestamp_ms"] is None
        and r["rule"] in ("EXP-SIMPLE-COMMIT-TS", "EXP-PRE21-EXPIRE-TS")
    ]
    assert past_int64 and set(past_int64) == {None}  # commit + retention past int64: never


GROUP_FACTS = pa.schema(
    [
        ("log_partition", pa.int32()),
        ("group_id", pa.string()),
        ("group_type", pa.string()),
        ("state", pa.string()),
        ("generation", pa.int32()),
        ("has_pending_transactions", pa.bool_()),
        ("stored_description_topology_epoch", pa.int32()),
    ]
)
# DEL-STREAMS-PLUGIN: unknown, none (-1), stored by a plugin, uncertain (-2)
STORED_EPOCHS = (None, -1, 3, -2)
# a group's offsets: none, all expired, one not expired yet, one that never expires
OFFSET_SETS = {
    "none": [],
    "expired": [(True, 3 * rules.DAY_MS), (True, 4 * rules.DAY_MS)],
    "waiting": [(True, 3 * rules.DAY_MS), (False, 30 * rules.DAY_MS)],
    "never": [(False, None), (True, 2 * rules.DAY_MS)],
}


@pytest.mark.parametrize("coordinator", list(Coordinator))
def test_group_deletion_equals_the_reference(spark, coordinator) -> None:
    groups, offsets = [], []
    grid = itertools.product(
        GROUP_TYPES, STATES, (None, 0, 3), (True, False, None), OFFSET_SETS, STORED_EPOCHS
    )
    for i, (group_type, state, generation, pending, offset_set, stored) in enumerate(grid):
        key = {"log_partition": i % 3, "group_id": f"g{i}"}
        groups.append({**key, "group_type": group_type, "state": state,
                       "generation": generation, "has_pending_transactions": pending,
                       "stored_description_topology_epoch": stored})  # fmt: skip
        offsets += [{**key, "expired": e, "expires_at_ms": at} for e, at in OFFSET_SETS[offset_set]]
    group_table = pa.Table.from_pylist(groups, schema=GROUP_FACTS)
    offset_table = pa.Table.from_pylist(
        offsets,
        schema=pa.schema(
            [
                GROUP_FACTS.field(0),
                GROUP_FACTS.field(1),
                ("expired", pa.bool_()),
                ("expires_at_ms", pa.int64()),
            ]
        ),
    )
    decided = group_deletion.with_group_deletion(
        group_table, offset_table, coordinator=coordinator, as_of_ms=PARAMS.as_of_ms
    )
    expected = spark_rules.group_deletion(
        spark.createDataFrame(group_table),
        spark.createDataFrame(offset_table),
        coordinator=coordinator,
        as_of_ms=PARAMS.as_of_ms,
    ).toArrow()
    columns = ["group_id", "deleted", "deletes_at_ms", "deletion_rule", "blocked_by"]
    assert sorted(decided.select(columns).to_pylist(), key=lambda r: r["group_id"]) == sorted(
        expected.select(columns).to_pylist(), key=lambda r: r["group_id"]
    )
