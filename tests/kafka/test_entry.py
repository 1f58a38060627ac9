"""`offsets_lib.run(spark, **options)`: a whole run inside the caller's session, which keeps
its settings; the notebook example audits a real broker's `__consumer_offsets` through it."""

from __future__ import annotations

from pathlib import Path
from typing import get_type_hints

import jupytext
import pytest

import offsets_lib
from offsets_lib.io import sink
from offsets_lib.job.entry import AuditOptions
from offsets_lib.job.options import RunOptions, UsageError
from tests.kafka.conftest import broker_groups, broker_offsets

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
@pytest.mark.kafka
def test_notebook_audits_the_live_topic_and_the_session_keeps_its_settings(
    spark, kafka_broker, committed_groups, tmp_path
):
    """The notebook's run of a real broker's `__consumer_offsets` through `offsets_lib.run`:
    its tables hold the offsets and groups the broker answers; the session's settings are the
    same after it."""
    out = str(tmp_path / "tables")
    spark.sql("SELECT 1").collect()  # Delta's extension sets its Parquet field-id settings
    before = dict(spark.conf.getAll)

    names = _notebook(bootstrap_servers=kafka_broker.bootstrap, output=out, run_id="live")
    assert names["spark"] is spark
    assert names["report"].status == "succeeded"
    assert dict(spark.conf.getAll) == before
    answered = broker_offsets(kafka_broker)
    assert answered == committed_groups.offsets
    offsets = sink.read_table(out, "offsets", run_id="live").to_pylist()
    assert {
        (r["group_id"], r["topic"], r["partition"]): (
            r["committed_offset"], r["leader_epoch"], r["metadata"],
        )
        for r in offsets
    } == answered  # fmt: skip
    groups = sink.read_table(out, "groups", run_id="live").to_pylist()
    assert {r["group_id"]: (r["group_type"], r["state"]) for r in groups} == broker_groups(
        kafka_broker
    )


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
