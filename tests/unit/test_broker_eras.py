"""The broker oracle's bookkeeping (tests/broker): eras, the per-version summary, and which
groups a read_committed run cannot see yet. No broker, no Spark."""

from __future__ import annotations

import struct

import pyarrow as pa

from tests.broker.eras import VERSIONS, coordinator_for, describes_instance_ids
from tests.broker.recorder import summary, version_lines
from tests.broker.situations import SITUATIONS
from tests.broker.world import groups_after_open_transactions


def test_one_broker_per_regime() -> None:
    assert {v: coordinator_for(v) for v in VERSIONS} == {
        "4.4.0": "new",
        "3.9.1": "classic-2.4",
        "2.8.2": "classic-2.4",
        "2.3.1": "classic-2.1",
        "2.0.1": "pre-2.1",
    }
    assert [describes_instance_ids(v) for v in ("2.3.1", "2.4.0")] == [False, True]
    # Kafka 2.3's loader until KAFKA-10401 (2.6.1)
    assert [coordinator_for(v) for v in ("2.4.0", "2.5.1", "2.6.0", "2.6.1", "2.7.0")] == [
        "classic-2.4.0-2.6.0", "classic-2.4.0-2.6.0", "classic-2.4.0-2.6.0",
        "classic-2.4", "classic-2.4",
    ]  # fmt: skip


def test_situations_run_on_the_eras_that_have_their_feature() -> None:
    runs = {s.name: [v for v in VERSIONS if s.runs_on(v)] for s in SITUATIONS}
    assert runs["classic-static-member"] == ["4.4.0", "3.9.1", "2.8.2", "2.3.1"]
    assert runs["txn-offset-delete-before-marker"] == ["4.4.0", "3.9.1", "2.8.2"]
    assert runs["explicit-retention"] == list(VERSIONS)
    assert runs["consumer-emptied"] == ["4.4.0"]


def test_version_lines_say_which_broker_did_not_run() -> None:
    rows = [
        {"version": "2.8.2", "situation": "a", "agrees": True},
        {"version": "2.8.2", "situation": "b", "agrees": False},
        {"version": "2.8.2", "situation": "b", "agrees": True},
    ]
    lines = version_lines(rows, {"2.0.1": "RuntimeError: Kafka 2.0.1 did not start"})
    assert lines == [
        "broker 4.4.0 (new): not run: no test of it ran in this session",
        "broker 3.9.1 (classic-2.4): not run: no test of it ran in this session",
        "broker 2.8.2 (classic-2.4): 2 situations, 3 values compared, 2 agree,"
        " 0 reported unknown by the job",
        "broker 2.3.1 (classic-2.1): not run: no test of it ran in this session",
        "broker 2.0.1 (pre-2.1): not run: RuntimeError: Kafka 2.0.1 did not start",
    ]


def test_values_the_job_flagged_are_counted_unknown_not_compared() -> None:
    """A value the job reports undecided (its unread_marker_offsets table) neither agrees nor
    disagrees, whatever the two sides hold; an old report without the field has none."""
    rows = [
        {"version": "3.9.1", "situation": "a", "agrees": True},
        {"version": "3.9.1", "situation": "a", "agrees": False, "job_unknown": True},
        {"version": "3.9.1", "situation": "a", "agrees": True, "job_unknown": True},
        {"version": "3.9.1", "situation": "b", "agrees": True, "job_unknown": False},
    ]
    for row in rows:
        row.update(phase="reload (kafka)", what="g listed", broker=True, job=row["agrees"])
    lines = summary(rows).splitlines()
    assert lines[1:3] == [
        "3.9.1    a                                           1      1       2",
        "3.9.1    b                                           1      1       0",
    ]
    assert lines[-5] == (
        "broker 3.9.1 (classic-2.4): 2 situations, 2 values compared, 2 agree,"
        " 2 reported unknown by the job"
    )
    assert lines[-1] == (
        "broker checks: 2 situations, 2 values compared, 2 agree, 2 reported unknown by the job"
    )


def test_the_groups_a_kafka_read_reports_unknown() -> None:
    """Deletes within the transaction timeout of a commit, under a Scala coordinator only, and
    OffsetDelete from 2.4."""
    by_name = {s.name: s for s in SITUATIONS}
    unknown = {
        v: {n: by_name[n].unknown_on_kafka_read(v) for n in ("offset-delete", "delete-groups")}
        for v in ("4.4.0", "3.9.1", "2.3.1")
    }
    assert unknown == {
        "4.4.0": {"offset-delete": set(), "delete-groups": set()},
        "3.9.1": {
            "offset-delete": {"offset-delete-empty", "offset-delete-stable"},
            "delete-groups": {"delete-groups-gone"},
        },
        "2.3.1": {"offset-delete": set(), "delete-groups": {"delete-groups-gone"}},
    }


def _offset_key(group: str) -> bytes:
    """OffsetCommitKey v1: group, topic "t", partition 0."""
    out = struct.pack(">h", 1)
    for text in (group, "t"):
        out += struct.pack(">h", len(text)) + text.encode()
    return out + struct.pack(">i", 0)


def test_groups_after_an_open_transactions_first_record() -> None:
    # partition 0: g1 plain, producer 7 transactional (committed by the marker at 2), g2 plain,
    # producer 8 opens a transaction at 4 (never ends), g3 after it; partition 1: g4 plain
    rows = [
        (0, 0, "g1", -1, False, False),
        (0, 1, "gt", 7, True, False),
        (0, 2, "gt", 7, True, True),
        (0, 3, "g2", -1, False, False),
        (0, 4, "open", 8, True, False),
        (0, 5, "g3", -1, False, False),
        (1, 0, "g4", -1, False, False),
    ]
    dump = pa.Table.from_pylist(
        [
            {
                "partition": p,
                "offset": o,
                "key": _offset_key(g),
                "producer_id": pid,
                "is_transactional": txn,
                "is_control": control,
            }
            for p, o, g, pid, txn, control in rows
        ]
    )
    assert groups_after_open_transactions(dump) == {"open": 0, "g3": 0}


def test_the_load_tests_releases_are_fetched_by_make_broker_jars() -> None:
    from tests.broker import kafka_dist, test_load_rows, test_loader_regime

    wanted = {*test_load_rows.RELEASES, test_loader_regime.RELEASE}
    assert wanted <= {*kafka_dist.VERSIONS, *kafka_dist.LOAD_VERSIONS}


def test_generated_logs_have_a_line_of_their_own() -> None:
    """The differential check (tests/broker/generated.py) is reported beside the situations,
    and alone when only it ran."""
    rows = [
        {"version": "3.9.1", "situation": "a", "agrees": True},
        *[{"version": "3.9.1", "situation": "generated", "agrees": True}] * 3,
        {"version": "3.9.1", "situation": "generated", "agrees": False},
        {"version": "4.4.0", "situation": "generated", "agrees": True},
    ]
    generated = {
        "3.9.1": {"groups": 5000, "logs": 3, "records": 9, "failed": 0, "predicted": 0},
        "4.4.0": {"groups": 1200, "logs": 3, "records": 9, "failed": 1, "predicted": 1},
    }
    lines = version_lines(rows, {}, generated)
    assert lines[:3] == [
        "broker 4.4.0 (new): generated 1,200 groups in 3 logs, 1 values compared, 1 agree;"
        " 1 partitions failed to load, 1 predicted",
        "broker 3.9.1 (classic-2.4): 1 situations, 1 values compared, 1 agree,"
        " 0 reported unknown by the job",
        "broker 3.9.1 (classic-2.4): generated 5,000 groups in 3 logs, 4 values compared,"
        " 3 agree; 0 partitions failed to load, 0 predicted",
    ]
