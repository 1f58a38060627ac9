"""Nothing lost, nothing half-published (accounting, fuzzing, crashes, concurrency,
partly compacted logs) through the real `offsets run` job.

Spark runs are the cost here (~15-30 s each on 2 shared cores), so one *base* run publishes a
dump of real records (every golden scenario) plus inconsistent-log records
(`inconsistent_rows`) once; tests that need "an earlier successful run" copy its output folder
and add their own run to the copy. The output lock (one writer per output folder) is
unit-tested without Spark at the end of this file.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from offsets_lib import wire
from offsets_lib.cli import main
from offsets_lib.engine.staging import STAGING_DIR
from offsets_lib.io import sink
from offsets_lib.io.lock import LOCK_NAME, OutputLocked, output_lock
from tests.reference import scenario
from tests.spec_data import scenario_dir

ROOT = Path(__file__).resolve().parents[2]
SCENARIO_DIR = scenario_dir()
TABLES = ("offsets", "offset_decisions", "groups", "members", "group_decisions", "rejects")
OTHER_THAN_REJECTS = tuple(t for t in TABLES if t != "rejects")
BASE_RUN = "base"
ODD = 5000  # offsets-topic partition of the inconsistent-log records
T0 = 1_700_000_000_000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


# ---- building dumps --------------------------------------------------------------------------


def raw_row(
    partition: int, offset: int, key: bytes | None, value: bytes | None, ts_ms: int
) -> dict:
    return {
        "key": key,
        "value": value,
        "topic": scenario.TOPIC,
        "partition": partition,
        "offset": offset,
        "timestamp": EPOCH + timedelta(milliseconds=ts_ms),
        "timestampType": 0,
    }


def real_rows() -> list[dict]:
    """Every golden scenario's records, each scenario on its own partition range (LOG-3).

    Batch metadata is dropped (the dump then reads as taken with read_committed); control
    records, which only exist with batch metadata, are left out.
    """
    rows = []
    for index, path in enumerate(sorted(SCENARIO_DIR.glob("*.json"))):
        spec = json.loads(path.read_text())
        for rec, row in zip(spec["records"], scenario.scenario_rows(spec), strict=True):
            if rec["type"] == "control":
                continue
            rows.append({k: row[k] for k in raw_row(0, 0, None, None, 0)})
            rows[-1]["partition"] += index * 100
    if not rows:
        pytest.skip(f"no golden scenarios at {SCENARIO_DIR}")
    return rows


def _key(record_type: int, group: str, **fields: Any) -> bytes:
    name = "group" if record_type in (0, 1, 2) else "GroupId"
    return wire.encode_key(record_type, {name: group, **fields})


def _commit(group: str, offset: int, leader_epoch: int = -1, topic: str = "t") -> tuple:
    key = _key(1, group, topic=topic, partition=0)
    value = wire.encode_value(
        1,
        3,
        {"offset": offset, "leaderEpoch": leader_epoch, "metadata": "", "commitTimestamp": T0},
    )
    return key, value


def _classic(group: str) -> tuple:
    value = wire.encode_value(
        2,
        3,
        {
            "protocolType": "consumer",
            "generation": 1,
            "protocol": "range",
            "leader": None,
            "currentStateTimestamp": T0,
            "members": [],
        },
    )
    return _key(2, group), value


def _modern(record_type: int, group: str, value: dict | None, **key: Any) -> tuple:
    encoded = None if value is None else wire.encode_value(record_type, 0, value)
    return _key(record_type, group, **key), encoded


def inconsistent_rows() -> list[dict]:
    """KAFKA-19862: a partly compacted, inconsistent log on partition ODD."""
    member = {"ClientId": "c", "SubscribedTopicNames": ["t"]}
    records = [
        # offsets of a deleted classic group (G-S3): orphaned
        _classic("orphan-classic"),
        _commit("orphan-classic", 10),
        (_key(2, "orphan-classic"), None),
        # offsets of a deleted consumer group, member tombstone first as the coordinator writes
        _modern(3, "orphan-consumer", {"Epoch": 1}),
        _modern(5, "orphan-consumer", member, MemberId="m1"),
        _commit("orphan-consumer", 20),
        _modern(5, "orphan-consumer", None, MemberId="m1"),
        _modern(3, "orphan-consumer", None),
        # member records without any group record, plus an assignment of an unknown member
        _modern(5, "members-only", member, MemberId="m1"),
        _modern(8, "members-only", {"MemberEpoch": 0, "State": 0}, MemberId="m1"),
        _modern(8, "members-only", {"MemberEpoch": 0, "State": 0}, MemberId="ghost"),
        _commit("members-only", 30),
        # group epochs out of order: the last record wins (G-M2)
        _modern(3, "epochs", {"Epoch": 7}),
        _modern(3, "epochs", {"Epoch": 4}),
        # consumer-group record after a classic group without its tombstone
        _classic("no-tombstone"),
        _commit("no-tombstone", 40),
        _modern(3, "no-tombstone", {"Epoch": 2}),
        # tombstones for keys never written
        (_key(1, "never", topic="t", partition=0), None),
        _modern(5, "never", None, MemberId="m1"),
        _modern(3, "never", None),
        # offset commits whose leader epochs go backwards: the newest record wins (LOG-1)
        _commit("leader-epochs", 100, leader_epoch=9),
        _commit("leader-epochs", 50, leader_epoch=3),
    ]
    return [raw_row(ODD, i, k, v, T0 + i) for i, (k, v) in enumerate(records)]


def write_dump(rows: list[dict], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def cli(dump: Path, output: Path, run_id: str, *extra: str):
    """`offsets run` in this process (shares the test session's SparkSession)."""
    args = ["run", "--source", "parquet", "--input", str(dump), "--output", str(output)]
    return CliRunner().invoke(main, [*args, "--run-id", run_id, *extra], catch_exceptions=False)


# ---- reading tables --------------------------------------------------------------------------


def _canon(rows: list[dict]) -> list[str]:
    return sorted(json.dumps(r, default=str, sort_keys=True) for r in rows)


def run_rows(output: Path, run_id: str, tables=(*TABLES, "runs")) -> dict[str, list[str]]:
    return {t: _canon(sink.read_table(str(output), t, run_id=run_id).to_pylist()) for t in tables}


def counts(output: Path, run_id: str) -> dict[str, int]:
    return {t: sink.read_table(str(output), t, run_id=run_id).num_rows for t in TABLES}


def runs_table(output: Path) -> list[dict]:
    return sink.read_table(str(output), "runs").to_pylist()


def latest_successful(output: Path) -> str:
    done = [r for r in runs_table(output) if r["status"] == "succeeded"]
    return max(done, key=lambda r: r["finished_at"])["run_id"]


@pytest.fixture(scope="module")
def base(spark, tmp_path_factory) -> dict[str, Any]:
    """One published run of real + inconsistent records: its output, dump, rows and counts."""
    root = tmp_path_factory.mktemp("base")
    rows = real_rows() + inconsistent_rows()
    dump = write_dump(rows, root / "dump" / "part-0.parquet")
    output = root / "tables"
    started = time.monotonic()
    result = cli(dump, output, BASE_RUN, "--max-reject-ratio", "1")
    print(f"base run: {time.monotonic() - started:.1f} s")
    assert result.exit_code == 0, result.output
    return {
        "output": output,
        "dump": dump,
        "rows": rows,
        "stdout": result.stdout,
        "snapshot": run_rows(output, BASE_RUN),
        "counts": counts(output, BASE_RUN),
    }


def copy_of(base: dict, tmp_path: Path) -> Path:
    output = tmp_path / "tables"
    shutil.copytree(base["output"], output)
    return output


def assert_base_intact(base: dict, output: Path) -> None:
    assert run_rows(output, BASE_RUN) == base["snapshot"]


# ---- 1. every input record accounted for ------------------------------------------------------


@pytest.mark.spark
@pytest.mark.slow
def test_base_run_accounts_for_every_record(base):
    (run,) = sink.read_table(str(base["output"]), "runs", run_id=BASE_RUN).to_pylist()
    assert run["status"] == "succeeded"
    assert run["records_read"] == len(base["rows"])
    assert run["records_read"] == run["records_decoded"] + run["records_rejected"]
    expected_rejects = sum(
        wire.decode_record(r["key"], r["value"]).error is not None for r in base["rows"]
    )
    assert run["records_rejected"] == expected_rejects == base["counts"]["rejects"]
    assert not (base["output"] / STAGING_DIR).exists()  # task results cleaned up


@pytest.mark.spark
@pytest.mark.slow
def test_over_the_reject_ratio_publishes_rejects_and_a_failed_run_only(base, tmp_path):
    output = copy_of(base, tmp_path)
    good = [raw_row(1, i, *_commit(f"ok-{i}", i), T0 + i) for i in range(10)]
    bad = [
        raw_row(1, 100, b"\x00\x63\x00\x01", b"\x00\x03", T0),  # unknown record type 99
        raw_row(1, 101, _commit("x", 1)[0], _commit("x", 1)[1][:9], T0),  # truncated value
        raw_row(1, 102, b"", b"\x00\x03", T0),  # empty key
        raw_row(2, 7, _key(2, "g")[:-1], None, T0),  # truncated key, tombstone
        raw_row(2, 8, _key(1, "g", topic="t", partition=0), b"\x00\x07\x00", T0),  # version 7
    ]
    dump = write_dump(good + bad, tmp_path / "over.parquet")
    result = cli(dump, output, "over")  # default --max-reject-ratio 0.01
    assert result.exit_code == 4, result.output
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("offsets: 5 of 15 records could not be decoded"), result.stderr

    (run,) = sink.read_table(str(output), "runs", run_id="over").to_pylist()
    assert run["status"] == "failed"
    assert (run["records_read"], run["records_decoded"], run["records_rejected"]) == (15, 10, 5)
    assert "RejectRatioExceeded" in run["error"]
    rejects = sink.read_table(str(output), "rejects", run_id="over").to_pylist()
    assert sorted(
        (r["offsets_partition"], r["offsets_offset"], r["key"], r["value"], r["error"])
        for r in rejects
    ) == sorted(
        (
            r["partition"],
            r["offset"],
            r["key"],
            r["value"],
            wire.decode_record(r["key"], r["value"]).error,
        )
        for r in bad
    )
    for table in OTHER_THAN_REJECTS:  # nothing else of this run is published
        assert sink.read_table(str(output), table, run_id="over").num_rows == 0, table
    assert_base_intact(base, output)
    assert latest_successful(output) == BASE_RUN


# ---- 2. fuzzing mutated real records through the job ----------------------------------------

_JUNK = (
    b"\xff",
    b"\x7f\xff",
    b"\x7f\xff\xff\xff",
    b"\xff\xff\xff\xff\x0f",
    b"\x80" * 6,
    b"\xc3\x28",
    b"\xed\xa0\x80",
    b"\x05\x00\x10",
    b"\x01\x07\x7f\x00",
    b"\x00\x00",
)  # fmt: skip  -- huge lengths/counts, invalid UTF-8, tag sections with junk


def mutate(raw: bytes | None) -> st.SearchStrategy[bytes | None]:
    """Truncation, bit flip, wrong version, huge length, invalid UTF-8, garbage tagged fields."""
    if raw is None:
        return st.none() | st.binary(max_size=8)
    n = len(raw)
    pos = st.integers(0, max(n - 1, 0))

    def flip(t):
        i, bit = t
        return raw[:i] + bytes([raw[i] ^ (1 << bit)]) + raw[i + 1 :] if n else raw

    return st.one_of(
        pos.map(lambda i: raw[:i]),  # truncated
        st.tuples(pos, st.integers(0, 7)).map(flip),  # one bit flipped
        st.tuples(pos, st.sampled_from(_JUNK)).map(
            lambda t: raw[: t[0]] + t[1] + raw[t[0] + len(t[1]) :]
        ),
        st.tuples(pos, st.sampled_from(_JUNK)).map(lambda t: raw[: t[0]] + t[1] + raw[t[0] :]),
        st.integers(-(2**15), 2**15 - 1).map(lambda v: v.to_bytes(2, "big", signed=True) + raw[2:]),
        st.binary(min_size=1, max_size=6).map(lambda b: raw + b),  # trailing / tagged-field junk
    )


def _far_future_rows() -> list[dict]:
    """Decodable records whose timestamps Spark holds but Python's datetime cannot (year > 9999)."""
    key, _ = _commit("far-future", 1)
    value = wire.encode_value(
        1, 3, {"offset": 1, "leaderEpoch": 1, "metadata": "", "commitTimestamp": 10**15}
    )
    classic_key, classic_value = _classic("far-future")
    classic_value = classic_value.replace(T0.to_bytes(8, "big"), (10**15).to_bytes(8, "big"))
    return [raw_row(6000, 0, classic_key, classic_value, T0), raw_row(6000, 1, key, value, T0)]


@pytest.mark.spark
@pytest.mark.slow
@settings(
    max_examples=1,
    deadline=None,
    phases=[Phase.generate],
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_mutated_records_through_the_job_are_all_accounted_for(spark, tmp_path_factory, data):
    """One Spark run over real records + 300 mutated copies of them (each `make test` draws
    a new dump; a failure prints every draw)."""
    real = real_rows() + inconsistent_rows()
    mutated = []
    while len(mutated) < 300:
        original = data.draw(st.sampled_from(real))
        which = data.draw(st.sampled_from(["key", "value", "both"]))
        key, value = original["key"], original["value"]
        if which in ("key", "both"):
            key = data.draw(mutate(key))
        if which in ("value", "both"):
            value = data.draw(mutate(value))
        # after the real records of the same partition, so they replay into real groups
        offset = 1_000_000 + len(mutated)
        mutated.append(raw_row(original["partition"], offset, key, value, T0))
    rows = real + _far_future_rows() + mutated
    root = tmp_path_factory.mktemp("fuzz")
    dump = write_dump(rows, root / "dump.parquet")
    result = cli(dump, root / "tables", "fuzz", "--max-reject-ratio", "1")
    assert result.exit_code == 0, result.output  # no crash

    expected = {
        (r["partition"], r["offset"]): (
            r["key"],
            r["value"],
            wire.decode_record(r["key"], r["value"]).error,
        )
        for r in rows
    }
    expected_rejects = {pos: v for pos, v in expected.items() if v[2] is not None}
    (run,) = sink.read_table(str(root / "tables"), "runs", run_id="fuzz").to_pylist()
    assert run["status"] == "succeeded"
    assert run["records_read"] == len(rows)
    assert run["records_rejected"] == len(expected_rejects)
    assert run["records_decoded"] == len(rows) - len(expected_rejects)
    rejects = sink.read_table(str(root / "tables"), "rejects", run_id="fuzz").to_pylist()
    got = {
        (r["offsets_partition"], r["offsets_offset"]): (r["key"], r["value"], r["error"])
        for r in rejects
    }
    assert len(got) == len(rejects)
    assert got == expected_rejects  # same records, same bytes, the codec's own reason
    for table in (*TABLES, "runs"):  # every table still reads
        DeltaTable(sink.table_uri(str(root / "tables"), table)).to_pyarrow_table()


@pytest.mark.spark
@pytest.mark.slow
def test_decodable_extreme_timestamps_do_not_fail_the_run(spark, tmp_path):
    key, _ = _commit("extreme", 1)
    rows = [
        raw_row(0, i, key, wire.encode_value(1, 3, {"offset": i, "leaderEpoch": -1,
                "metadata": "", "commitTimestamp": ts}), T0)
        for i, ts in enumerate((2**63 - 1, -(2**63)))
    ]  # fmt: skip
    dump = write_dump(rows, tmp_path / "extreme.parquet")
    result = cli(dump, tmp_path / "tables", "extreme", "--max-reject-ratio", "1")
    assert result.exit_code == 0, result.output


# ---- 3. crash between table commits ----------------------------------------------------------


@pytest.mark.spark
@pytest.mark.slow
def test_killed_run_leaves_the_previous_run_and_reruns_exactly_once(base, tmp_path):
    output = copy_of(base, tmp_path)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    command = [sys.executable, "-m", "tests.support.crash_after_commit", "groups"]
    command += ["run", "--source", "parquet"]
    command += ["--input", str(base["dump"]), "--output", str(output), "--run-id", "crash"]
    command += ["--max-reject-ratio", "1"]
    started = time.monotonic()
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    print(f"killed run: {time.monotonic() - started:.1f} s, exit {proc.returncode}")
    assert proc.returncode == 137, proc.stderr[-3000:]

    committed = counts(output, "crash")  # it died right after the `groups` commit
    assert committed["offsets"] == base["counts"]["offsets"]
    assert committed["groups"] == base["counts"]["groups"]
    assert committed["members"] == 0 and committed["group_decisions"] == 0
    assert [r for r in runs_table(output) if r["run_id"] == "crash"] == []  # nothing claims it
    assert latest_successful(output) == BASE_RUN
    assert_base_intact(base, output)
    lock = json.loads((output / LOCK_NAME).read_text())  # left behind by the dead process
    assert (lock["run_id"], lock["pid"]) == ("crash", _pid_of_dead(lock["pid"]))

    rerun = cli(base["dump"], output, "crash", "--max-reject-ratio", "1")  # takes the stale lock
    assert rerun.exit_code == 0, rerun.output
    assert counts(output, "crash") == base["counts"]  # exactly once, no leftovers
    crash_runs = [r for r in runs_table(output) if r["run_id"] == "crash"]
    assert [r["status"] for r in crash_runs] == ["succeeded"]
    assert latest_successful(output) == "crash"
    assert_base_intact(base, output)
    assert not (output / LOCK_NAME).exists()
    assert not (output / STAGING_DIR).exists()  # the dead run's staged files are gone


def _pid_of_dead(pid: int) -> int:
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    return pid


# ---- 4. two runs on one output at once -------------------------------------------------------


@pytest.mark.spark
@pytest.mark.slow
def test_concurrent_runs_one_wins_the_other_fails_cleanly(spark, base, tmp_path):
    from offsets_lib.io.sources.parquet import read_parquet_dump
    from offsets_lib.job import run as run_module

    output = copy_of(base, tmp_path)
    options = run_module.RunOptions(
        output=str(output), run_id="winner", inputs=(str(base["dump"]),), max_reject_ratio=1.0
    )
    outcome: dict[str, Any] = {}

    def winner() -> None:
        try:
            raw = read_parquet_dump(spark, [str(base["dump"])])
            outcome["report"] = run_module.execute(spark, raw, options, echo=lambda _: None)
        except BaseException as exc:  # reported by the assertions below
            outcome["error"] = exc

    thread = threading.Thread(target=winner)
    thread.start()
    lock = output / LOCK_NAME
    deadline = time.monotonic() + 120
    while not (lock.exists() and "winner" in lock.read_text()):
        assert thread.is_alive() and time.monotonic() < deadline, outcome
        time.sleep(0.05)
    loser = cli(base["dump"], output, "loser", "--max-reject-ratio", "1")
    still_running = thread.is_alive()
    thread.join(timeout=600)

    assert still_running, "the winner finished before the loser tried: no overlap was tested"
    assert loser.exit_code == 5, loser.output
    lines = loser.stderr.strip().splitlines()
    assert len(lines) == 1 and "run winner" in lines[0] and f"pid {os.getpid()}" in lines[0], lines
    assert "error" not in outcome, outcome.get("error")
    assert outcome["report"].status == "succeeded"

    for table in (*TABLES, "runs"):  # every table reads, nothing of the loser in it
        whole = DeltaTable(sink.table_uri(str(output), table)).to_pyarrow_table()
        assert "loser" not in set(whole.column("run_id").to_pylist()), table
    assert counts(output, "winner") == base["counts"]
    assert_base_intact(base, output)
    assert latest_successful(output) == "winner"


# ---- 6. partly compacted, inconsistent logs through compaction and state ---------------------


@pytest.mark.spark
@pytest.mark.slow
def test_inconsistent_log_is_loaded_as_the_broker_loads_it(base):
    output = str(base["output"])

    def mine(table: str) -> list[dict]:
        rows = sink.read_table(output, table, run_id=BASE_RUN).to_pylist()
        return [r for r in rows if r["offsets_partition"] == ODD]

    groups = {r["group_id"]: r for r in mine("groups")}
    assert {g: r["state"] for g, r in groups.items()} == {
        "orphan-classic": "Dead",  # G-S3
        "orphan-consumer": "Dead",
        # G-M1: member records alone create the consumer group; G-M3: no target-assignment
        # value, so assignment epoch 1 (4.3+), and member epoch 0 is not reconciled (G-M6)
        "members-only": "Reconciling",
        "epochs": "Empty",
        "no-tombstone": "Empty",
        "never": "Dead",  # tombstones only: listed Dead, nothing created
        "leader-epochs": "Empty",  # simple group (G-S1)
    }
    assert groups["members-only"]["group_type"] == "consumer"
    assert groups["epochs"]["generation"] == 4  # G-M2: the last value, though smaller
    assert groups["no-tombstone"]["group_type"] == "consumer"
    assert "G-U1" in groups["no-tombstone"]["state_notes"]

    offsets = {r["group_id"]: r for r in mine("offsets")}
    assert set(offsets) == {"members-only", "no-tombstone", "leader-epochs"}  # orphans left out
    leader = offsets["leader-epochs"]
    assert (leader["committed_offset"], leader["leader_epoch"]) == (50, 3)  # LOG-1
    assert {r["group_id"] for r in mine("offset_decisions")} == set(offsets)
    members = [(r["group_id"], r["member_id"]) for r in mine("members")]
    assert members == [("members-only", "m1")]  # the assignment of "ghost" makes no member
    # counted in the run summary (RunReport.orphaned_offsets); scenarios have none (11.3)
    assert "orphaned offsets (group tombstoned, G-S3): 2" in base["stdout"]


# ---- 4. the output lock itself, without Spark --------------------------------------------------

_HOLDER = textwrap.dedent(
    """
    import os, sys, time
    from offsets_lib.io.lock import output_lock
    with output_lock(sys.argv[1], sys.argv[2]):
        print("locked", flush=True)
        if sys.argv[3] == "die":
            os.kill(os.getpid(), 9)
        sys.stdin.readline()
    """
)


def _holder(output: Path, run_id: str, mode: str = "wait") -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(output), run_id, mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    if mode == "wait":
        assert proc.stdout.readline().strip() == "locked"
    return proc


def test_lock_held_by_another_process_refuses_with_the_holder_named(tmp_path):
    proc = _holder(tmp_path, "run-a")
    try:
        with pytest.raises(OutputLocked) as info, output_lock(str(tmp_path), "run-b"):
            pytest.fail("two holders")
        message = str(info.value)
        assert "\n" not in message
        assert "run run-a" in message and f"pid {proc.pid}" in message and str(tmp_path) in message
    finally:
        proc.communicate("\n", timeout=30)
    with output_lock(str(tmp_path), "run-b"):  # released: the next run gets it
        assert json.loads((tmp_path / LOCK_NAME).read_text())["run_id"] == "run-b"
    assert not (tmp_path / LOCK_NAME).exists()


def test_lock_of_a_killed_process_is_taken_over(tmp_path):
    proc = _holder(tmp_path, "killed", mode="die")
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert json.loads((tmp_path / LOCK_NAME).read_text())["run_id"] == "killed"  # stale file
    with output_lock(str(tmp_path), "next"):
        assert json.loads((tmp_path / LOCK_NAME).read_text())["run_id"] == "next"


def test_stale_lock_file_with_a_dead_or_recycled_pid_is_taken_over(tmp_path):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True
    )
    import socket

    for pid in (int(dead.stdout), os.getpid()):  # dead; alive but not holding (pid reused)
        info = {"run_id": "old", "pid": pid, "host": socket.gethostname(), "since": 0}
        (tmp_path / LOCK_NAME).write_text(json.dumps(info))
        with output_lock(str(tmp_path), "new"):
            assert json.loads((tmp_path / LOCK_NAME).read_text())["run_id"] == "new"


def test_lock_in_the_same_process_is_exclusive_too(tmp_path):
    with output_lock(str(tmp_path), "first"):
        with pytest.raises(OutputLocked, match="run first"), output_lock(str(tmp_path), "second"):
            pass
        assert (tmp_path / LOCK_NAME).exists()  # the refused run did not remove it


_RACER = textwrap.dedent(
    """
    import os, sys, time
    from offsets_lib.io.lock import OutputLocked, output_lock
    output, log, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
    while time.time() < start:
        pass
    while time.time() < start + 20:
        try:
            with output_lock(output, str(os.getpid())):
                with open(log, "a") as f:
                    f.write(f"in {os.getpid()}\\n")
                time.sleep(0.02)
                with open(log, "a") as f:
                    f.write(f"out {os.getpid()}\\n")
                os._exit(0)  # die holding it: every takeover is of a stale lock
        except OutputLocked:
            time.sleep(0.001)
    os._exit(3)
    """
)


def test_racing_processes_never_hold_the_lock_together(tmp_path):
    """Eight processes race for one output; each holder dies holding the lock, so every
    acquisition is a takeover of a killed run's lock: never two holders at once."""
    import socket

    stale = {"run_id": "stale", "pid": 2**22 + 7, "host": socket.gethostname()}  # no such pid
    (tmp_path / LOCK_NAME).write_text(json.dumps(stale))
    log = tmp_path / "log.txt"
    start = time.time() + 1.0
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(tmp_path), str(log), str(start)], cwd=ROOT
        )
        for _ in range(8)
    ]
    assert [p.wait(timeout=60) for p in procs] == [0] * 8  # each got the lock once
    events = log.read_text().split()
    assert len(events) == 8 * 4
    holder = None
    for kind, pid in zip(events[::2], events[1::2], strict=True):
        if kind == "in":
            assert holder is None, f"{pid} entered while {holder} held the lock"
            holder = pid
        else:
            assert holder == pid
            holder = None


def test_unique_lock_per_output(tmp_path):
    with output_lock(str(tmp_path / "a"), "x"), output_lock(str(tmp_path / "b"), "y"):
        assert (tmp_path / "a" / LOCK_NAME).exists() and (tmp_path / "b" / LOCK_NAME).exists()
