"""What the decision tables are written in: conditions, deadlines and the first row that matches.

Conditions follow SQL's three-valued logic, as semantics.md's tables read (`pc.and_kleene`,
`pc.invert`): a fact that is unknown (null) never makes a row match, and neither does its
negation. A `Deadline` is epoch milliseconds per row, or never.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib.audit.arrays import as_bools

Condition = pa.Array | pa.ChunkedArray  # booleans; null = unknown (does not match)
_INT64_MAX = np.iinfo(np.int64).max


@dataclass(frozen=True)
class Deadline:
    """Epoch milliseconds per row; `valid` False = never (null)."""

    ms: np.ndarray
    valid: np.ndarray

    @classmethod
    def of(cls, column: pa.Array | pa.ChunkedArray) -> Deadline:
        valid = as_bools(pc.is_valid(column))
        return cls(np.asarray(pc.fill_null(column, 0), dtype=np.int64), valid)

    @classmethod
    def never(cls, rows: int) -> Deadline:
        return cls(np.zeros(rows, dtype=np.int64), np.zeros(rows, dtype=bool))

    def plus(self, ms: int) -> Deadline:
        """`try_add`: a deadline past the int64 range is never (null), not an overflow."""
        fits = self.ms <= _INT64_MAX - ms if ms >= 0 else self.ms >= np.iinfo(np.int64).min - ms
        return Deadline(
            np.where(fits & self.valid, self.ms + np.where(fits, ms, 0), 0), self.valid & fits
        )

    def or_else(self, other: Deadline) -> Deadline:
        """`coalesce(self, other)`."""
        return Deadline(np.where(self.valid, self.ms, other.ms), self.valid | other.valid)

    def array(self) -> pa.Array:
        return pa.array(self.ms, pa.int64(), mask=~self.valid)


def all_of(*conditions: Condition) -> Condition:
    return reduce(pc.and_kleene, conditions)


def negate(condition: Condition) -> Condition:
    return pc.invert(condition)


def equals(table: pa.Table, column: str, value: str) -> Condition:
    return pc.equal(table.column(column), value)


def always(table: pa.Table) -> Condition:
    return pa.array(np.ones(table.num_rows, dtype=bool))


def first_match(conditions: Sequence[Condition]) -> np.ndarray:
    """Per row, the index of the first condition that is true (null counts as false); -1 if
    none is."""
    first = np.full(len(conditions[0]) if conditions else 0, -1, dtype=np.int64)
    for index in range(len(conditions) - 1, -1, -1):
        first[as_bools(conditions[index])] = index
    return first


def row_labels(names: Sequence[str | None], chosen: np.ndarray) -> pa.Array:
    """names[chosen] per row, null where chosen is -1 (or the name is None)."""
    return pa.array([*names, None], pa.string()).take(
        pa.array(np.where(chosen < 0, len(names), chosen))
    )
