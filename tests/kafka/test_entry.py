"""`offsets_lib.run(spark, **options)`: a whole run inside the caller's session, which keeps
its settings; the notebook example audits a live topic through it."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import get_type_hints

import jupytext
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import offsets_lib
from offsets_lib.job.entry import AuditOptions
from offsets_lib.job.options import RunOptions, UsageError
from tests.kafka.test_kafka_job import (
    create_topic,
    produce_rows,
    rows_on_own_partitions,
    scenario_specs,
    table_rows,
)

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "audit_live_topic.py"


def test_keywords_are_the_run_options() -> None:
    assert set(get_type_hints(AuditOptions)) == set(RunOptions.__dataclass_fields__)


def test_an_unknown_keyword_is_a_usage_error(tmp_path) -> None:
    with pytest.raises(UsageError, match="shuffle"):
        offsets_lib.run(None, inputs=["x"], output=str(tmp_path), shuffle=True)


def _notebook(**parameters: object) -> dict:
    """Run the notebook's cells in this process (its session is the running one), with
    `parameters` after its parameters cell, as papermill injects them; returns its names."""
    names: dict = {}
    for cell in jupytext.read(NOTEBOOK).cells:
        if cell.cell_type != "code":
            continue
        exec(compile(cell.source, str(NOTEBOOK), "exec"), names)
        if "parameters" in cell.metadata.get("tags", []):
            names.update(parameters)
    return names


@pytest.mark.spark
def test_notebook_audits_the_live_topic_and_the_session_keeps_its_settings(
    spark, tansu_bootstrap, tmp_path
):
    """The notebook's Kafka run through `offsets_lib.run` and a dump of the same records
    through it give the same tables; the session's settings are the same after both."""
    specs = scenario_specs([1, 2, 3, 5, 8])
    rows, partitions = rows_on_own_partitions(specs)
    topic = f"entry-{uuid.uuid4().hex[:8]}"
    create_topic(tansu_bootstrap, topic, partitions)
    stored = produce_rows(tansu_bootstrap, topic, rows)
    pq.write_table(pa.Table.from_pylist(stored), tmp_path / "dump.parquet")
    out = str(tmp_path / "tables")
    as_of = specs[0]["config"]["evaluated_at_ms"]
    spark.sql("SELECT 1").collect()  # Delta's extension sets its Parquet field-id settings
    before = dict(spark.conf.getAll)

    names = _notebook(
        bootstrap_servers=tansu_bootstrap, topic=topic, output=out, as_of=as_of, run_id="live"
    )
    assert names["spark"] is spark
    assert names["report"].status == "succeeded"
    assert names["report"].records_read == len(rows)
    dumped = offsets_lib.run(
        spark, inputs=[str(tmp_path / "dump.parquet")], output=out, as_of=as_of, run_id="dump"
    )
    assert dumped.records_read == len(rows)
    assert dict(spark.conf.getAll) == before
    via_kafka, via_dump = table_rows(out, "live"), table_rows(out, "dump")
    assert via_kafka["offsets"] and via_kafka["group_decisions"]
    assert via_kafka == via_dump


@pytest.mark.spark
def test_workers_that_do_not_see_the_output_are_refused_in_one_line(spark, tmp_path) -> None:
    """A Connect server's workers run elsewhere: they must see the output the run locked."""
    from offsets_lib.io.sources import InputNotReadable
    from offsets_lib.job.entry import _check_workers_reach

    _check_workers_reach(spark, str(tmp_path))
    elsewhere = tmp_path / "on-the-client-only"
    with pytest.raises(InputNotReadable) as refused:
        _check_workers_reach(spark, str(elsewhere))
    assert str(refused.value) == (
        f"the session's Python workers cannot reach --output {elsewhere} (not found): they"
        " write the tables with delta-rs and need the storage's settings themselves (README,"
        " Spark Connect)"
    )
