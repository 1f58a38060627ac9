"""Seeded draws of the generator: Python's `random` for scalars, UUIDs from the seeded stream,
and Kafka's printed form of a UUID. Same seed, same draws."""

from __future__ import annotations

import base64
import bisect
import math
import random
import uuid

import numpy as np


class PyRandom:
    """Scalar draws with Python's `random` (numpy's scalar calls cost ~1 us each)."""

    def __init__(self, seed_words: np.random.SeedSequence) -> None:
        self.r = random.Random(int(seed_words.generate_state(2, np.uint64)[0]))
        self.random = self.r.random

    def integers(self, lo: int, hi: int | None = None) -> int:
        return self.r.randrange(lo, hi) if hi is not None else self.r.randrange(lo)

    def uniform(self, lo: float, hi: float) -> float:
        return self.r.uniform(lo, hi)

    def choice(self, seq: list | tuple):
        return seq[self.r.randrange(len(seq))]

    def poisson(self, lam: float) -> int:
        limit, k, prod = math.exp(-lam), 0, self.r.random()
        while prod > limit:
            k += 1
            prod *= self.r.random()
        return k

    def bytes(self, n: int) -> bytes:
        return self.r.getrandbits(8 * n).to_bytes(n, "big")

    def sample_weighted(self, cdf: list[float], k: int) -> list[int]:
        """k distinct indices drawn with probabilities given by the cumulative `cdf`."""
        out: dict[int, None] = {}
        for _ in range(50 * k):
            if len(out) == k:
                break
            out[min(bisect.bisect_right(cdf, self.r.random() * cdf[-1]), len(cdf) - 1)] = None
        for i in range(len(cdf)):
            if len(out) == k:
                break
            out.setdefault(i, None)
        return list(out)


def new_uuid(rng: PyRandom | np.random.Generator) -> uuid.UUID:
    """A version-4 UUID from the seeded stream (never `uuid.uuid4`: same seed, same ids)."""
    b = bytearray(rng.bytes(16))
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    return uuid.UUID(bytes=bytes(b))


def kafka_id(u: uuid.UUID) -> str:
    """A UUID as Kafka prints it: 22 characters of URL-safe base64, no padding."""
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode()
