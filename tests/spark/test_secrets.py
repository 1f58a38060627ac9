"""SASL passwords and other secrets never appear in logs, `runs` rows, exception messages or
Spark configuration dumps / plan strings: a run's output is shared, its credentials are not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from offsets_lib.cli import main
from offsets_lib.io.sources import kafka as ks
from tests.support.ports import free_port

SECRET = "S3cr3t-XYZ"
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required"
    f' username="auditor" password="{SECRET}";'
)
SASL = [
    "--kafka-option", "security.protocol=SASL_PLAINTEXT",
    "--kafka-option", "sasl.mechanism=PLAIN",
    "--kafka-option", "sasl.username=auditor",
    "--kafka-option", f"sasl.password={SECRET}",
]  # fmt: skip


def files_containing_secret(root: Path) -> list[Path]:
    if not root.exists():
        return []
    return [p for p in root.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


def exception_texts(exc: BaseException | None) -> str:
    """Message, repr and the whole cause/context chain of an exception."""
    texts, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        texts += [str(exc), repr(exc)]
        exc = exc.__cause__ or exc.__context__
    return "\n".join(texts)


@pytest.mark.spark
@pytest.mark.slow
def test_unreachable_broker_run_fails_with_exit_3_and_never_shows_the_secret(tmp_path):
    """The real process: everything it prints (Python, librdkafka, the JVM) is checked."""
    port = free_port()
    output = tmp_path / "tables"
    command = [str(Path(sys.executable).with_name("offsets")), "run", "--source", "kafka"]
    command += ["--bootstrap-servers", f"127.0.0.1:{port}", "--output", str(output), *SASL]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("offsets: ") and f"127.0.0.1:{port}" in last, proc.stderr[-2000:]
    assert SECRET not in proc.stdout and SECRET not in proc.stderr
    assert files_containing_secret(output) == []  # no runs row (or anything) holds it


@pytest.mark.spark
def test_jaas_config_logs_in_both_clients_and_never_shows_the_secret(spark, tmp_path, capfd):
    """The Java client's sasl.jaas.config alone also logs in the driver's librdkafka look-ups
    (io/sources/kafka_names): with no broker the run fails as unreachable, and no text or file
    holds the secret, which now sits in two settings of two clients."""
    args = ["run", "--source", "kafka", "--bootstrap-servers", f"127.0.0.1:{free_port()}"]
    args += [
        "--output",
        str(tmp_path / "tables"),
        *SASL[:4],  # security.protocol and sasl.mechanism; no sasl.username/password
        "--kafka-option",
        f"sasl.jaas.config={JAAS}",
    ]
    result = CliRunner().invoke(main, args)
    out, err = capfd.readouterr()
    assert result.exit_code == 3, result.output  # input not readable (contract)
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("offsets: kafka broker unreachable")
    for text in (result.stdout, result.stderr, out, err, exception_texts(result.exception)):
        assert SECRET not in text
    assert files_containing_secret(tmp_path) == []


@pytest.mark.spark
def test_failed_run_error_in_runs_row_is_scrubbed(spark, tmp_path, monkeypatch):
    """An exception quoting a secret option (e.g. from a Kafka client) is scrubbed in `runs`."""
    from offsets_lib.io import sink
    from offsets_lib.job import run as run_module  # private _audit: where the failure is injected

    def fail(*_args, **_kwargs):
        raise RuntimeError(f"client failed with sasl.jaas.config={JAAS} and {SECRET}\ntrace")

    monkeypatch.setattr(run_module, "_audit", fail)  # whichever audit (split or not) runs
    options = run_module.RunOptions(
        output=str(tmp_path / "tables"),
        run_id="leak",
        source="kafka",
        kafka_options={
            "bootstrap.servers": "b:9092",
            "sasl.password": SECRET,
            "sasl.jaas.config": JAAS,
        },
    )
    assert SECRET not in repr(options)
    raw = spark.createDataFrame([], ks.KAFKA_SCHEMA)
    with pytest.raises(RuntimeError):
        run_module.execute(spark, raw, options, echo=lambda _: None)
    (row,) = sink.read_table(options.output, "runs", run_id="leak").to_pylist()
    assert row["status"] == "failed"
    assert row["error"].startswith("RuntimeError: client failed with sasl.jaas.config=")
    assert "***" in row["error"] and "\n" not in row["error"]
    assert SECRET not in str(row)
    assert files_containing_secret(tmp_path) == []
