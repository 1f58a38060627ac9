"""Raw Parquet rows as audit rows and the audit task of each record (task_split, no Spark)."""

from __future__ import annotations

import struct
import zlib
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsets_lib.audit.task_audit import RAW_ARROW
from offsets_lib.engine.routing import MARKERS, group_id_bytes, positioned_table, task_buckets


def _key(record_type: int, group: bytes, rest: bytes = b"") -> bytes:
    return struct.pack(">hh", record_type, len(group)) + group + rest


def test_group_id_bytes_of_every_key_shape() -> None:
    keys = pa.array(
        [
            _key(1, b"payments", _key(0, b"orders")[2:] + b"\x00\x00\x00\x03"),  # offset key
            _key(2, b"g"),  # group metadata key
            _key(3, b""),  # empty group id
            b"\x00\x01\x00",  # too short for a length
            None,
            struct.pack(">hh", 5, 40) + b"abc",  # declared longer than the key
        ],
        pa.binary(),
    )
    assert group_id_bytes(keys).to_pylist() == [b"payments", b"g", b"", b"", b"", b"abc"]


def test_group_id_bytes_of_a_sliced_array() -> None:
    keys = pa.array([_key(1, b"a"), _key(1, b"bb"), _key(1, b"ccc")], pa.binary()).slice(1)
    assert group_id_bytes(keys).to_pylist() == [b"bb", b"ccc"]


@given(st.lists(st.one_of(st.none(), st.binary(max_size=12)), max_size=20))
def test_group_id_bytes_never_fails_and_stays_inside_each_key(keys: list[bytes | None]) -> None:
    groups = group_id_bytes(pa.array(keys, pa.binary())).to_pylist()
    for key, group in zip(keys, groups, strict=True):
        assert group in (key or b"")


def _raw(**columns: pa.Array) -> pa.Table:
    return pa.table(columns)


def test_positioned_table_renames_casts_and_fills_batch_metadata() -> None:
    stamps = [
        datetime(2026, 11, 21, 10, 0, 0, 123_999, tzinfo=UTC),
        datetime(1969, 12, 31, 23, 59, 59, 999_500, tzinfo=UTC),  # floors to -1 ms
        None,
    ]
    table = _raw(
        key=pa.array([b"k1", b"k2", None], pa.large_binary()),
        value=pa.array([b"v", None, b"w"], pa.binary()),
        topic=pa.array(["__consumer_offsets"] * 3),
        partition=pa.array([3, 4, 5], pa.int64()),
        offset=pa.array([10, 11, 12], pa.int32()),
        timestamp=pa.array(stamps, pa.timestamp("ns", tz="UTC")),
        timestampType=pa.array([0, 0, 0], pa.int32()),
    )
    positioned = positioned_table(table)
    assert positioned.schema == RAW_ARROW
    assert positioned.to_pydict() == {
        "log_partition": [3, 4, 5],
        "log_offset": [10, 11, 12],
        "log_timestamp_ms": [1_795_255_200_123, -1, None],
        "key": [b"k1", b"k2", None],
        "value": [b"v", None, b"w"],
        "producer_id": [None] * 3,
        "producer_epoch": [None] * 3,
        "is_transactional": [None] * 3,
        "is_control": [None] * 3,
        "is_history": [False] * 3,
    }


@pytest.mark.parametrize(("unit", "raw", "ms"), [("s", 5, 5000), ("ms", -7, -7), ("us", -1, -1)])
def test_positioned_table_timestamp_units(unit: str, raw: int, ms: int) -> None:
    table = _raw(timestamp=pa.array([raw], pa.timestamp(unit)))
    assert positioned_table(table).column("log_timestamp_ms").to_pylist() == [ms]


def test_positioned_table_keeps_batch_metadata() -> None:
    table = _raw(
        key=pa.array([b"k"]),
        producer_id=pa.array([7], pa.int64()),
        producer_epoch=pa.array([2], pa.int16()),
        is_transactional=pa.array([True]),
        is_control=pa.array([False]),
    )
    row = positioned_table(table).to_pylist()[0]
    assert (row["producer_id"], row["producer_epoch"], row["is_transactional"]) == (7, 2, True)
    assert row["is_control"] is False


def _records(keys: list[bytes | None], partitions: list[int], control: list[bool | None]):
    return positioned_table(
        _raw(
            key=pa.array(keys, pa.binary()),
            partition=pa.array(partitions, pa.int32()),
            is_control=pa.array(control, pa.bool_()),
        )
    )


def test_task_buckets_put_a_groups_records_together_and_markers_everywhere() -> None:
    keys = [
        _key(1, b"payments", b"\x00\x01t\x00\x00\x00\x00"),
        _key(2, b"payments"),
        _key(5, b"payments", b"\x00\x01m"),
        b"\x00\x00\x00\x01",  # a transaction marker's key
        _key(1, b"payments", b"\x00\x01t\x00\x00\x00\x00"),
    ]
    buckets = task_buckets(_records(keys, [4, 4, 4, 4, 9], [None, False, None, True, None]), 7)
    assert buckets[:3].tolist() == [buckets[0]] * 3
    assert buckets[3] == MARKERS
    assert 0 <= buckets[4] < 7


def test_task_buckets_are_a_fixed_function_of_partition_and_group() -> None:
    """Pinned: a run and its rerun (any process) send every record to the same task."""
    group_hash = zlib.crc32(b"payments")
    expected = ((group_hash * 0x9E3779B1 + 4) & 0xFFFFFFFF) % 13
    buckets = task_buckets(_records([_key(1, b"payments"), None], [4, 0], [None, None]), 13)
    assert buckets.tolist() == [expected, ((zlib.crc32(b"") * 0x9E3779B1) & 0xFFFFFFFF) % 13]
    assert task_buckets(_records([], [], []), 13).dtype == np.int32
