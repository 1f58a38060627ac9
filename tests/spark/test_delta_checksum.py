"""The version checksum written beside each delta-rs commit (io.delta_checksum): what it says
equals what Delta's own Spark reader computes, and Delta takes the table's protocol and
metadata from it without a Spark job."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlparse

import pytest
from pyspark.sql import SparkSession

from offsets_lib.io import sink

pytestmark = [pytest.mark.spark]

AS_OF = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)


def runs_row(run_id: str) -> dict[str, object]:
    return {
        "run_id": run_id,
        "status": "succeeded",
        "started_at": AS_OF,
        "finished_at": AS_OF,
        "as_of": AS_OF,
        "source": "parquet",
        "records_read": 10,
        "tables_written": ["offsets"],
    }


def log_actions(log: Path, version: int) -> dict[str, dict]:
    lines = (log / f"{version:020d}.json").read_text().splitlines()
    return {name: body for line in lines for name, body in json.loads(line).items()}


def test_each_commit_has_the_checksum_delta_reads_without_a_job(
    spark: SparkSession, tmp_path: Path
) -> None:
    out = str(tmp_path)
    assert sink.publish_run(runs_row("r1"), output=out) == 0
    assert sink.publish_run(runs_row("r2"), output=out) == 1
    log = tmp_path / "runs" / "_delta_log"
    checksums = [json.loads((log / f"{v:020d}.crc").read_text()) for v in (0, 1)]

    # version 0: the protocol and metaData actions delta-rs wrote, field for field
    created = log_actions(log, 0)
    assert checksums[0]["protocol"] == created["protocol"]
    metadata = {
        **created["metaData"],
        "schemaString": json.loads(created["metaData"]["schemaString"]),
    }
    ours = {
        **checksums[0]["metadata"],
        "schemaString": json.loads(checksums[0]["metadata"]["schemaString"]),
    }
    assert ours == metadata
    assert checksums[1]["metadata"] == checksums[0]["metadata"]

    # both versions: the live files Delta's Spark reader counts
    for version, checksum in enumerate(checksums):
        table = spark.read.format("delta").option("versionAsOf", version)
        live = [Path(urlparse(f).path) for f in table.load(str(tmp_path / "runs")).inputFiles()]
        assert (checksum["numFiles"], checksum["numMetadata"], checksum["numProtocol"]) == (
            len(live),
            1,
            1,
        )
        assert checksum["tableSizeBytes"] == sum(f.stat().st_size for f in live)

    # registering the table: Delta takes protocol and metadata from the checksum, no job runs
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup(None))
    spark.sql(f"CREATE TABLE checksum_runs USING delta LOCATION '{tmp_path / 'runs'}'")
    try:
        assert set(tracker.getJobIdsForGroup(None)) - before == set()
        rows = spark.table("checksum_runs").select("run_id").orderBy("run_id").collect()
        assert [r.run_id for r in rows] == ["r1", "r2"]
    finally:
        spark.sql("DROP TABLE checksum_runs")
