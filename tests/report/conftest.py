"""Audited tables for the report tests, built once per session by the real `offsets run`.

* ``sample``: a small `offsets generate` dump (the `make run` sample's model) plus groups with
  hostile, non-ASCII and 249-character ids, audited twice (two retained runs an hour apart),
  with log-end offsets, so every page has data;
* ``golden``: the golden scenarios that share the most common configuration, in one dump.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from offsets_lib.cli import main
from offsets_lib.tools.generate.chunks import SCHEMA
from offsets_lib.tools.generate.model import END_MS, partition_for
from tests.reference import scenario
from tests.spec_data import scenario_dir

PARTITIONS = 4
HOSTILE_IDS = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "grüße-グループ-🚀 & <b>bold</b>",
    "z" * 249,
]
HOSTILE_TOPIC = "hostile-topic"
DAY_MS = 86_400_000
RETENTION_MS = 7 * DAY_MS
COMMITTED = 5_000
HOSTILE_LAG = 1_234  # log-end offset - committed offset of the hostile groups' partitions
RUN_IDS = ("sample-h1", "sample-h2")
AS_OFS = (END_MS - 3_600_000, END_MS)
# Their offsets were committed (and they emptied) 7 days - 3 h before the newest run: they
# expire within 24 h, lagging: all on the data-loss list.
HOSTILE_COMMIT_MS = END_MS - RETENTION_MS + 3 * 3_600_000


def _hostile_records() -> list[dict]:
    records = []
    for i, group in enumerate(HOSTILE_IDS):
        part = partition_for(group, PARTITIONS)
        records.append(
            {
                "partition": part,
                "type": "group_metadata",
                "key": {"group": group},
                "value": {
                    "version": 3,
                    "protocol_type": "consumer",
                    "generation": 2,
                    "protocol": None,
                    "leader": None,
                    "current_state_timestamp_ms": HOSTILE_COMMIT_MS,
                    "members": [],
                },
            }
        )
        for partition in (0, 1):
            records.append(
                {
                    "partition": part,
                    "type": "offset_commit",
                    "key": {"group": group, "topic": HOSTILE_TOPIC, "partition": partition},
                    "value": {
                        "version": 3,
                        "offset": COMMITTED + i,
                        "leader_epoch": -1,
                        "metadata": "<script>alert('metadata')</script>",
                        "commit_timestamp_ms": HOSTILE_COMMIT_MS,
                    },
                }
            )
    for n, record in enumerate(records):
        record.update(offset=10**9 + n, timestamp_ms=HOSTILE_COMMIT_MS)
    return records


def _raw_table(rows: list[dict]) -> pa.Table:
    for row in rows:
        row.setdefault("producer_id", -1)
        row.setdefault("producer_epoch", -1)
        row.setdefault("is_transactional", False)
        row.setdefault("is_control", False)
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="session")
def sample_tables(spark, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The sample's tables: two runs (RUN_IDS at AS_OFS); returns the root folder."""
    root = tmp_path_factory.mktemp("report_sample")
    dump = root / "dump"
    sizes = ["--groups", "120", "--records", "12000", "--seed", "7"]
    result = invoke("generate", *sizes, "--partitions", str(PARTITIONS), "--out", str(dump))
    assert result.exit_code == 0, result.output
    rows = scenario.scenario_rows({"records": _hostile_records()})
    pq.write_table(_raw_table(rows), dump / "part-hostile.parquet")
    ends = dump / "_end_offsets.csv"
    ends.write_text(
        ends.read_text()
        + "".join(f"{HOSTILE_TOPIC},{p},{COMMITTED + HOSTILE_LAG}\n" for p in (0, 1))
    )
    # each hostile group i committed COMMITTED + i: its lag per partition is HOSTILE_LAG - i
    tables = str(root / "tables")
    for run_id, as_of in zip(RUN_IDS, AS_OFS, strict=True):
        result = invoke(
            "run", "--source", "parquet", "--input", str(dump), "--output", tables,
            "--run-id", run_id, "--as-of", str(as_of), "--end-offsets", str(ends),
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    return tables


@pytest.fixture(scope="session")
def golden_tables(spark, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The golden scenarios of the most common (as_of, retention, coordinator), one dump, one
    run; each scenario on its own offsets partitions. Returns the tables' root folder."""
    specs = [json.loads(p.read_text()) for p in sorted(scenario_dir().glob("*.json"))]

    def key(spec: dict) -> tuple:
        c = spec["config"]
        return (c["evaluated_at_ms"], c["offsets_retention_ms"], c.get("coordinator", "new"))

    (as_of, retention, coordinator), _ = Counter(key(s) for s in specs).most_common(1)[0]
    rows = []
    for index, spec in enumerate(s for s in specs if key(s) == (as_of, retention, coordinator)):
        for row in scenario.scenario_rows(spec):
            row["partition"] += index * 10
            rows.append(row)
    root = tmp_path_factory.mktemp("report_golden")
    pq.write_table(_raw_table(rows), root / "dump.parquet")
    tables = str(root / "tables")
    result = invoke(
        "run", "--source", "parquet", "--input", str(root / "dump.parquet"), "--output", tables,
        "--as-of", str(as_of), "--retention", f"{retention}ms", "--coordinator", coordinator,
        "--run-id", "golden",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return tables


def build_report(tables: str, out: Path, *args: str) -> tuple[Path, dict]:
    """`offsets report` on ``tables`` into ``out``; returns the HTML path and report.json."""
    result = invoke("report", "--output", tables, "--out", str(out), *args)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(out.resolve())
    return out, json.loads(out.with_suffix(".json").read_text())
