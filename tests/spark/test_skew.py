"""One offsets partition holding one dominant group and many small ones (skew), and one group
holding 30 % of a dump's commits.

The audit's unit of work is a group, not an offsets partition: the small groups of a busy
partition spread over the tasks while the dominant group stays whole in one, and the tables
equal the reference audit's. The map drops a dominant group's superseded commits, so its task
no longer holds all of them, and the tables stay the same.
"""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.rules import Params
from offsets_lib.engine import exchange, pipeline
from offsets_lib.engine.staging import Staging
from offsets_lib.io import sink
from offsets_lib.io.sources.parquet import read_parquet_dump
from offsets_lib.job import audit_plan, run
from offsets_lib.tools.generate import generate_dump
from tests.reference import spark_audit
from tests.reference.decode import decode_records
from tests.reference.frames import conform
from tests.staged_audit import assert_staged_equals_reference, table_files, task_tables

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def skewed(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("skew")
    generate_dump(str(root / "big"), groups=1, records=6_000, seed=5, partitions=1)
    generate_dump(str(root / "small"), groups=40, records=2_000, seed=6, partitions=1)
    big = read_parquet_dump(spark, [str(root / "big")])
    small = read_parquet_dump(spark, [str(root / "small")])
    # one log: the small groups' records follow the big group's in the same partition
    shifted = small.withColumn("offset", F.col("offset") + F.lit(1_000_000))
    return big.unionByName(shifted).withColumn("partition", F.lit(0)).cache()


def _audit(spark, pieces, staging: Staging, params: Params, tasks: int):
    """The audit stage on the map's pieces, under the new coordinator, its tables' files staged."""
    return exchange.audit_pieces(
        spark,
        pieces,
        coordinator=Coordinator.NEW,
        params=params,
        tasks=tasks,
        emit=table_files(staging, params.as_of_ms),
    )


@pytest.mark.slow  # 20-250 s on 2 busy cores: `make test` runs it, `make test-fast` not
def test_small_groups_of_a_busy_partition_spread_and_tables_match(spark, skewed, tmp_path) -> None:
    as_of_ms = skewed.agg(F.max(F.unix_millis("timestamp"))).first()[0]
    params = Params(retention_ms=7 * 86_400_000, as_of_ms=as_of_ms)
    staging = Staging(str(tmp_path / "staging"))
    pieces = exchange.map_records(skewed, staging_uri=staging.uri, tasks=4)
    manifest = _audit(spark, pieces, staging, params, tasks=4).collect()
    # one file of the groups table per task with groups
    group_files = [row for row in manifest if row["table"] == "groups"]
    assert len(group_files) >= 3  # one partition's groups landed in several tasks
    stats = pipeline.run_stats(manifest)
    assert stats.records_read == skewed.count()
    fast = task_tables(spark, staging, manifest, as_of_ms)
    reference = spark_audit.audit(
        decode_records(skewed), coordinator=Coordinator.NEW, params=params
    )
    for name, frame in reference.frames.items():
        expected = conform(frame, name, run_id="r", as_of_ms=as_of_ms)
        assert_df_equality(fast[name], expected, ignore_row_order=True, ignore_nullable=True)


@pytest.fixture(scope="module")
def dominant(tmp_path_factory):
    root = tmp_path_factory.mktemp("dominant") / "dump"
    generate_dump(
        str(root), groups=60, records=20_000, seed=5, partitions=4, dominant_group_share=0.3
    )
    return root


@pytest.mark.slow  # 20-250 s on 2 busy cores: `make test` runs it, `make test-fast` not
def test_the_map_reduces_a_dominant_group_and_tables_match(spark, dominant, tmp_path) -> None:
    """One task per group leaves the dominant group's task with 6,700 of the 20,000 records;
    the map drops most of its commit values (superseded by a later value of the same key, and
    counted), and the tables equal the reference audit's."""
    files = sorted(str(p) for p in dominant.glob("*.parquet"))
    raw = read_parquet_dump(spark, [str(dominant)])
    staging = Staging(str(tmp_path / "staging"))
    as_of_ms = raw.agg(F.max(F.unix_millis("timestamp"))).first()[0]
    params = Params(retention_ms=7 * 86_400_000, as_of_ms=as_of_ms)
    units = exchange.plan(files, map_tasks=2)
    pieces = exchange.map_pieces(spark, units, staging_uri=staging.uri, tasks=8, reduce_large=True)
    assert exchange.task_sizes(pieces, 8).max() < 4_000
    manifest = [r.asDict() for r in _audit(spark, pieces, staging, params, tasks=8).collect()]
    reference = spark_audit.audit(decode_records(raw), coordinator=Coordinator.NEW, params=params)
    assert_staged_equals_reference(
        spark, raw, reference, staging, manifest, coordinator=Coordinator.NEW, params=params
    )


@pytest.mark.slow  # 20-250 s on 2 busy cores: `make test` runs it, `make test-fast` not
def test_a_run_reduces_a_dominant_group_itself_and_publishes_the_same_tables(
    spark, dominant, tmp_path, monkeypatch
) -> None:
    """run.execute with the map's reduction (--split-commits auto, the default) against a run
    without it: without, the dominant group's task holds over twice the average; with it, the
    largest task holds under a quarter of that (1,290 records here: the map drops the group's
    superseded commits, not its other records), and the published tables are the same."""
    monkeypatch.setattr(audit_plan, "RECORDS_PER_TASK", 1_000)  # 20 tasks, as at scale
    published = {}
    for reduce in (False, True):
        output = str(tmp_path / f"reduce-{reduce}")
        options = run.RunOptions(
            output=output, run_id="r", inputs=(str(dominant),), split_commits=reduce
        )
        report = run.execute(spark, read_parquet_dump(spark, [str(dominant)]), options)
        assert report.status == "succeeded"
        published[reduce] = (report, output)
    (whole, whole_out), (reduced, reduced_out) = published[False], published[True]
    assert whole.task_skew > 2
    assert reduced.largest_task_records * 4 < whole.largest_task_records
    assert reduced.records_read == whole.records_read == 20_000
    for name in (*pipeline.DECIDED_TABLES, "lag"):
        left = sink.read_table(reduced_out, name).to_pylist()
        right = sink.read_table(whole_out, name).to_pylist()
        assert sorted(left, key=repr) == sorted(right, key=repr), name
