"""DEL-STREAMS-PLUGIN against DEL-NEW / DEL-CLASSIC on a few groups, exact values
(`group_deletion.with_group_deletion`; the full grid against the Spark reference is in
tests/spark/test_rules.py)."""

from __future__ import annotations

import pyarrow as pa

from offsets_lib.audit import group_deletion, rules
from offsets_lib.audit.coordinator import Coordinator

AS_OF_MS = 20 * rules.DAY_MS
GROUPS = pa.schema(
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
OFFSETS = pa.schema(
    [
        ("log_partition", pa.int32()),
        ("group_id", pa.string()),
        ("expired", pa.bool_()),
        ("expires_at_ms", pa.int64()),
    ]
)


def decide(groups: list[tuple], offsets: list[tuple], coordinator: Coordinator) -> list[tuple]:
    rows = [(0, *g[:4], False, g[4]) for g in groups]  # no pending transaction
    table = pa.Table.from_pylist(
        [dict(zip(GROUPS.names, row, strict=True)) for row in rows], schema=GROUPS
    )
    offset_table = pa.Table.from_pylist(
        [dict(zip(OFFSETS.names, (0, *o), strict=True)) for o in offsets], schema=OFFSETS
    )
    decided = group_deletion.with_group_deletion(
        table, offset_table, coordinator=coordinator, as_of_ms=AS_OF_MS
    )
    columns = ["group_id", "deleted", "deletes_at_ms", "deletion_rule", "blocked_by"]
    return [tuple(r.values()) for r in decided.select(columns).to_pylist()]


STREAMS_GROUPS = [
    ("plugin", "streams", "Empty", 4, 7),  # stored by a description plugin
    ("uncertain", "streams", "Empty", 4, -2),  # -2 "uncertain": cleared first as well
    ("no-plugin", "streams", "Empty", 4, -1),
    ("waiting", "streams", "Empty", 4, 7),  # an offset expires later
    ("busy", "streams", "Stable", 4, 7),
    ("consumer", "consumer", "Empty", 4, None),
]
STREAMS_OFFSETS = [
    ("plugin", True, 3 * rules.DAY_MS),
    ("uncertain", True, 3 * rules.DAY_MS),
    ("no-plugin", True, 3 * rules.DAY_MS),
    ("waiting", False, 30 * rules.DAY_MS),
    ("consumer", True, 2 * rules.DAY_MS),
]


def test_a_stored_topology_description_keeps_the_group_at_t() -> None:
    plugin, new = group_deletion.DEL_STREAMS_PLUGIN, group_deletion.DEL_NEW
    assert decide(STREAMS_GROUPS, STREAMS_OFFSETS, Coordinator.NEW) == [
        ("plugin", False, None, plugin, "TOPOLOGY_DESCRIPTION_STORED"),
        ("uncertain", False, None, plugin, "TOPOLOGY_DESCRIPTION_STORED"),
        ("no-plugin", True, 3 * rules.DAY_MS, new, None),
        ("waiting", False, None, plugin, "OFFSETS_NOT_EXPIRED"),  # deletes_at unknown
        ("busy", False, None, plugin, "NOT_EMPTY"),
        ("consumer", True, 2 * rules.DAY_MS, new, None),
    ]


def test_scala_coordinators_ignore_the_stored_epoch() -> None:
    decided = decide(STREAMS_GROUPS[:1], STREAMS_OFFSETS[:1], Coordinator.CLASSIC_2_4)
    assert decided == [("plugin", True, 3 * rules.DAY_MS, group_deletion.DEL_CLASSIC, None)]
