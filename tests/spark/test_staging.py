"""Staged task results: files named by the manifest are read, nothing else, and all is removed."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from offsets_lib.audit.task_audit import KIND_ARROW
from offsets_lib.engine.staging import STAGING_DIR, Staging

pytestmark = pytest.mark.spark


def _tables(metric_rows: list[dict], stats: dict) -> dict[str, pa.Table]:
    tables = {kind: schema.empty_table() for kind, schema in KIND_ARROW.items()}
    tables["metric"] = pa.Table.from_pylist(metric_rows, schema=KIND_ARROW["metric"])
    tables["stats"] = pa.Table.from_pylist([stats], schema=KIND_ARROW["stats"])
    return tables


def _metric(hour_ms: int, commits: int) -> dict:
    return {
        "hour_ms": hour_ms,
        "log_partition": 3,
        "offset_commits": commits,
        "offset_tombstones": 0,
        "group_metadata_writes": 0,
        "groups_created": 0,
        "groups_deleted": 0,
    }


STATS = {"records_read": 5, "records_rejected": 1, "orphaned_offsets": 0, "max_timestamp_ms": 9}


def test_only_files_of_the_manifest_are_read(tmp_path):
    staging = Staging.fresh(str(tmp_path / "out"), "run/1")
    manifest = []
    for batch in staging(_tables([_metric(0, 2), _metric(3_600_000, 1)], STATS)):
        manifest.extend(batch.to_pylist())
    assert [(r["kind"], r["num_rows"]) for r in manifest] == [("metric", 2), ("stats", None)]
    assert manifest[1]["records_read"] == 5 and manifest[1]["path"] is None
    # a failed task attempt's file in the same folder: no manifest names it
    stray = pa.Table.from_pylist([_metric(0, 100)], schema=KIND_ARROW["metric"])
    pq.write_table(stray, f"{staging.uri}/metric/part-stray.parquet")

    sums = staging.metric_sums(manifest)  # the driver's sums read the listed files, no others
    assert sums.select(["hour_ms", "offset_commits"]).to_pylist() == [
        {"hour_ms": 0, "offset_commits": 2},
        {"hour_ms": 3_600_000, "offset_commits": 1},
    ]
    staging.remove()
    assert not (tmp_path / "out" / STAGING_DIR).exists()  # nothing left beside the tables


def test_a_fresh_staging_folder_removes_what_a_killed_run_left(tmp_path):
    output = str(tmp_path / "out")
    left = Staging.fresh(output, "killed")
    list(left(_tables([_metric(0, 1)], STATS)))
    again = Staging.fresh(output, "killed")
    assert again.uri != left.uri
    assert not (tmp_path / "out" / STAGING_DIR).exists()
