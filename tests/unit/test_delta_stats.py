"""Delta file stats of the sink: every min/max a reader may skip on is a true bound."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from hypothesis import given
from hypothesis import strategies as st

from offsets_lib.io import sink

PREFIX = "a" * 32


def test_long_strings_get_a_cut_min_and_a_greater_max() -> None:
    """As Delta-Spark cuts them: the max's tie-breaker is greater than the character it cuts."""
    assert sink._stat_value(PREFIX + "xyz", pa.string(), upper=False) == PREFIX
    assert sink._stat_value(PREFIX + "xyz", pa.string(), upper=True) == PREFIX + "\x7f"
    assert sink._string_max(PREFIX + "éz") == PREFIX + "\U0010ffff"
    assert sink._string_max(PREFIX + "\x7fz") == PREFIX + "\U0010ffff"
    assert sink._string_max(PREFIX + "\U0010ffff" + "bc") == PREFIX + "\U0010ffff\x7f"
    endless = PREFIX + "\U0010ffff" * 40  # no short bound: the whole value
    assert sink._string_max(endless) == endless
    assert sink._string_max(PREFIX) == PREFIX


@given(st.lists(st.text(min_size=0, max_size=80), min_size=1, max_size=5))
def test_string_bounds_hold_in_utf8_byte_order(values: list[str]) -> None:
    low = sink._string_min(min(values)).encode()
    high = sink._string_max(max(values)).encode()
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
    stats = json.loads(sink._stats_of_file(pafs.LocalFileSystem(), path, table.schema))
    assert stats == {
        "numRecords": 3,
        "minValues": {"group_id": PREFIX, "flag": False, "count": 1},
        "maxValues": {"group_id": "h" * 32 + "\x7f", "flag": True, "count": 3},
        "nullCount": {"group_id": 1, "flag": 1, "count": 0, "empty": 3, "raw": 1},
    }
