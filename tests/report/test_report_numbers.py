"""`offsets report`'s report.json equals an independent DuckDB read of the tables, on the sample
(two retained runs, hostile ids) and on the golden scenarios; the command's exit statuses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.report.conftest import HOSTILE_IDS, HOSTILE_LAG, RUN_IDS, build_report, invoke
from tests.report.independent import Tables

pytestmark = [pytest.mark.spark, pytest.mark.slow]


ISO = "%Y-%m-%dT%H:%M:%SZ"  # report.json's instants: ISO 8601 in UTC


def _loss(summary: dict) -> list[tuple]:
    return [
        (r["group_id"], r["partitions"], r["lag"], r["expires_at"], r["rule"])
        for r in summary["data_loss"]
    ]


def _instants(summary: dict) -> list[str]:
    """Every instant of report.json: its as_of and each data-loss expiry."""
    return [summary["as_of"], *(r["expires_at"] for r in summary["data_loss"])]


def test_sample_summary_equals_the_tables(sample_tables: str, tmp_path: Path) -> None:
    _, summary = build_report(sample_tables, tmp_path / "r.html")
    db = Tables(sample_tables)
    run = db.latest_run()
    assert summary["run_id"] == run == RUN_IDS[-1]
    as_of = db.one("SELECT strftime(as_of, ?) FROM runs WHERE run_id = ?", ISO, run)
    assert summary["as_of"] == as_of
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", t) for t in _instants(summary))
    assert summary["tiles"] == db.tiles(run)
    assert _loss(summary) == db.data_loss(run, ISO)
    # every panel has something to show on the sample
    tiles = summary["tiles"]
    assert tiles["expiring_24h"] > 0 and tiles["data_loss_groups"] > 0
    assert tiles["stale_offsets"] > 0 and tiles["groups_deleted_24h"] > 0
    # the hostile groups lag HOSTILE_LAG - i per partition and expire within 24 h
    loss = {r["group_id"]: r for r in summary["data_loss"]}
    for i, group in enumerate(HOSTILE_IDS):
        assert loss[group]["partitions"] == 2
        assert loss[group]["lag"] == 2 * (HOSTILE_LAG - i)
    assert summary["banners"] == [
        f"{tiles['rejects']:,} records of this run were rejected (Run health)."
    ]


def test_an_earlier_run_by_id(sample_tables: str, tmp_path: Path) -> None:
    _, summary = build_report(sample_tables, tmp_path / "r.html", "--run-id", RUN_IDS[0])
    db = Tables(sample_tables)
    assert summary["run_id"] == RUN_IDS[0]
    assert summary["tiles"] == db.tiles(RUN_IDS[0])
    assert _loss(summary) == db.data_loss(RUN_IDS[0], ISO)


def test_golden_summary_equals_the_tables(golden_tables: str, tmp_path: Path) -> None:
    _, summary = build_report(golden_tables, tmp_path / "g.html")
    db = Tables(golden_tables)
    assert summary["tiles"] == db.tiles("golden")
    assert summary["tiles"]["expiring_7d"] > 0 and summary["tiles"]["groups_deleted_24h"] > 0
    assert summary["data_loss"] == []  # no lag table: no log-end offsets in the scenarios


def test_exit_statuses(sample_tables: str, tmp_path: Path) -> None:
    missing = invoke(
        "report", "--output", str(tmp_path / "nothing"), "--out", str(tmp_path / "x.html")
    )
    assert missing.exit_code == 3
    assert missing.output.startswith("offsets: no tables under")
    unknown = invoke(
        "report", "--output", sample_tables, "--run-id", "nope", "--out", str(tmp_path / "x.html")
    )
    assert unknown.exit_code == 3
    assert unknown.output == f"offsets: run 'nope' not found in '{sample_tables}'/runs\n"
    bad = invoke("report", "--output", sample_tables, "--out", str(tmp_path / "x.txt"))
    assert bad.exit_code == 2
    assert not (tmp_path / "x.html").exists()


def test_next_to_tables_writes_the_run_and_latest(sample_tables: str, tmp_path: Path) -> None:
    import shutil

    tables = shutil.copytree(sample_tables, tmp_path / "tables")
    result = invoke("report", "--output", str(tables), "--next-to-tables")
    assert result.exit_code == 0, result.output
    reports = tables / "_reports"
    assert result.output.splitlines() == [
        str(reports / f"{RUN_IDS[-1]}.html"),
        str(reports / "latest.html"),
    ]
    assert sorted(p.name for p in reports.iterdir()) == sorted(
        [f"{RUN_IDS[-1]}.html", f"{RUN_IDS[-1]}.json", "latest.html", "latest.json"]
    )
    assert (reports / "latest.html").read_bytes() == (reports / f"{RUN_IDS[-1]}.html").read_bytes()
    # the tables' readers still read the root with a _reports folder in it
    assert (
        invoke("report", "--output", str(tables), "--out", str(tmp_path / "r.html")).exit_code == 0
    )
