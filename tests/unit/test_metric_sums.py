"""The `metrics` counts: the tasks' partial meters summed per hour and partition
(metrics.hourly_sums, on the driver) and the table's columns (table_rows.metric_rows)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from offsets_lib.audit.metrics import METRIC_COUNTS, groups_created, hourly_counts, hourly_sums
from offsets_lib.audit.table_rows import metric_rows
from offsets_lib.audit.task_audit import KIND_ARROW, METRIC

HOUR = 3_600_000


def _partial(*rows: tuple[int | None, int, int]) -> pa.Table:
    """A task's partial counts: (hour_ms, log_partition, n), every count n."""
    return pa.Table.from_pylist(
        [
            {"hour_ms": hour, "log_partition": partition, **dict.fromkeys(METRIC_COUNTS, n)}
            for hour, partition, n in rows
        ],
        schema=KIND_ARROW[METRIC],
    )


def test_partial_counts_of_every_task_are_summed_per_hour_and_partition():
    tasks = [
        _partial((HOUR, 1, 2), (None, 1, 1), (0, 2, 5)),
        _partial((HOUR, 1, 3), (2 * HOUR, 1, 1)),
        _partial(),  # a task without counted records
        _partial((None, 1, 4), (0, 2, 1)),
    ]
    sums = hourly_sums(tasks)
    assert [(r["hour_ms"], r["log_partition"], r["offset_commits"]) for r in sums.to_pylist()] == [
        (0, 2, 6),
        (HOUR, 1, 5),
        (2 * HOUR, 1, 1),
        (None, 1, 5),  # records without a log timestamp: the hour null
    ]
    assert all(sums.column(name).to_pylist() == [6, 5, 1, 5] for name in METRIC_COUNTS)
    assert hourly_sums(iter(tasks)) == hourly_sums([pa.concat_tables(tasks)])


def test_no_partial_counts_give_no_rows():
    assert hourly_sums([]).num_rows == 0
    assert hourly_sums([_partial()]).num_rows == 0


def test_metric_rows_are_the_table_columns():
    rows = metric_rows(hourly_sums([_partial((HOUR, 7, 2), (None, 7, 1))]))
    assert rows.column_names == ["hour", "offsets_partition", *METRIC_COUNTS]
    assert rows.column("hour").to_pylist() == [datetime(1970, 1, 1, 1, tzinfo=UTC), None]
    assert rows.column("offsets_partition").to_pylist() == [7, 7]


def _created_one_by_one(records: list[tuple[int, int, bool, bool]]) -> list[bool]:
    """groups_created's reference: each group's records walked in (offset, position) order."""
    created = [False] * len(records)
    last: dict[int, str] = {}  # group -> "value" or "deleted" (the newest event so far)
    order = sorted(range(len(records)), key=lambda i: (records[i][0], records[i][1], i))
    for i in order:
        group, _, tombstone, group_tombstone = records[i]
        if not tombstone:
            created[i] = last.get(group, "deleted") == "deleted"
            last[group] = "value"
        elif group_tombstone:
            last[group] = "deleted"
    return created


@settings(max_examples=300)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),  # group
            st.integers(0, 6),  # log offset: ties and any order
            st.sampled_from(["value", "tombstone", "group tombstone"]),
        ),
        max_size=40,
    )
)
def test_a_group_is_created_by_its_first_value_and_its_first_after_a_deletion(
    drawn: list[tuple[int, int, str]],
) -> None:
    records = [(g, o, kind != "value", kind == "group tombstone") for g, o, kind in drawn]
    codes, offsets, tombstone, group_tombstone = (
        np.array([r[i] for r in records], dtype=t)
        for i, t in enumerate((np.int64, np.int64, bool, bool))
    )
    created = groups_created(codes, offsets, tombstone, group_tombstone)
    assert created.tolist() == _created_one_by_one(records)


def _counted_one_by_one(
    rows: list[tuple[int | None, int | None, list[bool]]],
) -> list[tuple[int | None, int | None, list[int]]]:
    """Per (hour, partition) pair in order of first appearance: each flag's count."""
    counts: dict[tuple[int | None, int | None], list[int]] = {}
    for hour, partition, flags in rows:
        total = counts.setdefault((hour, partition), [0] * len(flags))
        for i, flag in enumerate(flags):
            total[i] += flag
    return [(hour, partition, total) for (hour, partition), total in counts.items()]


@settings(max_examples=300)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.sampled_from([-(2**62), -HOUR, 0, HOUR, 7 * HOUR, 2**62])),
            st.one_of(st.none(), st.sampled_from([-(2**31), -1, 0, 3, 49, 2**31 - 1])),
            st.lists(st.booleans(), min_size=2, max_size=2),
        ),
        max_size=30,
    )
)
def test_hourly_counts_count_each_flag_per_hour_and_partition(
    rows: list[tuple[int | None, int | None, list[bool]]],
) -> None:
    flags = np.array([f for _, _, f in rows], dtype=bool).reshape(len(rows), 2)
    counted = hourly_counts(
        pa.chunked_array([pa.array([h for h, _, _ in rows], pa.int64())]),
        pa.array([p for _, p, _ in rows], pa.int32()),
        {"a": flags[:, 0], "b": flags[:, 1]},
    )
    assert counted.schema.types == [pa.int64(), pa.int32(), pa.int64(), pa.int64()]
    assert [
        (r["hour_ms"], r["log_partition"], [r["a"], r["b"]]) for r in counted.to_pylist()
    ] == _counted_one_by_one(rows)
