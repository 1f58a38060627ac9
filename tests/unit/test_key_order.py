"""arrays.in_key_order: the rows by key then log offset, as np.lexsort orders them; and
arrays.stable_order: the rows by key, ties in row order, as numpy's stable argsort orders them."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from offsets_lib.audit.arrays import in_key_order, stable_order


@settings(max_examples=300)
@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4)), max_size=60),
    st.sampled_from([1, 2**16 - 3, 2**20]),  # codes in one 16-bit half, or in both
    st.booleans(),
)
def test_rows_come_by_key_then_offset_ties_in_row_order(
    rows: list[tuple[int, int]], spread: int, in_log_order: bool
) -> None:
    codes = np.array([c * spread for c, _ in rows], dtype=np.int64)
    offsets = np.array([o for _, o in rows], dtype=np.int64)
    if in_log_order:  # each key's offsets ascending in row order, as a Kafka read brings them
        offsets = np.arange(len(rows), dtype=np.int64) // 2
    assert in_key_order(codes, offsets).tolist() == np.lexsort((offsets, codes)).tolist()


def test_codes_beyond_32_bits_are_ordered_too() -> None:
    codes = np.array([2**40, 3, 2**40, 3], dtype=np.int64)
    offsets = np.array([5, 9, 1, 2], dtype=np.int64)
    assert in_key_order(codes, offsets).tolist() == [3, 1, 2, 0]


@settings(max_examples=300)
@given(
    st.lists(st.integers(-3, 3), max_size=80),
    st.sampled_from([1, 2**20, 2**40, 2**61]),  # packed with the positions, or too wide for that
)
def test_stable_order_is_the_stable_argsort(keys: list[int], spread: int) -> None:
    values = np.array([k * spread for k in keys], dtype=np.int64)
    assert stable_order(values).tolist() == np.argsort(values, kind="stable").tolist()
