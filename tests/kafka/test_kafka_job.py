"""`offsets run --source kafka` end to end: failure exits; the Kafka path equals the Parquet one."""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from offsets_lib.cli import main
from offsets_lib.io import sink
from tests.reference import scenario
from tests.spec_data import scenario_dir
from tests.support.ports import free_port

pytestmark = pytest.mark.kafka


def _files_under(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.exists() else []


@pytest.mark.spark
def test_broker_down_exits_3_quickly_with_one_line_and_writes_nothing(spark, tmp_path):
    output = tmp_path / "tables"
    port = free_port()  # nothing listens here
    started = time.monotonic()
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--source",
            "kafka",
            "--bootstrap-servers",
            f"127.0.0.1:{port}",
            "--output",
            str(output),
            "--run-id",
            "down",
        ],
    )
    elapsed = time.monotonic() - started
    print(f"broker down: exit {result.exit_code} after {elapsed:.1f} s")
    assert result.exit_code == 3, result.output
    assert elapsed < 60
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("offsets: kafka broker unreachable")
    assert f"127.0.0.1:{port}" in lines[0]
    assert _files_under(output) == []


def test_bad_kafka_option_is_a_usage_error(spark, tmp_path):
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--source",
            "kafka",
            "--bootstrap-servers",
            "127.0.0.1:1",
            "--kafka-option",
            "no.such.librdkafka.setting=1",
            "--output",
            str(tmp_path / "tables"),
        ],
    )
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "invalid kafka option" in lines[0], lines
    assert _files_under(tmp_path / "tables") == []


# ---- Kafka path == Parquet path on the golden scenarios ----------------------------------------

SCENARIO_DIR = scenario_dir()
CONTRACT_TABLES = ("offsets", "groups", "members", "offset_decisions", "group_decisions")


def scenario_specs(numbers: list[int]) -> list[dict]:
    specs = []
    for n in numbers:
        (path,) = SCENARIO_DIR.glob(f"{n:02d}-*.json")
        specs.append(json.loads(path.read_text()))
    return specs


def rows_on_own_partitions(specs: list[dict]) -> tuple[list[dict], int]:
    """The scenarios' raw-record rows, each scenario on partitions of its own; and how many
    partitions they take."""
    rows, base = [], 0
    for spec in specs:
        own = scenario.scenario_rows(spec)
        for row in own:
            row["partition"] += base
        rows += own
        base += 1 + max(r["partition"] - base for r in own)
    return rows, base


def create_topic(bootstrap: str, topic: str, partitions: int, conf: dict | None = None) -> None:
    """`conf`: more client settings (a login). The records are kept whatever their age: the
    scenarios' timestamps are from 2023, and a broker's time retention (7 days) would delete
    them at its next check, while a test reads them."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0, **(conf or {})})
    new = NewTopic(topic, partitions, 1, config={"retention.ms": "-1"})
    for future in admin.create_topics([new], request_timeout=10).values():
        future.result(timeout=10)


def produce_rows(
    bootstrap: str, topic: str, rows: list[dict], conf: dict | None = None
) -> list[dict]:
    """Produce raw-record rows (scenario.scenario_rows shape) in their order (an idempotent
    producer keeps it per partition); returns the rows as stored (broker offsets).
    `conf`: more client settings (a login)."""
    from confluent_kafka import Producer

    settings = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "log_level": 0}
    settings |= conf or {}
    producer = Producer(settings)
    stored: list[dict] = []
    errors: list = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
            return
        stored.append(
            {
                "key": msg.key(),
                "value": msg.value(),
                "topic": topic,
                "partition": msg.partition(),
                "offset": msg.offset(),
                "timestamp": datetime.fromtimestamp(msg.timestamp()[1] / 1000, UTC),
                "timestampType": 0,
            }
        )

    for row in rows:
        ms = int(row["timestamp"].timestamp() * 1000)
        producer.produce(
            topic,
            key=row["key"],
            value=row["value"],
            partition=row["partition"],
            timestamp=ms,
            on_delivery=on_delivery,
        )
    assert producer.flush(60) == 0
    assert not errors, errors
    return stored


def run_cli(*args: str) -> object:
    result = CliRunner().invoke(main, ["run", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def table_rows(output: str, run_id: str, names=CONTRACT_TABLES) -> dict[str, list[str]]:
    """Each table's rows of one run, without run_id, as sorted canonical JSON strings."""
    out = {}
    for name in names:
        rows = sink.read_table(output, name, run_id=run_id).to_pylist()
        out[name] = sorted(
            json.dumps({k: v for k, v in r.items() if k != "run_id"}, default=str, sort_keys=True)
            for r in rows
        )
    return out


@pytest.mark.spark
def test_kafka_path_equals_parquet_path_on_golden_scenarios(spark, kafka_bootstrap, tmp_path):
    """Scenarios without batch metadata (no producer ids / markers: a consumer cannot see them),
    coordinator `new`, each on its own partitions of one topic."""
    numbers = [n for n in range(1, 32) if n not in (20, 21, 22, 23, 29, 30)]
    specs = scenario_specs(numbers)
    rows, base = rows_on_own_partitions(specs)
    topic = f"golden-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, base)
    stored = produce_rows(kafka_bootstrap, topic, rows)
    assert len(stored) == len(rows)
    pq.write_table(pa.Table.from_pylist(stored), tmp_path / "dump.parquet")
    out = str(tmp_path / "tables")
    as_of = str(specs[0]["config"]["evaluated_at_ms"])
    kafka_args = ["--source", "kafka", "--bootstrap-servers", kafka_bootstrap, "--topic", topic]
    run_cli(*kafka_args, "--output", out, "--as-of", as_of, "--run-id", "kafka")
    parquet_args = ["--source", "parquet", "--input", str(tmp_path / "dump.parquet")]
    run_cli(*parquet_args, "--output", out, "--as-of", as_of, "--run-id", "parquet")
    via_kafka, via_parquet = table_rows(out, "kafka"), table_rows(out, "parquet")
    assert all(via_kafka[name] for name in CONTRACT_TABLES)
    assert via_kafka == via_parquet
    runs = {r["run_id"]: r for r in sink.read_table(out, "runs").to_pylist()}
    assert runs["kafka"]["records_read"] == runs["parquet"]["records_read"] == len(rows)
    # The golden expectations hold on the Kafka path too (live offsets, deleted groups).
    got = Counter(
        (r["group_id"], r["topic"], r["partition"], r["committed_offset"])
        for r in sink.read_table(out, "offsets", run_id="kafka").to_pylist()
    )
    want = Counter(
        (e["group"], e["topic"], e["partition"], e["offset"])
        for spec in specs
        for e in spec["expected"]["offsets"]
    )
    assert got == want
    deleted = Counter(
        r["group_id"]
        for r in sink.read_table(out, "group_decisions", run_id="kafka").to_pylist()
        if r["deleted"]
    )
    assert deleted == Counter(g for spec in specs for g in spec["expected"]["group_deleted"])


@pytest.mark.spark
def test_kafka_run_lag_holds_the_clusters_log_end_offsets(spark, kafka_bootstrap, tmp_path):
    """The lag table of a Kafka run: the log-end offsets of every topic, taken before the audit
    tasks write the lag rows; a topic the cluster does not have keeps its lag unknown."""
    from offsets_lib import wire

    consumed, offsets_topic = f"orders-{uuid.uuid4().hex[:8]}", f"co-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, consumed, 2)
    create_topic(kafka_bootstrap, offsets_topic, 1)
    records = [{"key": b"k", "value": b"v", "partition": p} for p in (0, 0, 0, 0, 0, 1, 1)]
    now = datetime.now(UTC)
    produce_rows(kafka_bootstrap, consumed, [{**r, "timestamp": now} for r in records])

    def commit(topic: str, partition: int, offset: int) -> dict:
        key = wire.encode_key(1, {"group": "g", "topic": topic, "partition": partition})
        fields = {"offset": offset, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 1000}
        value = wire.encode_value(1, 3, fields)
        return {"key": key, "value": value, "partition": 0, "timestamp": now}

    commits = [commit(consumed, 0, 2), commit(consumed, 1, 2), commit("gone", 0, 4)]
    produce_rows(kafka_bootstrap, offsets_topic, commits)
    out = str(tmp_path / "tables")
    kafka_args = ["--source", "kafka", "--bootstrap-servers", kafka_bootstrap]
    run_cli(*kafka_args, "--topic", offsets_topic, "--output", out, "--run-id", "lag")
    lag = {
        (r["topic"], r["partition"]): (r["committed_offset"], r["log_end_offset"], r["lag"])
        for r in sink.read_table(out, "lag", run_id="lag").to_pylist()
    }
    assert lag == {
        (consumed, 0): (2, 5, 3),
        (consumed, 1): (2, 2, 0),
        ("gone", 0): (4, None, None),
    }
