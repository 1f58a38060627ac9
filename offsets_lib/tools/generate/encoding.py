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

_SENTINELS = (0x12345678, ~0x12345678)
"""Two numbers whose big-endian bytes differ at every position, as int32 and as int64."""
_UUID_SENTINELS = (
    uuid.UUID(int=0x0123456789ABCDEF0123456789ABCDEF),
    uuid.UUID(int=(1 << 128) - 1 - 0x0123456789ABCDEF0123456789ABCDEF),
)


@dataclass(frozen=True)
class Template:
    """Bytes of one record shape and the (start, width) of each number to fill in."""

    data: bytes
    slots: dict[str, tuple[int, int]]

    def fill(self, **numbers: int) -> bytes:
        """The record with `numbers` (every slot) written big-endian at their places."""
        out = bytearray(self.data)
        for name, (start, width) in self.slots.items():
            out[start : start + width] = numbers[name].to_bytes(width, "big", signed=True)
        return bytes(out)


def template(encode: Callable[[dict], bytes], fields: dict, patched: Sequence[str]) -> Template:
    """Encode `fields` with the wire writer and find where the `patched` fixed-width fields sit.

    The data holds sentinels in the slots: every use fills them all.
    """

    def sentinel(name: str, i: int) -> object:
        return _UUID_SENTINELS[i] if isinstance(fields[name], uuid.UUID) else _SENTINELS[i]

    first = {**fields, **{name: sentinel(name, 0) for name in patched}}
    data = encode(first)
    slots: dict[str, tuple[int, int]] = {}
    for name in patched:
        other = encode({**first, name: sentinel(name, 1)})
        diff = [i for i, (a, b) in enumerate(zip(data, other, strict=True)) if a != b]
        width = diff[-1] - diff[0] + 1 if diff else 0
        if width not in (4, 8, 16) or len(diff) != width:
            raise ValueError(f"{name} is not a fixed-width field of this record")
        slots[name] = (diff[0], width)
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
        start = np.array([t.slots.get(name, (-1, 0))[0] for t in templates], np.int64)
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
