"""The report in a real browser: Debian's chromium-headless-shell driven by Playwright, every
request other than the file itself blocked. No console error, no dialog; tiles, tables and each
chart's data (`_fullData`) equal the independent DuckDB read; pages switch; the group search
finds the hostile ids and shows them as text. Screenshots of each page go to docs/report-*.png.

A missing browser fails (`make setup` installs it), it is never skipped.
"""

from __future__ import annotations

import html
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.report.conftest import HOSTILE_IDS, build_report
from tests.report.independent import Tables

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
BROWSER = "chromium-headless-shell"
PAGES = ("now", "lag", "groups", "activity", "health")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    path = shutil.which(BROWSER)
    if path is None:
        pytest.fail(f"{BROWSER} is missing: `make setup` installs it (Debian package {BROWSER})")
    fonts = subprocess.run(["fc-list"], capture_output=True, text=True, check=True).stdout
    if "wqy-microhei" not in fonts or "Symbola" not in fonts:  # CJK and emoji ids, not boxes
        pytest.fail("the CJK and emoji fonts are missing: `make setup` installs them (Debian "
                    "packages fonts-wqy-microhei, fonts-symbola)")  # fmt: skip
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
        yield chromium
        chromium.close()


class Opened:
    """A page of the report with what it asked for and what it said."""

    def __init__(self, browser, path: Path) -> None:
        self.path = path
        self.requests: list[str] = []
        self.blocked: list[str] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", self._dialog)
        self.page.route("**/*", self._route)
        self.page.goto(path.as_uri())
        # the first page's charts are drawn when it opens, another page's when it is shown
        self.page.wait_for_function("document.getElementById('chart-expiry')._fullData")
        assert self.page.eval_on_selector_all("div.chart", "cs => cs.map(c => c.id)") == [
            "chart-expiry", "chart-top-lag", "chart-lag-history", "chart-meters",
            "chart-partitions",
        ]  # fmt: skip
        assert self.page.eval_on_selector_all("div.js-plotly-plot", "cs => cs.length") == 1

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def _route(self, route) -> None:
        url = route.request.url
        self.requests.append(url)
        if url.startswith("file:"):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def traces(self, key: str, div_id: str) -> list[dict]:
        """The chart's traces as plotly drew them, once its page ``key`` is shown."""
        self.show(key)
        return self.page.evaluate(
            """id => document.getElementById(id)._fullData.map(t => ({
                type: t.type, name: t.name, x: Array.from(t.x), y: Array.from(t.y)}))""",
            div_id,
        )

    def cells(self, selector: str) -> list[list[str]]:
        return self.page.eval_on_selector_all(
            f"{selector} tbody tr",
            "rows => rows.map(r => Array.from(r.cells).map(c => c.textContent))",
        )

    def show(self, key: str) -> None:
        self.page.click(f"#nav-{key}")
        visible = self.page.eval_on_selector_all(
            "section.page", "s => s.filter(e => e.offsetParent !== null).map(e => e.id)"
        )
        assert visible == [f"page-{key}"]
        if key == "groups":  # decoded when first shown
            self.page.wait_for_function("document.getElementById('group-count').textContent")


@pytest.fixture(scope="module")
def sample_page(browser, sample_tables: str, tmp_path_factory) -> Iterator[tuple[Opened, Tables]]:
    out = tmp_path_factory.mktemp("report_page") / "report.html"
    path, _ = build_report(sample_tables, out)
    opened = Opened(browser, path)
    yield opened, Tables(sample_tables)
    opened.page.close()


def test_offline_file_without_errors(sample_page) -> None:
    opened, _ = sample_page
    text = opened.path.read_text(encoding="utf-8")
    assert text.count("<script src") == 0 and "<link" not in text
    assert "<script>alert(" not in text and "<img" not in text  # the hostile ids, escaped
    assert text.count("plotly.js v") == 1  # the library inlined once
    assert opened.blocked == [] and len(opened.requests) == 1
    assert opened.errors == [] and opened.dialogs == []


def test_tiles_and_data_loss_list_from_the_dom(sample_page) -> None:
    opened, db = sample_page
    run = db.latest_run()
    assert opened.page.text_content("#h-run") == run
    for key, value in db.tiles(run).items():
        assert opened.page.text_content(f"#tile-{key} b") == f"{value:,}", key
    shown = opened.cells("#data-loss")
    assert shown == [
        [g, f"{n:,}", f"{lag:,}", expires, rule] for g, n, lag, expires, rule in db.data_loss(run)
    ]
    assert {row[0] for row in shown} >= set(HOSTILE_IDS)  # hostile ids shown whole, as text


def test_charts_hold_the_tables_numbers(sample_page) -> None:
    opened, db = sample_page
    run = db.latest_run()
    expiry = opened.traces("now", "chart-expiry")
    assert {t["type"] for t in expiry} == {"bar"}
    assert {t["name"]: sum(t["y"]) for t in expiry} == db.expiring_by_rule(run)
    [top] = opened.traces("lag", "chart-top-lag")
    top_lag = db.top_total_lag(run)
    assert top["type"] == "bar"
    assert top["y"][::-1] == [html.escape(g) for g, _, _ in top_lag]
    assert top["x"][::-1] == [total for _, total, _ in top_lag]
    [per_partition] = opened.traces("activity", "chart-partitions")
    commits = db.commits_per_partition(run)
    assert per_partition["x"] == [p for p, _ in commits]
    assert per_partition["y"] == [n for _, n in commits]
    meters = {t["name"]: t for t in opened.traces("activity", "chart-meters")}
    assert {t["type"] for t in meters.values()} == {"scatter"}
    hours = db.meters_per_hour(run)
    assert meters["offset_commits"]["x"] == [h for h, _, _ in hours]
    assert meters["offset_commits"]["y"] == [c for _, c, _ in hours]
    assert meters["groups_deleted"]["y"] == [d for _, _, d in hours]
    history = {t["name"]: t["y"] for t in opened.traces("lag", "chart-lag-history")}
    for group, _, _ in top_lag[:10]:
        assert history[html.escape(group)] == [lag for _, lag in db.lag_across_runs(group)]


def test_pages_switch_and_the_group_search_finds_hostile_ids(sample_page) -> None:
    opened, db = sample_page
    run = db.latest_run()
    for key in PAGES:
        opened.show(key)
    opened.show("groups")
    total = sum(db.type_state(run).values())
    assert opened.page.text_content("#group-count") == f"{total:,} of {total:,} groups"
    for group in HOSTILE_IDS:
        opened.page.fill("#group-search", group)
        rows = opened.cells("#groups-table")
        assert [r[0] for r in rows] == [group]
        assert rows[0][5] == f"{db.group_lag(run, group):,}"
    opened.page.fill("#group-search", "")
    opened.page.select_option("#group-state", "Empty")
    empty = sum(n for (_, state), n in db.type_state(run).items() if state == "Empty")
    assert opened.page.text_content("#group-count") == f"{empty:,} of {total:,} groups"
    opened.page.select_option("#group-state", "")
    opened.page.fill("#group-min-lag", "1000000")
    big = db.one(
        "SELECT count(*) FROM (SELECT group_id FROM lag WHERE run_id = ? GROUP BY 1 "
        "HAVING sum(lag) >= 1000000)",
        run,
    )
    assert opened.page.text_content("#group-count") == f"{big:,} of {total:,} groups"
    opened.page.fill("#group-min-lag", "0")
    opened.page.click("#groups-table th[data-col='5']")  # lag, ascending after the default
    first = opened.cells("#groups-table")[0]
    smallest = db.one(
        "SELECT min(s) FROM (SELECT sum(lag) s FROM lag WHERE run_id = ? GROUP BY group_id)", run
    )
    assert first[5] == f"{smallest:,}"
    assert opened.errors == [] and opened.dialogs == [] and opened.blocked == []


def test_rules_link_to_their_entries(sample_page) -> None:
    opened, _ = sample_page
    links = opened.page.eval_on_selector_all(
        "a.rule", "as => as.map(a => [a.textContent, a.getAttribute('href')])"
    )
    assert links and all(h.endswith("/docs/rules.md#" + r.lower()) for r, h in links)
    headings = (ROOT / "docs" / "rules.md").read_text()
    assert all(f"### {r}\n" in headings for r, _ in links)


def test_screenshots_of_every_page(browser, sample_page) -> None:
    opened = Opened(browser, sample_page[0].path)  # as a user opens it: no search, first order
    for key in PAGES:
        opened.show(key)
        target = ROOT / "docs" / f"report-{key}.png"
        opened.page.screenshot(path=str(target))
        assert target.stat().st_size > 10_000
    opened.page.close()
