"""The split audit (engine.key_split: offset commits reduced per offset key, then the per-group
audit) equals the reference audit, under every coordinator, and a dominant group no longer
makes one task hold its commits."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.rules import Params
from offsets_lib.engine import exchange, key_split, pipeline
from offsets_lib.engine.staging import Staging
from offsets_lib.io import sink
from offsets_lib.io.sources.parquet import read_parquet_dump
from offsets_lib.job import audit_plan, run
from offsets_lib.tools.generate import generate_dump
from tests.reference import spark_audit
from tests.reference.decode import decode_records
from tests.staged_audit import assert_staged_equals_reference, table_files

pytestmark = pytest.mark.spark

DAY_MS = 86_400_000


@pytest.fixture(scope="module")
def raw_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("key-split") / "dump"
    generate_dump(str(root), groups=80, records=8_000, seed=11, profile="realistic")
    return root


@pytest.fixture(scope="module")
def raw(spark, raw_root):
    return read_parquet_dump(spark, [str(raw_root)]).cache()


def _params(raw) -> Params:
    as_of_ms = raw.agg(F.max(F.unix_millis("timestamp"))).first()[0]
    return Params(retention_ms=7 * DAY_MS, as_of_ms=as_of_ms)


@pytest.mark.slow  # 20-250 s on 2 busy cores: `make test` runs it, `make test-fast` not
@pytest.mark.parametrize("coordinator", list(Coordinator))
def test_split_audit_equals_reference(
    spark, raw, raw_root, tmp_path, coordinator: Coordinator
) -> None:
    """Every task through the first step (its commits cut again by offset key), then the
    per-group audit."""
    params = _params(raw)
    reference = spark_audit.audit(decode_records(raw), coordinator=coordinator, params=params)
    staging = Staging(str(tmp_path / "staging"))
    files = sorted(str(p) for p in raw_root.glob("*.parquet"))
    manifest, *_ = _oversized_only(spark, files, staging, 3, params, {0, 1, 2}, coordinator)
    assert_staged_equals_reference(
        spark, raw, reference, staging, manifest, coordinator=coordinator, params=params
    )


@pytest.fixture(scope="module")
def dominant(tmp_path_factory):
    root = tmp_path_factory.mktemp("dominant") / "dump"
    generate_dump(
        str(root), groups=60, records=20_000, seed=5, partitions=4, dominant_group_share=0.3
    )
    return root


def _oversized_only(
    spark, files, staging, tasks, params, oversized=None, coordinator=Coordinator.NEW
):
    """The file shuffle's automatic split as the job runs it (audit_plan.split_first_step): a
    per-group map that drops the superseded commits of large tasks, then only the oversized
    tasks' pieces through the first step; the manifest and the sizes of each step's tasks."""
    units = exchange.plan(files, map_tasks=2)
    by_group = exchange.map_pieces(
        spark, units, staging_uri=staging.uri, tasks=tasks, reduce_large=True
    )
    sizes = exchange.task_sizes(by_group, tasks)
    if oversized is None:  # the largest task, as audit_plan.oversized_tasks picks it at scale
        oversized = {int(sizes.argmax())}
    pieces, reduced, steps = audit_plan.split_first_step(spark, by_group, oversized, staging, tasks)
    audited = exchange.audit_pieces(
        spark,
        pieces,
        coordinator=coordinator,
        params=params,
        tasks=tasks,
        emit=table_files(staging, params.as_of_ms),
        superseded=exchange.superseded_by_task(by_group, tasks),
    )
    manifest = key_split.staged_rows(reduced) + [r.asDict() for r in audited.collect()]
    return manifest, sizes, *steps


@pytest.mark.slow  # 20-250 s on 2 busy cores: `make test` runs it, `make test-fast` not
def test_the_map_reduces_a_dominant_group_and_tables_match(spark, dominant, tmp_path) -> None:
    """One task per group leaves the dominant group's task with 6,700 of the 20,000 records;
    the map drops most of its commit values (superseded by a later value of the same key, and
    counted), nothing is cut again, and the tables equal the reference audit's."""
    files = sorted(str(p) for p in dominant.glob("*.parquet"))
    raw = read_parquet_dump(spark, [str(dominant)])
    staging_dir = tmp_path / "staging"
    staging = Staging(str(staging_dir))
    params = _params(raw)
    manifest, by_group, *_ = _oversized_only(spark, files, staging, 8, params, oversized=set())
    assert by_group.max() < 4_000
    assert not (staging_dir / "remapped").exists()
    reference = spark_audit.audit(decode_records(raw), coordinator=Coordinator.NEW, params=params)
    assert_staged_equals_reference(
        spark, raw, reference, staging, manifest, coordinator=Coordinator.NEW, params=params
    )


@pytest.mark.slow  # 20-250 s on 2 busy cores: `make test` runs it, `make test-fast` not
@pytest.mark.parametrize("oversized", [{0}, {1, 2}])
def test_splitting_some_tasks_of_a_log_with_transactions_equals_reference(
    spark, raw, raw_root, tmp_path, oversized: set[int]
) -> None:
    """Markers reach the first step as context: resolved there, counted once by the audit. No
    task is large in its batch here, so the map dropped nothing: the first step reads the
    chosen tasks' commits cut again by offset key."""
    staging_dir = tmp_path / "staging"
    staging = Staging(str(staging_dir))
    files = sorted(str(p) for p in raw_root.glob("*.parquet"))
    params = _params(raw)
    manifest, *_ = _oversized_only(spark, files, staging, 3, params, oversized)
    assert (staging_dir / "remapped").exists()
    reference = spark_audit.audit(decode_records(raw), coordinator=Coordinator.NEW, params=params)
    assert_staged_equals_reference(
        spark, raw, reference, staging, manifest, coordinator=Coordinator.NEW, params=params
    )


@pytest.mark.slow  # 20-250 s on 2 busy cores: `make test` runs it, `make test-fast` not
def test_a_run_splits_a_dominant_task_itself_and_publishes_the_same_tables(
    spark, dominant, tmp_path, monkeypatch
) -> None:
    """run.execute with the automatic split (the default) against a run without it: without,
    the dominant group's task is oversized; with it, the map drops that group's superseded
    commits, no task holds far more than the others, and the published tables are the same."""
    monkeypatch.setattr(audit_plan, "RECORDS_PER_TASK", 1_000)  # the oversized bound, scaled down
    published = {}
    for split in (False, True):
        output = str(tmp_path / f"split-{split}")
        options = run.RunOptions(
            output=output, run_id="r", inputs=(str(dominant),), split_commits=split
        )
        report = run.execute(spark, read_parquet_dump(spark, [str(dominant)]), options)
        assert report.status == "succeeded"
        published[split] = (report, output)
    (whole, whole_out), (split, split_out) = published[False], published[True]
    assert whole.task_skew > 2 >= split.task_skew
    assert split.records_read == whole.records_read == 20_000
    for name in (*pipeline.DECIDED_TABLES, "lag"):
        left = sink.read_table(split_out, name).to_pylist()
        right = sink.read_table(whole_out, name).to_pylist()
        assert sorted(left, key=repr) == sorted(right, key=repr), name
