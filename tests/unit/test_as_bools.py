"""`arrays.as_bools` unpacks Arrow's bits as Arrow's own conversion does, nulls as the default."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from offsets_lib.audit.arrays import as_bools

_VALUES = st.lists(st.one_of(st.none(), st.booleans()), max_size=40)


@settings(max_examples=300)
@given(values=_VALUES, default=st.booleans(), data=st.data())
def test_as_bools_is_fill_null_then_numpy_for_slices_and_chunks(
    values: list, default: bool, data
) -> None:
    whole = pa.array(values, pa.bool_())
    start = data.draw(st.integers(0, len(values)))
    part = whole.slice(start, data.draw(st.integers(0, len(values) - start)))
    cut = data.draw(st.integers(0, len(values)))
    chunked = pa.chunked_array([whole.slice(0, cut), whole.slice(cut)], pa.bool_())
    for array in (whole, part, chunked, pc.is_valid(part), pa.chunked_array([], pa.bool_())):
        expected = np.array([default if v is None else v for v in array.to_pylist()], dtype=bool)
        got = as_bools(array, default)
        assert got.dtype == bool
        np.testing.assert_array_equal(got, expected)
