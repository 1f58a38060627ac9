"""`offsets run` option parsing: retention and evaluation-time formats, usage errors (exit 2)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from offsets_lib.audit.table_rows import DIRECT_TABLES
from offsets_lib.cli import main
from offsets_lib.engine.pipeline import DECIDED_TABLES
from offsets_lib.job import run
from offsets_lib.job.options import UsageError, parse_as_of, parse_retention

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


def test_tables_the_audit_tasks_write_and_the_frames_left_to_build() -> None:
    """delta-rs commits every direct table (the decisions and lag included: the tasks decide
    and join the log-end offsets); the Spark writer builds every frame itself, and the offsets
    frame is built when lag is."""
    options = run.RunOptions(output="o", run_id="r", inputs=("dump",))
    assert run._direct_tables(options) == DIRECT_TABLES
    spark_writer = run.RunOptions(output="o", run_id="r", inputs=("dump",), delta_writer="spark")
    assert run._direct_tables(spark_writer) == ()
    assert run._frames_needed({t: [] for t in DIRECT_TABLES}) == ["metrics"]
    without_lag = {t: [] for t in DIRECT_TABLES if t not in ("lag", "offsets")}
    assert run._frames_needed(without_lag) == ["offsets", "metrics"]
    assert run._frames_needed({}) == list(DECIDED_TABLES)


@pytest.mark.parametrize(
    ("sizes", "is_skewed"),
    [
        ([600_000, 100_000, 100_000, 100_000], True),  # one task over twice the average
        ([600_000, 500_000, 500_000, 500_000], False),  # large, but even
        ([400_000, 10_000, 10_000, 10_000], False),  # uneven, but no task is what a run waits for
        ([], False),
    ],
)
def test_the_split_audit_starts_by_itself_when_one_task_dominates(sizes, is_skewed) -> None:
    import numpy as np

    assert run._is_skewed(np.array(sizes, dtype=np.int64)) is is_skewed


def test_the_oversized_tasks_are_those_over_twice_the_average_and_the_task_size() -> None:
    import numpy as np

    sizes = np.array([1_200_000, 1_100_000, 600_000, *[100_000] * 7], dtype=np.int64)
    assert run._oversized(sizes) == {0, 1}  # the mean is 360k: over 720k
    assert run._oversized(np.array([], dtype=np.int64)) == set()
