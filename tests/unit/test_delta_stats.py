"""Delta file stats of the writers: every min/max a reader may skip on is a true bound."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from hypothesis import given
from hypothesis import strategies as st

# private _stat_value/_string_min/_string_max/_epoch_ms/_delta_timestamp: Delta-Spark's cut and
# timestamp rules at their edges; through file_stats each case would need its own Parquet file
from offsets_lib.io import delta_stats

PREFIX = "a" * 32


def test_long_strings_get_a_cut_min_and_a_greater_max() -> None:
    """As Delta-Spark cuts them: the max's tie-breaker is greater than the character it cuts."""
    assert delta_stats._stat_value(PREFIX + "xyz", pa.string(), upper=False) == PREFIX
    assert delta_stats._stat_value(PREFIX + "xyz", pa.string(), upper=True) == PREFIX + "\x7f"
    assert delta_stats._string_max(PREFIX + "éz") == PREFIX + "\U0010ffff"
    assert delta_stats._string_max(PREFIX + "\x7fz") == PREFIX + "\U0010ffff"
    assert delta_stats._string_max(PREFIX + "\U0010ffff" + "bc") == PREFIX + "\U0010ffff\x7f"
    endless = PREFIX + "\U0010ffff" * 40  # no short bound: the whole value
    assert delta_stats._string_max(endless) == endless
    assert delta_stats._string_max(PREFIX) == PREFIX


@given(st.lists(st.text(min_size=0, max_size=80), min_size=1, max_size=5))
def test_string_bounds_hold_in_utf8_byte_order(values: list[str]) -> None:
    low = delta_stats._string_min(min(values)).encode()
    high = delta_stats._string_max(max(values)).encode()
    assert all(low <= v.encode() <= high for v in values)


def test_every_skippable_column_gets_bounds(tmp_path: Path) -> None:
    """Booleans, strings cut or longer than Parquet's 4 KiB statistics (read back from the
    file), all-null columns (null count only); binary columns no bounds."""
    huge = "h" * 5000
    table = pa.table(
        {
            "group_id": [PREFIX + "-1", huge, None],
            "flag": [True, None, False],
            "count": pa.array([3, 1, 2], pa.int64()),
            "empty": pa.array([None, None, None], pa.string()),
            "raw": [b"\x00", b"\x01", None],
        }
    )
    path = str(tmp_path / "f.parquet")
    pq.write_table(table, path)
    stats = json.loads(delta_stats.stats_of_file(pafs.LocalFileSystem(), path, table.schema))
    assert stats == {
        "numRecords": 3,
        "minValues": {"group_id": PREFIX, "flag": False, "count": 1},
        "maxValues": {"group_id": "h" * 32 + "\x7f", "flag": True, "count": 3},
        "nullCount": {"group_id": 1, "flag": 1, "count": 0, "empty": 3, "raw": 1},
    }


def test_stat_timestamps_round_outwards_to_milliseconds() -> None:
    micros = 1_717_056_930_123_456  # 2024-05-30T08:15:30.123456Z
    low = delta_stats._epoch_ms(micros, "us", upper=False)
    high = delta_stats._epoch_ms(micros, "us", upper=True)
    ts = pa.timestamp("us", tz="UTC")
    assert delta_stats._stat_value(low, ts, upper=False) == "2024-05-30T08:15:30.123Z"
    assert delta_stats._stat_value(high, ts, upper=True) == "2024-05-30T08:15:30.124Z"
    assert delta_stats._epoch_ms(-1_500, "us", upper=False) == -2
    assert delta_stats._epoch_ms(-1_500, "us", upper=True) == -1


@given(st.integers(-62_135_596_800_000, 253_402_300_799_999))  # years 1 to 9999
def test_stat_timestamps_are_iso_dates_in_pythons_range(epoch_ms: int) -> None:
    t = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=epoch_ms)
    assert delta_stats._delta_timestamp(epoch_ms) == (
        f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
        f".{t.microsecond // 1000:03d}Z"
    )


def test_stat_timestamps_past_year_9999_are_written_as_java_writes_them() -> None:
    """As java.time's Instant prints them (Delta-Spark's stats): '+' past 9999, '-' before
    year 0 (the expected strings are Java 17's)."""
    assert delta_stats._delta_timestamp(9_223_372_036_854_776) == "+294247-01-10T04:00:54.776Z"
    assert delta_stats._delta_timestamp(-9_223_372_036_854_776) == "-290308-12-21T19:59:05.224Z"
    assert delta_stats._delta_timestamp(253_402_300_800_000) == "+10000-01-01T00:00:00.000Z"
    assert delta_stats._delta_timestamp(-62_167_219_200_000) == "0000-01-01T00:00:00.000Z"
    assert delta_stats._delta_timestamp(-62_167_219_200_001) == "-0001-12-31T23:59:59.999Z"


def test_a_file_with_timestamps_past_year_9999_gets_true_bounds(tmp_path: Path) -> None:
    """Kafka stores any long as a commit timestamp; the bounds stay bounds, rounded outwards."""
    times = pa.array([-(2**63), 0, 2**63 - 1], pa.timestamp("us", tz="UTC"))
    table = pa.table({"commit_time": times})
    path = str(tmp_path / "f.parquet")
    pq.write_table(table, path)
    stats = json.loads(delta_stats.stats_of_file(pafs.LocalFileSystem(), path, table.schema))
    assert stats == {
        "numRecords": 3,
        "minValues": {"commit_time": "-290308-12-21T19:59:05.224Z"},
        "maxValues": {"commit_time": "+294247-01-10T04:00:54.776Z"},
        "nullCount": {"commit_time": 0},
    }
