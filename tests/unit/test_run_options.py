"""`offsets run`'s options: formats, the checks of RunOptions itself, usage errors (exit 2)."""

from __future__ import annotations

from typing import get_args

import pytest
from click.testing import CliRunner

from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.table_rows import DIRECT_TABLES
from offsets_lib.cli import main
from offsets_lib.engine.pipeline import DECIDED_TABLES
from offsets_lib.engine.staging import Staging
from offsets_lib.io import sink
from offsets_lib.job import run, run_output
from offsets_lib.job.config import KAFKA_PARAM, RUN_KEYS
from offsets_lib.job.options import (
    FLAGS,
    REMOVED_FLAGS,
    DeltaWriter,
    RunOptions,
    UsageError,
    kafka_client_settings,
    parse_as_of,
    parse_kafka_options,
    parse_retention,
)

WEEK_MS = 604_800_000


@pytest.mark.parametrize("text", ["7d", "168h", "10080m", "604800s", "604800000ms", " 7d "])
def test_retention_formats(text: str) -> None:
    assert parse_retention(text) == WEEK_MS


@pytest.mark.parametrize("text", ["", "7", "7w", "-1d", "0d", "1.5h", "d7"])
def test_bad_retention(text: str) -> None:
    with pytest.raises(UsageError, match="--retention"):
        parse_retention(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("now", 42),
        ("latest", "latest"),
        (None, "latest"),
        ("1700000000000", 1_700_000_000_000),
        ("2023-11-14T22:13:20Z", 1_700_000_000_000),
        ("2023-11-14T22:13:20", 1_700_000_000_000),  # naive = UTC
        ("2023-11-15T00:13:20+02:00", 1_700_000_000_000),
    ],
)
def test_as_of_formats(text: str | None, expected: int | str) -> None:
    assert parse_as_of(text, now_ms=42) == expected


def test_bad_as_of() -> None:
    with pytest.raises(UsageError, match="--as-of"):
        parse_as_of("yesterday", now_ms=0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--source", "parquet"], "--source parquet needs --input"),
        (["--source", "kafka"], "--source kafka needs --bootstrap-servers"),
        (["--input", "x", "--retention", "7w"], "--retention"),
        (["--input", "x", "--as-of", "soon"], "--as-of"),
        (["--input", "x", "--max-reject-ratio", "2"], "--max-reject-ratio"),
        (["--input", "x", "--kafka-option", "novalue"], "--kafka-option"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["run", "--output", "out", *args])
    assert result.exit_code == 2
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_the_audit_tasks_write_every_table_but_metrics_where_the_writer_reads_them() -> None:
    """Both writers commit the tasks' files (the decisions and lag included: the tasks decide
    and join the log-end offsets; the driver writes `metrics`): delta-rs at the tables,
    Delta's Spark writer reads them from the staging folder."""
    assert sorted((*DIRECT_TABLES, "metrics")) == sorted((*DECIDED_TABLES, "lag"))
    staging = Staging("/o/_staging/r-1")
    options = run.RunOptions(output="/o", run_id="r", inputs=("dump",))
    assert run_output.files_root(options, staging) == "/o"
    spark_writer = run.RunOptions(output="/o", run_id="r", inputs=("dump",), delta_writer="spark")
    assert run_output.files_root(spark_writer, staging) == "/o/_staging/r-1/tables"


# ---- RunOptions checks itself: a library caller meets the command line's messages -------------


@pytest.mark.parametrize(
    ("args", "fields"),
    [
        (["--output", "o"], {"output": "o"}),
        (["--output", "o", "--source", "kafka"], {"output": "o", "source": "kafka"}),
        (["--input", "x"], {"inputs": ("x",)}),
        (
            ["--output", "o", "--input", "x", "--max-reject-ratio", "2"],
            {"output": "o", "inputs": ("x",), "max_reject_ratio": 2.0},
        ),
    ],
)
def test_the_object_refuses_what_the_command_line_refuses_with_its_line(
    args: list[str], fields: dict
) -> None:
    result = CliRunner().invoke(main, ["run", *args])
    with pytest.raises(UsageError) as refused:
        run.RunOptions(run_id="r", **fields)
    assert result.exit_code == 2
    assert result.output == f"offsets: {refused.value}\n"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"source": "dump"}, "--source 'dump': expected one of parquet, kafka"),
        ({"delta_writer": "parquet"}, "--delta-writer 'parquet': expected one of"),
        ({"coordinator": "classic-9"}, "--coordinator 'classic-9': expected one of new, "),
        ({"as_of": "yesterday"}, "--as-of 'yesterday': expected now, latest, ISO-8601 or"),
        ({"as_of": True}, "--as-of True: expected now, latest"),
        ({"retention_ms": 0}, "--retention '0ms': must be positive"),
        ({"max_reject_ratio": "0.1"}, "--max-reject-ratio must be between 0 and 1"),
        ({"run_id": ""}, "--run-id must not be empty"),
        ({"inputs": "dump"}, "--input 'dump': expected paths"),
    ],
)
def test_bad_values_of_a_library_caller_are_refused_in_one_line(fields: dict, message: str) -> None:
    given = {"output": "o", "run_id": "r", "inputs": ("dump",), **fields}
    with pytest.raises(UsageError) as refused:
        run.RunOptions(**given)
    assert str(refused.value).startswith(message)
    assert "\n" not in str(refused.value)


def test_checked_values_take_their_one_type() -> None:
    """A coordinator given as text becomes the enum; --database alone leaves the output to the
    catalog (output_given False); the Kafka settings are the object's own copy."""
    settings = {"bootstrap.servers": "b:9092"}
    options = run.RunOptions(
        run_id="r",
        source="kafka",
        kafka_options=settings,
        database="audit",
        coordinator="classic-2.4",
    )
    settings["client.id"] = "changed later"
    assert options.coordinator is Coordinator.CLASSIC_2_4
    assert (options.output, options.output_given) == ("", False)
    assert options.kafka_options == {"bootstrap.servers": "b:9092"}
    assert run.RunOptions(run_id="r", inputs=["a", "b"], output="o").inputs == ("a", "b")


def test_the_command_line_defaults_are_the_objects() -> None:
    """An option not given takes the same value through the command line as through the object
    (the run id and --as-of now are the clock's: `now_ms`)."""
    parsed = RunOptions.from_flags({"inputs": ("dump",), "output": "o"}, now_ms=1_700_000_000_000)
    assert parsed == RunOptions(output="o", inputs=("dump",), run_id="run-20231114T221320Z")
    kafka = RunOptions.from_flags(
        {"source": "kafka", "bootstrap_servers": "b:9092", "output": "o"}, now_ms=42
    )
    assert (kafka.as_of, kafka.kafka_options) == (42, {"bootstrap.servers": "b:9092"})


def test_every_flag_is_an_option_of_run_and_every_option_a_flag() -> None:
    removed = {p.opts[0] for p in main.commands["run"].params if p.hidden}
    assert removed == set(REMOVED_FLAGS)  # refused in one line, below
    params = {p.name: p for p in main.commands["run"].params if p.name != "conf" and not p.hidden}
    assert [f.param for f in FLAGS] == list(params)
    for flag in FLAGS:
        assert params[flag.param].opts == [flag.name]
    profile_keys = {f.profile_key for f in FLAGS if f.in_profile}
    assert profile_keys == set(RUN_KEYS)
    assert {f.param for f in FLAGS if not f.in_profile} == {KAFKA_PARAM}


def test_the_typed_writers_are_the_sinks() -> None:
    assert set(get_args(DeltaWriter)) == set(sink.DELTA_WRITERS)


# ---- --kafka-option: one parser for run, lag and the profile's merge ---------------------------


def test_kafka_options_keep_the_last_value_of_a_key_and_drop_the_kafka_prefix() -> None:
    items = ["security.protocol=SSL", "kafka.client.id=a", "client.id=b", "sasl.jaas.config=x=y"]
    assert parse_kafka_options(items) == {
        "security.protocol": "SSL",
        "client.id": "b",
        "sasl.jaas.config": "x=y",
    }
    given = kafka_client_settings("b:9092", ["bootstrap.servers=other:1", "acks=all"])
    assert given == {"bootstrap.servers": "b:9092", "acks": "all"}
    assert kafka_client_settings(None, []) == {}


@pytest.mark.parametrize("item", ["novalue", "=x"])
def test_a_kafka_option_without_key_or_value_is_refused(item: str) -> None:
    with pytest.raises(UsageError) as refused:
        parse_kafka_options(["acks=all", item])
    key = item.partition("=")[0]
    assert str(refused.value) == f"--kafka-option {key!r}: expected key=value"


def test_a_removed_option_on_the_command_line_is_refused_in_one_line() -> None:
    args = ["run", "--output", "o", "--input", "x", "--shuffle", "spark"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert result.output == (
        "offsets: --shuffle was removed: every run takes the file shuffle (Spark's shuffle was"
        " slower in every measurement, locally and on a cluster: docs/design.md, 'Which shuffle:"
        " measured')\n"
    )
