"""The numpy per-task dedupe equals Spark's own aggregation (the reference) on every key."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality

from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.io.sources.parquet import read_parquet_dump
from offsets_lib.tools.generate import generate_dump
from tests.reference import compact
from tests.reference.decode import decode_records

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(
    ("tasks", "coordinator"),
    [(1, Coordinator.NEW), (3, Coordinator.NEW), (3, Coordinator.CLASSIC_2_4)],
)
def test_numpy_dedupe_equals_spark_aggregation(
    spark, tmp_path_factory, tasks: int, coordinator: Coordinator
) -> None:
    root = tmp_path_factory.getbasetemp() / "dedupe-dump"
    if not root.exists():
        generate_dump(str(root), groups=60, records=6_000, seed=3, profile="realistic")
    decoded = decode_records(read_parquet_dump(spark, [str(root)]))
    commits = compact.with_transaction_status(decoded).cache()
    statuses = {r["txn_status"] for r in commits.select("txn_status").distinct().collect()}
    assert {"none", "committed", "aborted", "pending"} <= statuses  # the dump exercises TXN rows
    actual = compact.offset_keys(commits, tasks=tasks, coordinator=coordinator)
    expected = compact.offset_keys_sql(commits, coordinator=coordinator)
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)
    commits.unpersist()
