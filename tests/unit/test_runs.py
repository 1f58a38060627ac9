"""One "latest succeeded run" for every reader, and what `offsets prune` keeps."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from offsets_lib.audit.run_selection import (
    Retention,
    RunTime,
    latest_succeeded_run,
    latest_succeeded_sql,
    runs_to_remove,
)
from offsets_lib.job.options import UsageError
from offsets_lib.tools import notebook_queries
from offsets_lib.tools.lag_report import run_to_report as lag_latest_run
from offsets_lib.tools.run_tables import NoRunError
from offsets_lib.tools.run_tables import load_run as fetch_load_run

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
RUN_ROWS = pa.schema(
    [("run_id", pa.string()), ("status", pa.string()), ("finished_at", pa.timestamp("us", "UTC"))]
)


def row(run_id: str, status: str, finished_at: datetime | None) -> dict:
    return {"run_id": run_id, "status": status, "finished_at": finished_at}


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        # two succeeded runs finishing at the same instant: the greater run id
        ([row("run-b", "succeeded", T0), row("run-a", "succeeded", T0)], "run-b"),
        ([row("run-a", "succeeded", T0), row("run-b", "succeeded", T0)], "run-b"),
        # a failed run that finished later does not count
        ([row("r1", "succeeded", T0), row("r2", "failed", T0 + timedelta(hours=1))], "r1"),
        # nor does a running one (no finish time yet) or one of an unknown status
        ([row("r1", "succeeded", T0), row("r2", "running", None)], "r1"),
        ([row("r1", "succeeded", T0), row("r2", None, T0 + timedelta(hours=1))], "r1"),
        # a succeeded row without a finish time ranks below any time
        ([row("z", "succeeded", None), row("a", "succeeded", T0)], "a"),
        ([row("z", "succeeded", None), row("y", "succeeded", None)], "z"),
        # newest finish time wins over the run id
        ([row("b", "succeeded", T0), row("a", "succeeded", T0 + timedelta(seconds=1))], "a"),
    ],
)
def test_latest_succeeded_run_tie_breaks(rows: list[dict], expected: str) -> None:
    chosen = latest_succeeded_run(rows)
    assert chosen is not None and chosen["run_id"] == expected


TIE_BREAKS = [
    [row("run-b", "succeeded", T0), row("run-a", "succeeded", T0)],
    [row("r1", "succeeded", T0), row("r2", "failed", T0 + timedelta(hours=1))],
    [row("r1", "succeeded", T0), row("r2", "running", None)],
    [row("z", "succeeded", None), row("a", "succeeded", T0)],
    [row("z", "succeeded", None), row("y", "succeeded", None)],
    [row("b", "succeeded", T0), row("a", "succeeded", T0 + timedelta(seconds=1))],
    [row("r", "failed", T0)],
]


@pytest.mark.parametrize("rows", TIE_BREAKS)
def test_the_sql_form_picks_the_same_run(rows: list[dict]) -> None:
    import duckdb

    runs = pa.Table.from_pylist(rows, schema=RUN_ROWS)  # noqa: F841 (read by DuckDB by name)
    picked = duckdb.sql(latest_succeeded_sql("runs")).fetchall()
    expected = latest_succeeded_run(rows)
    assert picked == ([] if expected is None else [(expected["run_id"],)])


def test_no_succeeded_run() -> None:
    assert latest_succeeded_run([row("r", "failed", T0), row("s", "running", None)]) is None
    assert latest_succeeded_run([]) is None


def _write_runs(root: Path, rows: list[dict]) -> None:
    table = pa.table(
        {
            "run_id": [r["run_id"] for r in rows],
            "status": [r["status"] for r in rows],
            "finished_at": pa.array([r["finished_at"] for r in rows], pa.timestamp("us", "UTC")),
            "as_of": pa.array([T0] * len(rows), pa.timestamp("us", "UTC")),
            "error": pa.array([None] * len(rows), pa.string()),
        }
    )
    write_deltalake(root / "runs", table, partition_by=["run_id"])


def _readers(output: str) -> list[str]:
    """The default run of each reader: fetch/fence-check, the notebook, lag."""
    return [
        fetch_load_run(output).run_id,
        notebook_queries.latest_run_id(output),
        lag_latest_run(output),
    ]


def test_every_reader_reads_the_same_run(tmp_path: Path) -> None:
    _write_runs(
        tmp_path,
        [
            row("run-a", "succeeded", T0),
            row("run-b", "succeeded", T0),  # same finish time: the greater id
            row("run-c", "failed", T0 + timedelta(hours=1)),
            row("run-d", "running", None),
            row("run-e", "succeeded", None),
        ],
    )
    assert _readers(str(tmp_path)) == ["run-b"] * 3


def test_every_reader_says_when_no_run_succeeded(tmp_path: Path) -> None:
    with pytest.raises(NoRunError, match="no tables under"):
        fetch_load_run(str(tmp_path))
    with pytest.raises(LookupError, match="no runs table"):
        notebook_queries.latest_run_id(str(tmp_path))
    _write_runs(tmp_path, [row("r", "failed", T0), row("s", "running", None)])
    with pytest.raises(NoRunError, match="no succeeded run"):
        fetch_load_run(str(tmp_path))
    with pytest.raises(LookupError, match="no succeeded run"):
        notebook_queries.latest_run_id(str(tmp_path))
    with pytest.raises(UsageError, match="no succeeded run"):  # exit status 2, as before
        lag_latest_run(str(tmp_path))


# ---- retention -------------------------------------------------------------------------------


def hourly(n: int, *, failed: set[int] = frozenset()) -> list[RunTime]:
    """n hourly runs r00.. ending at T0 + n-1 hours; indexes in ``failed`` failed."""
    return [
        RunTime(f"r{i:02d}", T0 + timedelta(hours=i), "failed" if i in failed else "succeeded")
        for i in range(n)
    ]


def test_keep_runs_keeps_the_newest() -> None:
    now = T0 + timedelta(hours=10)
    assert runs_to_remove(hourly(5), Retention(keep_runs=2), now) == ["r00", "r01", "r02"]


def test_keep_for_keeps_a_span_boundary_included() -> None:
    now = T0 + timedelta(hours=4)
    assert runs_to_remove(hourly(5), Retention(keep_for=timedelta(hours=2)), now) == [
        "r00",
        "r01",
    ]


def test_either_limit_keeps_a_run() -> None:
    now = T0 + timedelta(hours=4)
    both = Retention(keep_runs=4, keep_for=timedelta(hours=1))
    assert runs_to_remove(hourly(5), both, now) == ["r00"]
    both = Retention(keep_runs=1, keep_for=timedelta(hours=2))
    assert runs_to_remove(hourly(5), both, now) == ["r00", "r01"]


def test_the_latest_succeeded_run_is_never_removed() -> None:
    runs = hourly(5, failed={3, 4})  # the two newest failed
    now = T0 + timedelta(days=30)
    assert runs_to_remove(runs, Retention(keep_runs=1), now) == ["r00", "r01", "r03"]
    assert runs_to_remove(runs, Retention(keep_for=timedelta(hours=1)), now) == [
        "r00",
        "r01",
        "r03",
        "r04",
    ]


def test_runs_without_a_time_are_the_oldest() -> None:
    runs = [*hourly(2), RunTime("orphan", None)]
    assert runs_to_remove(runs, Retention(keep_runs=2), T0) == ["orphan"]
    assert runs_to_remove(runs, Retention(keep_for=timedelta(days=9)), T0) == ["orphan"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "--keep-runs N and/or --keep-for"),
        ({"keep_runs": 0}, "keep at least 1"),
        ({"keep_for": timedelta(hours=-1)}, "negative"),
    ],
)
def test_retention_needs_a_limit(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Retention(**kwargs)


def test_latest_view_selects_by_the_shared_rule() -> None:
    """The catalog's latest_<table> views embed latest_succeeded_sql, nothing of their own."""
    from offsets_lib.io.catalog import latest_view_sql

    statement = latest_view_sql("audit", "lag")[0]
    query = (
        "SELECT * FROM `audit`.`lag` WHERE `run_id` = ("
        + latest_succeeded_sql("`audit`.`runs`")
        + ")"
    )
    comment = "'The rows of lag of the latest succeeded run (TABLES.md).'"
    digest = hashlib.sha256(
        f"`audit`.`latest_lag` COMMENT {comment} AS {query}".encode()
    ).hexdigest()[:16]
    assert statement == (
        f"CREATE OR REPLACE VIEW `audit`.`latest_lag` COMMENT {comment}"
        f" TBLPROPERTIES ('offsets_audit.definition' = '{digest}') AS {query}"
    )


class _Catalog:
    """A session's `sql` as far as create_latest_views uses it: SHOW TABLE EXTENDED's rows
    (views with their properties line), and the statements run."""

    def __init__(self, views: dict[str, str]) -> None:
        self.views = views  # name -> the Table Properties line
        self.statements: list[str] = []

    def sql(self, statement: str):
        if statement.startswith("SHOW TABLE EXTENDED"):
            rows = [
                {"tableName": name, "isTemporary": False, "information": f"Type: VIEW\n{props}"}
                for name, props in self.views.items()
            ]
            return type("Shown", (), {"collect": lambda self: rows})()
        self.statements.append(statement)
        return None


def test_a_run_creates_only_the_views_the_catalog_lacks_or_holds_otherwise() -> None:
    from offsets_lib.io.catalog import create_latest_views, latest_view_sql

    current = re.search(r"definition' = '([0-9a-f]+)'", latest_view_sql("audit", "lag")[0])
    catalog = _Catalog(
        {
            "latest_lag": f"Table Properties: [offsets_audit.definition={current.group(1)},"
            " transient_lastDdlTime=1]",
            "latest_groups": "Table Properties: [offsets_audit.definition=0123456789abcdef]",
            "latest_runs": "Table Properties: [transient_lastDdlTime=1]",
            "latest__kept": "Table Properties: [offsets_audit.definition=0123456789abcdef]",
            "latest__checkpoint": "Table Properties: [offsets_audit.definition=00112233]",
            "latest_mine": "Table Properties: [transient_lastDdlTime=1]",  # a user's own
        }
    )
    views = create_latest_views(catalog, "audit", ["lag", "groups", "runs", "offsets"])
    assert views == ["audit.latest_groups", "audit.latest_lag", "audit.latest_offsets",
                     "audit.latest_runs"]  # fmt: skip
    assert catalog.statements == [
        "DROP VIEW IF EXISTS `audit`.`latest__checkpoint`",
        "DROP VIEW IF EXISTS `audit`.`latest__kept`",
    ] + [latest_view_sql("audit", t)[0] for t in ("groups", "offsets", "runs")]
