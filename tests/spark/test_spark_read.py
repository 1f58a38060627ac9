"""Records Spark reads, mapped in its tasks (exchange.map_records), audit to the reference's tables.

A Kafka run's records, and a dump pyarrow cannot reach, are read by Spark and cut by audit task
in the tasks that read them; the audit tasks then read their pieces as for a dump pyarrow reads.
The reference (`tests/reference/spark_audit.audit`) is the audit in plain Spark frames: windows
for transactions, Spark aggregations, a replay per group after a shuffle. Every table of both
must be equal, row for row, on generated dumps that exercise every record type, transactions
with markers and pending ones, corrupt records and every coordinator.
"""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.rules import Params
from offsets_lib.engine import exchange
from offsets_lib.engine.staging import Staging
from offsets_lib.io.sources.parquet import read_parquet_dump
from offsets_lib.tools.generate import generate_dump
from tests.reference import spark_audit
from tests.reference.decode import decode_records
from tests.staged_audit import assert_staged_equals_reference, table_files

pytestmark = pytest.mark.spark

DAY_MS = 86_400_000


@pytest.fixture(scope="module")
def raw(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("spark-read") / "dump"
    generate_dump(str(root), groups=80, records=8_000, seed=11, profile="realistic")
    return read_parquet_dump(spark, [str(root)]).cache()


@pytest.mark.slow  # 20-250 s on 2 busy cores: `make test` runs it, `make test-fast` not
@pytest.mark.parametrize(
    ("coordinator", "tasks"),
    [(Coordinator.NEW, 1), *[(coordinator, 3) for coordinator in Coordinator]],
)
def test_records_spark_reads_audit_to_the_reference(
    spark, raw, tmp_path, coordinator: Coordinator, tasks: int
) -> None:
    as_of_ms = raw.agg(F.max(F.unix_millis("timestamp"))).first()[0]
    params = Params(retention_ms=7 * DAY_MS, as_of_ms=as_of_ms)
    reference = spark_audit.audit(decode_records(raw), coordinator=coordinator, params=params)
    staging = Staging(str(tmp_path / "staging"))
    pieces = exchange.map_records(raw, staging_uri=staging.uri, tasks=tasks)
    assert exchange.latest_timestamp_ms(pieces) == as_of_ms
    manifest = exchange.audit_pieces(
        spark,
        pieces,
        coordinator=coordinator,
        params=params,
        tasks=tasks,
        emit=table_files(staging, params.as_of_ms),
    )
    assert_staged_equals_reference(
        spark, raw, reference, staging, manifest.collect(), coordinator=coordinator, params=params
    )
    assert not (tmp_path / "staging").exists()
