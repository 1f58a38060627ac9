"""What one run tells: its report (the counts, the tables, the stage times) and its stage lines.

`job.run` fills the report as the run goes; `offsets run` prints its summary and `make bench`
reads its figures.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger("offsets_lib.job.run")


class RejectRatioExceeded(RuntimeError):
    """Too many undecodable records (exit status 4); rejects and a failed runs row are written."""


@dataclass
class RunReport:
    """One run's counts, tables, stage times and error, filled as the run goes."""

    run_id: str
    status: str
    as_of_ms: int | None = None
    records_read: int = 0
    records_decoded: int = 0
    records_rejected: int = 0
    orphaned_offsets: int = 0
    groups_by_type_state: dict[str, int] = field(default_factory=dict)
    offsets_total: int = 0
    offsets_expired: int = 0
    offsets_expiring_24h: int = 0
    groups_deleted: int = 0
    # LOG-6: checks failed, and some of them (offsets partition, group id, check)
    load_failures: int = 0
    load_failures_shown: tuple[tuple[int, str, str], ...] = ()
    # offsets deleted soon after a value, read without transaction markers (Scala coordinators)
    unplaced_marker_deletes: int = 0
    tables: dict[str, str] = field(default_factory=dict)
    views: list[str] = field(default_factory=list)  # a catalog run's latest_<table> views
    stage_seconds: dict[str, float] = field(default_factory=dict)
    largest_task_records: int | None = None  # input records of the largest audit task (files)
    # the largest audit task's records over the average task's, in the step where it is largest
    task_skew: float | None = None
    # a Kafka run's {offsets partition: records} after its end that open transactions hold back
    records_held_back: dict[int, int] = field(default_factory=dict)
    log_end_offsets: int | None = None  # how many the run took for its lag table (None: none)
    error: str | None = None


def now_ms() -> int:
    """The clock, in epoch ms (the run's start and `--as-of now`)."""
    return int(time.time() * 1000)


class Stages:
    """Logs one line per stage with its duration (and counts when known), and each step as it
    starts (`step`)."""

    def __init__(
        self,
        report: RunReport,
        echo: Callable[[str], None],
        step: Callable[[str], None] = log.debug,
    ) -> None:
        self.report, self.echo, self.step = report, echo, step
        self.started = time.monotonic()

    def done(self, stage: str, detail: str = "") -> None:
        now = time.monotonic()
        seconds = round(now - self.started, 2)
        self.report.stage_seconds[stage] = seconds
        self.started = now
        self.echo(f"[{stage}] {detail} ({seconds:.1f} s)".replace("]  (", "] ("))
