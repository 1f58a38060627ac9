"""The one-shuffle fast path (pipeline.audit_raw + table_frames) equals the reference audit.

The reference (`tests/reference/spark_audit.audit`) is the audit in plain Spark frames:
windows for transactions,
Spark aggregations, a replay per group after a shuffle. Every table of both must be equal, row
for row, on generated dumps that exercise every record type, transactions with markers and
pending ones, corrupt records and every coordinator.
"""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.rules import Params
from offsets_lib.engine import pipeline
from offsets_lib.engine.decode import decode_records, positioned
from offsets_lib.engine.spark_hash import murmur3_int, task_labels
from offsets_lib.engine.staging import Staging
from offsets_lib.io.sources.parquet import read_parquet_dump
from offsets_lib.tools.generate import generate_dump
from tests.reference import spark_audit
from tests.staged_audit import assert_staged_equals_reference

pytestmark = pytest.mark.spark

DAY_MS = 86_400_000


@pytest.fixture(scope="module")
def raw(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("fast-path") / "dump"
    generate_dump(str(root), groups=80, records=8_000, seed=11, profile="realistic")
    return read_parquet_dump(spark, [str(root)]).cache()


@pytest.mark.slow  # 20-250 s on 2 busy cores: `make test` runs it, `make test-fast` not
@pytest.mark.parametrize(
    ("coordinator", "tasks"),
    [(Coordinator.NEW, 1), *[(coordinator, 3) for coordinator in Coordinator]],
)
def test_fast_path_equals_reference(
    spark, raw, tmp_path, coordinator: Coordinator, tasks: int
) -> None:
    as_of_ms = raw.agg(F.max(F.unix_millis("timestamp"))).first()[0]
    params = Params(retention_ms=7 * DAY_MS, as_of_ms=as_of_ms)
    reference = spark_audit.audit(decode_records(raw), coordinator=coordinator, params=params)
    staging = Staging(str(tmp_path / "staging"))
    manifest = pipeline.audit_raw(
        positioned(raw), coordinator=coordinator, params=params, tasks=tasks, emit=staging
    )
    assert_staged_equals_reference(
        spark, raw, reference, staging, manifest.collect(), coordinator=coordinator, params=params
    )
    assert not (tmp_path / "staging").exists()


def test_murmur3_matches_spark_hash(spark) -> None:
    values = [0, 1, -1, 7, 123_456, 2**31 - 1, -(2**31)]
    frame = spark.createDataFrame([(v,) for v in values], "v int")
    spark_hashes = [r[0] for r in frame.select(F.hash("v")).collect()]
    assert [murmur3_int(v) for v in values] == spark_hashes


@pytest.mark.parametrize("tasks", [1, 2, 8, 13])
def test_task_labels_fill_every_task_once(spark, tasks: int) -> None:
    labels = task_labels(tasks)
    frame = spark.createDataFrame([(v,) for v in labels], "v int").repartition(tasks, "v")
    per_task = frame.rdd.glom().map(len).collect()
    assert per_task == [1] * tasks
