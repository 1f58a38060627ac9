"""Raw Parquet rows as audit rows, the audit task of each record, a large task's pieces without
its superseded commit values (routing, piece_files.cut; no Spark)."""

from __future__ import annotations

import struct
import zlib
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsets_lib.audit.task_input import RAW_ARROW

# private piece_files._large_tasks: which tasks `cut` splits (restating its rule would copy it)
from offsets_lib.engine import exchange, piece_files
from offsets_lib.engine.routing import (
    MARKERS,
    audit_tasks_of,
    group_id_bytes,
    positioned_table,
)


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


def _group_of(key: bytes | None) -> bytes:
    """The reference: bytes 4 .. 4 + the int16 at byte 2, cut to the key; none for a key too
    short to hold the length."""
    if key is None or len(key) < 4:
        return b""
    return key[4 : 4 + int.from_bytes(key[2:4], "big")]


_KEYS = st.one_of(
    st.none(),
    st.binary(max_size=12),
    st.builds(_key, st.integers(0, 17), st.binary(max_size=30), st.binary(max_size=12)),
)


@given(st.lists(_KEYS, max_size=30), st.integers(0, 5))
def test_group_id_bytes_equal_the_reference_cut(keys: list[bytes | None], skip: int) -> None:
    array = pa.array(keys, pa.binary()).slice(min(skip, len(keys)))
    expected = [_group_of(k) for k in keys[min(skip, len(keys)) :]]
    assert group_id_bytes(array).to_pylist() == expected


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


def test_audit_tasks_of_put_a_groups_records_together_and_markers_everywhere() -> None:
    keys = [
        _key(1, b"payments", b"\x00\x01t\x00\x00\x00\x00"),
        _key(2, b"payments"),
        _key(5, b"payments", b"\x00\x01m"),
        b"\x00\x00\x00\x01",  # a transaction marker's key
        _key(1, b"payments", b"\x00\x01t\x00\x00\x00\x00"),
    ]
    task_ids = audit_tasks_of(_records(keys, [4, 4, 4, 4, 9], [None, False, None, True, None]), 7)
    assert task_ids[:3].tolist() == [task_ids[0]] * 3
    assert task_ids[3] == MARKERS
    assert 0 <= task_ids[4] < 7


def test_audit_tasks_of_are_a_fixed_function_of_partition_and_group() -> None:
    """Pinned: a run and its rerun (any process) send every record to the same task."""
    group_hash = zlib.crc32(b"payments")
    expected = ((group_hash * 0x9E3779B1 + 4) & 0xFFFFFFFF) % 13
    task_ids = audit_tasks_of(_records([_key(1, b"payments"), None], [4, 0], [None, None]), 13)
    assert task_ids.tolist() == [expected, ((zlib.crc32(b"") * 0x9E3779B1) & 0xFFFFFFFF) % 13]
    assert audit_tasks_of(_records([], [], []), 13).dtype == np.int32


def _offset_key(group: bytes, topic: bytes, partition: int) -> bytes:
    return _key(1, group, struct.pack(">h", len(topic)) + topic + struct.pack(">i", partition))


_RECORD_SHAPES = st.sampled_from(["commit", "commit tombstone", "metadata", "group tombstone"])


def _commit_value(offset: int) -> bytes:
    """An OffsetCommit v3 value: offset, leader epoch -1, no metadata, commit timestamp."""
    return struct.pack(">hqih", 3, offset, -1, 0) + struct.pack(">q", 1_700_000_000_000)


@given(
    st.lists(
        st.tuples(
            _RECORD_SHAPES,
            st.sampled_from([b"big", b"big", b"big", b"a", b"b", b"c"]),  # one group dominates
            st.integers(0, 2),  # offset key's partition
            st.integers(0, 1),  # __consumer_offsets partition
        ),
        max_size=60,
    ),
    st.integers(2, 6),
)
def test_a_large_task_loses_only_superseded_commit_values(records, tasks: int) -> None:
    """With `reduce_large`, each task's pieces hold its records but, in a task that holds more
    than LARGE_IN_BATCH times the average, commit values that a later value of the same key
    (and offsets partition) replaces; the pieces count every value dropped."""
    keys, values = [], []
    for i, (shape, group, partition, _log_partition) in enumerate(records):
        keys.append(_offset_key(group, b"t", partition) if "commit" in shape else _key(2, group))
        value = _commit_value(i) if "commit" in shape else b"\x00\x03value"
        values.append(None if "tombstone" in shape else value)
    table = positioned_table(
        _raw(
            key=pa.array(keys, pa.binary()),
            value=pa.array(values, pa.binary()),
            partition=pa.array([r[3] for r in records], pa.int32()),
            offset=pa.array(range(len(records)), pa.int64()),
        )
    )
    task_ids = audit_tasks_of(table, tasks)
    large = set(piece_files._large_tasks(task_ids, tasks).tolist())
    seen: dict[int, list[int]] = {}
    counted = 0
    for piece in piece_files.cut([table], tasks, reduce_large=True):
        seen.setdefault(piece.task, []).extend(piece.records.column("log_offset").to_pylist())
        if piece.superseded is not None:
            assert piece.task in large
            counted += sum(piece.superseded.column("offset_commits").to_pylist())
    gone = 0
    for task in np.unique(task_ids).tolist():
        own = np.flatnonzero(task_ids == task).tolist()
        assert set(seen[task]) <= set(own)
        for row in set(own) - set(seen[task]):
            gone += 1
            shape, _group, _partition, log_partition = records[row]
            assert shape == "commit" and task in large
            assert any(  # a later value of the same key and offsets partition
                keys[later] == keys[row] and records[later][3] == log_partition
                and records[later][0] == "commit"
                for later in range(row + 1, len(records))
            )  # fmt: skip
    assert counted == gone


def test_audit_tasks_launch_largest_first_by_bytes() -> None:
    """By their pieces' bytes (markers, which every task reads, left out); ties keep task
    order; a piece without bytes (a stored file of kept records) makes it by records."""
    pieces = [
        {"task": 0, "num_rows": 900, "num_bytes": 9_000},
        {"task": 1, "num_rows": 50, "num_bytes": 40_000},  # a group's large metadata
        {"task": 2, "num_rows": 500, "num_bytes": 5_000},
        {"task": 2, "num_rows": 500, "num_bytes": 5_000},
        {"task": MARKERS, "num_rows": 10_000, "num_bytes": 1_000_000},
    ]
    assert exchange.largest_first(pieces, tasks=5) == [1, 2, 0, 3, 4]
    stored = [*pieces, {"task": 3, "num_rows": 700, "num_bytes": None}]
    assert exchange.largest_first(stored, tasks=5) == [2, 0, 3, 1, 4]


@pytest.mark.parametrize(
    ("groups", "batches"),
    [
        (None, [7, 2, 7, 3, 1]),  # groups of 3+4 read together; 10 alone, in 7 and 3
        ([1, 2, 4], [4, 3]),  # a unit's groups only: 4+2 > 5 apart, then 2+1
    ],
)
def test_a_unit_is_read_in_whole_row_groups_up_to_the_batch_rows(
    tmp_path, groups: list[int] | None, batches: list[int]
) -> None:
    sizes = [3, 4, 2, 10, 1]
    n = sum(sizes)
    stamps = pa.array(range(n), pa.timestamp("ms", tz="UTC"))
    table = _raw(
        key=pa.array([f"k{i}".encode() for i in range(n)], pa.binary()),
        value=pa.array([f"v{i}".encode() for i in range(n)], pa.binary()),
        topic=pa.array(["__consumer_offsets"] * n),
        partition=pa.array([i % 3 for i in range(n)], pa.int32()),
        offset=pa.array(range(n), pa.int64()),
        timestamp=stamps,
        timestampType=pa.array([0] * n, pa.int32()),
    )
    path = tmp_path / "dump.parquet"
    with pq.ParquetWriter(path, table.schema) as writer:
        first = 0
        for size in sizes:
            writer.write_table(table.slice(first, size))
            first += size
    rows = 7 if groups is None else 5
    read = list(piece_files.read_unit(str(path), groups, False, False, rows=rows))
    assert [t.num_rows for t in read] == batches
    starts = np.cumsum([0, *sizes])
    wanted = range(len(sizes)) if groups is None else groups
    expected = pa.concat_tables([table.slice(starts[g], sizes[g]) for g in wanted])
    assert pa.concat_tables(read).to_pydict() == positioned_table(expected).to_pydict()
