"""The mistakes a person makes with `offsets run`: one line, the documented exit status, no JVM
started and no output folder left behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from offsets_lib.cli import main


def run(*args: str):
    return CliRunner().invoke(main, ["run", *args])


def test_an_empty_input_folder(no_spark: None, tmp_path: Path) -> None:
    (tmp_path / "dump").mkdir()
    result = run("--input", str(tmp_path / "dump"), "--output", str(tmp_path / "tables"))
    assert (result.exit_code, result.output) == (
        3,
        f"offsets: parquet input has no data files: {tmp_path}/dump (an empty folder)\n",
    )
    assert not (tmp_path / "tables").exists()


def test_an_input_folder_with_a_file_that_is_not_parquet(no_spark: None, tmp_path: Path) -> None:
    (tmp_path / "dump").mkdir()
    (tmp_path / "dump" / "data.txt").write_text("hello\n")
    result = run("--input", str(tmp_path / "dump"), "--output", str(tmp_path / "tables"))
    assert (result.exit_code, result.output) == (
        3,
        f"offsets: parquet input file is not a Parquet file: {tmp_path}/dump/data.txt\n",
    )
    assert not (tmp_path / "tables").exists()


def test_an_output_that_is_a_file(no_spark: None, tmp_path: Path) -> None:
    (tmp_path / "dump").mkdir()
    (tmp_path / "tables").write_text("")
    result = run("--input", str(tmp_path / "dump"), "--output", str(tmp_path / "tables"))
    assert (result.exit_code, result.output) == (
        2,
        f"offsets: --output {tmp_path}/tables is a file; give a folder for the tables\n",
    )


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (
            b"garbage\n",
            "missing column(s) topic, partition, log_end_offset (found: garbage); "
            "expected topic, partition, log_end_offset",
        ),
    ],
)
def test_an_end_offsets_file_that_is_not_one(
    no_spark: None,
    tmp_path: Path,
    content: bytes,
    why: str,
) -> None:
    made = CliRunner().invoke(
        main, ["generate", "--out", str(tmp_path / "dump"), "--groups", "3", "--records", "50"]
    )
    assert made.exit_code == 0, made.output
    (tmp_path / "ends.csv").write_bytes(content)
    result = run(
        "--input",
        str(tmp_path / "dump"),
        "--output",
        str(tmp_path / "tables"),
        "--end-offsets",
        str(tmp_path / "ends.csv"),
    )
    assert (result.exit_code, result.output) == (
        3,
        f"offsets: end offsets file {tmp_path}/ends.csv: {why}\n",
    )
    assert not (tmp_path / "tables").exists()
