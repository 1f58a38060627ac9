"""`offsets prune`: runs removed from every table, the latest succeeded run and the current
checkpoint kept, old snapshots still readable, nothing changed by a dry run or while locked.

Tables are written with delta-rs (no Spark): the runs rows with the sink's own `publish_run`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable, write_deltalake

from offsets_lib.audit.run_selection import Retention
from offsets_lib.cli import main
from offsets_lib.io import incremental, sink
from offsets_lib.io.lock import OutputLocked, output_lock
from offsets_lib.io.run_pruning import prune
from offsets_lib.tools.run_tables import load_run

NOW = datetime.now(UTC).replace(microsecond=0)


def publish(root: Path, run_id: str, status: str, finished_at: datetime) -> None:
    sink.publish_run(
        {
            "run_id": run_id,
            "status": status,
            "started_at": finished_at - timedelta(minutes=5),
            "finished_at": finished_at,
            "as_of": finished_at,
        },
        output=str(root),
    )


def write_partition(root: Path, table: str, run_id: str, rows: int = 2) -> None:
    data = pa.table({"group_id": [f"g{i}" for i in range(rows)], "run_id": [run_id] * rows})
    write_deltalake(root / table, data, partition_by=["run_id"], mode="append")


def run_ids(root: Path, table: str) -> list[str]:
    values = DeltaTable(str(root / table)).to_pyarrow_table(columns=["run_id"]).column(0)
    return sorted(set(values.to_pylist()))


@pytest.fixture
def output(tmp_path: Path) -> Path:
    """Hourly runs h1..h5 (h5 failed, so h4 is the latest succeeded) finishing in the hours
    after NOW, and `orphan`: partitions without a runs row, written now (a killed run)."""
    for hour in range(1, 6):
        run_id = f"h{hour}"
        for table in ("offsets", "groups"):
            write_partition(tmp_path, table, run_id)
        publish(
            tmp_path, run_id, "failed" if hour == 5 else "succeeded", NOW + timedelta(hours=hour)
        )
    write_partition(tmp_path, "offsets", "orphan")
    return tmp_path


def test_keep_runs_removes_every_other_run_from_every_table(output: Path) -> None:
    report = prune(str(output), Retention(keep_runs=2), now=NOW + timedelta(hours=6))
    assert report.removed == ["orphan", "h1", "h2", "h3"]
    assert (report.kept, report.latest) == (["h4", "h5"], "h4")
    assert report.commits == {"runs": 3, "offsets": 4, "groups": 3}
    assert run_ids(output, "runs") == ["h4", "h5"]
    assert run_ids(output, "offsets") == ["h4", "h5"]
    assert run_ids(output, "groups") == ["h4", "h5"]
    assert load_run(str(output)).run_id == "h4"
    again = prune(str(output), Retention(keep_runs=2), now=NOW + timedelta(hours=6))
    assert (again.removed, again.commits) == ([], {})


def test_the_latest_succeeded_run_survives_any_limit(output: Path) -> None:
    report = prune(str(output), Retention(keep_runs=1), now=NOW + timedelta(days=30))
    assert (report.kept, report.latest) == (["h4", "h5"], "h4")
    assert run_ids(output, "offsets") == ["h4", "h5"]
    report = prune(str(output), Retention(keep_for=timedelta(hours=1)), now=NOW + timedelta(days=9))
    assert report.kept == ["h4"]
    assert run_ids(output, "runs") == ["h4"]


def test_keep_for_keeps_the_span(output: Path) -> None:
    report = prune(
        str(output), Retention(keep_for=timedelta(hours=2)), now=NOW + timedelta(hours=5)
    )
    assert report.removed == ["orphan", "h1", "h2"]
    assert run_ids(output, "offsets") == ["h3", "h4", "h5"]


def test_dry_run_changes_nothing(output: Path) -> None:
    before = {t: DeltaTable(str(output / t)).version() for t in ("runs", "offsets", "groups")}
    report = prune(str(output), Retention(keep_runs=2), now=NOW, dry_run=True)
    assert report.dry_run and report.removed == ["orphan", "h1", "h2", "h3"]
    assert {t: DeltaTable(str(output / t)).version() for t in before} == before


def test_a_reader_of_an_older_snapshot_keeps_reading_until_vacuum(output: Path) -> None:
    snapshot = DeltaTable(str(output / "offsets")).to_pyarrow_dataset()
    prune(str(output), Retention(keep_runs=2), now=NOW)  # vacuum: the 7-day default
    assert snapshot.to_table().num_rows == 12  # every file of the old version is still there
    assert DeltaTable(str(output / "offsets")).to_pyarrow_table().num_rows == 4
    files = sorted(p.name for p in (output / "offsets").rglob("*.parquet"))
    assert len(files) == 6
    report = prune(str(output), Retention(keep_runs=2), now=NOW, vacuum_after=timedelta(0))
    assert report.vacuumed["offsets"] == 4
    assert len(list((output / "offsets").rglob("*.parquet"))) == 2
    with pytest.raises(OSError):  # a snapshot older than the vacuum loses its files
        snapshot.to_table()


def test_prune_waits_for_no_run(output: Path) -> None:
    with output_lock(str(output), "run-writing"), pytest.raises(OutputLocked):
        prune(str(output), Retention(keep_runs=1))
    assert run_ids(output, "runs") == ["h1", "h2", "h3", "h4", "h5"]


def test_the_current_checkpoint_and_its_kept_records_stay(tmp_path: Path) -> None:
    """An incremental Kafka run h1 stored the checkpoint; later runs (dumps) did not."""
    for hour in range(1, 4):
        write_partition(tmp_path, "offsets", f"h{hour}")
        publish(tmp_path, f"h{hour}", "succeeded", NOW + timedelta(hours=hour))
    write_partition(tmp_path, incremental.KEPT_TABLE, "h0@1")  # an older kept partition
    write_partition(tmp_path, incremental.KEPT_TABLE, "h1@2")
    for run_id, sequence in (("h0", 1), ("h1", 2)):
        rows = [
            {
                "topic": "__consumer_offsets",
                "partition": 0,
                "next_offset": 10 * sequence,
                "sequence": sequence,
                "state_id": f"{run_id}@{sequence}",
                "committed_at": NOW,
                "run_id": run_id,
            }
        ]
        sink.write_rows(rows, incremental.CHECKPOINT_SPEC, output=str(tmp_path), run_id=run_id)
    report = prune(str(tmp_path), Retention(keep_runs=1), now=NOW + timedelta(hours=4))
    assert report.removed == ["h0", "h1", "h2"]
    assert report.protected == ["_checkpoint/run_id=h1", "_kept/run_id=h1@2"]
    assert run_ids(tmp_path, "offsets") == ["h3"]
    assert run_ids(tmp_path, incremental.CHECKPOINT_TABLE) == ["h1"]
    assert run_ids(tmp_path, incremental.KEPT_TABLE) == ["h1@2"]
    checkpoint = incremental.read_checkpoint(str(tmp_path), "__consumer_offsets")
    assert checkpoint is not None and (checkpoint.kept_id, checkpoint.next_offsets) == (
        "h1@2",
        {0: 20},
    )


def invoke(*args: str):
    return CliRunner().invoke(main, ["prune", *args])


def test_cli(output: Path) -> None:
    dry = invoke("--output", str(output), "--keep-runs", "2", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert dry.output.splitlines()[:2] == [
        "would remove 4 runs, kept 2 (latest succeeded: h4)",
        "  would remove: orphan, h1, h2, h3",
    ]
    done = invoke("--output", str(output), "--keep-runs", "2", "--json")
    assert done.exit_code == 0, done.output
    doc = json.loads(done.output)
    assert (doc["removed"], doc["kept"], doc["latest"]) == (
        ["orphan", "h1", "h2", "h3"],
        ["h4", "h5"],
        "h4",
    )


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        ((), 2, "offsets: give --keep-runs N and/or --keep-for SPAN"),
        (("--keep-runs", "0"), 2, "offsets: --keep-runs 0: keep at least 1 run"),
        (
            ("--keep-for", "7 days"),
            2,
            "offsets: --keep-for '7 days': expected a number with a unit",
        ),
        (("--keep-for", "7d", "--no-vacuum", "--vacuum-after", "1d"), 2, "exclude each other"),
    ],
)
def test_cli_usage(tmp_path: Path, args: tuple[str, ...], code: int, message: str) -> None:
    result = invoke("--output", str(tmp_path), *args)
    assert result.exit_code == code
    assert message in result.output and result.output.count("\n") == 1


def test_cli_no_tables_leaves_nothing_behind(tmp_path: Path) -> None:
    result = invoke("--output", str(tmp_path / "none"), "--keep-runs", "3")
    assert result.exit_code == 3
    missing = tmp_path / "none"
    assert result.output == (
        f"offsets: no tables under {missing} (no runs table): run `offsets run` first\n"
    )
    assert not (tmp_path / "none").exists()


def test_cli_locked(output: Path) -> None:
    with output_lock(str(output), "run-writing"):
        result = invoke("--output", str(output), "--keep-runs", "1")
    assert result.exit_code == 5
    assert "is being written by run run-writing" in result.output


def _run_profile(tmp_path: Path, output: str) -> Path:
    """The shipped hourly profile (conf/prod-example.toml) with its output at ``output``: it
    also names a database and a Kafka password variable, which prune must not need."""
    shipped = (Path(__file__).resolve().parents[2] / "conf" / "prod-example.toml").read_text()
    lines = [
        f'output = "{output}"' if line.startswith("output =") else line
        for line in shipped.splitlines()
    ]
    profile = tmp_path / "hourly.toml"
    profile.write_text("\n".join(lines) + "\n")
    return profile


def test_cli_takes_the_runs_profile(
    output: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--conf` reads where the tables are from the run's own profile: its output (the
    database it also names is not asked: no catalog, no Spark), nothing else of it, and no
    Kafka secret (the variable is unset here)."""
    monkeypatch.delenv("KAFKA_SASL_PASSWORD", raising=False)
    profile = _run_profile(tmp_path_factory.mktemp("conf"), str(output))
    result = CliRunner().invoke(
        main, ["prune", "--conf", str(profile), "--keep-runs", "2", "--json"]
    )
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    doc = json.loads(result.stdout)
    assert (doc["output"], doc["removed"], doc["kept"]) == (
        str(output),
        ["orphan", "h1", "h2", "h3"],
        ["h4", "h5"],
    )


def test_cli_the_command_line_wins_over_the_profile(
    output: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    conf = tmp_path_factory.mktemp("conf")
    profile = _run_profile(conf, str(conf / "elsewhere"))
    result = invoke(
        "--conf", str(profile), "--output", str(output), "--keep-runs", "2", "--dry-run"
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "would remove 4 runs, kept 2 (latest succeeded: h4)"
    missing = invoke("--conf", str(profile), "--keep-runs", "2")
    assert (missing.exit_code, missing.stderr) == (
        3,
        f"offsets: no tables under {conf / 'elsewhere'} (no runs table): run `offsets run` first\n",
    )


@pytest.mark.parametrize(
    ("profile_text", "message"),
    [
        (None, "offsets: profile '{path}' not found"),
        ("output = 5\n", "offsets: {path}: output: expected"),
        ('outptu = "x"\n', "offsets: {path}: unknown key 'outptu'"),
    ],
)
def test_cli_bad_profile_is_one_line(
    tmp_path: Path, profile_text: str | None, message: str
) -> None:
    path = tmp_path / "bad.toml"
    if profile_text is not None:
        path.write_text(profile_text)
    result = invoke("--conf", str(path), "--keep-runs", "2")
    assert result.exit_code == 2
    assert result.stderr.startswith(message.format(path=path)), result.stderr
    assert result.stderr.count("\n") == 1 and result.stdout == ""
