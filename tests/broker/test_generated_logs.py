"""Generated logs loaded by real brokers agree with the audit (tests/broker/generated.py).

Each version's check runs once per session with a broker of its own (under xdist a work unit
of its own, beside other workers' brokers: tests/conftest.py `work_unit`).
`BROKER_GENERATED_GROUPS` sets the groups per version (`make verify-broker`: 5,000 on every era;
otherwise `generated.DEFAULT_GROUPS` on 4.4.0 and 3.9.1).
"""

from __future__ import annotations

import os

import pytest

from tests.broker.generated import SITUATION, check_version, group_count


def versions() -> tuple[str, ...]:
    """`BROKER_GENERATED_VERSIONS` (comma-separated; `make verify-broker`: every era), else the
    new coordinator's and the last Scala coordinator's (4.4.0, 3.9.1)."""
    chosen = os.environ.get("BROKER_GENERATED_VERSIONS", "4.4.0,3.9.1")
    return tuple(v for v in chosen.split(",") if v)


@pytest.mark.broker
@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("version", versions())
def test_generated_logs_agree_with_broker(
    spark, broker_recorder, tmp_path_factory, version: str
) -> None:
    del spark  # the session the CLI's session builder reuses
    work = tmp_path_factory.mktemp(f"generated-{version}")
    result = check_version(version, work, broker_recorder, group_count())
    print(f"{version} generated: {broker_recorder.generated[version]} timings {result.timings}")
    disagreements = broker_recorder.disagreements(version, SITUATION)
    assert not disagreements, "\n".join(
        f"[{c.phase}] {c.what}: broker={c.broker!r} job={c.job!r}" for c in disagreements[:50]
    )
