"""Delta file stats (numRecords, min/max, null counts) read from a written Parquet file's footer,
in the form Delta-Spark writes them, so that readers skip files as they do on Spark's tables."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

STATS_STRING_PREFIX = 32  # string min/max length: Delta-Spark's dataSkippingStringPrefixLength
_ASCII_MAX, _UNICODE_MAX = "\x7f", "\U0010ffff"  # its tie-breakers after a cut max


def _string_min(value: str) -> str:
    """A lower bound of at most 32 characters: the value's prefix."""
    return value[:STATS_STRING_PREFIX]


def _string_max(value: str) -> str:
    """An upper bound of a string, short where possible, built as Delta-Spark's
    ``truncateMaxStringAgg`` builds it: a prefix of 32 to 64 characters, then U+007F or
    U+10FFFF, whichever is greater than the character cut there; the whole value when no such
    prefix exists (Delta-Spark leaves the max out then, which delta-rs' pyarrow dataset reads as
    "no row can match"). Readers compare strings by their UTF-8 bytes, that is by code points,
    as Python does."""
    if len(value) <= STATS_STRING_PREFIX:
        return value
    for cut in range(STATS_STRING_PREFIX, min(len(value), 2 * STATS_STRING_PREFIX + 1)):
        if value[cut] < _ASCII_MAX:
            return value[:cut] + _ASCII_MAX
        if value[cut] < _UNICODE_MAX:
            return value[:cut] + _UNICODE_MAX
    return value


def _stat_value(value: Any, dtype: pa.DataType, *, upper: bool) -> Any:
    """A column's min (or max, ``upper``) as Delta stats JSON, or None when it must be left out
    (binary columns: no reader skips on them; non-finite floats: JSON has no such number).
    A timestamp comes as epoch milliseconds (`_epoch_ms`)."""
    if value is None:
        return None
    if pa.types.is_timestamp(dtype):
        return _delta_timestamp(value)
    if pa.types.is_boolean(dtype):
        return bool(value)
    if pa.types.is_integer(dtype):
        return int(value)
    if pa.types.is_floating(dtype):
        return float(value) if math.isfinite(value) else None
    if pa.types.is_string(dtype) and isinstance(value, str):
        return _string_max(value) if upper else _string_min(value)
    return None


_MS_PER_DAY = 86_400_000
_UNITS_PER_MS = {"ms": 1, "us": 1_000, "ns": 1_000_000}


def _epoch_ms(raw: int, unit: str, *, upper: bool) -> int:
    """A timestamp bound in `unit` as epoch milliseconds, rounded outwards (floor for a min,
    ceiling for a max) so that it stays a bound."""
    if unit == "s":
        return raw * 1000
    per_ms = _UNITS_PER_MS[unit]
    return -(-raw // per_ms) if upper else raw // per_ms


def _delta_timestamp(epoch_ms: int) -> str:
    """UTC ISO-8601 with milliseconds, as Delta-Spark writes a timestamp bound: proleptic
    Gregorian, a year past 9999 with '+', one before year 0 with '-' (java.time's ISO format).
    Integer arithmetic: Python's datetime stops at year 9999, Kafka's timestamps do not."""
    days, ms = divmod(epoch_ms, _MS_PER_DAY)
    # days since 1970-01-01 to a civil date (the era algorithm of Howard Hinnant's chrono notes)
    z = days + 719_468
    era = z // 146_097
    day_of_era = z - era * 146_097
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36_524 - day_of_era // 146_096
    ) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    month_index = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * month_index + 2) // 5 + 1
    month = month_index + 3 if month_index < 10 else month_index - 9
    year = year_of_era + era * 400 + (month <= 2)
    sign = "+" if year > 9999 else "-" if year < 0 else ""
    seconds, millis = divmod(ms, 1000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return (
        f"{sign}{abs(year):04d}-{month:02d}-{day:02d}"
        f"T{hour:02d}:{minute:02d}:{second:02d}.{millis:03d}Z"
    )


def file_stats(
    md: pq.FileMetaData, schema: pa.Schema, read_column: Callable[[str], pa.ChunkedArray]
) -> str:
    """Delta ``stats`` JSON (numRecords, minValues, maxValues, nullCount) from the footer.

    Every column a reader may skip on gets a min and a max whenever it has a non-null value:
    delta-rs (1.6) turns a missing one into a fragment guarantee that no row can match, so a
    filter on that column would skip the file. A footer without them for a row group with
    values (Parquet writers drop min/max of more than 4 KiB) costs a read of that column.
    """
    # long: one pass over the row groups, then the bounds' fix-ups over the same five dicts
    flat = {f.name: f.type for f in schema if not pa.types.is_nested(f.type)}
    stored = md.schema.to_arrow_schema()
    units = {  # timestamps are compared raw: a year past 9999 is no Python datetime
        name: stored.field(name).type.unit
        for name, dtype in flat.items()
        if pa.types.is_timestamp(dtype) and stored.get_field_index(name) >= 0
    }
    lows: dict[str, Any] = {}
    highs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    bad: set[str] = set()  # no null count in some row group: no stats at all
    unbounded: set[str] = set()  # values in a row group without min/max: read the column
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        for j in range(rg.num_columns):
            col = rg.column(j)
            name, s = col.path_in_schema, col.statistics
            if name not in flat:
                continue
            if s is None or not s.has_null_count:
                bad.add(name)
                continue
            nulls[name] = nulls.get(name, 0) + s.null_count
            if not s.has_min_max:
                if s.null_count < rg.num_rows:
                    unbounded.add(name)
                continue  # else an all-null row group: no bound to add
            low, high = (s.min_raw, s.max_raw) if name in units else (s.min, s.max)
            lows[name] = low if name not in lows else min(lows[name], low)
            highs[name] = high if name not in highs else max(highs[name], high)
    for name in sorted(unbounded - bad):
        column = read_column(name)
        bounds = pc.min_max(column.cast(pa.int64()) if name in units else column)
        lows[name], highs[name] = bounds["min"].as_py(), bounds["max"].as_py()
    for name, unit in units.items():  # raw integers in the file's unit
        if name in lows:
            lows[name] = _epoch_ms(lows[name], unit, upper=False)
            highs[name] = _epoch_ms(highs[name], unit, upper=True)
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    for name in [n for n in lows if n not in bad]:
        lo = _stat_value(lows[name], flat[name], upper=False)
        hi = _stat_value(highs[name], flat[name], upper=True)
        if lo is not None and hi is not None:
            mins[name], maxs[name] = lo, hi
    stats = {
        "numRecords": md.num_rows,
        "minValues": mins,
        "maxValues": maxs,
        "nullCount": {k: v for k, v in nulls.items() if k not in bad},
    }
    return json.dumps(stats, separators=(",", ":"))


def stats_of_file(fs: pafs.FileSystem, path: str, schema: pa.Schema) -> str:
    """The Delta stats of a written Parquet file (`file_stats`)."""

    def read_column(name: str) -> pa.ChunkedArray:
        return pq.read_table(path, columns=[name], filesystem=fs).column(0)

    return file_stats(pq.read_metadata(path, filesystem=fs), schema, read_column)
