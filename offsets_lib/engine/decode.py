"""Spark adapter: raw __consumer_offsets records -> decoded records (schemas.DECODED).

Decoding runs in the executors over whole Arrow batches (mapInArrow); every row keeps its
position (offsets-topic partition, log offset, timestamp) and every row comes out again, decoded
or with the reason it could not be decoded.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from offsets_lib.audit.schemas import DECODED
from offsets_lib.wire.decoded import POSITIONED_ARROW

BATCH_METADATA = {
    "producer_id": T.LongType(),
    "producer_epoch": T.IntegerType(),
    "is_transactional": T.BooleanType(),
    "is_control": T.BooleanType(),
}


def has_batch_metadata(raw: DataFrame) -> bool:
    """True when the dump carries producer ids and control records (a log-segment reader's dump)."""
    return set(BATCH_METADATA) <= set(raw.columns)


POSITIONED_COLUMNS = tuple(POSITIONED_ARROW.names)


def positioned(raw: DataFrame) -> DataFrame:
    """Raw records (Spark Kafka-source schema) renamed to log positions, batch metadata added.

    Dumps without batch metadata get nulls there (no transactions, no markers).
    """
    batch_columns = [
        (F.col(name) if name in raw.columns else F.lit(None)).cast(dtype).alias(name)
        for name, dtype in BATCH_METADATA.items()
    ]
    return raw.select(
        F.col("partition").cast("int").alias("log_partition"),
        F.col("offset").cast("long").alias("log_offset"),
        F.unix_millis(F.col("timestamp")).alias("log_timestamp_ms"),
        F.col("key").cast("binary").alias("key"),
        F.col("value").cast("binary").alias("value"),
        *batch_columns,
    )


def decode_records(raw: DataFrame, *, keep_raw: bool = False) -> DataFrame:
    """Decode a raw-record DataFrame (Spark Kafka-source schema, optional batch metadata).

    `keep_raw` keeps every record's key and value bytes (otherwise only rejected ones keep
    them): the kept records are stored raw, to be audited again like new ones.
    """
    return decode_positioned(positioned(raw), keep_raw=keep_raw)


def decode_positioned(frame: DataFrame, *, keep_raw: bool = False) -> DataFrame:
    """`decode_records` for a frame that already has the POSITIONED_COLUMNS."""

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return _decode_batches(batches, keep_raw=keep_raw)

    return frame.select(*POSITIONED_COLUMNS).mapInArrow(decode, DECODED)


def _decode_batches(
    batches: Iterator[pa.RecordBatch], *, keep_raw: bool = False
) -> Iterator[pa.RecordBatch]:
    from offsets_lib.wire.batch_decode import decode_batch  # imported in the executor

    for batch in batches:
        decoded = decode_batch(batch)
        if keep_raw:
            for name in ("key", "value"):
                index = decoded.schema.get_field_index(name)
                decoded = decoded.set_column(index, name, batch.column(name))
        yield decoded
