"""Reference decoder in Spark: raw __consumer_offsets records -> decoded records (schemas.DECODED).

Decoding runs in the executors over whole Arrow batches (mapInArrow); every row keeps its
position (offsets-topic partition, log offset, timestamp: routing.positioned_table, the one
renaming the map stage uses too) and every row comes out again, decoded or with the reason it
could not be decoded. The run decodes in its audit tasks (offsets_lib.audit.task_audit); this
frame is what the reference audit (spark_audit.py) and the tests read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame

from offsets_lib.audit.group_rows import GROUP_METADATA, classic_group_rows
from offsets_lib.audit.schemas import DECODED
from offsets_lib.engine.routing import RAW_COLUMNS, positioned_table
from offsets_lib.wire.decoded import POSITIONED_ARROW

POSITIONED_COLUMNS = tuple(POSITIONED_ARROW.names)


def decode_records(raw: DataFrame, *, keep_raw: bool = False) -> DataFrame:
    """Decode a raw-record DataFrame (Spark Kafka-source schema, optional batch metadata).

    `keep_raw` keeps every record's key and value bytes (otherwise only rejected ones keep
    them): the kept records are stored raw, to be audited again like new ones.
    """

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return _decode_batches(_positioned(batches), keep_raw=keep_raw)

    read = [name for name in RAW_COLUMNS if name in raw.columns]
    return raw.select(*read).mapInArrow(decode, DECODED)


def decode_positioned(frame: DataFrame, *, keep_raw: bool = False) -> DataFrame:
    """`decode_records` for a frame that already has the POSITIONED_COLUMNS."""

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return _decode_batches(batches, keep_raw=keep_raw)

    return frame.select(*POSITIONED_COLUMNS).mapInArrow(decode, DECODED)


def _positioned(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        table = positioned_table(pa.Table.from_batches([batch])).select(POSITIONED_COLUMNS)
        yield from table.combine_chunks().to_batches()


def _decode_batches(
    batches: Iterator[pa.RecordBatch], *, keep_raw: bool = False
) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        decoded = decode_batch(batch)
        if keep_raw:
            for name in ("key", "value"):
                index = decoded.schema.get_field_index(name)
                decoded = decoded.set_column(index, name, batch.column(name))
        yield decoded


def decode_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A batch of raw rows (log position, key, value, batch metadata) decoded by the audit's
    decoder (`batch_decode.decode_task_records`, every value decoded), in input order, with
    `value_json`: the values of records other than offset commits as JSON."""
    from offsets_lib.wire.batch_decode import decode_task_records  # imported in the executor

    records = decode_task_records([batch])
    table = records.table.take(pa.array(np.argsort(records.source)))
    texts: list[str | None] = [None] * table.num_rows
    for row, fields in records.values.items():
        texts[int(records.source[row])] = value_json(fields)
    index = table.schema.get_field_index("value_json")
    table = table.set_column(index, "value_json", pa.array(texts, pa.string()))
    return table.combine_chunks().to_batches()[0] if table.num_rows else _empty(table)


def _empty(table: pa.Table) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], schema=table.schema)


def value_json(fields: Any) -> str:
    """A record's value as JSON (`wire.to_jsonable` for bytes and UUIDs)."""
    from offsets_lib import wire

    return json.dumps(fields, separators=(",", ":"), default=wire.to_jsonable)


def classic_group_row(value: dict[str, Any], version: int | None) -> dict[str, Any]:
    """A classic group's row from one GroupMetadata value (the codec's dict), built by the
    production columnar path (`group_rows.classic_group_rows`) on a column of one value."""
    values = pa.array([value], GROUP_METADATA)
    return classic_group_rows(values, pa.array([version], pa.int16())).to_pylist()[0]
