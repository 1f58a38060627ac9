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

from offsets_lib.schemas import DECODED

BATCH_METADATA = {
    "producer_id": T.LongType(),
    "producer_epoch": T.IntegerType(),
    "is_transactional": T.BooleanType(),
    "is_control": T.BooleanType(),
}


def has_batch_metadata(raw: DataFrame) -> bool:
    """True when the dump carries producer ids and control records (a log-segment reader's dump)."""
    return set(BATCH_METADATA) <= set(raw.columns)


def decode_records(raw: DataFrame) -> DataFrame:
    """Decode a raw-record DataFrame (Spark Kafka-source schema, optional batch metadata)."""
    batch_columns = [
        (F.col(name) if name in raw.columns else F.lit(None)).cast(dtype).alias(name)
        for name, dtype in BATCH_METADATA.items()
    ]
    positioned = raw.select(
        F.col("partition").cast("int").alias("log_partition"),
        F.col("offset").cast("long").alias("log_offset"),
        F.unix_millis(F.col("timestamp")).alias("log_timestamp_ms"),
        F.col("key").cast("binary").alias("key"),
        F.col("value").cast("binary").alias("value"),
        *batch_columns,
    )
    return positioned.mapInArrow(_decode_batches, DECODED)


def _decode_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    from offsets_lib.batch_decode import decode_batch  # imported in the executor

    for batch in batches:
        yield decode_batch(batch)
