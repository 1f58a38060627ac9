"""Real Apache Kafka brokers as the oracle (issue 16).

One session-scoped *world* per broker version: the broker starts once, every situation of
tests/broker/situations.py runs against it, the broker's answers are compared with the job's
tables in four phases (tests/broker/world.py), and the broker stops. Each test then reports one
situation's comparisons. The jars come from Maven Central via ``make broker-jars`` (a cache
outside git, tests/broker/kafka_dist.py); a missing cache is filled on first use.

Versions: 4.4.0 (the new group coordinator: ``--coordinator new``) and 3.9.1 (KRaft, the
classic Scala coordinator: ``classic-2.4``). Not run: 2.x (``classic-2.1`` and ``pre-2.1``).
Those releases have no KRaft, so each would need a ZooKeeper server (a second JVM) next to the
broker and its own situations (no KIP-848, no KIP-447 require_stable before 2.5); whether their
Scala builds start on this machine's Java 17 was not tried within issue 16's time budget.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.broker.recorder import Recorder, report_path, summary
from tests.broker.world import World, build_world

VERSIONS = {4: "4.4.0", 3: "3.9.1"}
_RECORDER = Recorder()


@pytest.fixture(scope="session")
def broker_recorder() -> Recorder:
    return _RECORDER


def _world(major: int, spark, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    work = tmp_path_factory.mktemp(f"kafka-{VERSIONS[major]}")
    yield build_world(VERSIONS[major], work, spark, _RECORDER)


@pytest.fixture(scope="session")
def world_4(spark, tmp_path_factory) -> Iterator[World]:
    yield from _world(4, spark, tmp_path_factory)


@pytest.fixture(scope="session")
def world_3(spark, tmp_path_factory) -> Iterator[World]:
    yield from _world(3, spark, tmp_path_factory)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _RECORDER.checks:
        _RECORDER.write(report_path())


def pytest_terminal_summary(terminalreporter) -> None:
    """The per-version, per-situation table (the same as `make verify-broker`), whenever broker
    tests ran: `make test` shows it too."""
    if _RECORDER.checks:
        terminalreporter.write_sep("-", "real-broker comparisons")
        terminalreporter.write_line(summary(_RECORDER.rows()))
