"""What `offsets run` shows while it works: each step as it starts, and on long Spark stages
their tasks done, on one line that is rewritten in place.

Only on a terminal: a scheduler's log (stderr not a terminal) keeps the one summary line per
finished stage that every run prints.
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


class Progress:
    """Step lines and the live stage line, written to `stream` (stderr) under one lock."""

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.live = _is_terminal(self.stream) if live is None else live
        self._lock = threading.Lock()
        self._status = ""  # the stage line now on screen ("" = none)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def line(self, text: str) -> None:
        """A line every run prints (a finished stage's summary)."""
        with self._lock:
            self._clear()
            self.stream.write(text + "\n")
            self.stream.flush()

    def step(self, text: str) -> None:
        """A step as it starts; shown on a terminal only."""
        if self.live:
            self.line(f"  {text} ...")

    def status(self, text: str) -> None:
        """Replace the live line (terminal only)."""
        if not self.live:
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
        show the longest-running one once it has run `LONG_STAGE_S` (terminal only)."""
        if not self.live or self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self._poll, args=(stages,), name="offsets-progress", daemon=True
        )
        self._thread.start()

    def _poll(self, stages: Callable[[], list[tuple[int, str, int, int, int]]]) -> None:
        first_seen: dict[int, float] = {}
        while not self._stop.wait(POLL_S):
            try:
                active = stages()
            except Exception:  # the session is stopping (Ctrl-C, end of run): show nothing
                return
            now = time.monotonic()
            for stage_id, *_ in active:
                first_seen.setdefault(stage_id, now)
            long = [s for s in active if now - first_seen[s[0]] >= LONG_STAGE_S]
            if not long:
                if self._status:
                    with self._lock:
                        self._clear()
                        self.stream.flush()
                continue
            stage_id, name, tasks, done, running = min(long, key=lambda s: first_seen[s[0]])
            self.status(
                stage_text(stage_id, name, tasks, done, running, now - first_seen[stage_id])
            )

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
    """`  Spark stage 4 (mapInArrow at exchange.py:310): 3/8 tasks done, 2 running, 12 s`

    Args:
        stage_id, name: Spark's stage id and name.
        tasks, done, running: the stage's task counts.
        seconds: time since the stage was first seen.

    Returns:
        The progress line.
    """
    where = name.split("\n", 1)[0].strip()
    label = f"Spark stage {stage_id}" + (f" ({where[:60]})" if where else "")
    return f"  {label}: {done}/{tasks} tasks done, {running} running, {seconds:.0f} s"


def spark_stages(spark) -> Callable[[], list[tuple[int, str, int, int, int]]]:
    """The running stages of a session, from its status tracker (no job is started).

    Args:
        spark: the session.

    Returns:
        A function giving (stage id, name, tasks, done, running) per running stage, each call.
    """
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
