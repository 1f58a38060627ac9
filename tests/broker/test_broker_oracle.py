"""Every situation, on every broker version, agrees with the real broker (see conftest.py)."""

from __future__ import annotations

import pytest

from tests.broker.eras import VERSIONS
from tests.broker.situations import SITUATIONS

# Known disagreements with the broker that a change under way fixes (xfail marks); the marks go
# when that fix is merged. strict: a mark that no longer applies fails.
KNOWN: dict[tuple[str, str], str] = {
    # (3, "txn-offset-delete-before-marker") was here until main's TXN-4 fix (0fb294e): the
    # reloaded 3.9 broker shows the transaction's offset, and the job now does too. Its
    # `--source kafka` reads on 3.9.1 and 2.8.2 were here until the job reported what a read
    # without transaction markers cannot decide as unknown (TXN-MARKER-UNREAD, below).
}
# `--source kafka` reads read_committed, which never returns control records nor producer ids:
# under a Scala coordinator, an offset deleted within the transaction timeout of its last commit
# may be a transaction's whose COMMIT marker came after the delete, which the loader re-creates
# (semantics.md 1.3). The job reports the tombstone's outcome and lists those offsets in its
# `unread_marker_offsets` table (`is_group_in_doubt` where the group's existence depends on
# one); the oracle counts their values as reported unknown, and each situation declares which
# groups must be reported so (`Situation.unread_marker_groups`): no other value may be listed,
# and none of those guessed.


def _cases():
    for version in VERSIONS:
        for s in SITUATIONS:
            if not s.runs_on(version):
                continue
            marks = []
            if (version, s.name) in KNOWN:
                marks.append(pytest.mark.xfail(strict=True, reason=KNOWN[(version, s.name)]))
            yield pytest.param(version, s.name, id=f"{version}-{s.name}", marks=marks)


@pytest.mark.broker
@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize(("version", "situation"), list(_cases()))
def test_job_agrees_with_broker(broker_world, version: str, situation: str) -> None:
    world = broker_world(version)
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
    unknown = world.recorder.unknowns(world.version, situation)
    assert {c.phase for c in unknown} <= {"live (kafka)", "reload (kafka)"}, unknown
    declared = next(s for s in SITUATIONS if s.name == situation)
    expected = declared.unknown_on_kafka_read(version)
    reported = {c.what.split(" ")[0] for c in unknown}
    # a group left out of the reload phases (expiring while they read) reports none there
    assert reported <= expected, (reported, expected)
    assert expected - reported <= world.expiring_during_reload, (reported, expected)
