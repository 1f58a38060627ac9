"""Every golden scenario of ../shared/spec/scenarios through the real `offsets run` CLI.

Scenario JSON -> the project's encoder -> a Parquet dump -> `offsets run` -> Delta tables ->
read back with delta-rs (and DuckDB) -> compared with `expected` field by field.

Keys never interact across partitions of the offsets topic (semantics.md LOG-3), so scenarios
that share a configuration (evaluation time, retention, coordinator) are written into one dump,
each on its own range of offsets-topic partitions, and audited by one CLI run; each scenario is
still its own test and is compared on its own partitions only. This keeps the 31 scenarios to
three Spark runs.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from chispa import assert_df_equality
from click.testing import CliRunner

from offsets_lib.cli import main
from offsets_lib.io import sink
from tests.reference import scenario
from tests.spec_data import scenario_dir

SCENARIO_DIR = scenario_dir()
# the project's own scenarios of rows Kafka added after the golden ones (same format; their
# `expected` may also hold `state_notes` by group and `load_failures`)
RULES_SCENARIO_DIR = Path(__file__).resolve().parents[1] / "data" / "rules_scenarios"
SCENARIOS = sorted(SCENARIO_DIR.glob("*.json")) + sorted(RULES_SCENARIO_DIR.glob("*.json"))
PARTITIONS_PER_SCENARIO = 100
RUN_ID = "golden"

pytestmark = pytest.mark.spark

if not SCENARIOS:
    pytest.skip(f"no golden scenarios at {SCENARIO_DIR}", allow_module_level=True)


def _config_key(spec: dict[str, Any]) -> tuple[int, int, str]:
    config = spec["config"]
    return (
        config["evaluated_at_ms"],
        config["offsets_retention_ms"],
        config.get("coordinator", "new"),
    )


def _ms(value: datetime | None) -> int | None:
    return None if value is None else int(value.timestamp() * 1000)


@pytest.fixture(scope="module")
def audited(spark, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, list[dict]]]:
    """Run the CLI once per configuration; return each scenario's table rows (own partitions)."""
    by_config: dict[tuple, list[tuple[int, dict]]] = defaultdict(list)
    for index, path in enumerate(SCENARIOS):
        spec = json.loads(path.read_text())
        by_config[_config_key(spec)].append((index, spec))
    results: dict[str, dict[str, list[dict]]] = {}
    for n, ((as_of, retention, coordinator), members) in enumerate(sorted(by_config.items())):
        root = tmp_path_factory.mktemp(f"golden{n}")
        rows = []
        for index, spec in members:
            for row in scenario.scenario_rows(spec):
                row["partition"] += index * PARTITIONS_PER_SCENARIO
                rows.append(row)
        with_meta = [r for r in rows if "is_control" in r]
        for r in rows:  # one schema per dump: plain records get "no batch metadata" defaults
            if with_meta and "is_control" not in r:
                r.update(
                    producer_id=-1, producer_epoch=-1, is_transactional=False, is_control=False
                )
        pq.write_table(pa.Table.from_pylist(rows), root / "dump.parquet")
        result = CliRunner().invoke(
            main,
            [
                "run",
                "--source",
                "parquet",
                "--input",
                str(root / "dump.parquet"),
                "--output",
                str(root / "tables"),
                "--as-of",
                str(as_of),
                "--retention",
                f"{retention}ms",
                "--coordinator",
                coordinator,
                "--run-id",
                RUN_ID,
            ],
            catch_exceptions=False,
        )
        assert result.exit_code == 0, result.output
        tables = {
            name: sink.read_table(str(root / "tables"), name, run_id=RUN_ID).to_pylist()
            for name in (
                "offsets",
                "offset_decisions",
                "groups",
                "group_decisions",
                "load_failures",
                "runs",
            )
        }
        for index, _spec in members:
            low = index * PARTITIONS_PER_SCENARIO
            mine = {
                name: [
                    r
                    for r in table_rows
                    if name == "runs"
                    or low <= r["offsets_partition"] < low + PARTITIONS_PER_SCENARIO
                ]
                for name, table_rows in tables.items()
            }
            mine["_root"] = [{"path": str(root / "tables")}]
            mine["_low"] = [{"partition": low}]
            results[SCENARIOS[index].name] = mine
    return results


def _offset_key(row: dict) -> tuple:
    return (row["group_id"], row["topic"], row["partition"])


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_golden_scenario(path: Path, audited: dict) -> None:
    expected = json.loads(path.read_text())["expected"]
    tables = audited[path.name]

    offsets = sorted(tables["offsets"], key=_offset_key)
    assert [
        {
            "group": r["group_id"],
            "topic": r["topic"],
            "partition": r["partition"],
            "offset": r["committed_offset"],
            "leader_epoch": r["leader_epoch"],
            "metadata": r["metadata"],
            "commit_timestamp_ms": _ms(r["commit_timestamp"]),
            "expire_timestamp_ms": _ms(r["expire_timestamp"]),
        }
        for r in offsets
    ] == [
        {**e, "leader_epoch": None if e["leader_epoch"] == -1 else e["leader_epoch"]}
        for e in expected["offsets"]
    ]

    groups = sorted(tables["groups"], key=lambda r: r["group_id"])
    assert [
        {
            "group": r["group_id"],
            "type": r["group_type"],
            "protocol_type": r["protocol_type"],
            "state": r["state"],
            "generation": r["generation"],
            "subscribed_topics": r["subscribed_topics"],
            "current_state_timestamp_ms": _ms(r["current_state_timestamp"]),
        }
        for r in groups
    ] == expected["groups"]

    decisions = sorted(tables["offset_decisions"], key=_offset_key)
    assert [
        {
            "group": r["group_id"],
            "topic": r["topic"],
            "partition": r["partition"],
            "expired": r["expired"],
            "expires_at_ms": _ms(r["expires_at"]),
            "rule": r["rule"],
        }
        for r in decisions
    ] == expected["expiration"]
    assert [
        {
            "group": r["group_id"],
            "topic": r["topic"],
            "partition": r["partition"],
            "error": r["delete_error"],
        }
        for r in decisions
    ] == expected["deletable"]

    deleted = sorted(r["group_id"] for r in tables["group_decisions"] if r["deleted"])
    assert deleted == expected["group_deleted"]
    low = tables["_low"][0]["partition"]  # the scenario's records are at partition 0
    if "state_notes" in expected:
        notes = {r["group_id"]: r["state_notes"] for r in groups if r["state_notes"]}
        assert notes == {g: n.format(partition=low) for g, n in expected["state_notes"].items()}
    if "load_failures" in expected:
        assert [
            {
                "group": r["group_id"],
                "failed_check": r["failed_check"],
                "log_offset": r["log_offset"],
                "member_id": r["member_id"],
                "detail": r["detail"],
            }
            for r in sorted(tables["load_failures"], key=lambda r: (r["group_id"], r["log_offset"]))
        ] == expected["load_failures"]
    else:
        assert tables["load_failures"] == []
    assert len(tables["group_decisions"]) == len(tables["groups"])


def test_runs_row_accounts_for_every_record(audited: dict) -> None:
    for tables in audited.values():
        (run,) = tables["runs"]
        assert run["status"] == "succeeded"
        assert run["records_read"] == run["records_decoded"] + run["records_rejected"]
        assert run["records_rejected"] == 0


def test_tables_read_the_same_with_duckdb_and_spark(spark, audited: dict) -> None:
    """One more independent reader (DuckDB over the Delta files) and chispa on Spark frames."""
    import duckdb
    from deltalake import DeltaTable

    root = audited[SCENARIOS[0].name]["_root"][0]["path"]
    by_delta_rs = sink.read_table(root, "offset_decisions", run_id=RUN_ID)
    dataset = DeltaTable(f"{root}/offset_decisions").to_pyarrow_dataset()  # noqa: F841 (duckdb)
    by_duckdb = pa.table(
        duckdb.sql(
            "select group_id, topic, partition, expired, expires_at, rule, delete_error "
            "from dataset order by offsets_partition, group_id, topic, partition"
        ).arrow()
    )  # duckdb 2 hands out a one-shot reader: materialise it once
    columns = ["group_id", "topic", "partition", "expired", "expires_at", "rule", "delete_error"]
    ordered = by_delta_rs.sort_by(
        [
            ("offsets_partition", "ascending"),
            ("group_id", "ascending"),
            ("topic", "ascending"),
            ("partition", "ascending"),
        ]
    ).select(columns)
    assert by_duckdb.to_pylist() == ordered.to_pylist()
    actual = spark.createDataFrame(ordered.to_pandas())
    again = spark.createDataFrame(by_duckdb.to_pandas())
    assert_df_equality(actual, again, ignore_row_order=True, ignore_nullable=True)
