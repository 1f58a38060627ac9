"""The Arrow table rows an audit task writes itself (table_rows) equal the reference's Spark
frames' rows (tests/reference/frames.py)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from offsets_lib.audit import lag
from offsets_lib.audit.projections import MAX_TIMESTAMP_MS, PROJECTIONS
from offsets_lib.audit.table_rows import DIRECT_TABLES, TABLES_OF_KIND, table_rows, timestamps
from offsets_lib.audit.tables import table_spec
from offsets_lib.audit.task_audit import GROUP, KIND_ARROW, OFFSET, REJECT
from offsets_lib.io import delta_schema
from offsets_lib.io.log_end_offsets import END_OFFSETS_COLUMNS
from tests.reference.frames import conform, lag_frame, projected_frame

pytestmark = pytest.mark.spark

AS_OF_MS = 1_700_000_000_123
RUN_ID = "r-1"
MEMBER = {
    "member_id": "m-1",
    "client_id": "c",
    "subscribed_topics": ["a", "b"],
    "assigned_partitions": [{"topic": "a", "topic_id": None, "partition": 3}],
    "member_epoch": 7,
}


def _results() -> dict[str, pa.Table]:
    """Result rows with the awkward values: absurd, pre-1970 and null times, null and empty
    member lists, a reject without a timestamp."""
    offsets = [
        {"log_partition": 1, "group_id": "g", "topic": "a", "partition": 0, "log_offset": 5,
         "committed_offset": 10, "commit_timestamp_ms": 1_699_999_000_001,
         "expire_timestamp_ms": None, "has_pending_transaction": False, "value_version": 3,
         "rule": "EXP-SUBSCRIBED", "expires_at_ms": None, "expired": False,
         "delete_error": "GROUP_SUBSCRIBED_TO_TOPIC", "delete_rule": "ODEL-SUBSCRIBED"},
        {"log_partition": 1, "group_id": "g", "topic": "b", "partition": 1, "log_offset": 6,
         "committed_offset": 0, "commit_timestamp_ms": -1_234,
         "expire_timestamp_ms": MAX_TIMESTAMP_MS + 1, "has_pending_transaction": True,
         "rule": "EXP-EXPLICIT", "expires_at_ms": MAX_TIMESTAMP_MS + 1, "expired": False,
         "delete_rule": "ODEL-OK"},
        {"log_partition": 2, "group_id": "h", "topic": "a", "partition": 2, "log_offset": 7,
         "committed_offset": 1, "commit_timestamp_ms": None,
         "expire_timestamp_ms": -MAX_TIMESTAMP_MS, "rule": "EXP-MODERN-COMMIT-TS",
         "expires_at_ms": -1_234, "expired": True, "delete_rule": "ODEL-OK"},
    ]  # fmt: skip
    groups = [
        {"log_partition": 1, "group_id": "g", "group_type": "classic", "state": "Stable",
         "members": [MEMBER, {**MEMBER, "member_id": "m-2", "subscribed_topics": None}],
         "current_state_timestamp_ms": 1_699_999_999_999, "offset_count": 2,
         "deleted": False, "deletion_rule": "DEL-NEW", "blocked_by": "NOT_EMPTY"},
        {"log_partition": 2, "group_id": "h", "group_type": "consumer", "state": "Empty",
         "members": [], "current_state_timestamp_ms": None, "offset_count": 1,
         "deleted": True, "deletes_at_ms": -1_234, "deletion_rule": "DEL-NEW"},
        {"log_partition": 3, "group_id": "k", "group_type": "classic", "state": "Dead",
         "members": None, "offset_count": 0, "deleted": False, "deletion_rule": "DEL-NEW",
         "blocked_by": "DEAD", "is_group_in_doubt": True, "unread_marker_offsets": [
             {"topic": "a", "partition": 0, "committed_offset": 7,
              "commit_timestamp_ms": 1_699_999_000_000, "expire_timestamp_ms": None,
              "log_offset": 12, "log_timestamp_ms": 1_699_999_060_000,
              "rule": "TXN-MARKER-UNREAD", "reason": "r"},
             {"topic": "b", "partition": 1, "committed_offset": 8,
              "commit_timestamp_ms": -5, "expire_timestamp_ms": MAX_TIMESTAMP_MS + 1,
              "log_offset": 13, "log_timestamp_ms": None,
              "rule": "TXN-MARKER-UNREAD", "reason": "r"}]},
        {"log_partition": 3, "group_id": "u", "group_type": "consumer", "state": "Dead",
         "members": [], "offset_count": 0, "deleted": False, "deletion_rule": "DEL-NEW",
         "blocked_by": "DEAD", "load_failures": [
             {"failed_check": "GROUP_TOMBSTONE_WITH_MEMBERS", "log_offset": 9,
              "member_id": None, "detail": "members m remain"},
             {"failed_check": "MEMBER_TOMBSTONE_WITH_TARGET_ASSIGNMENT", "log_offset": 8,
              "member_id": "m", "detail": None}]},
    ]  # fmt: skip
    rejects = [
        {"log_partition": 4, "log_offset": 9, "key": b"\x00", "value": None,
         "error": "truncated", "log_timestamp_ms": None, "record_type": None},
        {"log_partition": 4, "log_offset": 10, "key": b"\x00\x09", "value": b"x",
         "error": "unknown", "log_timestamp_ms": 5, "record_type": 9},
    ]  # fmt: skip
    return {
        OFFSET: pa.Table.from_pylist(offsets, schema=KIND_ARROW[OFFSET]),
        GROUP: pa.Table.from_pylist(groups, schema=KIND_ARROW[GROUP]),
        REJECT: pa.Table.from_pylist(rejects, schema=KIND_ARROW[REJECT]),
    }


# log-end offsets: a-0 listed twice (the larger counts), b-1 below its commit, a-2 unknown
END_OFFSETS = [("a", 0, 12), ("a", 0, 15), ("b", 1, 0), ("c", 0, 3)]


def _spark_frames(spark, tmp_path, results: dict[str, pa.Table], ends):
    frames = {}
    for kind, table in results.items():
        pq.write_table(table, tmp_path / f"{kind}.parquet")
        frames[kind] = spark.read.parquet(str(tmp_path / f"{kind}.parquet"))
    built = {name: projected_frame(frames, name) for name in PROJECTIONS}
    ends_frame = spark.createDataFrame(ends) if ends is not None else None
    built["lag"] = lag_frame(built["offsets"], ends_frame, as_of_ms=AS_OF_MS)
    return built


@pytest.mark.parametrize(
    ("table", "has_end_offsets"), [*[(t, False) for t in DIRECT_TABLES], ("lag", True)]
)
def test_task_rows_equal_the_spark_frames(
    spark, tmp_path, table: str, has_end_offsets: bool
) -> None:
    results = _results()
    ends = (
        pa.Table.from_pylist(
            [dict(zip(END_OFFSETS_COLUMNS, row, strict=True)) for row in END_OFFSETS],
            schema=lag.END_OFFSETS_ARROW,
        )
        if has_end_offsets
        else None
    )
    schema = delta_schema.arrow_schema(table_spec(table), with_comments=False)
    frames = _spark_frames(spark, tmp_path, results, ends)
    expected = (
        conform(frames[table], table, run_id=RUN_ID, as_of_ms=AS_OF_MS)
        .toArrow()
        .cast(pa.schema([f.with_nullable(True) for f in schema]))
    )
    latest = lag.latest_end_offsets(ends) if ends is not None else None
    got = table_rows(
        table, results, run_id=RUN_ID, as_of_ms=AS_OF_MS, schema=schema, end_offsets=latest
    )
    assert got.schema.names == expected.schema.names
    assert got.num_rows == expected.num_rows > 0
    key = [n for n in ("group_id", "topic", "member_id", "offsets_offset") if n in got.schema.names]
    assert _plain(got, key) == _plain(expected, key)


def _plain(table: pa.Table, key: list[str]) -> list[dict]:
    """Rows sorted by `key`, timestamps as epoch micros (some are beyond Python's datetime)."""
    micros = pa.schema(
        [f.with_type(pa.int64()) if pa.types.is_timestamp(f.type) else f for f in table.schema]
    )
    return table.cast(micros).sort_by([(k, "ascending") for k in key]).to_pylist()


def test_timestamps_null_beyond_what_spark_holds() -> None:
    ms = pa.array([0, -1, None, MAX_TIMESTAMP_MS, MAX_TIMESTAMP_MS + 1, -MAX_TIMESTAMP_MS - 1])
    micros = timestamps(ms).cast(pa.int64()).to_pylist()
    assert micros == [0, -1000, None, MAX_TIMESTAMP_MS * 1000, None, None]


def test_each_direct_table_is_listed_under_the_result_kind_it_is_built_from() -> None:
    """A kind whose tables a task writes all of is not staged (TableFiles.written_kinds)."""
    listed = {t: kind for kind, names in TABLES_OF_KIND.items() for t in names}
    assert sorted(listed) == sorted(DIRECT_TABLES)
    assert all(listed[t] == kind for t, (kind, _) in PROJECTIONS.items())
    assert listed["lag"] == OFFSET
