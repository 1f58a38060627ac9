"""One run's rows, read from the written Delta tables with delta-rs and pyarrow (no Spark).

The operator's commands (`offsets fetch`, `offsets fence-check`) answer in well under a second
because they read only the files of the tables, filtered on the rows themselves: no answer
depends on the tables' Delta stats.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any


class NoRunError(RuntimeError):
    """The output has no tables, no successful run, or not the requested run (exit 3)."""


@dataclass(frozen=True)
class RunSnapshot:
    """The run a reading command answers from: where its tables are and what it saw."""

    output: str
    run_id: str
    as_of: datetime | None
    finished_at: datetime | None
    has_lag: bool


def table_dataset(output: str, name: str):
    """A table's current files as a pyarrow dataset. Returns the dataset, or None when the table
    does not exist (`storage.delta_dataset`: no Python file system left running at interpreter
    exit)."""
    from offsets_lib.io import storage

    uri = storage.table_uri(output, name)
    if not storage.is_delta_table(uri):
        return None
    return storage.delta_dataset(uri)


def load_run(output: str, run_id: str | None = None) -> RunSnapshot:
    """The run the readers answer from. Raises NoRunError (no tables, no succeeded run, or
    ``run_id`` absent or not succeeded)."""
    import pyarrow.compute as pc

    from offsets_lib.io import runs

    try:
        rows = runs.read_runs(output)
        if run_id is None:
            row = runs.latest_run(output, rows)
    except LookupError as exc:
        raise NoRunError(str(exc)) from None
    if run_id is not None:
        named = [r for r in rows if r["run_id"] == run_id]
        if not named:
            raise NoRunError(f"run {run_id!r} not found in {output}/runs")
        if named[0]["status"] != "succeeded":
            raise NoRunError(f"run {run_id!r} in {output}/runs has status {named[0]['status']!r}")
        row = named[0]
    lag = table_dataset(output, "lag")
    has_lag = lag is not None and lag.count_rows(filter=pc.field("run_id") == row["run_id"]) > 0
    return RunSnapshot(output, row["run_id"], row["as_of"], row["finished_at"], has_lag)


def read_run_rows(
    run: RunSnapshot, name: str, columns: list[str], group_ids: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """One run's rows of a table. Returns the rows as dicts (none when the table does not exist)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    dataset = table_dataset(run.output, name)
    if dataset is None or (group_ids is not None and not group_ids):
        return []
    condition = pc.field("run_id") == run.run_id
    if group_ids is not None:  # typed: isin([]) of a string column raises ArrowTypeError
        condition &= pc.field("group_id").isin(pa.array(list(group_ids), pa.string()))
    return dataset.to_table(columns=columns, filter=condition).to_pylist()


def choose_group_rows(rows: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, str | None]:
    """One row of a group id found on several __consumer_offsets partitions (merged dumps only).
    Returns the row of a group that exists (not Dead), then of the lowest partition, and a note
    saying so when more than one was live; (None, None) for no rows."""
    if not rows:
        return None, None
    ordered = sorted(
        rows,
        key=lambda r: (
            r["state"] == "Dead",
            r.get("offsets_partition") is None,
            r.get("offsets_partition") or 0,
        ),
    )
    live = [r for r in rows if r["state"] != "Dead"]
    note = None
    if len(live) > 1:
        parts = sorted(r.get("offsets_partition") for r in live)
        note = (
            f"group found on __consumer_offsets partitions {parts}; using "
            f"{ordered[0].get('offsets_partition')}"
        )
    return ordered[0], note


def topic_ids_for(run: RunSnapshot, topic: str) -> frozenset[str]:
    """The topic ids the run's offsets table stores for a topic name. Returns the ids (UUID form) of
    OffsetCommit v4+ values; empty when none was stored."""
    import pyarrow.compute as pc

    dataset = table_dataset(run.output, "offsets")
    if dataset is None:
        return frozenset()
    condition = (
        (pc.field("run_id") == run.run_id)
        & (pc.field("topic") == topic)
        & pc.field("topic_id").is_valid()
    )
    ids = dataset.to_table(columns=["topic_id"], filter=condition).column("topic_id")
    return frozenset(ids.unique().to_pylist())


def run_coordinator(run: RunSnapshot) -> str | None:
    """The coordinator the run was audited as (`runs.coordinator`). Returns the coordinator's name,
    or None when the runs table does not record it."""
    import pyarrow.compute as pc

    dataset = table_dataset(run.output, "runs")
    if dataset is None or "coordinator" not in dataset.schema.names:
        return None
    rows = dataset.to_table(columns=["coordinator"], filter=pc.field("run_id") == run.run_id)
    return next((c for c in rows.column("coordinator").to_pylist() if c), None)
