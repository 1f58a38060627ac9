"""Spark forms of the Arrow schemas the audit produces (the Delta tables are in `tables.py`)."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema

from offsets_lib.wire.decoded import DECODED_COLUMNS


def spark_schema(schema: pa.Schema) -> T.StructType:
    """The Spark schema of an Arrow schema (mapInArrow output, staged files)."""
    return from_arrow_schema(schema)


# Decoded records as the planner sees them, each column commented with its meaning.
DECODED = T.StructType(
    [
        T.StructField(
            name,
            spark_schema(pa.schema([pa.field(name, arrow_type)]))[0].dataType,
            True,
            metadata={"comment": comment},
        )
        for name, arrow_type, comment in DECODED_COLUMNS
    ]
)
