"""Lag: the pure join (lag.with_end_offsets, lag.lag_rows), end offsets from a file, the lag
table of `offsets run` and the `offsets lag` command, on a tiny Parquet dump (one golden
scenario)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from offsets_lib.audit import lag
from offsets_lib.cli import lag_command as cli_lag
from offsets_lib.cli import main
from offsets_lib.io import sink
from tests.reference import scenario
from tests.spec_data import scenario_dir
from tests.support.ports import free_port

pytestmark = pytest.mark.spark

SCENARIO = scenario_dir() / "28-multiple-groups-and-offsets-partitions.json"


def _ts(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def test_lag_rows_join_the_latest_ends_clamp_and_measure_time():
    offsets = pa.Table.from_pylist(
        [
            {
                "group_id": "g",
                "topic": "t",
                "partition": 0,
                "committed_offset": 10,
                "commit_timestamp": _ts(1_000),
            },
            # end offset below the commit (truncated): lag 0
            {
                "group_id": "g",
                "topic": "t",
                "partition": 1,
                "committed_offset": 50,
                "commit_timestamp": _ts(2_000),
            },
            # no end offset known, no commit timestamp
            {
                "group_id": "g",
                "topic": "u",
                "partition": 0,
                "committed_offset": 5,
                "commit_timestamp": None,
            },
        ],
        schema=pa.schema(
            [
                ("group_id", pa.string()),
                ("topic", pa.string()),
                ("partition", pa.int32()),
                ("committed_offset", pa.int64()),
                ("commit_timestamp", pa.timestamp("us", "UTC")),
            ]
        ),
    )
    ends = pa.Table.from_pylist(
        [
            {"topic": t, "partition": p, "log_end_offset": end}
            for t, p, end in [("t", 0, 25), ("t", 1, 40), ("other", 0, 9), ("t", 0, 20)]
        ],  # t-0 twice: the max
        schema=lag.END_OFFSETS_ARROW,
    )
    joined = lag.with_end_offsets(offsets, lag.latest_end_offsets(ends))
    rows = sorted(
        lag.lag_rows(joined, as_of_ms=11_500).to_pylist(),
        key=lambda r: (r["topic"], r["partition"]),
    )
    assert [tuple(r.values()) for r in rows] == [
        ("g", "t", 0, 10, 25, 15, _ts(1_000), 10.5),
        ("g", "t", 1, 50, 40, 0, _ts(2_000), 9.5),
        ("g", "u", 0, 5, None, None, None, None),
    ]
    nothing = lag.lag_rows(lag.with_end_offsets(offsets, None), as_of_ms=0).to_pylist()
    assert {(r["log_end_offset"], r["lag"]) for r in nothing} == {(None, None)}


def test_run_writes_lag_table_and_offsets_lag_prints_it(spark, tmp_path, monkeypatch):
    spec = json.loads(SCENARIO.read_text())
    pq.write_table(pa.Table.from_pylist(scenario.scenario_rows(spec)), tmp_path / "dump.parquet")
    out = str(tmp_path / "tables")
    base = ["run", "--source", "parquet", "--input", str(tmp_path / "dump.parquet")]
    base += ["--output", out, "--as-of", str(spec["config"]["evaluated_at_ms"])]
    # End offsets for every consumed partition: committed offset + 7, written as CSV.
    runner = CliRunner()
    first = runner.invoke(main, [*base, "--run-id", "plain"], catch_exceptions=False)
    assert first.exit_code == 0, first.output
    committed = sink.read_table(out, "offsets", run_id="plain").to_pylist()
    assert committed
    nulls = sink.read_table(out, "lag", run_id="plain").to_pylist()
    assert len(nulls) == len(committed)
    assert {(r["log_end_offset"], r["lag"]) for r in nulls} == {(None, None)}

    csv = tmp_path / "ends.csv"
    ends: dict[tuple[str, int], int] = {}  # several groups may consume one partition
    for r in committed:
        key = (r["topic"], r["partition"])
        ends[key] = max(ends.get(key, 0), r["committed_offset"] + 7)
    (first_topic, first_partition), first_end = min(ends.items())
    csv.write_text(
        "topic,partition,log_end_offset\n"
        + "".join(f"{t},{p},{o}\n" for (t, p), o in sorted(ends.items()))
        + f"{first_topic},{first_partition},{first_end - 5}\n"  # an older snapshot, repeated
    )
    second = runner.invoke(
        main, [*base, "--run-id", "ends", "--end-offsets", str(csv)], catch_exceptions=False
    )
    assert second.exit_code == 0, second.output
    rows = sink.read_table(out, "lag", run_id="ends").to_pylist()
    assert len(rows) == len(committed)  # the repeated partition duplicates nothing
    assert sink.read_table(out, "offsets", run_id="ends").num_rows == len(committed)
    as_of_s = spec["config"]["evaluated_at_ms"] / 1000
    for r in rows:
        assert r["log_end_offset"] == ends[(r["topic"], r["partition"])]
        assert r["lag"] == r["log_end_offset"] - r["committed_offset"] >= 7
        assert r["seconds_since_commit"] == pytest.approx(as_of_s - r["last_commit_at"].timestamp())

    # `offsets lag`: stored table of the newest run, and recomputed from a Parquet file.
    printed = runner.invoke(main, ["lag", "--output", out, "--json"], catch_exceptions=False)
    assert printed.exit_code == 0, printed.output
    lines = [json.loads(line) for line in printed.output.splitlines()]
    assert sorted(lines, key=lambda r: (r["group_id"], r["topic"], r["partition"])) == [
        {c: r[c].isoformat() if c == "last_commit_at" else r[c] for c in lag.LAG_COLUMNS}
        | {"in_doubt_offset": None}  # no offset in doubt (tests/spark/test_in_doubt_cli.py)
        for r in sorted(rows, key=lambda r: (r["group_id"], r["topic"], r["partition"]))
    ]
    pq.write_table(
        pa.Table.from_pylist(
            [{"topic": t, "partition": p, "log_end_offset": o + 3} for (t, p), o in ends.items()]
        ),
        tmp_path / "ends.parquet",
    )
    group = committed[0]["group_id"]
    args = ["lag", "--output", out, "--run-id", "plain", "--group", group]
    args += ["--end-offsets", str(tmp_path / "ends.parquet")]
    import pyspark.java_gateway

    from offsets_lib.job import session

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a SparkSession or a JVM was requested")

    with monkeypatch.context() as no_spark:  # a file pyarrow reads is joined in Arrow
        no_spark.setattr(session, "get_or_create", refuse)
        no_spark.setattr(pyspark.java_gateway, "launch_gateway", refuse)
        again = runner.invoke(main, args, catch_exceptions=False)
    assert again.exit_code == 0, again.output
    text = again.output.splitlines()
    assert tuple(text[0].split()) == cli_lag.HEADER
    mine = [r for r in committed if r["group_id"] == group]
    assert len(text) == 1 + len(mine)
    by_partition = {(r["topic"], r["partition"]): r["committed_offset"] for r in mine}
    for line in text[1:]:
        fields = line.split()
        key = (fields[1], int(fields[2]))
        assert fields[0] == group
        assert int(fields[5]) == ends[key] + 3 - by_partition[key]
    missing = runner.invoke(main, ["lag", "--output", str(tmp_path / "nowhere")])
    assert missing.exit_code == 3

    # a broker that does not answer: one line, exit 3 (the client gives up after
    # UNREACHABLE_GRACE_S of every broker down, not after the whole timeout)
    port = free_port()
    dead = runner.invoke(main, ["lag", "--output", out, "--bootstrap-servers", f"127.0.0.1:{port}"])
    assert dead.exit_code == 3, dead.output
    (line,) = dead.stderr.strip().splitlines()
    assert line.startswith(
        f"offsets: kafka broker unreachable (bootstrap.servers=127.0.0.1:{port}): no metadata after"
    ), line
