"""Read ``__consumer_offsets`` straight from a broker's log segments into the job's dump format.

A consumer (even ``read_uncommitted``) never sees transaction markers nor producer ids; the log
segments have both, so this reader writes the optional batch-metadata columns of contract.md
(``producer_id``, ``producer_epoch``, ``is_transactional``, ``is_control``). Only record-batch
format v2 (magic 2) without compression is read: that is what a coordinator writes with the
default ``offsets.topic.compression.codec``. A batch cut short at the end of the active segment
(the broker is still appending) ends the read of that segment.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from offsets_lib.tools.generate import SCHEMA as DUMP_SCHEMA
from offsets_lib.tools.generate.chunks import TOPIC

# the dump format of `offsets generate`, with the log's millisecond timestamps kept as they are
SCHEMA = DUMP_SCHEMA.set(
    DUMP_SCHEMA.get_field_index("timestamp"), pa.field("timestamp", pa.timestamp("ms", tz="UTC"))
)
_BATCH_HEADER = struct.Struct(">qiibihiqqqhii")  # up to and including the record count
_LOG_OVERHEAD = 12  # baseOffset + batchLength


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def _bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = _varint(buf, pos)
    if length < 0:
        return None, pos
    return buf[pos : pos + length], pos + length


def read_segment(path: Path, partition: int) -> list[dict]:
    """Every record of one ``.log`` file, in log order."""
    data = path.read_bytes()
    rows: list[dict] = []
    pos = 0
    while pos + _LOG_OVERHEAD <= len(data):
        base_offset, batch_length = struct.unpack_from(">qi", data, pos)
        end = pos + _LOG_OVERHEAD + batch_length
        if batch_length <= 0 or end > len(data):
            break
        (
            _,
            _,
            _,
            magic,
            _,
            attributes,
            _,
            base_ts,
            max_ts,
            producer_id,
            producer_epoch,
            _,
            count,
        ) = _BATCH_HEADER.unpack_from(data, pos)
        if magic != 2:
            raise ValueError(f"{path}@{pos}: record batch magic {magic} (only v2 is read)")
        if attributes & 0x07:
            raise ValueError(f"{path}@{pos}: compressed batch (codec {attributes & 7})")
        log_append = bool(attributes & 0x08)
        transactional = bool(attributes & 0x10)
        control = bool(attributes & 0x20)
        rpos = pos + _BATCH_HEADER.size
        for _ in range(count):
            length, rpos = _varint(data, rpos)
            record_end = rpos + length
            rpos += 1  # record attributes
            ts_delta, rpos = _varint(data, rpos)
            offset_delta, rpos = _varint(data, rpos)
            key, rpos = _bytes(data, rpos)
            value, rpos = _bytes(data, rpos)
            rows.append(
                {
                    "key": key,
                    "value": value,
                    "topic": TOPIC,
                    "partition": partition,
                    "offset": base_offset + offset_delta,
                    "timestamp": max_ts if log_append else base_ts + ts_delta,
                    "timestampType": 1 if log_append else 0,
                    "producer_id": producer_id,
                    "producer_epoch": producer_epoch,
                    "is_transactional": transactional,
                    "is_control": control,
                }
            )
            rpos = record_end
        pos = end
    return rows


def read_log_dir(log_dir: Path) -> pa.Table:
    """All records of every ``__consumer_offsets-N`` partition under `log_dir`."""
    rows: list[dict] = []
    for folder in sorted(log_dir.glob(f"{TOPIC}-*")):
        partition = int(folder.name.rsplit("-", 1)[1])
        for segment in sorted(folder.glob("*.log")):
            rows.extend(read_segment(segment, partition))
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def write_dump(log_dir: Path, out: Path) -> pa.Table:
    """Dump `log_dir`'s ``__consumer_offsets`` to ``out/dump.parquet``; returns the table."""
    table = read_log_dir(log_dir)
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, out / "dump.parquet")
    return table
