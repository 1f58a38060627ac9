"""The audit task of each record, and raw records (Kafka-source columns) as audit rows on Arrow.

The task of a record is a hash of (offsets partition, group id bytes of its key):
every key starts with its int16 type and the group id as an int16-length string, so all records
of a group meet in one task without decoding. Transaction markers belong to no group and resolve
records of every group of their partition: they get MARKERS, and every task receives them.
`positioned_table` is the one renaming of raw records to log positions:
the map stage applies it to the dump files pyarrow reads and to the records Spark reads
(exchange.map_records), and the tests' reference decoder (tests/reference/decode.py) to its
batches.
"""

from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib.audit.arrays import as_bools, one_array
from offsets_lib.audit.task_input import RAW_ARROW
from offsets_lib.wire.fastpath import group_id_bytes

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
    column = one_array(table.column(name))
    if not pa.types.is_timestamp(column.type):
        raise TypeError(f"column {name!r} is {column.type}, expected a timestamp")
    raw = pc.fill_null(column.cast(pa.int64()), 0).to_numpy()
    unit = column.type.unit
    ms = raw * 1000 if unit == "s" else raw // _MS_PER_UNIT[unit]
    valid = np.asarray(column.is_valid()) if column.null_count else None
    return pa.chunked_array([pa.array(ms, type=pa.int64(), mask=None if valid is None else ~valid)])


def _crc32_codes(values: pa.Array) -> np.ndarray:
    """CRC-32 of every value (binary), once per distinct value."""
    encoded = pc.dictionary_encode(values)
    distinct = encoded.dictionary.to_pylist()
    per_value = np.array([zlib.crc32(v) for v in distinct], dtype=np.uint64)
    indices = np.asarray(pc.fill_null(encoded.indices, 0), dtype=np.int64)
    return per_value[indices] if len(per_value) else np.zeros(len(indices), np.uint64)


def audit_tasks_of(table: pa.Table, tasks: int) -> np.ndarray:
    """Task (0..tasks-1) of every RAW_ARROW row; MARKERS for the transaction markers, which
    every task receives.

    A stable hash (CRC-32 of the group id bytes, mixed with the offsets partition): the same
    record goes to the same task in every process and on every run.
    """
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int32)
    group_hash = _crc32_codes(group_id_bytes(one_array(table.column("key"))))
    is_marker = as_bools(table.column("is_control"))
    task_ids = _task_of_hash(group_hash, _partitions(table), tasks)
    return np.where(is_marker, MARKERS, task_ids).astype(np.int32)


def _partitions(table: pa.Table) -> np.ndarray:
    return np.asarray(pc.fill_null(table.column("log_partition"), 0), dtype=np.int64)


def _task_of_hash(hashes: np.ndarray, partition: np.ndarray, tasks: int) -> np.ndarray:
    """The task of each hash in its offsets partition (`audit_tasks_of`)."""
    mixed = (hashes * np.uint64(0x9E3779B1) + partition.astype(np.uint64)) & np.uint64(0xFFFFFFFF)
    return (mixed % np.uint64(tasks)).astype(np.int32)
