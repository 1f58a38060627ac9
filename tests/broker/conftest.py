"""Real Apache Kafka brokers as the oracle: what a real coordinator shows is what the job must say.

One session-scoped *world* per broker version: the broker starts once, every situation of
tests/broker/situations.py runs against it, the broker's answers are compared with the job's
tables in four phases (tests/broker/world.py), and the broker stops. Each test then reports one
situation's comparisons. The jars come from Maven Central via ``make broker-jars`` (a cache
outside git, tests/broker/kafka_dist.py); a missing cache is filled on first use.

Versions (tests/broker/eras.py): 4.4.0 (the new group coordinator: ``--coordinator new``),
3.9.1 (KRaft, the classic Scala coordinator: ``classic-2.4``), and in ZooKeeper mode on Java 11
2.8.2 (``classic-2.4``), 2.3.1 (``classic-2.1``) and 2.0.1 (``pre-2.1``), each with the
situations its era can produce (`Situation.runs_on`).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.broker.recorder import Recorder, report_path, summary
from tests.broker.world import World, build_world

_RECORDER = Recorder()
_WORLDS: dict[str, World] = {}


@pytest.fixture(scope="session")
def broker_recorder() -> Recorder:
    return _RECORDER


@pytest.fixture(scope="session")
def broker_world(spark, tmp_path_factory) -> Callable[[str], World]:
    """A version's world, built (broker started, driven, compared, stopped) when its first test
    asks: the tests run version by version, so one broker runs at a time per worker (under
    xdist each version is a work unit of its own, tests/conftest.py `work_unit`)."""

    def world(version: str) -> World:
        if version in _RECORDER.not_run:  # failed once: its other tests fail without a retry
            pytest.fail(f"Kafka {version} did not run: {_RECORDER.not_run[version]}")
        if version not in _WORLDS:
            work = tmp_path_factory.mktemp(f"kafka-{version}")
            try:
                _WORLDS[version] = build_world(version, work, spark, _RECORDER)
            except Exception as exc:
                _RECORDER.not_run[version] = f"{type(exc).__name__}: {exc}".splitlines()[0]
                raise
        return _WORLDS[version]

    return world


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _RECORDER.checks or _RECORDER.not_run:
        _RECORDER.write(report_path())


def pytest_terminal_summary(terminalreporter) -> None:
    """The per-version, per-situation table (the same as `make verify-broker`), whenever broker
    tests ran: `make test` shows it too."""
    if _RECORDER.checks or _RECORDER.not_run:
        terminalreporter.write_sep("-", "real-broker comparisons")
        terminalreporter.write_line(
            summary(_RECORDER.rows(), _RECORDER.not_run, _RECORDER.generated)
        )
