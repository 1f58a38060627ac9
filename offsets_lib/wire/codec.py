"""The one generic `Reader` and the one generic `Writer`, driven by the layout tables.

Encodings follow records.md section 3: big-endian fixed-width numbers, classic (int16/int32
length, -1 = null) or flexible (uvarint N+1, 0 = null) variable-length types, and a tagged-field
section after every struct in flexible versions. The reader never trusts a length or count
it has not checked against the bytes that are left, so hostile input cannot allocate memory.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from offsets_lib.wire.layout_types import FIXED_WIDTH, Field

_FIXED = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"),
    "int64": struct.Struct(">q"),
    "bool": struct.Struct(">?"),
}
_INT16 = _FIXED["int16"]
_INT32 = _FIXED["int32"]
_MAX_UVARINT = 0xFFFFFFFF


class DecodeError(Exception):
    """Malformed bytes; raised inside the reader only, turned into an error string outside."""


# DEC-LIMIT: the generated readers of Kafka 4.2.2+, 4.3.2+ and 4.4.0 refuse these counts (the
# load of the offsets partition fails); older releases read what the bytes hold.
MAX_TAGGED_FIELDS = 10_000
MAX_ARRAY_ELEMENTS = 1_000_000
JAVA_NEGATIVE_COUNT = 2**31
"""A uvarint count from here on is negative as Java's int (`readUnsignedVarint`)."""
TAGGED_FIELD_COUNT_NEGATIVE = "TAGGED_FIELD_COUNT_NEGATIVE"
TAGGED_FIELD_COUNT_OVER_REMAINING_BYTES = "TAGGED_FIELD_COUNT_OVER_REMAINING_BYTES"
TAGGED_FIELD_COUNT_OVER_10000 = "TAGGED_FIELD_COUNT_OVER_10000"
ARRAY_OVER_1000000_ELEMENTS = "ARRAY_OVER_1000000_ELEMENTS"
READER_LIMIT_CHECKS = (
    TAGGED_FIELD_COUNT_NEGATIVE,
    TAGGED_FIELD_COUNT_OVER_REMAINING_BYTES,
    TAGGED_FIELD_COUNT_OVER_10000,
    ARRAY_OVER_1000000_ELEMENTS,
)


def exceeds_reader_limits(count: Any, remaining: Any = None) -> Any:
    """DEC-LIMIT, the one predicate: a tagged-field count (with the bytes left after it) or,
    without `remaining`, an array's element count that 4.2.2+/4.3.2+/4.4.0 refuse. Works on
    ints and on numpy arrays of counts (the vectorized walk)."""
    if remaining is None:
        return count > MAX_ARRAY_ELEMENTS
    return (count >= JAVA_NEGATIVE_COUNT) | (count > remaining) | (count > MAX_TAGGED_FIELDS)


def reader_limit(count: int, remaining: int | None, what: str) -> str:
    """The `reader_limit` text of a count `exceeds_reader_limits` holds for: 'CHECK: detail',
    the check in Kafka's order (negative, over the bytes left, over 10,000)."""
    if remaining is None:
        return f"{ARRAY_OVER_1000000_ELEMENTS}: {count} elements in {what}"
    if count >= JAVA_NEGATIVE_COUNT:
        return f"{TAGGED_FIELD_COUNT_NEGATIVE}: tagged-field count {count - 2**32} in {what}"
    if count > remaining:
        return (
            f"{TAGGED_FIELD_COUNT_OVER_REMAINING_BYTES}: tagged-field count {count} in {what}, "
            f"{remaining} bytes left"
        )
    return f"{TAGGED_FIELD_COUNT_OVER_10000}: tagged-field count {count} in {what}"


class ReaderLimitExceeded(Exception):
    """A compiled reader met a count `exceeds_reader_limits` holds for: the caller reads the
    record with the generic `Reader`, which notes the check (rare: hostile input only)."""


class EncodeError(ValueError):
    """Values that cannot be written with the requested layout (caller bug, not data)."""


# A struct plan: (positional fields, tagged fields by tag, all fields) for one version/encoding.
_Plan = tuple[tuple[Field, ...], dict[int, Field], tuple[Field, ...]]
_PLANS: dict[tuple[int, int, bool], _Plan] = {}


def plan(fields: tuple[Field, ...], version: int, flexible: bool) -> _Plan:
    """Positional and tagged fields of a struct at one version (cached by table identity)."""
    key = (id(fields), version, flexible)
    cached = _PLANS.get(key)
    if cached is None:
        present = [f for f in fields if f.present_in(version)]
        tagged = {f.tag: f for f in present if flexible and f.tagged_in(version)}
        positional = tuple(f for f in present if not (flexible and f.tagged_in(version)))
        cached = (positional, tagged, fields)
        _PLANS[key] = cached
    return cached


def read_uvarint(buf: bytes | memoryview, pos: int, end: int, what: str) -> tuple[int, int]:
    """Unsigned LEB128 varint at `pos`, at most 5 bytes (a 32-bit value): (value, new position).

    The one scalar reader of Kafka's uvarints (the compiled readers call it for values past the
    one-byte case they inline)."""
    start = pos
    value = 0
    for i in range(5):
        if pos >= end:
            raise DecodeError(f"truncated: uvarint of {what} at byte {start}, {i} bytes read")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            if value > _MAX_UVARINT:
                raise DecodeError(f"uvarint of {what} exceeds 32 bits at byte {start}")
            return value, pos
    raise DecodeError(f"uvarint of {what} longer than 5 bytes at byte {start}")


class Reader:
    """Cursor over a memoryview; every read checks the bytes left before taking them."""

    __slots__ = ("buf", "end", "limit", "pos", "unknown_tags")

    def __init__(self, data: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None):
        self.buf = memoryview(data)
        self.pos = pos
        self.end = len(self.buf) if end is None else end
        self.unknown_tags = 0
        self.limit: str | None = None  # the first DEC-LIMIT check that fails (reader_limit)

    def _over_limit(self, count: int, remaining: int | None, what: str) -> None:
        """Note the first count a 4.2.2+/4.3.2+/4.4.0 reader refuses (DEC-LIMIT)."""
        if self.limit is None:
            self.limit = reader_limit(count, remaining, what)

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def _take(self, n: int, what: str) -> int:
        start = self.pos
        if n > self.end - start:
            raise DecodeError(
                f"truncated: {what} needs {n} bytes at byte {start}, {self.end - start} left"
            )
        self.pos = start + n
        return start

    def fixed(self, type_: str, what: str) -> Any:
        if type_ == "uuid":
            start = self._take(16, what)
            return uuid.UUID(bytes=bytes(self.buf[start : start + 16]))
        codec = _FIXED[type_]
        start = self._take(codec.size, what)
        return codec.unpack_from(self.buf, start)[0]

    def uvarint(self, what: str) -> int:
        """Unsigned LEB128 varint, at most 5 bytes (a 32-bit value)."""
        value, self.pos = read_uvarint(self.buf, self.pos, self.end, what)
        return value

    def _length(self, f: Field, version: int, flexible: bool, classic: struct.Struct) -> int | None:
        """Length/count prefix; None for null (checked against nullability)."""
        start = self.pos
        if flexible:
            n = self.uvarint(f.name) - 1
        else:
            n = classic.unpack_from(self.buf, self._take(classic.size, f"length of {f.name}"))[0]
            if n < -1:
                raise DecodeError(f"negative length {n} of {f.name} at byte {start}")
        if n == -1:
            if not f.nullable_in(version):
                raise DecodeError(f"null in non-nullable field {f.name}")
            return None
        return n

    def _blob(self, f: Field, version: int, flexible: bool, text: bool) -> str | bytes | None:
        """string (int16 classic length, UTF-8) or bytes (int32 classic length)."""
        start = self.pos
        n = self._length(f, version, flexible, _INT16 if text else _INT32)
        if n is None:
            return None
        if n > self.remaining:
            raise DecodeError(
                f"length {n} of {f.name} exceeds the {self.remaining} bytes left at byte {start}"
            )
        data_start = self._take(n, f.name)
        raw = self.buf[data_start : data_start + n]
        if not text:
            return bytes(raw)
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError(f"invalid UTF-8 in {f.name} at byte {data_start}") from exc

    def value(self, f: Field, type_: str, version: int, flexible: bool) -> Any:
        """One value of `type_` (a field's type or its array element type)."""
        if type_ in FIXED_WIDTH:
            return self.fixed(type_, f.name)
        if type_ == "string":
            return self._blob(f, version, flexible, text=True)
        if type_ == "bytes":
            return self._blob(f, version, flexible, text=False)
        raise DecodeError(f"unsupported type {type_} of {f.name}")

    def field(self, f: Field, version: int, flexible: bool, tagged: bool = False) -> Any:
        if f.is_array:
            return self._array(f, version, flexible)
        if f.is_struct:
            if f.nullable_in(version):
                if tagged:
                    present = self.uvarint(f"presence of {f.name}") != 0
                else:
                    present = self.fixed("int8", f"presence of {f.name}") >= 0
                if not present:
                    return None
            return self.struct(f.fields, version, flexible)
        return self.value(f, f.type, version, flexible)

    def _array(self, f: Field, version: int, flexible: bool) -> list[Any] | None:
        start = self.pos
        n = self._length(f, version, flexible, _INT32)
        if n is None:
            return None
        elem = f.element
        width = FIXED_WIDTH.get(elem, 1)
        if n * width > self.remaining:
            raise DecodeError(
                f"count {n} of {f.name} exceeds the {self.remaining} bytes left at byte {start}"
            )
        if exceeds_reader_limits(n):
            self._over_limit(n, None, f.name)
        if f.is_struct:
            return [self.struct(f.fields, version, flexible) for _ in range(n)]
        if elem in _FIXED and n:
            # arrays of integers (partition lists) in one unpack: same bytes, same checks
            items = _FIXED[elem].format[1:]
            at = self._take(n * width, f.name)
            return list(struct.unpack_from(f">{n}{items}", self.buf, at))
        return [self.value(f, elem, version, flexible) for _ in range(n)]

    def struct(self, fields: tuple[Field, ...], version: int, flexible: bool) -> dict[str, Any]:
        """All fields of a struct in layout order; absent and untagged ones get defaults."""
        positional, tagged, all_fields = plan(fields, version, flexible)
        out: dict[str, Any] = {}
        for f in all_fields:
            out[f.name] = f.default_value()
        for f in positional:
            out[f.name] = self.field(f, version, flexible)
        if flexible:
            self._tagged_section(tagged, out, version)
        return out

    def _tagged_section(self, known: dict[int, Field], out: dict[str, Any], version: int) -> None:
        count = self.uvarint("tagged-field count")
        if exceeds_reader_limits(count, self.remaining):
            self._over_limit(count, self.remaining, "a tagged-field section")
        if count > self.remaining:
            raise DecodeError(
                f"tagged-field count {count} exceeds the {self.remaining} bytes left"
                f" at byte {self.pos}"
            )
        for _ in range(count):
            tag = self.uvarint("tag")
            size_at = self.pos
            size = self.uvarint(f"size of tag {tag}")
            if size > self.remaining:
                raise DecodeError(
                    f"size {size} of tag {tag} exceeds the {self.remaining} bytes left"
                    f" at byte {size_at}"
                )
            payload_end = self.pos + size
            f = known.get(tag)
            if f is None:
                self.unknown_tags += 1
            else:
                sub = Reader(self.buf, self.pos, payload_end)
                sub.limit = self.limit
                try:
                    out[f.name] = sub.field(f, version, True, tagged=True)
                finally:
                    self.limit = sub.limit
                self.unknown_tags += sub.unknown_tags
            self.pos = payload_end


class Writer:
    """Builds bytes; writes tagged fields only when they differ from the default."""

    __slots__ = ("out",)

    def __init__(self) -> None:
        self.out = bytearray()

    def fixed(self, type_: str, value: Any, what: str) -> None:
        if type_ == "uuid":
            self.out += _uuid_bytes(value, what)
            return
        try:
            self.out += _FIXED[type_].pack(value)
        except (struct.error, TypeError) as exc:
            raise EncodeError(f"{what}: cannot write {value!r} as {type_}") from exc

    def uvarint(self, value: int) -> None:
        if not 0 <= value <= _MAX_UVARINT:
            raise EncodeError(f"uvarint out of range: {value}")
        while value >= 0x80:
            self.out.append((value & 0x7F) | 0x80)
            value >>= 7
        self.out.append(value)

    def _length(self, f: Field, n: int | None, version: int, flexible: bool, classic: str) -> None:
        if n is None and not f.nullable_in(version):
            raise EncodeError(f"null in non-nullable field {f.name} (version {version})")
        if flexible:
            self.uvarint(0 if n is None else n + 1)
        else:
            self.fixed(classic, -1 if n is None else n, f"length of {f.name}")

    def value(self, f: Field, type_: str, value: Any, version: int, flexible: bool) -> None:
        if type_ in FIXED_WIDTH:
            self.fixed(type_, value, f.name)
        elif type_ in ("string", "bytes"):
            data: bytes | None
            if value is None:
                data = None
            elif type_ == "string" and isinstance(value, str):
                data = value.encode("utf-8")
            elif type_ == "bytes" and isinstance(value, bytes | bytearray | memoryview):
                data = bytes(value)
            else:
                raise EncodeError(f"{f.name}: cannot write {type(value).__name__} as {type_}")
            classic = "int16" if type_ == "string" else "int32"
            self._length(f, None if data is None else len(data), version, flexible, classic)
            if data is not None:
                self.out += data
        else:
            raise EncodeError(f"unsupported type {type_} of {f.name}")

    def field(
        self, f: Field, value: Any, version: int, flexible: bool, tagged: bool = False
    ) -> None:
        if f.is_array:
            self._length(f, None if value is None else len(value), version, flexible, "int32")
            for item in value or ():
                if f.is_struct:
                    self.struct(f.fields, item, version, flexible, f.name)
                else:
                    self.value(f, f.element, item, version, flexible)
        elif f.is_struct:
            if f.nullable_in(version):
                if tagged:
                    self.uvarint(0 if value is None else 1)
                else:
                    self.fixed("int8", -1 if value is None else 1, f"presence of {f.name}")
            elif value is None:
                raise EncodeError(f"null in non-nullable field {f.name} (version {version})")
            if value is not None:
                self.struct(f.fields, value, version, flexible, f.name)
        else:
            self.value(f, f.type, value, version, flexible)

    def struct(
        self,
        fields: tuple[Field, ...],
        values: dict[str, Any],
        version: int,
        flexible: bool,
        where: str,
    ) -> None:
        """Write a struct; keys not in the layout are an error (they would be silently lost)."""
        if not isinstance(values, dict):
            raise EncodeError(f"{where}: expected a dict, got {type(values).__name__}")
        unknown = set(values) - {f.name for f in fields}
        if unknown:
            raise EncodeError(f"{where}: unknown field(s) {sorted(unknown)}")
        positional, tagged, _ = plan(fields, version, flexible)
        for f in positional:
            self.field(f, values.get(f.name, f.default_value()), version, flexible)
        if not flexible:
            return
        chosen = []
        for tag in sorted(tagged):
            f = tagged[tag]
            value = values.get(f.name, f.default_value())
            if value != f.default_value():
                sub = Writer()
                sub.field(f, value, version, True, tagged=True)
                chosen.append((tag, sub.out))
        self.uvarint(len(chosen))
        for tag, payload in chosen:
            self.uvarint(tag)
            self.uvarint(len(payload))
            self.out += payload


def _uuid_bytes(value: Any, what: str) -> bytes:
    """UUID, canonical string or 16 raw bytes -> 16 bytes."""
    if isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(value, str):
        try:
            return uuid.UUID(value).bytes
        except ValueError as exc:
            raise EncodeError(f"{what}: invalid uuid {value!r}") from exc
    if isinstance(value, bytes | bytearray) and len(value) == 16:
        return bytes(value)
    raise EncodeError(f"{what}: cannot write {value!r} as uuid")
