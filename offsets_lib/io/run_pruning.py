"""`offsets prune`: remove old runs' partitions from every table under an output root.

Every run adds a ``run_id`` partition to every table (an hourly schedule: 8,760 a year), and
nothing else removes them. Which runs go is decided by `audit.run_selection.runs_to_remove`
(the N newest and/or a time span are kept, and always the latest succeeded run); this module
finds the runs and removes them:

1. the output's lock (`io.lock`) is held throughout, so no run writes meanwhile, and a run id
   found in the tables without a ``runs`` row is not a run in progress but one that was killed
   before publishing (or that an interrupted prune half removed): it is dated by its newest file
   and removed like any other run;
2. the runs' rows are deleted from ``runs`` first (one commit), then their partitions from every
   other table (one commit each): a reader never finds a ``runs`` row whose tables are gone;
3. internal tables: ``_checkpoint`` rows of removed runs, except every topic's current
   checkpoint, and ``_kept`` (and the legacy ``_state``) partitions of removed runs, except
   those the current checkpoints name: an incremental Kafka run always finds what it needs;
4. optionally ``vacuum``: data files that a commit removed longer ago than the retention are
   deleted, and so are log entries older than the log retention (``cleanup_metadata``).

Why this is safe while readers read: a delete is a new table version that only adds ``remove``
actions for whole files (the predicate names the partition column only, so nothing is
rewritten). A reader that opened an older version keeps reading its files, which stay on disk
until a vacuum whose retention has passed since the delete. The default retention is the
table's ``delta.deletedFileRetentionDuration``, 7 days unless set: a reader must not hold a
snapshot longer than that. ``vacuum_after`` shortens it on request (then a reader of an older
snapshot may find its files gone).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pyarrow as pa

from offsets_lib.audit import run_selection
from offsets_lib.audit.tables import RUN_ID, TABLES
from offsets_lib.io import incremental, sink, storage
from offsets_lib.io import runs as runs_io
from offsets_lib.io.delta_checksum import write_version_checksum
from offsets_lib.io.lock import output_lock

log = logging.getLogger(__name__)

# contract tables, `runs` first: its rows go before the partitions they vouch for
RUN_TABLES = ("runs", *(name for name in TABLES if name != "runs"))
KEPT_TABLES = (incremental.KEPT_TABLE,)


@dataclass
class PruneReport:
    """What a prune removed (or, with ``dry_run``, would remove)."""

    removed: list[str] = field(default_factory=list)  # run ids, oldest first
    kept: list[str] = field(default_factory=list)  # run ids, oldest first
    latest: str | None = None  # the latest succeeded run, never removed
    commits: dict[str, int] = field(default_factory=dict)  # table -> partitions removed
    protected: list[str] = field(default_factory=list)  # internal partitions of removed runs
    vacuumed: dict[str, int] = field(default_factory=dict)  # table -> files deleted
    dry_run: bool = False


def _tables(output: str, names: Iterable[str]) -> dict[str, object]:
    """The Delta tables among ``names`` that exist under ``output``."""
    found = {}
    for name in names:
        uri = sink.table_uri(output, name)
        if storage.is_delta_table(uri):
            found[name] = storage.delta_table(uri)
    return found


def _partitions(dt) -> dict[str, datetime]:
    """run_id partition value -> modification time of its newest file (UTC)."""
    actions = pa.table(dt.get_add_actions(flatten=True)).to_pydict()
    newest: dict[str, int] = {}
    values = actions.get(f"partition.{RUN_ID}", [])
    for value, ms in zip(values, actions.get("modification_time", []), strict=True):
        if value is not None:
            newest[value] = max(newest.get(value, ms), ms)
    return {k: datetime.fromtimestamp(ms / 1000, UTC) for k, ms in newest.items()}


def _kept_run(kept_id: str) -> str:
    """The run that stored a kept partition ``<run_id>@<sequence>``."""
    return kept_id.rpartition("@")[0] or kept_id


def find_runs(output: str) -> list[run_selection.RunTime]:
    """Every run id of the tables under ``output``, with its time (`audit.run_selection.RunTime`).

    NoRunsTable when there is no ``runs`` table.
    """
    rows = {r[RUN_ID]: r for r in runs_io.read_runs(output, [RUN_ID, "status", "finished_at"])}
    written: dict[str, datetime] = {}
    tables = _tables(output, [*RUN_TABLES, incremental.CHECKPOINT_TABLE])
    for dt in tables.values():
        for run_id, at in _partitions(dt).items():
            written[run_id] = max(written.get(run_id, at), at)
    for dt in _tables(output, KEPT_TABLES).values():
        for kept_id, at in _partitions(dt).items():
            run_id = _kept_run(kept_id)
            written[run_id] = max(written.get(run_id, at), at)
    found = [run_selection.RunTime(i, r["finished_at"], r["status"]) for i, r in rows.items()]
    found += [run_selection.RunTime(i, at) for i, at in written.items() if i not in rows]
    return found


def _current_checkpoints(tables: dict[str, object]) -> tuple[set[str], set[str]]:
    """(run ids of the ``_checkpoint`` partitions holding every topic's current checkpoint,
    kept ids those checkpoints name)."""
    dt = tables.get(incremental.CHECKPOINT_TABLE)
    if dt is None:
        return set(), set()
    rows = dt.to_pyarrow_table(columns=["topic", "sequence", "state_id", RUN_ID]).to_pylist()
    current = incremental.current_rows(rows)
    return {r[RUN_ID] for r in current}, {r["state_id"] for r in current}


def _sql_list(values: Iterable[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in sorted(values))


def _delete_partitions(dt, name: str, values: set[str], *, prune_id: str) -> None:
    """One commit removing whole files of the ``run_id`` partitions ``values``."""
    from deltalake import CommitProperties

    props = CommitProperties(
        custom_metadata={"command": "offsets prune", "userMetadata": prune_id, "table": name}
    )
    dt.delete(predicate=f"{RUN_ID} IN ({_sql_list(values)})", commit_properties=props)
    log.info("pruned %s: %d run_id partitions", name, len(values))


def prune(
    output: str,
    retention: run_selection.Retention,
    *,
    now: datetime | None = None,
    dry_run: bool = False,
    vacuum: bool = True,
    vacuum_after: timedelta | None = None,
) -> PruneReport:
    """Remove the runs ``retention`` does not keep from every table under ``output`` (module
    doc), then vacuum (``vacuum_after`` None: each table's own retention, 7 days by default).

    Raises NoRunsTable (nothing written there) and OutputLocked (a run is writing).
    """
    now = now or datetime.now(UTC)
    prune_id = now.strftime("prune-%Y%m%dT%H%M%SZ")
    runs_io.require_runs_table(output)  # before the lock, which would create the folder
    with output_lock(output, prune_id):
        found = find_runs(output)
        removed = run_selection.runs_to_remove(found, retention, now)
        gone = set(removed)
        latest = run_selection.latest_succeeded_run(
            {"run_id": r.run_id, "status": r.status, "finished_at": r.at} for r in found
        )
        oldest_first = sorted(found, key=lambda r: run_selection.recency_key(r.at, r.run_id))
        report = PruneReport(
            removed=removed,
            kept=[r.run_id for r in oldest_first if r.run_id not in gone],
            latest=latest["run_id"] if latest else None,
            dry_run=dry_run,
        )
        tables = _tables(output, [*RUN_TABLES, incremental.CHECKPOINT_TABLE, *KEPT_TABLES])
        checkpoint_runs, kept_ids = _current_checkpoints(tables)
        for name, dt in tables.items():
            present = set(_partitions(dt))
            if name in KEPT_TABLES:
                doomed = {k for k in present if _kept_run(k) in gone}
                protected = doomed & kept_ids
            elif name == incremental.CHECKPOINT_TABLE:
                doomed = present & gone
                protected = doomed & checkpoint_runs
            else:
                doomed, protected = present & gone, set()
            report.protected += [f"{name}/{RUN_ID}={p}" for p in sorted(protected)]
            doomed -= protected
            if doomed:
                report.commits[name] = len(doomed)
                if not dry_run:
                    _delete_partitions(dt, name, doomed, prune_id=prune_id)
                    write_version_checksum(sink.table_uri(output, name), dt)
        if vacuum and not dry_run:
            report.vacuumed = _vacuum(tables, vacuum_after)
    return report


def _vacuum(tables: dict[str, object], after: timedelta | None) -> dict[str, int]:
    """Delete files removed longer ago than ``after`` (None: the table's retention), and log
    entries past the log retention."""
    hours = None if after is None else math.ceil(after / timedelta(hours=1))
    deleted = {}
    for name, dt in tables.items():  # each at its version after the deletes
        files = dt.vacuum(
            retention_hours=hours, dry_run=False, enforce_retention_duration=hours is None
        )
        dt.cleanup_metadata()
        if files:
            deleted[name] = len(files)
    return deleted
