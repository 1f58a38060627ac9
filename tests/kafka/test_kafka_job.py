"""`offsets run --source kafka` end to end: failure exits; the Kafka path equals the Parquet one."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from offsets_lib.cli import main
from tests.kafka.conftest import free_port

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
