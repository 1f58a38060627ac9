"""The file shuffle (exchange.py) gives the reference audit's tables, whoever reads the input.

The dump's records go from pyarrow map tasks through staged Arrow files to the per-task audit;
every table must equal the reference (`spark_audit.audit`, tests/reference) row for row, for
dumps as generated and for dumps rewritten with many row groups (so big files are split between
map tasks), another integer width and no batch metadata. A dump pyarrow cannot reach is read by
Spark and mapped in Spark's tasks (exchange.map_records): the same tables.
"""

from __future__ import annotations

import glob
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.rules import Params
from offsets_lib.engine import exchange, piece_files, pipeline, routing
from offsets_lib.engine.staging import Staging
from offsets_lib.io import sink, storage
from offsets_lib.io.sources.parquet import read_parquet_dump
from offsets_lib.job import audit_plan, run
from offsets_lib.tools.generate import generate_dump
from tests.reference import spark_audit
from tests.reference.decode import decode_records
from tests.staged_audit import assert_staged_equals_reference, table_files

pytestmark = pytest.mark.spark

DAY_MS = 86_400_000


@pytest.fixture(scope="module")
def dumps(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("exchange")
    generated = root / "generated"
    generate_dump(str(generated), groups=80, records=8_000, seed=11, profile="realistic")
    # the same records in three files of 500-row groups, partition as int64, no batch metadata
    rewritten = root / "rewritten"
    rewritten.mkdir()
    table = pq.read_table(glob.glob(str(generated / "*.parquet")))
    table = table.drop_columns(["producer_id", "producer_epoch", "is_transactional", "is_control"])
    table = table.set_column(
        table.schema.get_field_index("partition"),
        "partition",
        table.column("partition").cast(pa.int64()),
    )
    third = -(-table.num_rows // 3)
    for i in range(3):
        pq.write_table(
            table.slice(i * third, third), rewritten / f"part-{i}.parquet", row_group_size=500
        )
    return {"generated": str(generated), "rewritten": str(rewritten)}


@pytest.mark.slow  # 20-250 s on 2 busy cores: `make test` runs it, `make test-fast` not
@pytest.mark.parametrize(
    ("dump", "coordinator", "tasks", "map_tasks", "run_records"),
    [
        ("generated", Coordinator.NEW, 1, 1, 8_000),
        ("generated", Coordinator.PRE_2_1, 3, 2, 8_000),
        # pieces written as a large run writes them on a local disk: LZ4 frames
        ("rewritten", Coordinator.NEW, 4, 5, piece_files.LOCAL_LZ4_ABOVE_RECORDS + 1),
    ],
)
def test_file_shuffle_equals_reference(
    spark,
    dumps,
    tmp_path,
    dump: str,
    coordinator: Coordinator,
    tasks: int,
    map_tasks: int,
    run_records: int,
) -> None:
    raw = read_parquet_dump(spark, [dumps[dump]])
    as_of_ms = raw.agg(F.max(F.unix_millis("timestamp"))).first()[0]
    params = Params(retention_ms=7 * DAY_MS, as_of_ms=as_of_ms)
    reference = spark_audit.audit(decode_records(raw), coordinator=coordinator, params=params)
    staging = Staging(str(tmp_path / "staging"))
    units = exchange.plan(raw.inputFiles(), map_tasks=map_tasks)
    assert units is not None
    if map_tasks > 3:  # three files over five map tasks: split by row groups
        assert len(units) == map_tasks
        assert any(u.row_groups is not None for task in units for u in task)
    pieces = exchange.map_pieces(
        spark, units, staging_uri=staging.uri, tasks=tasks, run_records=run_records
    )
    manifest = exchange.audit_pieces(
        spark,
        pieces,
        coordinator=coordinator,
        params=params,
        tasks=tasks,
        emit=table_files(staging, params.as_of_ms),
    ).collect()
    assert_staged_equals_reference(
        spark, raw, reference, staging, manifest, coordinator=coordinator, params=params
    )
    assert not (tmp_path / "staging").exists()


@pytest.fixture
def pyarrow_cannot_read(monkeypatch):
    """The driver's pyarrow reaches no file under the given folders (a store without a pyarrow
    file system), so the run's plan declines them (exchange.plan) and Spark reads them."""
    unreachable: list[str] = []
    reachable = storage.filesystem

    def filesystem(uri: str, *args, **kwargs):
        if any(folder in uri for folder in unreachable):
            raise ValueError(f"no pyarrow file system for {uri}")
        return reachable(uri, *args, **kwargs)

    monkeypatch.setattr(storage, "filesystem", filesystem)
    return unreachable


def test_a_dump_spark_reads_publishes_the_tables_of_its_files(
    spark, dumps, tmp_path, pyarrow_cannot_read
) -> None:
    """Through run.execute: read by pyarrow, or by Spark (and mapped in its tasks) with either
    writer, the same tables, the same counts, and no staged file left behind."""
    results = {}
    for reader, writer in (("pyarrow", "delta-rs"), ("Spark", "delta-rs"), ("Spark", "spark")):
        if reader == "Spark":
            pyarrow_cannot_read.append(dumps["generated"])
        output = str(tmp_path / f"{reader}-{writer}")
        options = run.RunOptions(
            output=output, run_id="r", inputs=(dumps["generated"],), delta_writer=writer
        )
        lines: list[str] = []
        steps: list[str] = []
        report = run.execute(
            spark,
            read_parquet_dump(spark, [dumps["generated"]]),
            options,
            echo=lines.append,
            step=steps.append,
        )
        assert report.status == "succeeded"
        assert not (Path(output) / "_staging").exists()
        assert any(step.endswith(f"tasks (read by {reader})") for step in steps), steps
        # the audit tasks write every table but metrics (and runs), for either writer
        assert ", 9 tables written by the audit tasks" in lines[0], lines[0]
        results[reader, writer] = (report, output)
    files_report, files_out = results["pyarrow", "delta-rs"]
    for key, (report, output) in results.items():
        assert report.records_read == files_report.records_read == 8_000, key
        assert report.records_rejected == files_report.records_rejected > 0, key
        assert report.groups_by_type_state == files_report.groups_by_type_state, key
        for name in (*pipeline.DECIDED_TABLES, "lag"):
            left = sink.read_table(files_out, name).to_pylist()
            right = sink.read_table(output, name).to_pylist()
            assert sorted(left, key=repr) == sorted(right, key=repr), (key, name)
    for report, output in results.values():
        assert _summary(report) == _summary_of_tables(output, report.as_of_ms)


def _summary(report: run.RunReport) -> dict[str, object]:
    return {
        "offsets": report.offsets_total,
        "expired": report.offsets_expired,
        "expiring_24h": report.offsets_expiring_24h,
        "groups_deleted": report.groups_deleted,
        "groups": report.groups_by_type_state,
    }


def _summary_of_tables(output: str, as_of_ms: int) -> dict[str, object]:
    """The summary counts, counted from the published tables."""
    decisions = sink.read_table(output, "offset_decisions").to_pylist()
    horizon = as_of_ms + DAY_MS
    groups: dict[str, int] = {}
    for g in sink.read_table(output, "groups").to_pylist():
        name = f"{g['group_type']}/{g['state']}"
        groups[name] = groups.get(name, 0) + 1
    return {
        "offsets": len(decisions),
        "expired": sum(d["expired"] for d in decisions),
        "expiring_24h": sum(
            not d["expired"]
            and d["expires_at"] is not None
            and d["expires_at"].timestamp() * 1000 <= horizon
            for d in decisions
        ),
        "groups_deleted": sum(
            g["deleted"] for g in sink.read_table(output, "group_decisions").to_pylist()
        ),
        "groups": groups,
    }


@pytest.mark.parametrize("reader", ["pyarrow", "Spark"])
def test_an_empty_dump_publishes_empty_tables_and_zero_counts(
    spark, dumps, tmp_path, pyarrow_cannot_read, reader
):
    """No staged file of any kind: the counts Spark cannot observe are counted directly."""
    empty = tmp_path / "empty"
    empty.mkdir()
    schema = pq.read_schema(glob.glob(f"{dumps['generated']}/*.parquet")[0])
    pq.write_table(schema.empty_table(), empty / "part-0.parquet")
    if reader == "Spark":
        pyarrow_cannot_read.append(str(empty))
    output = str(tmp_path / "out")
    options = run.RunOptions(output=output, run_id="r", inputs=(str(empty),))
    report = run.execute(spark, read_parquet_dump(spark, [str(empty)]), options)
    assert report.status == "succeeded"
    assert report.records_read == 0
    assert _summary(report) == {
        "offsets": 0, "expired": 0, "expiring_24h": 0, "groups_deleted": 0, "groups": {}
    }  # fmt: skip
    for name in (*pipeline.DECIDED_TABLES, "lag"):
        assert sink.read_table(output, name).num_rows == 0, name


def test_plan_declines_what_pyarrow_cannot_read(tmp_path) -> None:
    assert exchange.plan([], map_tasks=2) is None
    assert exchange.plan(["nosuchscheme://bucket/dump/part-0.parquet"], map_tasks=2) is None
    assert exchange.plan([str(tmp_path / "missing.parquet")], map_tasks=2) is None


def test_plan_counts_the_records_from_the_footers(tmp_path, monkeypatch) -> None:
    files = []
    for i, rows in enumerate((3, 5, 0)):
        path = tmp_path / f"part-{i}.parquet"
        pq.write_table(pa.table({"offset": pa.array(range(rows), pa.int64())}), path)
        files.append(str(path))
    units = exchange.plan(files, map_tasks=2, positioned=(files[1],), history=(files[1],))
    by_path = {u.path: u for task in units for u in task}
    assert {p: u.rows for p, u in by_path.items()} == dict(zip(files, (3, 5, 0), strict=True))
    assert [(u.is_positioned, u.is_history) for u in map(by_path.get, files)] == [
        (False, False), (True, True), (False, False),
    ]  # fmt: skip
    monkeypatch.setattr(exchange, "MAX_FOOTERS", 2)  # too many files: Spark counts them
    units = exchange.plan(files, map_tasks=2)
    assert {u.rows for task in units for u in task} == {None}


def test_pieces_are_compressed_off_the_local_disk_and_on_it_for_a_large_run(tmp_path) -> None:
    local = pafs.LocalFileSystem()
    other = pafs.SubTreeFileSystem(str(tmp_path), local)
    limit = piece_files.LOCAL_LZ4_ABOVE_RECORDS
    assert piece_files.piece_options(local, limit).compression is None
    assert piece_files.piece_options(local, limit + 1).compression == "lz4"
    assert piece_files.piece_options(other, 10).compression == "lz4"


def test_a_large_runs_local_pieces_are_lz4_frames_that_read_back_whole(dumps, tmp_path) -> None:
    """The same pieces written for a small and for a large run on the local disk: the large
    run's file is LZ4 (smaller) and its pieces read back as the records that were cut."""
    table = pq.read_table(glob.glob(f"{dumps['generated']}/*.parquet"))
    pieces = list(piece_files.cut([routing.positioned_table(table)], tasks=3))
    sizes, routes = [], []
    for run_records in (table.num_rows, piece_files.LOCAL_LZ4_ABOVE_RECORDS + 1):
        rows = piece_files.write_piece_file(pieces, f"{tmp_path}/{run_records}", run_records)
        files = glob.glob(f"{tmp_path}/{run_records}/*.arrow")
        assert len(files) == 1
        sizes.append(Path(files[0]).stat().st_size)
        routes.append([piece_files.Route(r["path"], r["batch"]) for r in rows.to_pylist()])
    assert sizes[1] < sizes[0] / 2
    with pa.memory_map(glob.glob(f"{tmp_path}/{table.num_rows}/*.arrow")[0]) as handle:
        plain = pa.ipc.open_file(handle).read_all()
    for routed in routes:
        read = pa.Table.from_batches(piece_files.task_records(routed))
        assert read.num_rows == table.num_rows
        assert read.equals(plain)


def test_map_batches_grow_with_the_audit_tasks_up_to_a_bound() -> None:
    """Pieces keep ~8k records when a run has many audit tasks (100M records: 200 tasks)."""
    assert piece_files.batch_rows(20) == piece_files.BATCH_ROWS == 262_144
    assert piece_files.batch_rows(200) == 200 * piece_files.PIECE_ROWS == 1_638_400
    assert piece_files.batch_rows(10_000) == piece_files.MAX_BATCH_ROWS


def test_arrow_uri_names_hadoop_schemes_as_pyarrow_does() -> None:
    assert piece_files.arrow_uri("s3a://bucket/dump/a.parquet") == "s3://bucket/dump/a.parquet"
    assert piece_files.arrow_uri("file:/data/dump/a.parquet") == "file:///data/dump/a.parquet"
    assert piece_files.arrow_uri("file:///data/a.parquet") == "file:///data/a.parquet"
    assert piece_files.arrow_uri("/data/a.parquet") == "/data/a.parquet"


def test_records_without_files_are_read_by_spark(spark) -> None:
    """A frame pyarrow has no file of (here built in memory) reaches the map as Spark reads it."""
    not_files = spark.range(3).toDF("offset")
    inputs = audit_plan.plan_inputs(spark, not_files, None)
    assert (inputs.units, inputs.stored, inputs.records) == ([], [], not_files)
    assert inputs.tasks == audit_plan.audit_tasks(spark, 3)


def _prime_above(n: int) -> int:
    return next(p for p in range(n + 1, 2 * n + 2) if all(p % d for d in range(2, p)))


def test_incremental_runs_keep_the_audit_tasks_their_kept_records_were_cut_for(spark) -> None:
    """As many tasks as stored, or the fewest that divide that number, while each holds at most
    RECORDS_PER_TASK records and they are not too many; else the usual count."""
    needed = audit_plan.audit_tasks(spark, 10)
    factor = audit_plan.STORED_TASKS_FACTOR

    def tasks(*cut_for: int | None, records: int = 10) -> int:
        cuts = [exchange.StoredCut("k.parquet", 0, n, 1, None) if n else None for n in cut_for]
        return audit_plan.incremental_tasks(spark, records, cuts)

    assert tasks(needed, needed) == needed
    assert tasks(2 * needed) == needed  # a divisor
    assert tasks(3 * needed) == needed
    prime = _prime_above(needed)  # no divisor but itself, fewer than `factor` times
    assert prime <= factor * needed and tasks(prime) == prime
    assert tasks(_prime_above(factor * needed)) == needed  # too many
    assert tasks(needed, None) == needed  # a file not cut by task
    assert tasks(needed, 2 * needed) == needed  # cut for two numbers
    assert tasks() == needed
    over = audit_plan.RECORDS_PER_TASK * (needed + 1)  # needs needed + 1 tasks
    assert tasks(needed, records=over) == needed + 1
