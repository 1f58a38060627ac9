"""Every table's declaration fits the catalogs that hold it."""

from __future__ import annotations

import pytest
from pyspark.sql.types import StringType, StructField, StructType

from offsets_lib.audit.table_columns import HIVE_COLUMN_COMMENT_CHARS
from offsets_lib.audit.tables import TABLES, TableSpec
from offsets_lib.io.incremental import CHECKPOINT_SPEC, KEPT_SPEC


@pytest.mark.parametrize("spec", [*TABLES.values(), KEPT_SPEC, CHECKPOINT_SPEC], ids=str)
def test_every_column_comment_fits_a_hive_metastore(spec: TableSpec) -> None:
    longest = max(len(f.metadata["comment"]) for f in spec.schema.fields)
    assert longest <= HIVE_COLUMN_COMMENT_CHARS == 256


def test_a_comment_a_hive_metastore_cannot_hold_is_refused_where_the_table_is_declared() -> None:
    schema = StructType(
        [
            StructField("run_id", StringType(), False, {"comment": "The run."}),
            StructField("note", StringType(), True, {"comment": "x" * 257}),
        ]
    )
    with pytest.raises(ValueError, match=r"table t: comments over 256 characters .*\['note'\]"):
        TableSpec("t", "A table.", schema)
