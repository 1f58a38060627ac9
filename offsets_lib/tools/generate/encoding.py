"""Record bytes of a dump, written by `wire`'s own writer (no second encoder to keep equal).

Records that repeat with only numbers changed (epochs of a metadata refresh, a subscription's
generation, the million offset commits of the bulk) are encoded once per shape by the wire
writer as a `Template`; the writer itself shows where each number sits (encode twice with two
sentinels, the bytes that differ are the field), and the numbers are written there.

Why templates and not one `wire.encode_value` call per record (measured on this 2-core machine,
idle): the wire writer takes ~12 us per offset key and ~30 us per offset-commit value or
subscription, so encoding the 1M rows of `offsets generate --records 1000000` one by one would
add ~40 s to a run of ~5 s; `fill_column` writes the same bytes for 1M values in ~0.4 s.
The group-level records (~2% of a dump) go through the writer one by one (GroupMetadataValue
too: a template per membership was measured slower, most memberships are seen once); that
costs ~3 s of CPU per 1M records over the former hand-written encoders (8.1 s vs 4.9 s).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from offsets_lib import wire

_SENTINELS = {4: 0x2C3D4E50, 8: 0x1A2B3C4D5E6F7080, 16: 0xF1E2D3C4B5A6978877665544332211A0}
"""Per width, a number whose big-endian bytes are non-zero and appear in no other width's
pattern; field i of a template gets sentinel + i, so no two fields share a pattern."""


@dataclass(frozen=True)
class Template:
    """Bytes of one record shape and the (start, width) of each number to fill in."""

    data: bytes
    slots: dict[str, tuple[int, int]]

    def fill(self, **numbers: int) -> bytes:
        """The record with `numbers` (every slot; extra names ignored) written big-endian."""
        out = bytearray(self.data)
        for name, (start, width) in self.slots.items():
            out[start : start + width] = numbers[name].to_bytes(width, "big", signed=True)
        return bytes(out)


def template(encode: Callable[[dict], bytes], fields: dict, patched: dict[str, int]) -> Template:
    """Encode `fields` with the wire writer and find where the `patched` fields sit.

    One encoding with a distinct sentinel in each patched field: a fixed-width field is its
    big-endian bytes, so where that pattern occurs exactly once, there is the field (a pattern
    found zero or several times is an error). The data keeps the sentinels: every use fills every
    slot.

    Args:
        encode: the wire writer for this record shape.
        fields: the record's fields.
        patched: each fixed-width field's width in bytes (4 int32, 8 int64, 16 uuid).
    """
    sentinel = {name: _SENTINELS[width] + i for i, (name, width) in enumerate(patched.items())}
    values = {
        name: uuid.UUID(int=sentinel[name]) if width == 16 else sentinel[name]
        for name, width in patched.items()
    }
    data = encode({**fields, **values})
    slots: dict[str, tuple[int, int]] = {}
    for name, width in patched.items():
        pattern = sentinel[name].to_bytes(width, "big")
        start = data.find(pattern)
        if start < 0 or data.find(pattern, start + 1) >= 0:
            raise ValueError(f"{name} is not a {width}-byte field of this record (once)")
        slots[name] = (start, width)
    return Template(data, slots)


def fill_column(
    templates: Sequence[Template], shape: np.ndarray, numbers: dict[str, np.ndarray]
) -> pa.Array:
    """Binary column whose row i is `templates[shape[i]]` with `numbers[name][i]` in each slot
    (uuid slots take an (n, 16) uint8 array; a template without a slot leaves that number out).
    """
    n = len(shape)
    pool = pa.array([t.data for t in templates], pa.binary())
    column = pool.take(pa.array(shape.astype(np.int32, copy=False)))
    _, offsets_buf, data_buf = column.buffers()
    offsets = np.frombuffer(offsets_buf, np.int32, count=n + 1, offset=4 * column.offset)
    data = np.frombuffer(data_buf, np.uint8).copy()
    for name, values in numbers.items():
        start = np.array([t.slots[name][0] if name in t.slots else -1 for t in templates])
        (width,) = {t.slots[name][1] for t in templates if name in t.slots}
        row_start = start[shape]
        rows = np.flatnonzero(row_start >= 0)
        at = offsets[rows].astype(np.int64) + row_start[rows]
        if values.ndim == 2:
            raw = values[rows]
        else:
            raw = values[rows].astype(f">i{width}").view(np.uint8).reshape(-1, width)
        for j in range(width):  # byte by byte: 8 flat scatters beat one 2-D fancy index
            data[at + j] = raw[:, j]
    return pa.Array.from_buffers(
        pa.binary(), n, [None, offsets_buf, pa.py_buffer(data)], offset=column.offset
    )


def with_raw_string(encode: Callable[[dict], bytes], fields: dict, name: str, raw: bytes) -> bytes:
    """The record with `raw` bytes (e.g. invalid UTF-8) as its string field `name`.

    The writer refuses invalid UTF-8, so it writes two placeholders of raw's length; the bytes
    where they differ are the string, replaced by `raw`.
    """
    a = encode({**fields, name: "a" * len(raw)})
    b = encode({**fields, name: "b" * len(raw)})
    diff = np.flatnonzero(np.frombuffer(a, np.uint8) != np.frombuffer(b, np.uint8)).tolist()
    if len(diff) != len(raw) or diff[-1] - diff[0] + 1 != len(raw):
        raise ValueError(f"{name} is not a string field of this record")
    return a[: diff[0]] + raw + a[diff[-1] + 1 :]


# ---- group-level values ------------------------------------------------------------------

MEMBER_EPOCHS = ("MemberEpoch", "PreviousMemberEpoch")


def epochs_template(record_type: int, fields: dict, *epochs: str) -> Template:
    """A value (version 0) whose int32 epochs are filled in per record (metadata refreshes).

    Args:
        record_type: the record's type (its key's version).
        fields: the value's fields; the epochs' values here are ignored.
        epochs: the names of the int32 fields filled in per record.

    Returns:
        The template; ``fill(**epochs)`` gives the record's bytes.
    """
    patched = dict.fromkeys(epochs, 4)
    return template(lambda f: wire.encode_value(record_type, 0, f), fields, patched)


@functools.lru_cache(maxsize=1 << 16)
def _subscription(
    version: int, topics: tuple[str, ...], owned: tuple, rack: str | None
) -> Template:
    fields = {
        "Topics": list(topics),
        "UserData": None,
        "OwnedPartitions": [{"Topic": t, "Partitions": list(ps)} for t, ps in owned],
        "GenerationId": 0,
        "RackId": rack,
    }
    patched = {"GenerationId": 4} if version >= 2 else {}
    return template(lambda f: wire.encode_subscription(version, f), fields, patched)


def subscription(
    version: int,
    topics: tuple[str, ...],
    owned: tuple[tuple[str, tuple[int, ...]], ...],
    generation: int,
    rack: str | None,
) -> bytes:
    """ConsumerProtocolSubscription (UserData null); one template per content, the generation
    filled in (it changes at every rebalance, the rest rarely).

    Args:
        version: the subscription's version.
        topics: the subscribed topics.
        owned: (topic, partitions) owned (v1+).
        generation: the generation (v2+).
        rack: the rack id (v3+), or None.
    """
    return _subscription(version, topics, owned, rack).fill(GenerationId=generation)


@functools.lru_cache(maxsize=1 << 16)
def assignment(version: int, assigned: tuple[tuple[str, tuple[int, ...]], ...]) -> bytes:
    """ConsumerProtocolAssignment (UserData null), cached by content."""
    partitions = [{"Topic": t, "Partitions": list(ps)} for t, ps in assigned]
    return wire.encode_assignment(version, {"AssignedPartitions": partitions, "UserData": None})


def group_metadata(
    protocol_type: str,
    generation: int,
    protocol: str | None,
    leader: str | None,
    state_ts: int,
    members: list[dict],
) -> bytes:
    """GroupMetadataValue v3 (members as the layout's MemberMetadata dicts)."""
    fields = {
        "protocolType": protocol_type,
        "generation": generation,
        "protocol": protocol,
        "leader": leader,
        "currentStateTimestamp": state_ts,
        "members": members,
    }
    return wire.encode_value(2, 3, fields)
