"""Spark's Murmur3 hash of an int (HashPartitioning's function), to address shuffle tasks.

`repartition(n, col)` sends a row to task `pmod(murmur3(col, seed 42), n)`. Repartitioning by
the audit task number itself would leave Spark tasks empty whenever two audit tasks hash to the
same one; `task_labels(n)` gives, for each audit task, an int label that Spark sends to exactly
that task, so n audit tasks fill n Spark tasks one to one.
"""

from __future__ import annotations

_MASK = 0xFFFFFFFF
_SEED = 42  # org.apache.spark.sql.catalyst.expressions.Murmur3Hash default


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def murmur3_int(value: int, seed: int = _SEED) -> int:
    """Murmur3_x86_32.hashInt as Spark computes `hash(int_column)` (signed 32-bit result)."""
    k1 = (value & _MASK) * 0xCC9E2D51 & _MASK
    k1 = _rotl(k1, 15) * 0x1B873593 & _MASK
    h1 = (seed & _MASK) ^ k1
    h1 = (_rotl(h1, 13) * 5 + 0xE6546B64) & _MASK
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _MASK
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def task_labels(tasks: int) -> list[int]:
    """label[b] = the smallest int that `repartition(tasks, label)` sends to task b."""
    labels: dict[int, int] = {}
    candidate = 0
    while len(labels) < tasks:
        task = murmur3_int(candidate) % tasks  # Python's % is pmod for a positive divisor
        labels.setdefault(task, candidate)
        candidate += 1
    return [labels[b] for b in range(tasks)]
