"""Counts of compared values per broker version and situation, and the `make verify-broker` report.

Tests add one `Check` per compared value; at the end of the session the conftest writes them,
and the versions whose broker did not run with why, to ``$BROKER_CHECKS_JSON`` (default
``build/broker-checks.json``). ``python tests/broker/recorder.py FILE`` prints the table, one
line per broker version (``broker X.Y.Z (REGIME): N situations, C values compared, A agree``,
or ``... not run: why``) and ends with the line
``broker checks: N situations, C values compared, A agree``.
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

    @property
    def agrees(self) -> bool:
        return self.broker == self.job


class Recorder:
    def __init__(self) -> None:
        self.checks: list[Check] = []
        self.not_run: dict[str, str] = {}  # version -> why its broker did not run

    def compare(self, version: str, situation: str, phase: str, what: str, broker, job) -> bool:
        check = Check(version, situation, phase, what, _plain(broker), _plain(job))
        self.checks.append(check)
        return check.agrees

    def disagreements(self, version: str, situation: str) -> list[Check]:
        return [
            c
            for c in self.checks
            if c.version == version and c.situation == situation and not c.agrees
        ]

    def rows(self) -> list[dict]:
        return [{**asdict(c), "agrees": c.agrees} for c in self.checks]

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        report = {"checks": self.rows(), "not_run": self.not_run}
        path.write_text(json.dumps(report, indent=1, default=str))


def _plain(value: Any) -> Any:
    """JSON-friendly and comparable: tuples become lists, sets sorted lists."""
    if isinstance(value, set | frozenset):
        return sorted((_plain(v) for v in value), key=repr)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))}
    return value


def version_lines(rows: list[dict], not_run: dict[str, str] | None = None) -> list[str]:
    """One line per broker version: the oracle's versions in order, then any other seen."""
    not_run = not_run or {}
    seen = sorted({row["version"] for row in rows} | set(not_run))
    lines = []
    for version in [*VERSIONS, *(v for v in seen if v not in VERSIONS)]:
        mine = [row for row in rows if row["version"] == version]
        head = f"broker {version} ({coordinator_for(version)}):"
        if not mine:
            why = not_run.get(version, "no test of it ran in this session")
            lines.append(f"{head} not run: {why}")
            continue
        situations = len({row["situation"] for row in mine})
        agree = sum(bool(row["agrees"]) for row in mine)
        lines.append(f"{head} {situations} situations, {len(mine)} values compared, {agree} agree")
    return lines


def summary(rows: list[dict], not_run: dict[str, str] | None = None) -> str:
    table: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        cell = table[(row["version"], row["situation"])]
        cell[0] += 1
        cell[1] += bool(row["agrees"])
    lines = [f"{'version':<8} {'situation':<36} {'compared':>8} {'agree':>6}"]
    for (version, situation), (compared, agree) in sorted(table.items()):
        flag = "" if compared == agree else "  <- disagrees"
        lines.append(f"{version:<8} {situation:<36} {compared:>8} {agree:>6}{flag}")
    for row in rows:
        if not row["agrees"]:
            lines.append(
                f"  {row['version']} {row['situation']} [{row['phase']}] {row['what']}: "
                f"broker={row['broker']!r} job={row['job']!r}"
            )
    compared = sum(c for c, _ in table.values())
    agree = sum(a for _, a in table.values())
    lines.extend(version_lines(rows, not_run))
    lines.append(
        f"broker checks: {len(table)} situations, {compared} values compared, {agree} agree"
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
    print(summary(report["checks"], report["not_run"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
