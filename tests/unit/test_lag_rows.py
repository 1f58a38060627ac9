"""lag.lag_rows: the one lag rule over Arrow rows (no Spark)."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa

from offsets_lib.audit import lag


def test_seconds_since_commit_are_exact_milliseconds() -> None:
    """Integer microseconds divided once: 546906.7, not 546906.7000000477."""
    as_of = datetime(2023, 11, 14, 22, 13, 19, 92000, tzinfo=UTC)
    offsets = pa.table(
        {
            "group_id": ["g", "g"],
            "topic": ["t", "t"],
            "partition": pa.array([0, 1], pa.int32()),
            "committed_offset": pa.array([16704, 5], pa.int64()),
            "commit_timestamp": pa.array(
                [datetime(2023, 11, 8, 14, 18, 12, 392000, tzinfo=UTC), None],
                pa.timestamp("us", tz="UTC"),
            ),
            "log_end_offset": pa.array([13968997, None], pa.int64()),
        }
    )
    rows = lag.lag_rows(offsets, as_of_ms=int(as_of.timestamp() * 1000)).to_pylist()
    assert [(r["lag"], r["seconds_since_commit"]) for r in rows] == [
        (13952293, 546906.7),
        (None, None),
    ]
