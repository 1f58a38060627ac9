"""The layout tables read into Arrow columns over many values at once (numpy cursors, no per-value
Python): what layout_scan's walk checks, this reader also builds.

One generic reader over the same `Field` tables as the codec: integers, strings, bytes, arrays
and structs, classic and flexible encodings. It vouches for a value only where the codec reads
it to the same result: known integer widths, ASCII text, uuids, known tagged fields; anything else
is left to the codec (the callers decode those few values one by one and merge them). Used for
the classic groups' newest GroupMetadata values and the consumer-protocol payloads embedded in
their members, so the group replay builds member rows as columns, and for the consumer groups'
current assignments (uuids as their canonical text).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offsets_lib.wire import api, fastpath
from offsets_lib.wire.codec import plan
from offsets_lib.wire.layout_scan import _MAX_LOOP, _Walker
from offsets_lib.wire.layouts import (
    ASSIGNMENT,
    RECORD_TYPES,
    SUBSCRIPTION,
    Field,
    Message,
    current_value,
)

_INTS = {"int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64()}
_WIDTH = {"int8": 1, "int16": 2, "int32": 4, "int64": 8}


@dataclass
class _Ints:
    values: np.ndarray  # int64
    present: np.ndarray
    type: pa.DataType


@dataclass
class _Blobs:
    start: np.ndarray  # in the reader's byte buffer
    length: np.ndarray
    present: np.ndarray
    is_text: bool


@dataclass
class _Uuids:
    start: np.ndarray  # of the 16 bytes in the reader's byte buffer
    present: np.ndarray


@dataclass
class _Lists:
    counts: np.ndarray  # -1: null
    child: Any  # the elements, row by row


@dataclass
class _Structs:
    fields: dict[str, Any]
    size: int


_Node = _Ints | _Blobs | _Uuids | _Lists | _Structs
Array = np.ndarray  # a cursor's positions, ends or flags, one per value being read
_Read = tuple[np.ndarray, np.ndarray, _Node]  # (positions after, still ok, what was read)


def arrow_type(fields: tuple[Field, ...]) -> pa.StructType:
    """The Arrow struct a table's fields read into (`read_struct`)."""
    return pa.struct([(f.name, _field_type(f)) for f in fields])


def _field_type(f: Field) -> pa.DataType:
    if f.is_array:
        element = arrow_type(f.fields) if f.is_struct else _scalar_type(f.element)
        return pa.list_(element)
    return arrow_type(f.fields) if f.is_struct else _scalar_type(f.type)


def _scalar_type(type_: str) -> pa.DataType:
    if type_ in _INTS:
        return _INTS[type_]
    return {"string": pa.string(), "bytes": pa.binary(), "uuid": pa.string()}.get(type_, pa.null())


def _concat(nodes: list[_Node]) -> _Node:
    """Nodes of one field's shape, one after the other."""
    first = nodes[0]
    if isinstance(first, _Ints):
        return _Ints(
            np.concatenate([n.values for n in nodes]),
            np.concatenate([n.present for n in nodes]),
            first.type,
        )
    if isinstance(first, _Blobs):
        return _Blobs(
            *(
                np.concatenate([getattr(n, a) for n in nodes])
                for a in ("start", "length", "present")
            ),
            first.is_text,
        )
    if isinstance(first, _Uuids):
        starts, present = ([getattr(n, a) for n in nodes] for a in ("start", "present"))
        return _Uuids(np.concatenate(starts), np.concatenate(present))
    if isinstance(first, _Lists):
        return _Lists(np.concatenate([n.counts for n in nodes]), _concat([n.child for n in nodes]))
    return _Structs(
        {name: _concat([n.fields[name] for n in nodes]) for name in first.fields},
        sum(n.size for n in nodes),
    )


def _take(node: _Node, order: np.ndarray) -> _Node:
    """The node's rows in `order`."""
    if isinstance(node, _Ints):
        return _Ints(node.values[order], node.present[order], node.type)
    if isinstance(node, _Blobs):
        return _Blobs(node.start[order], node.length[order], node.present[order], node.is_text)
    if isinstance(node, _Uuids):
        return _Uuids(node.start[order], node.present[order])
    if isinstance(node, _Structs):
        return _Structs({k: _take(v, order) for k, v in node.fields.items()}, len(order))
    sizes = np.maximum(node.counts, 0)
    firsts = np.cumsum(sizes) - sizes
    taken = sizes[order]
    within = np.arange(int(taken.sum())) - np.repeat(np.cumsum(taken) - taken, taken)
    return _Lists(node.counts[order], _take(node.child, np.repeat(firsts[order], taken) + within))


def _cut(data: pa.Buffer, node: _Blobs) -> pa.Array:
    """The node's byte ranges out of `data` (as fastpath.cut_strings, over the one buffer
    shared by every field instead of a copy each; text is ASCII, checked by the walk)."""
    n = len(node.start)
    present = node.present
    starts = np.where(present, node.start, 0)
    if n and (np.diff(starts) < 0).any():  # offsets must ascend: cut in buffer order, put back
        order = np.argsort(starts, kind="stable")
        return _cut(data, _take(node, order)).take(pa.array(np.argsort(order)))
    s = np.where(present, node.start, 0)
    e = np.where(present, node.start + node.length, 0)
    running = np.maximum.accumulate(np.maximum(s, e)) if n else e
    slots = np.empty(2 * n + 2, dtype=np.int64)
    slots[0] = 0
    slots[1 : 2 * n + 1 : 2] = np.where(present, s, running)
    slots[2 : 2 * n + 2 : 2] = np.where(present, e, running)
    slots[-1] = max(data.size, int(slots[-2]) if n else 0)
    big = pa.Array.from_buffers(pa.large_binary(), 2 * n + 1, [None, pa.py_buffer(slots), data])
    taken = big.take(pa.array(np.arange(1, 2 * n, 2), mask=~present)).cast(pa.binary())
    return taken.view(pa.string()) if node.is_text else taken


def _to_arrow(node: _Node, data: pa.Buffer) -> pa.Array:
    if isinstance(node, _Ints):
        return pa.array(node.values, mask=~node.present).cast(node.type)
    if isinstance(node, _Blobs):
        return _cut(data, node)
    if isinstance(node, _Uuids):
        return fastpath.uuid_strings(np.frombuffer(data, np.uint8), node.start, node.present)
    if isinstance(node, _Lists):
        sizes = np.maximum(node.counts, 0)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)
        return pa.ListArray.from_arrays(
            pa.array(offsets), _to_arrow(node.child, data), mask=pa.array(node.counts < 0)
        )
    names = list(node.fields)
    return pa.StructArray.from_arrays([_to_arrow(node.fields[k], data) for k in names], names)


def _default(f: Field, n: int) -> _Node:
    """`n` rows of the field's default (an absent or untagged field, as the codec gives it)."""
    value = f.default_value()
    if f.is_array:
        return _Lists(np.full(n, 0 if value is not None else -1), _empty(f))
    if f.is_struct:
        return _Structs({g.name: _default(g, n) for g in f.fields}, n)
    if f.type in _INTS:
        return _Ints(np.full(n, value or 0), np.full(n, value is not None), _INTS[f.type])
    return _Blobs(np.zeros(n, np.int64), np.zeros(n, np.int64), np.full(n, value is not None),
                  f.type == "string")  # fmt: skip


def _empty(f: Field) -> _Node:
    """No elements of an array field."""
    if f.is_struct:
        return _Structs({g.name: _default(g, 0) for g in f.fields}, 0)
    if f.element in _INTS:
        return _Ints(np.zeros(0, np.int64), np.zeros(0, bool), _INTS[f.element])
    if f.element == "uuid":
        return _Uuids(np.zeros(0, np.int64), np.zeros(0, bool))
    return _Blobs(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool),
                  f.element == "string")  # fmt: skip


class _Reader:
    """Cursors over one padded byte buffer that build the values they pass."""

    def __init__(self, data: np.ndarray) -> None:
        self.data = data
        self.walker = _Walker(data)

    def struct(
        self, fields: tuple[Field, ...], version: int, flexible: bool, pos: Array, end: Array,
        ok: Array,
    ) -> _Read:  # fmt: skip
        positional, tagged, _ = plan(fields, version, flexible)
        read: dict[str, _Node] = {}
        for f in positional:
            pos, ok, read[f.name] = self.field(f, version, flexible, pos, end, ok)
        n = len(pos)
        if flexible:
            pos, ok = self.tagged_section(tagged, version, pos, end, ok, read)
        if any(f.type == "uuid" and f.name not in read for f in fields):  # the codec's default
            ok = np.zeros(n, bool)
        nodes = {f.name: read[f.name] if f.name in read else _default(f, n) for f in fields}
        return pos, ok, _Structs(nodes, n)

    def tagged_section(
        self, known: dict[int, Field], version: int, pos: Array, end: Array, ok: Array,
        read: dict[str, _Node],
    ) -> tuple[Array, Array]:  # fmt: skip
        """The known tagged fields into `read` (each known tag at most once per value, its
        payload read to the last byte; anything else is the codec's)."""
        walker = self.walker
        count, pos, ok = walker.uvarint(pos, end, ok & (pos < end))
        ok = ok & (count <= len(known))  # each known tag at most once
        count = np.where(ok, count, 0)
        hits: dict[int, list[tuple[np.ndarray, _Node]]] = {tag: [] for tag in known}
        last = np.full(len(pos), -1, np.int64)
        for k in range(int(count.max()) if len(count) else 0):
            live = np.flatnonzero(ok & (count > k))
            tag, at, fits = walker.uvarint(pos[live], end[live], ok[live])
            size, at, fits = walker.uvarint(at, end[live], fits)
            # tags ascending, each once (else the codec's)
            fits &= (size <= end[live] - at) & fastpath.is_one_of(tag, known) & (tag > last[live])
            last[live] = tag
            for tag_id, f in known.items():
                here = np.flatnonzero(fits & (tag == tag_id))
                rows = live[here]
                stop = at[here] + size[here]
                after, good, node = self.field(f, version, True, at[here], stop, fits[here])
                fits[here] = good & (after == stop)
                hits[tag_id].append((rows, node))
            ok[live] = fits
            pos[live] = at + size
        for tag_id, f in known.items():
            found = np.concatenate([rows for rows, _ in hits[tag_id]] or [np.zeros(0, np.int64)])
            if not len(found):
                continue
            absent = np.ones(len(pos), dtype=bool)  # (np.setdiff1d sorts and hashes: 4x slower)
            absent[found] = False
            others = np.flatnonzero(absent)
            nodes = [_default(f, len(others)), *(node for _, node in hits[tag_id])]
            order = np.argsort(np.concatenate([others, found]), kind="stable")
            read[f.name] = _take(_concat(nodes), order)
        return pos, ok

    def field(
        self, f: Field, version: int, flexible: bool, pos: Array, end: Array, ok: Array
    ) -> _Read:
        if f.is_array:
            return self.array(f, version, flexible, pos, end, ok)
        if f.is_struct:  # a nullable struct: the codec's
            return pos, np.zeros(len(pos), bool), _default(f, len(pos))
        return self.scalar(f, f.type, version, flexible, pos, end, ok)

    def scalar(
        self, f: Field, type_: str, version: int, flexible: bool, pos: Array, end: Array,
        ok: Array,
    ) -> _Read:  # fmt: skip
        if type_ in _INTS:
            width = _WIDTH[type_]
            values = fastpath.be_ints(self.data, pos, width)
            return pos + width, ok & (end - pos >= width), _Ints(values, ok.copy(), _INTS[type_])
        if type_ == "uuid":  # as its canonical text
            fits = ok & (end - pos >= 16)
            return pos + 16, fits, _Uuids(pos, fits)
        if type_ not in ("string", "bytes"):  # bool, ...: the codec's
            return pos, np.zeros(len(pos), bool), _Blobs(pos, pos * 0, ok & False, False)
        text = type_ == "string"
        n, present, pos, ok = self.walker.length(f, version, flexible, 2 if text else 4, pos,
                                                 end, ok)  # fmt: skip
        ok = ok & (n <= end - pos)
        if text:
            ok = ok & self.walker.is_ascii(pos, pos + n)
        node = _Blobs(pos, n, present & ok, text)
        return np.where(ok, pos + n, pos), ok, node

    def array(
        self, f: Field, version: int, flexible: bool, pos: Array, end: Array, ok: Array
    ) -> _Read:
        n, present, pos, ok = self.walker.length(f, version, flexible, 4, pos, end, ok)
        elem = f.element
        width = _WIDTH.get(elem, 1)
        ok = ok & (n * width <= end - pos) & (f.is_struct or elem in _INTS or n <= _MAX_LOOP)
        n = np.where(ok, n, 0)
        counts = np.where(present & ok, n, -1)
        firsts = np.cumsum(n) - n
        if elem in _INTS and not f.is_struct:  # every element at once
            owner = np.repeat(np.arange(len(n)), n)
            at = pos[owner] + (np.arange(int(n.sum())) - firsts[owner]) * width
            values = fastpath.be_ints(self.data, at, width)
            return pos + n * width, ok, _Lists(counts, _Ints(values, np.ones(len(at), bool),
                                                             _INTS[elem]))  # fmt: skip
        pos, ok = pos.copy(), ok.copy()
        steps: list[_Node] = []
        slots: list[np.ndarray] = []
        for j in range(int(n.max()) if len(n) else 0):  # element j of every array that has one
            rows = np.flatnonzero(n > j)
            if f.is_struct:
                p, o, node = self.struct(f.fields, version, flexible, pos[rows], end[rows],
                                         ok[rows])  # fmt: skip
            else:
                p, o, node = self.scalar(f, elem, version, flexible, pos[rows], end[rows],
                                         ok[rows])  # fmt: skip
            pos[rows], ok[rows] = p, o
            steps.append(node)
            slots.append(firsts[rows] + j)
        if not steps:
            return pos, ok, _Lists(counts, _empty(f))
        child = _take(_concat(steps), np.argsort(np.concatenate(slots), kind="stable"))
        return pos, ok, _Lists(counts, child)


def read_struct(
    fields: tuple[Field, ...],
    version: int,
    flexible: bool,
    values: fastpath.RowBytes,
    rows: np.ndarray,
    *,
    skip: int = 0,
    exact: bool = True,
) -> tuple[np.ndarray, pa.StructArray]:
    """The struct `fields` (at `version`) that each of `values`' `rows` holds after `skip` bytes.

    Returns which rows it vouches for (the struct fits, to the last byte with `exact`, else
    within the value), and their values as `arrow_type(fields)` (only the vouched rows mean
    anything)."""
    data = values.data
    start = values.start[rows] + skip
    end = values.start[rows] + values.length[rows]
    ok = values.is_valid[rows] & (values.length[rows] >= skip)
    pos, ok, node = _Reader(data).struct(fields, version, flexible, start, end, ok)
    ok = ok & ((pos == end) if exact else (pos <= end))
    return ok, _to_arrow(node, pa.py_buffer(data)).cast(arrow_type(fields))


def read_message(
    message: Message, values: fastpath.RowBytes, *, exact: bool = True
) -> tuple[np.ndarray, pa.Array, np.ndarray]:
    """Each value of `message` (an int16 version, then that version's struct) -> (vouched,
    an `arrow_type(message.fields)` array, null where not vouched, the versions)."""
    n = len(values.start)
    version = fastpath.be_ints(values.data, values.start, 2)
    readable = values.is_valid & (values.length >= 2) & (version >= 0)
    hi = message.valid[1]
    layout = np.where(message.clamp_newer & (hi is not None), np.minimum(version, hi or 0), version)
    ok = np.zeros(n, bool)
    parts: list[pa.Array] = []
    part_rows: list[np.ndarray] = []
    for v in sorted(set(layout[readable].tolist())):
        if not message.accepts(v):
            continue
        rows = np.flatnonzero(readable & (layout == v))
        vouched, read = read_struct(
            message.fields, v, message.is_flexible(v), values, rows, skip=2, exact=exact
        )
        ok[rows] = vouched
        parts.append(read)
        part_rows.append(rows)
    where = np.full(n, -1, np.int64)
    if parts:
        concatenated = np.concatenate(part_rows)
        where[concatenated] = np.arange(len(concatenated))
    stacked = pa.concat_arrays(parts) if parts else pa.array([], arrow_type(message.fields))
    taken = stacked.take(pa.array(np.maximum(where, 0), mask=~ok)) if len(stacked) else None
    out = taken if taken is not None else pa.nulls(n, arrow_type(message.fields))
    return ok, out, version


SUBSCRIBED_TOPICS = pa.list_(pa.string())
ASSIGNED = arrow_type(ASSIGNMENT.fields).field("AssignedPartitions").type


def subscription_topic_lists(raw: pa.Array) -> pa.Array:
    """`api.subscription_topics` of every ConsumerProtocolSubscription in `raw` (binary): the
    topic list (version 0's prefix), null where it does not parse."""
    values = fastpath.array_bytes(raw)
    version = fastpath.be_ints(values.data, values.start, 2)
    readable = np.flatnonzero(values.is_valid & (values.length >= 2) & (version >= 0))
    topics = SUBSCRIPTION.fields[:1]
    ok, read = read_struct(topics, 0, False, values, readable, skip=2, exact=False)
    lists = read.field(0)
    return _merged(raw, readable[ok], lists.filter(pa.array(ok)), api.subscription_topics,
                   SUBSCRIBED_TOPICS)  # fmt: skip


def assignment_lists(raw: pa.Array) -> pa.Array:
    """The AssignedPartitions of every ConsumerProtocolAssignment in `raw` (binary): null where
    it is empty, null or does not decode (`api.decode_assignment` reports an error)."""
    ok, read, _ = read_message(ASSIGNMENT, fastpath.array_bytes(raw), exact=False)
    rows = np.flatnonzero(ok)
    assigned = read.field("AssignedPartitions").filter(pa.array(ok))
    return _merged(raw, rows, assigned, _assigned_partitions, ASSIGNED)


def _assigned_partitions(data: bytes) -> list[dict[str, Any]] | None:
    decoded = api.decode_assignment(data)
    return None if decoded.get("error") else decoded.get("AssignedPartitions")


def _merged(
    raw: pa.Array,
    rows: np.ndarray,
    read: pa.Array,
    one_by_one: Callable[[bytes], Any],
    type_: pa.DataType,
) -> pa.Array:
    """`read` (the values of `rows`) with every other non-empty value of `raw` decoded one by
    one (`one_by_one`, None for a value that does not parse), in `raw`'s order."""
    n = len(raw)
    vouched = np.zeros(n, bool)
    vouched[rows] = True
    present = np.asarray(pc.fill_null(pc.binary_length(raw), 0)) > 0
    others = np.flatnonzero(present & ~vouched)
    decoded = [one_by_one(v) for v in raw.take(pa.array(others)).to_pylist()]
    merged = pa.concat_arrays([read.cast(type_), pa.array(decoded, type_)])
    where = np.full(n, -1, np.int64)
    where[rows] = np.arange(len(rows))
    where[others] = len(rows) + np.arange(len(others))
    return merged.take(pa.array(np.maximum(where, 0), mask=where < 0))


def record_values(record_type: int, values: fastpath.RowBytes) -> tuple[pa.Array, pa.Array]:
    """The values of records of `record_type` (a row per value; none a tombstone) in its current
    layout's Arrow type, and their schema versions: read here where vouched for, the rest
    decoded one by one by the codec (`api.decode_value`), whose dicts Arrow converts."""
    message = current_value(RECORD_TYPES[record_type])
    ok, read, version = read_message(message, values)
    others = np.flatnonzero(~ok)
    decoded = [
        api.decode_value(record_type, values.data[s : s + n].tobytes())
        for s, n in zip(values.start[others].tolist(), values.length[others].tolist(), strict=True)
    ]
    type_ = arrow_type(message.fields)
    merged = pa.concat_arrays(
        [read.filter(pa.array(ok)), pa.array([_text_uuids(d.fields) for d in decoded], type_)]
    )
    where = np.empty(len(ok), np.int64)
    where[np.flatnonzero(ok)] = np.arange(int(ok.sum()))
    where[others] = int(ok.sum()) + np.arange(len(others))
    versions = version.copy()
    versions[others] = [-1 if d.version is None else d.version for d in decoded]
    return merged.take(pa.array(where)), pa.array(versions, pa.int16())


def _text_uuids(value: Any) -> Any:
    """The codec's value with its uuids as their canonical text, as this reader gives them."""
    if isinstance(value, dict):
        return {name: _text_uuids(v) for name, v in value.items()}
    if isinstance(value, list):
        return [_text_uuids(v) for v in value] if value and not isinstance(value[0], int) else value
    return str(value) if isinstance(value, uuid.UUID) else value
