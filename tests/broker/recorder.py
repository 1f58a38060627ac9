"""Counts of compared values per broker version and situation, and the `make verify-broker` report.

Tests add one `Check` per compared value; at the end of the session the conftest writes them,
and the versions whose broker did not run with why, to ``$BROKER_CHECKS_JSON`` (default
``build/broker-checks.json``). ``python tests/broker/recorder.py FILE`` prints the table, one
line per broker version (``broker X.Y.Z (REGIME): N situations, C values compared, A agree,
U reported unknown by the job``, or ``... not run: why``) and ends with the line
``broker checks: N situations, C values compared, A agree, U reported unknown by the job``.
A value the job reports undecided (its ``unread_marker_offsets`` table: what a read without
transaction markers cannot decide) is counted as reported unknown, not compared.
"""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script by `make verify-broker`
    sys.path.insert(0, str(ROOT))

from tests.broker.eras import VERSIONS, coordinator_for  # noqa: E402


def report_path() -> Path:
    return Path(os.environ.get("BROKER_CHECKS_JSON", ROOT / "build" / "broker-checks.json"))


@dataclass(frozen=True)
class Check:
    version: str
    situation: str
    phase: str  # live, offset-delete, expiry, reload
    what: str  # e.g. "offsets g t/0 committed_offset"
    broker: Any
    job: Any
    job_unknown: bool = False  # the job flagged this value uncertain: counted, not compared

    @property
    def agrees(self) -> bool:
        return self.broker == self.job


class Recorder:
    def __init__(self) -> None:
        self.checks: list[Check] = []
        self.not_run: dict[str, str] = {}  # version -> why its broker did not run
        # version -> the generated logs' sizes and load failures (tests/broker/generated.py)
        self.generated: dict[str, dict] = {}

    def compare(
        self,
        version: str,
        situation: str,
        phase: str,
        what: str,
        broker,
        job,
        *,
        job_unknown: bool = False,
    ) -> bool:
        check = Check(version, situation, phase, what, _plain(broker), _plain(job), job_unknown)
        self.checks.append(check)
        return check.agrees

    def disagreements(self, version: str, situation: str) -> list[Check]:
        return [
            c
            for c in self.checks
            if c.version == version
            and c.situation == situation
            and not c.job_unknown
            and not c.agrees
        ]

    def unknowns(self, version: str, situation: str) -> list[Check]:
        """The values the job reported unknown (not compared)."""
        return [
            c
            for c in self.checks
            if c.version == version and c.situation == situation and c.job_unknown
        ]

    def rows(self) -> list[dict]:
        return [{**asdict(c), "agrees": c.agrees} for c in self.checks]

    def write(self, path: Path) -> None:
        """The report at `path`; an xdist worker's at its `part_path` (`merge_parts` joins
        them: the broker versions run on several workers)."""
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        path = part_path(path, worker) if worker else path
        path.parent.mkdir(parents=True, exist_ok=True)
        report = {"checks": self.rows(), "not_run": self.not_run, "generated": self.generated}
        path.write_text(json.dumps(report, indent=1, default=str))


def part_path(path: Path, worker: str) -> Path:
    return path.with_name(f"{path.stem}.{worker}{path.suffix}")


def merge_parts(path: Path, since: float) -> bool:
    """The workers' reports written since `since` (epoch seconds) joined into `path`, the
    parts removed; False when there was none."""
    parts = sorted(path.parent.glob(part_path(path, "gw*").name))
    fresh = [part for part in parts if part.stat().st_mtime >= since]
    report: dict[str, Any] = {"checks": [], "not_run": {}, "generated": {}}
    for part in fresh:
        shard = json.loads(part.read_text())
        report["checks"] += shard["checks"]
        report["not_run"] |= shard["not_run"]
        report["generated"] |= shard["generated"]
    for part in parts:
        part.unlink()
    if fresh:
        path.write_text(json.dumps(report, indent=1, default=str))
    return bool(fresh)


def _plain(value: Any) -> Any:
    """JSON-friendly and comparable: tuples become lists, sets sorted lists."""
    if isinstance(value, set | frozenset):
        return sorted((_plain(v) for v in value), key=repr)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))}
    return value


GENERATED = "generated"  # the differential check's situation (tests/broker/generated.py)


def version_lines(
    rows: list[dict], not_run: dict[str, str] | None = None, generated: dict | None = None
) -> list[str]:
    """One line per broker version: the oracle's versions in order, then any other seen; and
    under it, the generated logs' line where the differential check ran on that version."""
    not_run = not_run or {}
    generated = generated or {}
    seen = sorted({row["version"] for row in rows} | set(not_run))
    lines = []
    for version in [*VERSIONS, *(v for v in seen if v not in VERSIONS)]:
        everything = [row for row in rows if row["version"] == version]
        mine = [row for row in everything if row["situation"] != GENERATED]
        head = f"broker {version} ({coordinator_for(version)}):"
        gen = [row for row in everything if row["situation"] == GENERATED]
        if not mine and (version in not_run or not gen):
            why = not_run.get(version, "no test of it ran in this session")
            lines.append(f"{head} not run: {why}")
        elif mine:
            situations = len({row["situation"] for row in mine})
            compared, agree, unknown = _counts(mine)
            lines.append(
                f"{head} {situations} situations, {compared} values compared, {agree} agree,"
                f" {unknown} reported unknown by the job"
            )
        if gen and version in generated:
            g = generated[version]
            compared, agree, _ = _counts(gen)
            lines.append(
                f"{head} generated {g['groups']:,} groups in {g['logs']} logs, {compared:,}"
                f" values compared, {agree:,} agree; {g['failed']} partitions failed to load,"
                f" {g['predicted']} predicted"
            )
    return lines


def _is_unknown(row: dict) -> bool:
    return bool(row.get("job_unknown"))  # reports written before unknowns have none


def _counts(rows: list[dict]) -> tuple[int, int, int]:
    """(values compared, agreeing, reported unknown by the job): an unknown is not compared."""
    unknown = sum(_is_unknown(row) for row in rows)
    agree = sum(bool(row["agrees"]) and not _is_unknown(row) for row in rows)
    return len(rows) - unknown, agree, unknown


def summary(
    rows: list[dict], not_run: dict[str, str] | None = None, generated: dict | None = None
) -> str:
    table: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in rows:
        table[(row["version"], row["situation"])].append(row)
    lines = [f"{'version':<8} {'situation':<36} {'compared':>8} {'agree':>6} {'unknown':>7}"]
    for (version, situation), cell in sorted(table.items()):
        compared, agree, unknown = _counts(cell)
        flag = "" if compared == agree else "  <- disagrees"
        lines.append(f"{version:<8} {situation:<36} {compared:>8} {agree:>6} {unknown:>7}{flag}")
    for row in rows:
        if not row["agrees"] and not _is_unknown(row):
            lines.append(
                f"  {row['version']} {row['situation']} [{row['phase']}] {row['what']}: "
                f"broker={row['broker']!r} job={row['job']!r}"
            )
    for row in rows:
        if _is_unknown(row):
            lines.append(
                f"  {row['version']} {row['situation']} [{row['phase']}] {row['what']}: "
                f"reported unknown by the job (its uncertain value {row['job']!r};"
                f" broker={row['broker']!r})"
            )
    compared, agree, unknown = _counts(rows)
    lines.extend(version_lines(rows, not_run, generated))
    lines.append(
        f"broker checks: {len(table)} situations, {compared} values compared, {agree} agree,"
        f" {unknown} reported unknown by the job"
    )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else report_path()
    if not path.exists():
        print(f"no broker checks recorded at {path} (run pytest tests/broker)", file=sys.stderr)
        return 3
    report = json.loads(path.read_text())
    if isinstance(report, list):  # written before the versions that did not run were kept
        report = {"checks": report, "not_run": {}}
    print(summary(report["checks"], report["not_run"], report.get("generated")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
