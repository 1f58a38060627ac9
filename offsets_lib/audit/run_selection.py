"""The `runs` table's meaning for readers and for retention: pure functions over its rows.

Every table is partitioned by ``run_id`` and a run's ``runs`` row is committed last, so a
``succeeded`` row means the run's tables are complete. Two questions are answered here, once:

* which run a reader reads when none is named (:func:`latest_succeeded_run`): the succeeded run
  with the newest ``finished_at``; among equal ``finished_at`` the greatest ``run_id`` (default
  ids are ``run-<UTC time>`` and Airflow's ``scheduled__<time>``, so that is the later one);
  a null ``finished_at`` ranks below every time. Failed and ``running`` rows never count. This
  is the order of TABLES.md's SQL: ``WHERE status = 'succeeded' ORDER BY finished_at DESC,
  run_id DESC LIMIT 1`` (DuckDB and Spark put nulls last there too);
* which runs ``offsets prune`` removes (:func:`runs_to_remove`).

Rows are mappings with at least ``run_id``, ``status`` and ``finished_at`` (a ``datetime``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

__all__ = [
    "SUCCEEDED",
    "Retention",
    "RunTime",
    "latest_succeeded_run",
    "latest_succeeded_sql",
    "recency_key",
    "runs_to_remove",
]

SUCCEEDED = "succeeded"

Row = Mapping[str, Any]


def recency_key(finished_at: datetime | None, run_id: str) -> tuple[bool, datetime | None, str]:
    """Sort key of "newer": by time, then run id; an unknown time is older than any time."""
    return (finished_at is not None, finished_at, run_id)


def latest_succeeded_run(rows: Iterable[Row]) -> Row | None:
    """The row of the run a reader reads by default (see the module doc); None if none
    succeeded."""
    succeeded = [r for r in rows if r["status"] == SUCCEEDED]
    return (
        max(succeeded, key=lambda r: recency_key(r["finished_at"], r["run_id"]))
        if succeeded
        else None
    )


def latest_succeeded_sql(runs_table: str) -> str:
    """`latest_succeeded_run` as a SQL query of its ``run_id`` (Spark SQL and DuckDB), for
    catalog views; tests check that both engines pick the same run as the function."""
    return (
        f"SELECT run_id FROM {runs_table} WHERE status = '{SUCCEEDED}' "
        "ORDER BY finished_at DESC NULLS LAST, run_id DESC LIMIT 1"
    )


# ---- retention ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Retention:
    """What `offsets prune` keeps: the ``keep_runs`` newest runs and/or the runs that finished
    within ``keep_for`` before ``now``; a run either keeps is kept. None = that limit unused
    (at least one must be given)."""

    keep_runs: int | None = None
    keep_for: timedelta | None = None

    def __post_init__(self) -> None:
        if self.keep_runs is None and self.keep_for is None:
            raise ValueError("give --keep-runs N and/or --keep-for SPAN")
        if self.keep_runs is not None and self.keep_runs < 1:
            raise ValueError(f"--keep-runs {self.keep_runs}: keep at least 1 run")
        if self.keep_for is not None and self.keep_for < timedelta(0):
            raise ValueError("--keep-for must not be negative")


@dataclass(frozen=True)
class RunTime:
    """A run id found in the tables and when it happened: ``finished_at`` of its ``runs`` row,
    else (no row: a run killed before publishing, or one a prune half removed) the time its
    newest file was written. ``status`` None = no ``runs`` row."""

    run_id: str
    at: datetime | None
    status: str | None = None


def runs_to_remove(runs: Sequence[RunTime], retention: Retention, now: datetime) -> list[str]:
    """Run ids to remove, oldest first. Kept: the ``keep_runs`` newest (any status), those at or
    after ``now - keep_for``, and always the latest succeeded run (what readers read)."""
    newest_first = sorted(runs, key=lambda r: recency_key(r.at, r.run_id), reverse=True)
    kept: set[str] = set()
    if retention.keep_runs is not None:
        kept |= {r.run_id for r in newest_first[: retention.keep_runs]}
    if retention.keep_for is not None:
        since = now - retention.keep_for
        kept |= {r.run_id for r in runs if r.at is not None and r.at >= since}
    latest = latest_succeeded_run(
        {"run_id": r.run_id, "status": r.status, "finished_at": r.at} for r in runs
    )
    if latest is not None:
        kept.add(latest["run_id"])
    return [r.run_id for r in reversed(newest_first) if r.run_id not in kept]
