"""Which regime a 2.4.0-2.6.0 broker is: its loader against `classic-2.4` and
`classic-2.4.0-2.6.0` (EXP-EMPTY-V3-COMMIT-TS).

Two Empty consumer groups, each with one offset committed two minutes ago and a state time
five minutes ahead (retention one minute), written raw to ``__consumer_offsets`` as
``__admin_client`` (tests/broker/test_load_rows.py): ``v3-empty`` with a GroupMetadataValue v3,
``v2-empty`` with a v2. The broker restarts and loads them; its cleanup (every 500 ms) expires
what the loader left expirable. A loader that reads the state time of v2 only (2.3's, kept to
2.6.0) expires v3-empty's offset by its commit time at once; one that reads every version's
(2.6.1 on) keeps it for five minutes more. The job audits the log as written (dumped before the
restart, so without the cleanup's tombstones) at the moment the broker answered.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from offsets_lib import wire
from offsets_lib.cli import main as offsets_cli
from tests.broker import segments
from tests.broker.recorder import Recorder
from tests.broker.test_load_rows import _offsets_topic_ready, _Reloading, committed, write_raw

RELEASE = "2.5.1"
SITUATION = "loader-state-time"
GROUPS = {"v3-empty": 3, "v2-empty": 2}  # group -> GroupMetadataValue version
COMMITTED = 23
NO_OFFSET = -1001  # OffsetFetch: none committed


def group_records(group: str, version: int, now_ms: int) -> list[tuple[bytes, bytes]]:
    commit = {"offset": COMMITTED, "leaderEpoch": -1, "metadata": "",
              "commitTimestamp": now_ms - 120_000}  # fmt: skip
    empty = {"protocolType": "consumer", "generation": 1, "protocol": None, "leader": None,
             "currentStateTimestamp": now_ms + 300_000, "members": []}  # fmt: skip
    return [
        (wire.encode_key(1, {"group": group, "topic": "orders", "partition": 0}),
         wire.encode_value(1, 3, commit)),
        (wire.encode_key(2, {"group": group}), wire.encode_value(2, version, empty)),
    ]  # fmt: skip


def observe(work: Path) -> dict:
    """Write, dump, reload, answer: {"as_of_ms": ..., "answers": {group: offset or None}}."""
    broker = _Reloading(RELEASE, work / "broker")
    broker.start()
    try:
        _offsets_topic_ready(broker.bootstrap, partitions=1)
        now_ms = int(time.time() * 1000)
        write_raw(broker.bootstrap, {0: [r for g, v in GROUPS.items()
                                         for r in group_records(g, v, now_ms)]})  # fmt: skip
        broker.stop()
        segments.write_dump(broker.log_dir, work / "dump")
        broker.start()
        time.sleep(5)  # ten cleanup passes
        as_of_ms = int(time.time() * 1000)
        answers = {g: committed(broker.bootstrap, g) for g in GROUPS}
    finally:
        broker.stop()
        broker.kill()  # and its ZooKeeper
    return {"as_of_ms": as_of_ms, "answers": answers}


def job_offsets(work: Path, coordinator: str, as_of_ms: int) -> dict[str, tuple[int, str]]:
    """Per group: the offset OffsetFetch answers after the run's decisions at as_of (none once
    expired), and the EXP row that decided."""
    from deltalake import DeltaTable

    tables = work / f"tables-{coordinator}"
    args = ["run", "--source", "parquet", "--input", str(work / "dump"), "--output", str(tables)]
    args += ["--run-id", "r", "--coordinator", coordinator, "--as-of", str(as_of_ms)]
    args += ["--retention", "1m"]
    result = CliRunner().invoke(offsets_cli, args)
    assert result.exit_code == 0, result.output
    rows = DeltaTable(str(tables / "offset_decisions")).to_pyarrow_table().to_pylist()
    return {r["group_id"]: (NO_OFFSET if r["expired"] else COMMITTED, r["rule"]) for r in rows}


_DONE: dict[str, dict] = {}


@pytest.fixture(scope="module")
def reloaded(tmp_path_factory) -> Iterator[Callable[[], dict]]:
    """The broker's answers and the job's under both regimes, once (the broker side in a
    process of its own, as in test_load_rows.py)."""

    def load() -> dict:
        if not _DONE:
            work = tmp_path_factory.mktemp(f"loader-{RELEASE}")
            command = [sys.executable, "-m", "tests.broker.test_loader_regime", str(work)]
            done = subprocess.run(command, capture_output=True, text=True, timeout=400)
            assert done.returncode == 0, done.stderr[-3000:]
            seen = json.loads((work / "observed.json").read_text())
            _DONE.update(seen)
            _DONE["job"] = {
                c: job_offsets(work, c, seen["as_of_ms"])
                for c in ("classic-2.4.0-2.6.0", "classic-2.4")
            }
        return _DONE

    yield load


@pytest.mark.broker
@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_2_5_broker_loads_as_classic_2_4_0_to_2_6_0(reloaded, broker_recorder: Recorder) -> None:
    seen = reloaded()
    answers, job = seen["answers"], seen["job"]
    for group in GROUPS:
        broker_recorder.compare(
            RELEASE, SITUATION, "reload", f"{group} orders/0 committed_offset",
            answers[group], job["classic-2.4.0-2.6.0"][group][0],
        )  # fmt: skip
    assert answers == {"v3-empty": NO_OFFSET, "v2-empty": COMMITTED}
    assert job["classic-2.4.0-2.6.0"] == {
        "v3-empty": (NO_OFFSET, "EXP-EMPTY-V3-COMMIT-TS"),
        "v2-empty": (COMMITTED, "EXP-EMPTY-STATE-TS"),
    }
    # classic-2.4 (the loader of 2.6.1 on) would keep v3-empty's offset: not this broker's
    assert job["classic-2.4"]["v3-empty"] == (COMMITTED, "EXP-EMPTY-STATE-TS")
    assert not broker_recorder.disagreements(RELEASE, SITUATION)


def main(argv: list[str]) -> int:
    (work,) = argv
    (Path(work) / "observed.json").write_text(json.dumps(observe(Path(work))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
