"""How a Delta table of the audit is declared (`TableSpec`), and the columns several tables share.

A table is its name, a comment that states the row grain, and a Spark ``StructType`` whose every
field carries ``metadata={"comment": ...}`` (`column`); the tables themselves are in tables.py
and group_tables.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.types import (
    ArrayType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

RUN_ID = "run_id"


# A Hive metastore keeps a view's column comments in COLUMNS_V2.COMMENT, VARCHAR(256) in its
# schemas for Derby, MySQL and PostgreSQL: one longer comment failed its `latest_<table>` view's
# CREATE ten times, 2 s apart with a stack trace each, before Spark stored the view without it.
HIVE_COLUMN_COMMENT_CHARS = 256


@dataclass(frozen=True)
class TableSpec:
    """One Delta table: name, row grain, schema with commented columns, partitioning."""

    name: str
    comment: str
    schema: StructType
    partition_by: tuple[str, ...] = (RUN_ID,)

    def __post_init__(self) -> None:
        uncommented = [f.name for f in self.schema.fields if not f.metadata.get("comment")]
        if uncommented:
            raise ValueError(f"table {self.name}: columns without a comment: {uncommented}")
        too_long = [
            f.name
            for f in self.schema.fields
            if len(f.metadata["comment"]) > HIVE_COLUMN_COMMENT_CHARS
        ]
        if too_long:
            raise ValueError(
                f"table {self.name}: comments over {HIVE_COLUMN_COMMENT_CHARS} characters"
                f" (a Hive metastore's limit): {too_long}"
            )
        missing = [c for c in self.partition_by if c not in self.schema.fieldNames()]
        if missing:
            raise ValueError(f"table {self.name}: partition columns not in schema: {missing}")

    @property
    def columns(self) -> list[str]:
        """Column names in table order."""
        return self.schema.fieldNames()


def column(name: str, dtype: DataType, comment: str, *, nullable: bool = True) -> StructField:
    return StructField(name, dtype, nullable, metadata={"comment": comment})


# ---- columns shared by several tables -------------------------------------------------------


# fmt: off
def run_id_column() -> StructField:
    return column(RUN_ID, StringType(),
        "Id of the run that wrote this row (--run-id); partition column. A rerun with the same "
        "id replaces the run's rows. Never null.", nullable=False)


def as_of_column() -> StructField:
    return column("as_of", TimestampType(),
        "UTC instant the run evaluated the coordinator's state at (--as-of); the same for every "
        "row of a run. Never null.", nullable=False)


def group_id_column() -> StructField:
    return column("group_id", StringType(), "Consumer group id (may be the empty string).")


def topic_column() -> StructField:
    return column("topic", StringType(), "Topic name of the committed offset.")


def partition_column() -> StructField:
    return column("partition", IntegerType(), "Partition of `topic` (not of __consumer_offsets).")


def offsets_partition_column(what: str) -> StructField:
    return column(
        "offsets_partition",
        IntegerType(),
        f"Partition of __consumer_offsets that holds {what} (the group's coordinator "
        "partition); null when the input had no partition.",
    )


def committed_offset_column() -> StructField:
    return column("committed_offset", LongType(),
        "Offset the group committed: the next record the group will consume (CLI: "
        "CURRENT-OFFSET).")


def subscribed_topics_column(scope: str) -> StructField:
    return column(
        "subscribed_topics",
        ArrayType(StringType()),
        f"Topics {scope} is subscribed to, sorted. Null = unknown (e.g. a classic group whose "
        "protocol type is not 'consumer' or whose subscription bytes do not parse); an empty "
        "array = known to subscribe to nothing.",
    )


ASSIGNED_PARTITION = StructType([
    column("topic", StringType(), "Assigned topic name; null when only the topic id is known."),
    column("topic_id", StringType(), "Assigned topic id (UUID); null for classic members."),
    column("partition", IntegerType(), "Assigned partition of the topic."),
    column("assignment_epoch", IntegerType(),
        "Epoch at which the partition was assigned (KIP-848); null for classic members."),
])
# fmt: on
