"""The audit's results on Spark: the tasks' emitter and their stats.

The audit tasks (exchange.audit_pieces) run `audit.task_audit` (the decisions included:
`audit.rules`, at the evaluation time the shell picked before) and hand their tables to a
`TaskEmitter` (`engine.staging`: the tables' files too); `run_stats` totals their stats rows.
`job.run` is the shell that reads, picks the evaluation time and writes.
`tests/reference/spark_audit.py` is the same audit in plain Spark frames.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa


class TaskEmitter(Protocol):
    """What an audit task does with its result tables (staging.Staging writes them as files)."""

    @property
    def schema(self) -> pa.Schema: ...

    def __call__(self, tables: Mapping[str, pa.Table]) -> Iterator[pa.RecordBatch]: ...


@dataclass(frozen=True)
class RunStats:
    records_read: int
    records_rejected: int
    orphaned_offsets: int
    groups_by_type_state: dict[str, int]  # "group_type/state" -> groups
    offsets_total: int = 0  # the decisions' counts (task_audit.decided)
    offsets_expired: int = 0
    offsets_expiring_24h: int = 0
    groups_deleted: int = 0
    load_failures: int = 0  # LOG-6 checks failed (rows of load_failures)
    # some of them: (offsets partition, group id, check), sorted
    load_failures_shown: tuple[tuple[int, str, str], ...] = ()
    # offsets deleted soon after a value, read without transaction markers (Scala coordinators)
    unplaced_marker_deletes: int = 0


def run_stats(stats_rows: Iterable[Mapping[str, Any]]) -> RunStats:
    """Totals of the tasks' stats rows (kind "stats"; other rows are ignored)."""
    rows = [r for r in stats_rows if r["kind"] == "stats"]
    return RunStats(
        records_read=sum(r["records_read"] or 0 for r in rows),
        records_rejected=sum(r["records_rejected"] or 0 for r in rows),
        orphaned_offsets=sum(r["orphaned_offsets"] or 0 for r in rows),
        groups_by_type_state=_summed_counts(r["group_counts"] for r in rows),
        load_failures=sum(r["load_failures"] or 0 for r in rows),
        unplaced_marker_deletes=sum(r["unplaced_marker_deletes"] or 0 for r in rows),
        load_failures_shown=tuple(
            sorted(
                tuple(shown) for r in rows for shown in json.loads(r["load_failures_shown"] or "[]")
            )
        ),
        **{name: sum(r[name] or 0 for r in rows) for name in _DECISION_COUNTS},
    )


_DECISION_COUNTS = ("offsets_total", "offsets_expired", "offsets_expiring_24h", "groups_deleted")


def _summed_counts(tasks: Iterable[str | None]) -> dict[str, int]:
    """The tasks' group counts (JSON objects, partition_audit STATS) added up."""
    total: dict[str, int] = {}
    for counts in tasks:
        for name, count in json.loads(counts or "{}").items():
            total[name] = total.get(name, 0) + int(count)
    return total


DECIDED_TABLES = (
    "offsets", "offset_decisions", "groups", "members", "group_decisions", "load_failures",
    "unread_marker_offsets", "rejects", "metrics",
)  # fmt: skip
