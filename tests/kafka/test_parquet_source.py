"""`read_parquet_dump`: files, folders, globs; missing paths and columns are InputNotReadable."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from offsets_lib.io.sources import InputNotReadable
from offsets_lib.io.sources.parquet import read_parquet_dump

UTC = dt.UTC


def raw_table(n: int, *, partition: int = 0, batch_metadata: bool = False, drop=()) -> pa.Table:
    cols = {
        "key": pa.array([b"k%d" % i for i in range(n)], pa.binary()),
        "value": pa.array([None if i % 3 == 0 else b"v%d" % i for i in range(n)], pa.binary()),
        "topic": pa.array(["__consumer_offsets"] * n),
        "partition": pa.array([partition] * n, pa.int32()),
        "offset": pa.array(range(n), pa.int64()),
        "timestamp": pa.array(
            [dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=i) for i in range(n)],
            pa.timestamp("us", tz="UTC"),
        ),
        "timestampType": pa.array([0] * n, pa.int32()),
        "headers": pa.array([[]] * n, pa.list_(pa.struct([("key", pa.string())]))),
    }
    if batch_metadata:
        cols["producer_id"] = pa.array([-1] * n, pa.int64())
        cols["producer_epoch"] = pa.array([-1] * n, pa.int32())  # int16 in some dumps
        cols["is_transactional"] = pa.array([False] * n)
        cols["is_control"] = pa.array([False] * n)
    for name in drop:
        cols.pop(name)
    return pa.table(cols)


REQUIRED = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
METADATA = ["producer_id", "producer_epoch", "is_transactional", "is_control"]


@pytest.mark.spark
def test_reads_files_folders_and_globs(spark, tmp_path):
    folder = tmp_path / "dump"
    folder.mkdir()
    pq.write_table(raw_table(5, partition=0), folder / "p0.parquet")
    pq.write_table(raw_table(4, partition=1), folder / "p1.parquet")
    df = read_parquet_dump(spark, [str(folder)])
    assert df.columns == REQUIRED
    assert df.count() == 9
    assert read_parquet_dump(spark, [str(folder / "p1.parquet")]).count() == 4
    assert read_parquet_dump(spark, [str(folder / "p*.parquet")]).count() == 9
    both = [str(folder / "p0.parquet"), f"file://{folder / 'p1.parquet'}"]
    assert read_parquet_dump(spark, both).count() == 9
    row = read_parquet_dump(spark, [str(folder / "p0.parquet")]).orderBy("offset").first()
    assert row["value"] is None and row["key"] == b"k0"
    assert row["timestamp"] == dt.datetime(2024, 1, 1)  # session time zone is UTC


@pytest.mark.spark
def test_keeps_batch_metadata_and_casts_integer_widths(spark, tmp_path):
    table = raw_table(3, batch_metadata=True)
    table = table.set_column(
        table.schema.get_field_index("partition"), "partition", pa.array([2] * 3, pa.int64())
    )
    table = table.set_column(
        table.schema.get_field_index("producer_epoch"),
        "producer_epoch",
        pa.array([1] * 3, pa.int16()),
    )
    pq.write_table(table, tmp_path / "x.parquet")
    df = read_parquet_dump(spark, [str(tmp_path / "x.parquet")])
    assert df.columns == REQUIRED + METADATA
    types = dict(df.dtypes)
    assert types["partition"] == "int" and types["producer_epoch"] == "int"
    assert types["producer_id"] == "bigint" and types["is_control"] == "boolean"
    assert {r["partition"] for r in df.collect()} == {2}


@pytest.mark.spark
def test_missing_paths_are_not_readable(spark, tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(InputNotReadable, match=f"parquet input not found: {missing}"):
        read_parquet_dump(spark, [str(missing)])
    with pytest.raises(InputNotReadable, match="parquet input not found"):
        read_parquet_dump(spark, [str(tmp_path / "*.parquet")])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputNotReadable, match="not readable"):
        read_parquet_dump(spark, [str(empty)])


@pytest.mark.spark
def test_missing_or_mistyped_column_is_not_readable(spark, tmp_path):
    pq.write_table(raw_table(2, drop=["offset"]), tmp_path / "a.parquet")
    with pytest.raises(InputNotReadable, match="'offset'"):
        read_parquet_dump(spark, [str(tmp_path / "a.parquet")])
    bad = raw_table(2)
    bad = bad.set_column(bad.schema.get_field_index("key"), "key", pa.array(["a", "b"]))
    pq.write_table(bad, tmp_path / "b.parquet")
    with pytest.raises(InputNotReadable, match="'key' has type string, expected binary"):
        read_parquet_dump(spark, [str(tmp_path / "b.parquet")])
