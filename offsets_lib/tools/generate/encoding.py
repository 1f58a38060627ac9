"""Record bytes of a dump, written by `wire`'s own writer (no second encoder to keep equal).

Records that repeat with only numbers changed (epochs of a metadata refresh, a subscription's
generation, the million offset commits of the bulk) are encoded once per shape by the wire
writer as a `Template`; the writer itself shows where each number sits (encode twice with two
sentinels, the bytes that differ are the field), and the numbers are written there.

Why templates and not one `wire.encode_value` call per record (measured on this machine):
the wire writer takes ~12 us per offset key and ~30 us per offset-commit value or subscription,
so encoding the 1M rows of `offsets generate --records 1000000` one by one would add ~40 s to a
run of ~5 s; `fill_column` writes the same bytes for the whole bulk in ~0.1 s with numpy.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

_SENTINEL = 0x12345600
"""Field i gets `_SENTINEL + i` in one encoding and its complement in the other: every byte of
every slot differs between the two (as int32 and as int64), and the bytes name the field."""
_UUID_SENTINEL = 0x0123456789ABCDEF0123456789AB0000


@dataclass(frozen=True)
class Template:
    """Bytes of one record shape and, per number to fill in, its start(s) and width."""

    data: bytes
    slots: dict[str, tuple[tuple[int, ...], int]]

    def fill(self, **numbers: int) -> bytes:
        """The record with `numbers` (one per slot name) written big-endian at their places."""
        out = bytearray(self.data)
        for name, (starts, width) in self.slots.items():
            raw = numbers[name].to_bytes(width, "big", signed=True)
            for start in starts:
                out[start : start + width] = raw
        return bytes(out)


def template(encode: Callable[[dict], bytes], fields: dict, patched: Sequence[str]) -> Template:
    """Encode `fields` with the wire writer and find where the `patched` fixed-width fields sit.

    Two encodings: every patched field i holds `_SENTINEL + i` in one and its bitwise
    complement in the other. The bytes that differ are exactly the slots (checked), and the
    sentinel's bytes tell which field each slot is. A field may sit at several places (the
    same number nested in every member) and `encode` may place it anywhere. The data holds
    sentinels in the slots: every use fills them all.
    """
    is_uuid = {name: isinstance(fields[name], uuid.UUID) for name in patched}

    def sentinels(flip: bool) -> dict:
        out = {}
        for i, name in enumerate(patched):
            if is_uuid[name]:
                n = _UUID_SENTINEL + i
                out[name] = uuid.UUID(int=(1 << 128) - 1 - n if flip else n)
            else:
                out[name] = ~(_SENTINEL + i) if flip else _SENTINEL + i
        return out

    data = encode({**fields, **sentinels(False)})
    other = encode({**fields, **sentinels(True)})
    if len(data) != len(other):
        raise ValueError(f"{list(patched)} are not all fixed-width fields of this record")
    slots: dict[str, tuple[tuple[int, ...], int]] = {}
    covered: set[int] = set()
    for i, name in enumerate(patched):
        widths = (16,) if is_uuid[name] else (8, 4)
        for width in widths:
            if is_uuid[name]:
                n = _UUID_SENTINEL + i
                a, b = n.to_bytes(16, "big"), ((1 << 128) - 1 - n).to_bytes(16, "big")
            else:
                n = _SENTINEL + i
                a, b = (
                    n.to_bytes(width, "big", signed=True),
                    (~n).to_bytes(width, "big", signed=True),
                )
            starts = []
            at = data.find(a)
            while at >= 0:
                if other[at : at + width] == b and at not in covered:
                    starts.append(at)
                at = data.find(a, at + 1)
            if starts:
                slots[name] = (tuple(starts), width)
                for start in starts:
                    covered.update(range(start, start + width))
                break
    diff = {i for i, (x, y) in enumerate(zip(data, other, strict=True)) if x != y}
    if diff != covered or len(slots) != len(patched):
        raise ValueError(f"{list(patched)} are not all fixed-width fields of this record")
    return Template(data, slots)


def fill_column(
    templates: Sequence[Template], shape: np.ndarray, numbers: dict[str, np.ndarray]
) -> pa.Array:
    """Binary column whose row i is `templates[shape[i]]` with `numbers[name][i]` in each slot.

    A template without a slot for `name` leaves that number out; uuid slots take rows of 16
    bytes (an (n, 16) uint8 array).
    """
    n = len(shape)
    pool = pa.array([t.data for t in templates], pa.binary())
    column = pool.take(pa.array(shape.astype(np.int32, copy=False)))
    _, offsets_buf, data_buf = column.buffers()
    offsets = np.frombuffer(offsets_buf, np.int32, count=n + 1, offset=4 * column.offset)
    data = np.frombuffer(data_buf, np.uint8).copy()
    for name, values in numbers.items():
        start = np.array([t.slots[name][0][0] if name in t.slots else -1 for t in templates])
        (width,) = {t.slots[name][1] for t in templates if name in t.slots}
        row_start = start[shape]
        rows = np.flatnonzero(row_start >= 0)
        at = offsets[rows].astype(np.int64) + row_start[rows]
        if values.ndim == 2:
            raw = values[rows]
        else:
            raw = values[rows].astype(f">i{width}").view(np.uint8).reshape(-1, width)
        data[at[:, None] + np.arange(width)] = raw
    return pa.Array.from_buffers(
        pa.binary(), n, [None, offsets_buf, pa.py_buffer(data.tobytes())], offset=column.offset
    )


def with_raw_string(encode: Callable[[dict], bytes], fields: dict, name: str, raw: bytes) -> bytes:
    """The record with `raw` bytes (e.g. invalid UTF-8) as its string field `name`.

    The writer refuses invalid UTF-8, so it writes two placeholders of raw's length; the bytes
    where they differ are the string, replaced by `raw`.
    """
    a = encode({**fields, name: "a" * len(raw)})
    b = encode({**fields, name: "b" * len(raw)})
    diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    if len(diff) != len(raw) or diff[-1] - diff[0] + 1 != len(raw):
        raise ValueError(f"{name} is not a string field of this record")
    return a[: diff[0]] + raw + a[diff[-1] + 1 :]
