"""Reading the `runs` table: the I/O of `audit.run_selection` (which run readers read by default).

Every reader (`offsets fetch`, `fence-check`, `lag`, the notebook queries) finds its default
run here, so they all read the same one::

    row = latest_run(output)          # dict of the runs row; NoSucceededRun / NoRunsTable
"""

from __future__ import annotations

from typing import Any

from offsets_lib.audit import run_selection
from offsets_lib.io import sink, storage

RUNS_COLUMNS = ["run_id", "status", "finished_at", "as_of", "error"]


class NoRunsTable(LookupError):
    """No `runs` table under the output: nothing was written there."""


class NoSucceededRun(LookupError):
    """The `runs` table has no succeeded run."""


def require_runs_table(output: str) -> None:
    """NoRunsTable unless ``output`` has a `runs` table."""
    if not storage.is_delta_table(sink.table_uri(output, "runs")):
        raise NoRunsTable(f"no tables under {output} (no runs table): run `offsets run` first")


def read_runs(output: str, columns: list[str] | None = None) -> list[dict[str, Any]]:
    """Every row of the `runs` table (one per run id), ``columns`` of RUNS_COLUMNS by default."""
    require_runs_table(output)
    return sink.read_table(output, "runs", columns=columns or RUNS_COLUMNS).to_pylist()


def latest_run(output: str, rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The runs row of the latest succeeded run (`audit.run_selection.latest_succeeded_run`), among
    ``rows`` when the caller read them already."""
    row = run_selection.latest_succeeded_run(read_runs(output) if rows is None else rows)
    if row is None:
        raise NoSucceededRun(f"no succeeded run under {output}")
    return dict(row)
