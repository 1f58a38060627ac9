"""Numpy views of Arrow columns, and group keys, shared by the audit's per-task steps."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def as_bools(array: pa.Array | pa.ChunkedArray, default: bool = False) -> np.ndarray:
    return np.asarray(pc.fill_null(array, default), dtype=bool)


def as_ints(array: pa.Array | pa.ChunkedArray, fill: int) -> np.ndarray:
    return np.asarray(pc.fill_null(array, fill), dtype=np.int64)


def group_codes(partition: pa.Array, group: pa.Array) -> np.ndarray:
    """Dense codes of (log_partition, group_id); null group ids get their own code."""
    joined = key_strings(partition, group)
    if isinstance(joined, pa.ChunkedArray):
        joined = joined.combine_chunks()
    return np.asarray(pc.dictionary_encode(joined).indices, dtype=np.int64)


def key_strings(partition: pa.Array | pa.ChunkedArray, group: pa.Array | pa.ChunkedArray):
    return pc.binary_join_element_wise(
        pc.cast(partition, pa.string()), pc.fill_null(group, "\x01<null>"), "\x00"
    )
