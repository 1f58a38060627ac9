"""What `offsets run` shows while it works: each step as it starts, and on long Spark stages
their tasks done.

On a terminal the stage line is rewritten in place. A log (stderr not a terminal: Airflow's, a
file) gets the same step lines, and while a step lasts a new line every `LOG_EVERY_S` (the
longest-running stage's tasks, or the step's time so far), so a reader of the log can tell a
run that works from one that hangs.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

# A stage shows its tasks once it has run this long: shorter ones would only flicker.
LONG_STAGE_S = 2.0
POLL_S = 0.5
_clock = time.monotonic  # what the spans are measured with
LOG_EVERY_S = 10.0  # a log's heartbeat while a step lasts: few lines, yet no long silence


class Progress:
    """Step lines and the stage line, written to `stream` (stderr) under one lock."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        live: bool | None = None,
        every_s: float = LOG_EVERY_S,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.live = _is_terminal(self.stream) if live is None else live
        self.every_s = every_s
        self._lock = threading.Lock()
        self._status = ""  # the stage line now on screen ("" = none)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._stages: Callable[[], list[tuple[int, str, int, int, int]]] | None = None
        self._step = ""  # the step under way, and when it and the last line began
        self._step_since = self._last_line = _clock()

    def line(self, text: str) -> None:
        """A line every run prints (a finished stage's summary, which ends the step)."""
        self._step = ""
        self._write(text)

    def _write(self, text: str) -> None:
        with self._lock:
            self._clear()
            self.stream.write(text + "\n")
            self.stream.flush()
            self._last_line = _clock()

    def step(self, text: str) -> None:
        """A step as it starts; a log then hears of it every `every_s` while it lasts."""
        self._write(f"  {text} ...")
        self._step, self._step_since = text, _clock()
        self._start()

    def status(self, text: str) -> None:
        """Replace the live line (terminal only; the same text is not written again)."""
        if not self.live or text == self._status:
            return
        with self._lock:
            self._clear()
            self.stream.write(text)
            self.stream.flush()
            self._status = text

    def _clear(self) -> None:
        if self._status:
            self.stream.write("\r\x1b[K")
            self._status = ""

    def watch(self, stages: Callable[[], list[tuple[int, str, int, int, int]]]) -> None:
        """Poll `stages()` -> [(stage id, name, tasks, done, running)] in a daemon thread and
        show the longest-running one once it has run `LONG_STAGE_S`."""
        self._stages = stages
        self._start()

    def _start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._poll, name="offsets-progress", daemon=True)
        self._thread.start()

    def _active(self) -> list[tuple[int, str, int, int, int]]:
        if self._stages is None:
            return []
        try:
            return self._stages()
        except Exception:  # the session is stopping (Ctrl-C, end of run): no stage to show
            self._stages = None
            return []

    def _poll(self) -> None:
        first_seen: dict[int, float] = {}
        while not self._stop.wait(POLL_S):
            active = self._active()
            now = _clock()
            for stage_id, *_ in active:
                first_seen.setdefault(stage_id, now)
            long = [s for s in active if now - first_seen[s[0]] >= LONG_STAGE_S]
            oldest = min(long, key=lambda s: first_seen[s[0]]) if long else None
            text = None
            if oldest is not None:
                stage_id, name, tasks, done, running = oldest
                text = stage_text(stage_id, name, tasks, done, running, now - first_seen[stage_id])
            elif self._step and now - self._step_since >= LONG_STAGE_S:  # e.g. a JVM starting
                text = f"  {self._step}: {now - self._step_since:.0f} s"
            if self.live:
                if text is not None:
                    self.status(text)
                elif self._status:
                    with self._lock:
                        self._clear()
                        self.stream.flush()
            elif text is not None and now - self._last_line >= self.every_s:
                self._write(text)

    def close(self) -> None:
        """Stop the poller and clear the live line."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * POLL_S)
        with self._lock:
            self._clear()
            self.stream.flush()


def stage_text(
    stage_id: int, name: str, tasks: int, done: int, running: int, seconds: float
) -> str:
    """`  Spark stage 4 (mapInArrow at exchange.py:310): 3/8 tasks done, 2 running, 12 s`"""
    where = name.split("\n", 1)[0].strip()
    label = f"Spark stage {stage_id}" + (f" ({where[:60]})" if where else "")
    return f"  {label}: {done}/{tasks} tasks done, {running} running, {seconds:.0f} s"


def spark_stages(spark) -> Callable[[], list[tuple[int, str, int, int, int]]]:
    """The running stages of a session, from its status tracker (no job is started). Returns a
    function giving (stage id, name, tasks, done, running) per running stage, each call."""
    tracker = spark.sparkContext.statusTracker()  # the CLI's own classic session only

    def active() -> list[tuple[int, str, int, int, int]]:
        found = []
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is not None:
                found.append(
                    (
                        stage_id,
                        info.name,
                        info.numTasks,
                        info.numCompletedTasks,
                        info.numActiveTasks,
                    )
                )
        return found

    return active


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
