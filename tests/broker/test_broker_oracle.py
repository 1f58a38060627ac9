"""Every situation, on every broker version, agrees with the real broker (see conftest.py)."""

from __future__ import annotations

import pytest

from tests.broker.conftest import VERSIONS
from tests.broker.situations import SITUATIONS

# Known disagreements another change fixes (issue 16, "Known disagreements"); the lead removes
# the marks when merging that fix. strict: a mark that no longer applies fails.
KNOWN: dict[tuple[int, str], str] = {
    # (3, "txn-offset-delete-before-marker") was here until main's TXN-4 fix (0fb294e): the
    # reloaded 3.9 broker shows the transaction's offset, and the job now does too.
}


def _cases():
    for major in VERSIONS:
        for s in SITUATIONS:
            if s.min_major > major:
                continue
            marks = []
            if (major, s.name) in KNOWN:
                marks.append(pytest.mark.xfail(strict=True, reason=KNOWN[(major, s.name)]))
            yield pytest.param(major, s.name, id=f"{VERSIONS[major]}-{s.name}", marks=marks)


@pytest.mark.broker
@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize(("major", "situation"), list(_cases()))
def test_job_agrees_with_broker(request, major: int, situation: str) -> None:
    world = request.getfixturevalue(f"world_{major}")
    print(f"{world.version} timings: {world.timings}")
    assert situation not in world.errors, world.errors.get(situation)
    compared = [
        c for c in world.recorder.checks if c.version == world.version and c.situation == situation
    ]
    assert compared, "nothing compared"
    disagreements = world.recorder.disagreements(world.version, situation)
    assert not disagreements, "\n".join(
        f"[{c.phase}] {c.what}: broker={c.broker!r} job={c.job!r}" for c in disagreements
    )
