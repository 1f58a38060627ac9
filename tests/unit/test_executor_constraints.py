"""jobs/executor-constraints.txt pins what the tests run with: every package the job imports on
a cluster's driver and executors (the project's dependencies but Spark's own, and theirs), at
the version installed here (`make setup` installs with it as pip's constraints; the cluster
tests' executors run this interpreter)."""

from __future__ import annotations

import importlib.metadata as metadata
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
CONSTRAINTS = REPO / "jobs" / "executor-constraints.txt"
FROM_SPARK = {"pyspark", "delta-spark"}  # the cluster's Spark brings them (and --packages)


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins() -> dict[str, str]:
    lines = [line.split("#", 1)[0].strip() for line in CONSTRAINTS.read_text().splitlines()]
    return dict(
        _key(n).split("==") and (_key(n), v) for n, v in (x.split("==") for x in lines if x)
    )


def runtime_requirements() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return [
        Requirement(r)
        for r in project["dependencies"]
        if _key(Requirement(r).name) not in FROM_SPARK
    ]


def closure(names: list[str]) -> set[str]:
    """The installed distributions `names` need, with theirs (no extras)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = _key(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        for text in metadata.distribution(name).requires or []:
            need = Requirement(text)
            if need.marker is None or need.marker.evaluate({"extra": ""}):
                todo.append(need.name)
    return seen


def test_every_package_of_the_job_is_pinned_and_nothing_else() -> None:
    wanted = closure([r.name for r in runtime_requirements()])
    assert sorted(pins()) == sorted(wanted)


def test_the_pins_are_what_the_tests_run_with() -> None:
    installed = {name: metadata.version(name) for name in pins()}
    assert installed == pins()


def test_the_pins_meet_the_projects_ranges() -> None:
    pinned = pins()
    outside = [str(r) for r in runtime_requirements() if pinned[_key(r.name)] not in r.specifier]
    assert outside == []
