"""`offsets fetch` and `offsets lag` say which offsets are in doubt (TXN-MARKER-UNREAD).

One `offsets run` under a Scala coordinator on a dump without batch metadata (as Spark's Kafka
source reads: no transaction markers): the log of tests/unit/test_unplaced_markers.py, whose
groups have offsets deleted within a transaction's timeout of their last commit. The run has
them deleted (as the records read) and lists them in `unread_marker_offsets`; both commands
answer the same and show the offset the broker would show if a COMMIT marker came after the
tombstone.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from offsets_lib.cli import main
from tests.unit.test_unplaced_markers import LOG, MINUTE_MS, RETENTION_MS

pytestmark = pytest.mark.spark
RUN_ID = "in-doubt"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("in-doubt")
    rows = [
        {"key": r["key"], "value": r["value"], "topic": "__consumer_offsets", "partition": 0,
         "offset": offset, "timestamp": _EPOCH + timedelta(milliseconds=minute * MINUTE_MS),
         "timestampType": 0}
        for offset, (minute, r) in enumerate(LOG)
        if not r.get("is_control")
    ]  # fmt: skip
    pq.write_table(pa.Table.from_pylist(rows), root / "dump.parquet")
    ends = root / "ends.csv"
    ends.write_text("topic,partition,log_end_offset\norders,0,120\norders,1,120\n")
    args = ["run", "--source", "parquet", "--input", str(root / "dump.parquet")]
    args += ["--output", str(root / "tables"), "--as-of", str(21 * MINUTE_MS)]
    args += ["--retention", f"{RETENTION_MS}ms", "--coordinator", "classic-2.4"]
    args += ["--end-offsets", str(ends), "--run-id", RUN_ID]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return str(root / "tables")


def _invoke(*args: str):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def note(offsets: int, groups: int) -> str:
    return (
        f"note: {offsets} offsets in doubt (TXN-MARKER-UNREAD, table unread_marker_offsets): the "
        "run read no transaction markers; IN-DOUBT is the offset the broker shows if a COMMIT "
        f"marker came after the offset's tombstone; groups whose existence depends on it: {groups}"
    )


def test_fetch_shows_the_offsets_in_doubt_in_text(tables: str) -> None:
    result = _invoke("fetch", "--output", tables, "--group", "mixed", "--group", "txn:orders:0")
    lines = result.stdout.splitlines()
    assert [line.split() for line in lines] == [
        ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "LAST-COMMIT",
         "EXPIRES-AT", "IN-DOUBT"],
        ["mixed", "orders", "1", "90", "120", "30", "1970-01-01T00:14:00Z",
         "1970-01-01T00:24:00Z", "-"],
        ["mixed", "orders", "0", "-", "-", "-", "-", "-", "91"],
        ["txn", "orders", "0", "-", "-", "-", "-", "-", "30"],
    ]  # fmt: skip
    assert note(2, 1) in result.stderr.splitlines()
    assert (
        "note: group 'txn': exists only if an unread COMMIT marker re-creates an offset in "
        "doubt (TXN-MARKER-UNREAD)" in result.stderr
    )


def test_fetch_json_lists_the_offsets_in_doubt(tables: str) -> None:
    result = _invoke("fetch", "--output", tables, "--group", "mixed", "--group", "later", "--json")
    groups = {g["group_id"]: g for g in json.loads(result.stdout)["groups"]}
    mixed = groups["mixed"]
    assert [(p["partition"], p["committed_offset"], p["in_doubt_offset"])
            for p in mixed["partitions"]] == [(1, 90, None)]  # fmt: skip
    assert mixed["offsets_in_doubt"] == [{"topic": "orders", "partition": 0, "in_doubt_offset": 91}]
    assert mixed["is_group_in_doubt"] is False
    assert groups["later"]["offsets_in_doubt"] == [
        {"topic": "orders", "partition": 0, "in_doubt_offset": 101}
    ]
    named = _invoke("fetch", "--output", tables, "--group", "txn:orders:0", "--json")
    (txn,) = json.loads(named.stdout)["groups"]
    assert [(p["committed_offset"], p["in_doubt_offset"]) for p in txn["partitions"]] == [(-1, 30)]
    assert txn["is_group_in_doubt"] is True


def test_fetch_without_offsets_in_doubt_is_unchanged(tables: str) -> None:
    result = _invoke("fetch", "--output", tables, "--group", "again", "--json")
    (again,) = json.loads(result.stdout)["groups"]
    assert (again["offsets_in_doubt"], again["is_group_in_doubt"]) == ([], False)
    text = _invoke("fetch", "--output", tables, "--group", "again")
    assert "IN-DOUBT" not in text.stdout
    assert "in doubt" not in text.stderr


def test_lag_shows_the_offsets_in_doubt(tables: str) -> None:
    result = _invoke("lag", "--output", tables)
    rows = [line.split() for line in result.stdout.splitlines()]
    assert rows[0][-1] == "IN-DOUBT"
    assert [(r[0], r[2], r[3], r[-1]) for r in rows[1:]] == [
        ("again", "0", "61", "-"),
        ("empty", "0", "-", "80"),
        ("later", "0", "-", "101"),
        ("later", "1", "100", "-"),
        ("mixed", "0", "-", "91"),
        ("mixed", "1", "90", "-"),
        ("stable", "0", "-", "70"),
        ("txn", "0", "-", "30"),
    ]
    assert result.stderr.splitlines() == [note(5, 2)]
    as_json = _invoke("lag", "--output", tables, "--json", "--group", "mixed")
    assert [json.loads(line) for line in as_json.stdout.splitlines()] == [
        {"group_id": "mixed", "topic": "orders", "partition": 0, "committed_offset": None,
         "log_end_offset": None, "lag": None, "last_commit_at": None,
         "seconds_since_commit": None, "in_doubt_offset": 91},
        {"group_id": "mixed", "topic": "orders", "partition": 1, "committed_offset": 90,
         "log_end_offset": 120, "lag": 30, "last_commit_at": "1970-01-01T00:14:00+00:00",
         "seconds_since_commit": 420.0, "in_doubt_offset": None},
    ]  # fmt: skip
