"""`offsets run`'s progress in a log (stderr not a terminal): the step lines, and a heartbeat
while a step lasts, the stage's tasks once Spark runs one."""

from __future__ import annotations

import io
import time

import pytest

from offsets_lib.cli import progress


@pytest.fixture
def still_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """A clock that stands still (every span is 0 s), polled often, every stage long."""
    monkeypatch.setattr(progress, "_clock", lambda: 100.0)
    monkeypatch.setattr(progress, "POLL_S", 0.01)
    monkeypatch.setattr(progress, "LONG_STAGE_S", 0.0)


def lines_once(out: io.StringIO, count: int) -> list[str]:
    """The first `count` lines written, waiting for the poller thread to write them."""
    for _ in range(500):
        lines = out.getvalue().splitlines()
        if len(lines) >= count:
            return lines[:count]
        time.sleep(0.01)
    raise AssertionError(out.getvalue())


def test_a_log_hears_of_a_step_while_it_lasts(still_clock: None) -> None:
    out = io.StringIO()
    shown = progress.Progress(out, live=False, every_s=0.0)
    shown.step("starting Spark")
    lines = lines_once(out, 2)
    shown.close()
    assert lines == ["  starting Spark ...", "  starting Spark: 0 s"]


def test_a_log_hears_of_the_longest_running_stage(still_clock: None) -> None:
    out = io.StringIO()
    shown = progress.Progress(out, live=False, every_s=0.0)
    shown.line("[read+audit] done (1.0 s)")  # a finished stage ends the step
    shown.watch(lambda: [(4, "mapInArrow at exchange.py:310\nmore", 8, 3, 2)])
    lines = lines_once(out, 2)
    shown.close()
    assert lines == [
        "[read+audit] done (1.0 s)",
        "  Spark stage 4 (mapInArrow at exchange.py:310): 3/8 tasks done, 2 running, 0 s",
    ]


def test_a_log_stays_quiet_between_steps(still_clock: None) -> None:
    out = io.StringIO()
    shown = progress.Progress(out, live=False, every_s=0.0)
    shown.line("[decide+write] 10 tables, runs next (1.0 s)")
    shown.watch(lambda: [])
    time.sleep(0.1)
    shown.close()
    assert out.getvalue() == "[decide+write] 10 tables, runs next (1.0 s)\n"


def test_a_terminal_sees_the_step_time_on_its_live_line(still_clock: None) -> None:
    out = io.StringIO()
    shown = progress.Progress(out, live=True)
    shown.step("starting Spark")
    for _ in range(500):
        if out.getvalue().endswith("starting Spark: 0 s"):
            break
        time.sleep(0.01)
    shown.close()
    assert out.getvalue() == "  starting Spark ...\n  starting Spark: 0 s\r\x1b[K"
