"""A raw `__consumer_offsets` dump read without Spark: Parquet files, folders or globs
(Spark's Kafka-source schema, ../shared/spec/contract.md "Inputs") streamed with
`pyarrow.dataset`, in (partition, offset) order.

Memory stays bounded by one file, not by the dump: each file is checked with its
`partition`/`offset` columns only; a file already in order (what Spark's Kafka source and
log-segment readers write) is streamed batch by batch, a file out of order is sorted in memory
on its own, and the files are then merged lazily (`heapq.merge`, one batch per file in flight).
The `topic` column is not part of the sort key: a dump holds one topic.
"""

from __future__ import annotations

import glob
import heapq
import os
import re
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from offsets_lib.io import storage
from offsets_lib.io.sources import InputNotReadable, first_line

BATCH_SIZE = 8192
"""Rows per Arrow batch read from a file (memory per open file ~ one batch)."""

REQUIRED = ("key", "value", "partition", "offset")
"""Columns inspect cannot do without; `timestamp` and the batch-metadata columns are optional."""

OPTIONAL = ("timestamp", "producer_id", "producer_epoch", "is_transactional", "is_control")

_GLOB_CHARS = re.compile(r"[*?\[]")
_TS_FACTOR = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}


class RawRecord(NamedTuple):
    """One raw record of the dump; batch-metadata fields are None when the dump lacks them."""

    partition: int
    offset: int
    timestamp_ms: int | None
    key: bytes | None
    value: bytes | None
    producer_id: int | None = None
    producer_epoch: int | None = None
    is_transactional: bool | None = None
    is_control: bool | None = None


def _datasets(paths: Iterable[str]) -> list[tuple[str, ds.Dataset]]:
    """(given path, dataset) per file/folder; globs expand locally. Missing -> InputNotReadable."""
    out: list[tuple[str, ds.Dataset]] = []
    for path in paths:
        path = str(path)
        local = storage.local_path(path)
        if local is not None:
            if _GLOB_CHARS.search(local):
                targets = sorted(glob.glob(local, recursive=True))
            else:
                targets = [local] if os.path.exists(local) else []
            if not targets:
                raise InputNotReadable(f"parquet input not found: {path}")
        else:
            targets = [path]  # remote URI: pyarrow resolves the filesystem and reports problems
        for target in targets:
            try:
                is_dir = storage.is_local(target) and os.path.isdir(target)
                dataset = ds.dataset(
                    target, format="parquet", partitioning="hive" if is_dir else None
                )
            except FileNotFoundError:
                raise InputNotReadable(f"parquet input not found: {path}") from None
            except (OSError, pa.ArrowException, ValueError) as exc:
                raise InputNotReadable(
                    f"parquet input not readable: {target}: {first_line(exc)}"
                ) from None
            out.append((target, dataset))
    return out


def fragments(paths: Iterable[str]) -> list[ds.Fragment]:
    """The Parquet files of a dump. Raises InputNotReadable (no path, a missing one, or one without
    Parquet files)."""
    paths = [str(p) for p in paths]
    if not paths:
        raise InputNotReadable("parquet input not found: no path given")
    fragments: list[ds.Fragment] = []
    for target, dataset in _datasets(paths):
        found = list(dataset.get_fragments())
        if not found:
            raise InputNotReadable(f"parquet input has no Parquet files: {target}")
        fragments.extend(found)
    return fragments


def _check_schema(fragment: ds.Fragment, constants: dict[str, Any]) -> list[str]:
    """Columns to read from the file; raises InputNotReadable for a missing/odd required one."""
    schema = fragment.physical_schema
    names = set(schema.names)
    for name in REQUIRED:
        if name in constants:
            continue
        if name not in names:
            raise InputNotReadable(f"parquet input lacks required column {name!r}: {fragment.path}")
        typ = schema.field(name).type
        ok = (
            pa.types.is_binary(typ) or pa.types.is_large_binary(typ)
            if name in ("key", "value")
            else pa.types.is_integer(typ)
        )
        if not ok:
            raise InputNotReadable(
                f"parquet input column {name!r} has type {typ}, expected "
                f"{'binary' if name in ('key', 'value') else 'an integer'}: {fragment.path}"
            )
    return [n for n in (*REQUIRED, *OPTIONAL) if n in names and n not in constants]


def _timestamps_ms(column: pa.Array) -> list[int | None]:
    typ = column.type
    if pa.types.is_timestamp(typ):
        mul, div = _TS_FACTOR[typ.unit]
        raw = pc.cast(column, pa.int64()).to_pylist()
        return [None if v is None else v * mul // div for v in raw]
    if pa.types.is_integer(typ):  # epoch milliseconds
        return column.to_pylist()
    return [None] * len(column)


def _batch_records(batch: pa.RecordBatch, constants: dict[str, Any]) -> Iterator[RawRecord]:
    n = batch.num_rows
    names = batch.schema.names

    def col(field: str) -> list[Any]:
        name = "timestamp" if field == "timestamp_ms" else field
        if name in names:
            column = batch.column(name)
            return _timestamps_ms(column) if name == "timestamp" else column.to_pylist()
        return [constants.get(name)] * n

    yield from map(RawRecord, *(col(name) for name in RawRecord._fields))


def _sort_keys(fragment: ds.Fragment, constants: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    cols = [c for c in ("partition", "offset") if c not in constants]
    table = fragment.to_table(columns=cols)
    n = table.num_rows

    def arr(name: str) -> np.ndarray:
        if name in constants:
            return np.full(n, int(constants[name]), dtype=np.int64)
        column = pc.cast(table.column(name), pa.int64()).fill_null(-1)
        return column.to_numpy()

    return arr("partition"), arr("offset")


def _is_sorted(partitions: np.ndarray, offsets: np.ndarray) -> bool:
    if len(partitions) < 2:
        return True
    dp = np.diff(partitions)
    return bool(np.all((dp > 0) | ((dp == 0) & (np.diff(offsets) >= 0))))


def _fragment_records(fragment: ds.Fragment, batch_size: int) -> Iterator[RawRecord]:
    """Records of one Parquet file in (partition, offset) order."""
    try:
        constants = {
            k: v
            for k, v in ds.get_partition_keys(fragment.partition_expression).items()
            if k in (*REQUIRED, *OPTIONAL)
        }
        columns = _check_schema(fragment, constants)
        partitions, offsets = _sort_keys(fragment, constants)
        if _is_sorted(partitions, offsets):
            batches: Iterable[pa.RecordBatch] = fragment.to_batches(
                columns=columns, batch_size=batch_size, batch_readahead=1, fragment_readahead=1
            )
        else:  # this file alone is held in memory and sorted
            order = np.lexsort((offsets, partitions))
            table = fragment.to_table(columns=columns)
            batches = (
                table.take(pa.array(order[i : i + batch_size])).combine_chunks().to_batches()[0]
                for i in range(0, len(order), batch_size)
            )
        for batch in batches:
            yield from _batch_records(batch, constants)
    except InputNotReadable:
        raise
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise InputNotReadable(
            f"parquet input not readable: {fragment.path}: {first_line(exc)}"
        ) from None


def read_records(paths: Iterable[str], *, batch_size: int = BATCH_SIZE) -> Iterator[RawRecord]:
    """Raw records of a Parquet dump in (partition, offset) order, streamed. Returns the records,
    lazily; paths are checked before the first one is returned. Raises InputNotReadable (a missing
    path, a file that is not Parquet, or a required column missing or of the wrong type)."""
    streams = [_fragment_records(f, batch_size) for f in fragments(paths)]
    if len(streams) == 1:
        return streams[0]
    return heapq.merge(*streams, key=lambda r: (r.partition, r.offset))
