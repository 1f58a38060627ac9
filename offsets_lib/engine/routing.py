"""The audit task of each record, and raw records (Kafka-source columns) as audit rows on Arrow.

The task of a record is a hash of (offsets partition, group id bytes of its key):
every key starts with its int16 type and the group id as an int16-length string, so all records
of a group meet in one task without decoding. Transaction markers belong to no group and resolve
records of every group of their partition: they get MARKERS, and every task receives them. With
`by_offset_key` (the first step of the split audit, engine/key_split.py) offset commits go by
their offset key instead, so a dominant group's commits spread over every task, and group
tombstones are sent to every task as well (they delimit the groups_created meter's segments
there). `positioned_table` is the one renaming of raw records to log positions:
the map stage applies it to the dump files pyarrow reads and to the records Spark reads
(exchange.map_records), and the tests' reference decoder (tests/reference/decode.py) to its
batches.
"""

from __future__ import annotations

import zlib
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib.audit.metrics import GROUP_TOMBSTONE_TYPES
from offsets_lib.audit.task_input import RAW_ARROW
from offsets_lib.wire.decoded import OFFSET_COMMIT_TYPES
from offsets_lib.wire.fastpath import group_id_bytes, key_types

MARKERS = -1
# An audit task holds its records in memory at once (~1.2 GB of Python per million records).
# At 10M records on 2 cores, 20 tasks of 500k ran ~15 % faster than 10 of 1M; 40 was no faster.
RECORDS_PER_TASK = 500_000
# Raise when audit_tasks_of sends a record elsewhere: stored kept records cut by audit task under
# another version are mapped again (exchange.stored_cuts).
ROUTING_VERSION = 1
_BATCH_METADATA = ("producer_id", "producer_epoch", "is_transactional", "is_control")
# The raw columns `positioned_table` reads (Spark's Kafka-source names; batch metadata optional).
RAW_COLUMNS = ("key", "value", "partition", "offset", "timestamp", *_BATCH_METADATA)
_MS_PER_UNIT = {"s": 1, "ms": 1, "us": 1000, "ns": 1_000_000}


def positioned_table(table: pa.Table) -> pa.Table:
    """Raw records (Spark's Kafka-source columns, optional batch metadata) -> RAW_ARROW rows.

    Log position and timestamp in epoch ms (floored, like Spark's unix_millis), batch metadata
    null when the input has none, no history rows.
    Integer columns of another width are cast, as the Spark reader does.
    """
    n = table.num_rows
    columns = {
        "log_partition": _column(table, "partition", pa.int32()),
        "log_offset": _column(table, "offset", pa.int64()),
        "log_timestamp_ms": _epoch_ms(table, "timestamp"),
        "key": _column(table, "key", pa.binary()),
        "value": _column(table, "value", pa.binary()),
    }
    for name in _BATCH_METADATA:
        columns[name] = _column(table, name, RAW_ARROW.field(name).type)
    columns["is_history"] = pa.chunked_array([pa.array(np.zeros(n, dtype=bool))])
    return pa.table([columns[f.name] for f in RAW_ARROW], schema=RAW_ARROW)


def _column(table: pa.Table, name: str, arrow_type: pa.DataType) -> pa.ChunkedArray:
    if name not in table.column_names:  # e.g. a dump without batch metadata
        return pa.chunked_array([pa.nulls(table.num_rows, arrow_type)])
    column = table.column(name)
    return column if column.type == arrow_type else column.cast(arrow_type)


def _epoch_ms(table: pa.Table, name: str) -> pa.ChunkedArray:
    """Timestamps (any unit) as epoch milliseconds, floored (timestamps before 1970 too)."""
    if name not in table.column_names:
        return pa.chunked_array([pa.nulls(table.num_rows, pa.int64())])
    column = table.column(name).combine_chunks()
    if not pa.types.is_timestamp(column.type):
        raise TypeError(f"column {name!r} is {column.type}, expected a timestamp")
    raw = pc.fill_null(column.cast(pa.int64()), 0).to_numpy()
    unit = column.type.unit
    ms = raw * 1000 if unit == "s" else raw // _MS_PER_UNIT[unit]
    valid = np.asarray(column.is_valid()) if column.null_count else None
    return pa.chunked_array([pa.array(ms, type=pa.int64(), mask=None if valid is None else ~valid)])


def _crc32_codes(values: pa.Array, skip: int = 0) -> np.ndarray:
    """CRC-32 of every value (binary) after its first `skip` bytes, once per distinct value."""
    encoded = pc.dictionary_encode(values)
    distinct = encoded.dictionary.to_pylist()
    per_value = np.array([zlib.crc32(v[skip:]) for v in distinct], dtype=np.uint64)
    indices = np.asarray(pc.fill_null(encoded.indices, 0), dtype=np.int64)
    return per_value[indices] if len(per_value) else np.zeros(len(indices), np.uint64)


def tasks_for(records: int, *, cores: int, at_most: int) -> int:
    """Tasks for `records` records, about RECORDS_PER_TASK each, at least one per core and at
    most `at_most`: a stage of small tasks spends its time starting them."""
    return max(1, min(at_most, max(cores, -(-records // RECORDS_PER_TASK))))


def audit_tasks_of(table: pa.Table, tasks: int, *, by_offset_key: bool = False) -> np.ndarray:
    """Task (0..tasks-1) of every RAW_ARROW row; MARKERS for records every task receives
    (transaction markers, and with `by_offset_key` group tombstones).

    A stable hash (CRC-32 of the group id bytes, mixed with the offsets partition): the same
    record goes to the same task in every process and on every run. With `by_offset_key`, an
    offset commit hashes its key bytes after the record type (group, topic, partition: key
    versions 0 and 1 of one offset key share them) instead of its group id.
    """
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int32)
    keys = table.column("key").combine_chunks()
    group_hash = _crc32_codes(group_id_bytes(keys))
    is_marker = np.asarray(pc.fill_null(table.column("is_control"), False), dtype=bool)
    if by_offset_key:
        kinds = _split_kinds(table, keys, np.arange(table.num_rows))
        commits = np.flatnonzero(kinds.is_commit)
        group_hash[commits] = _offset_key_hashes(keys, commits)
        is_marker |= kinds.is_group_tombstone
    task_ids = _task_of_hash(group_hash, _partitions(table), tasks)
    return np.where(is_marker, MARKERS, task_ids).astype(np.int32)


def _partitions(table: pa.Table) -> np.ndarray:
    return np.asarray(pc.fill_null(table.column("log_partition"), 0), dtype=np.int64)


def _task_of_hash(hashes: np.ndarray, partition: np.ndarray, tasks: int) -> np.ndarray:
    """The task of each hash in its offsets partition (`audit_tasks_of`)."""
    mixed = (hashes * np.uint64(0x9E3779B1) + partition.astype(np.uint64)) & np.uint64(0xFFFFFFFF)
    return (mixed % np.uint64(tasks)).astype(np.int32)


class _SplitKinds(NamedTuple):
    """What the split audit's first step does with records, by their key's record type."""

    is_marker: np.ndarray  # transaction markers (resolve every group's commits)
    is_commit: np.ndarray  # offset commits (reduced per offset key)
    is_group_tombstone: np.ndarray  # delimit the groups_created meter's segments


def _split_kinds(table: pa.Table, keys: pa.Array, rows: np.ndarray) -> _SplitKinds:
    """`_SplitKinds` of the `rows` of `table`, whose keys are `keys`."""
    record_type = key_types(keys)
    is_marker = np.asarray(pc.fill_null(table.column("is_control"), False), dtype=bool)[rows]
    value_missing = np.asarray(pc.is_null(table.column("value")), dtype=bool)[rows]
    return _SplitKinds(
        is_marker,
        np.isin(record_type, OFFSET_COMMIT_TYPES) & ~is_marker,
        value_missing & np.isin(record_type, GROUP_TOMBSTONE_TYPES),
    )


def _offset_key_hashes(keys: pa.Array, commits: np.ndarray) -> np.ndarray:
    """CRC-32 of the commits' key bytes after the record type (`audit_tasks_of`)."""
    if not len(commits):
        return np.zeros(0, np.uint64)
    return _crc32_codes(keys.take(pa.array(commits)), skip=2)


def decoded_by_key_split(table: pa.Table) -> np.ndarray:
    """Rows the split audit's first step decodes (audit.commit_reduction): offset commits, markers
    and group tombstones, by their key's record type; it forwards the others undecoded."""
    kinds = _split_kinds(table, table.column("key").combine_chunks(), np.arange(table.num_rows))
    return kinds.is_marker | kinds.is_commit | kinds.is_group_tombstone
