"""The layout tables compiled into specialised readers: same bytes, same results, same errors.

`codec.Reader` interprets a `Field` table at every read (presence, nullability, tag and type
checks per field and per record). This module reads the same table once per
(struct, version, flexible) and generates one straight-line Python function for it: nested
structs and arrays are inlined, runs of fixed-width fields become one precompiled
`struct.Struct.unpack_from`, and every check the generic reader makes is kept in the same
order with the same error text. Nothing here knows a record type: the generated code is a
function of the `Field` table only, so a table edit changes the compiled reader too.

A compiled struct reader is `read(buf: bytes, pos: int, end: int) -> (dict, pos, unknown_tags)`;
a compiled field reader returns `(value, pos, unknown_tags)`. `codec.Reader` stays the
reference implementation (tests compare the two on generated and mutated bytes).
"""

from __future__ import annotations

import re
import struct
import uuid
from collections.abc import Callable
from typing import Any

from offsets_lib.wire.codec import (
    _FIXED,
    MAX_ARRAY_ELEMENTS,
    DecodeError,
    ReaderLimitExceeded,
    exceeds_reader_limits,
    plan,
    read_uvarint,
)
from offsets_lib.wire.layout_types import FIXED_WIDTH, NO_DEFAULT, Field

Compiled = Callable[[bytes, int, int], tuple[Any, int, int]]

_END = re.compile(r"\bend\b")

_SMALL_ARRAYS = 32
"""Integer arrays up to this count unpack with a prebuilt `struct.Struct` (no format string)."""

_new = object.__new__
_setattr = object.__setattr__
_UUID = uuid.UUID
_SAFE_UNKNOWN = uuid.SafeUUID.unknown
_from_bytes = int.from_bytes


def _uuid(raw: bytes) -> uuid.UUID:
    """`uuid.UUID(bytes=raw)` for exactly 16 bytes, without the argument checks."""
    u = _new(_UUID)
    _setattr(u, "int", _from_bytes(raw, "big"))
    _setattr(u, "is_safe", _SAFE_UNKNOWN)
    return u


def _truncated(what: str, n: int, start: int, end: int) -> DecodeError:
    return DecodeError(f"truncated: {what} needs {n} bytes at byte {start}, {end - start} left")


def _run_error(pos: int, end: int, steps: tuple[tuple[str, int], ...]) -> DecodeError:
    """The error of the first field of a fixed-width run that does not fit."""
    for what, width in steps:
        if width > end - pos:
            return _truncated(what, width, pos, end)
        pos += width
    raise AssertionError("fixed-width run fits")  # pragma: no cover - caller checked


def _is_fixed_scalar(f: Field) -> bool:
    return not f.is_array and not f.is_struct and f.type in FIXED_WIDTH


def _code(type_: str) -> str:
    """struct format code of a fixed-width type (uuid as 16 raw bytes)."""
    return "16s" if type_ == "uuid" else _FIXED[type_].format[1:]


class _Gen:
    """Emits the source of one reader function; constants live in its namespace."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ns: dict[str, Any] = {
            "DecodeError": DecodeError,
            "_truncated": _truncated,
            "_uvarint": read_uvarint,
            "_run_error": _run_error,
            "_uuid": _uuid,
            "_unpack_from": struct.unpack_from,
            "_exceeds": exceeds_reader_limits,
            "ReaderLimitExceeded": ReaderLimitExceeded,
        }
        self.count = 0
        self.end = "end"  # the bound of the reader being emitted (a tag's payload end inside)

    def tmp(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def const(self, value: Any) -> str:
        name = self.tmp("K")
        self.ns[name] = value
        return name

    def put(self, indent: int, text: str) -> None:
        """One line; inside a tagged field the bound `end` is that field's payload end."""
        if self.end != "end":
            text = _END.sub(self.end, text)
        self.lines.append("    " * indent + text)

    def uvarint(self, ind: int, var: str, what: str, *, peeked: bool = False) -> None:
        """Read one uvarint into `var`: a one-byte value inline, longer ones via `_uvarint`.

        `what` is the source text of the error label; `peeked`: `var` already holds the
        first byte (or 128 at the end of the bytes).
        """
        if not peeked:
            self.put(ind, f"{var} = buf[pos] if pos < end else 128")
        self.put(ind, f"if {var} < 128:")
        self.put(ind + 1, "pos += 1")
        self.put(ind, "else:")
        self.put(ind + 1, f"{var}, pos = _uvarint(buf, pos, end, {what})")

    def build(self, name: str) -> Callable[..., Any]:
        source = "\n".join(self.lines)
        exec(compile(source, f"<wire reader {name}>", "exec"), self.ns)
        fn = self.ns["read"]
        fn.__source__ = source  # type: ignore[attr-defined]
        return fn

    # -- one value --------------------------------------------------------------------------

    def fixed(self, f: Field, type_: str, ind: int, var: str) -> None:
        width = FIXED_WIDTH[type_]
        name = self.const(f.name)
        self.put(ind, f"if end - pos < {width}:")
        self.put(ind + 1, f"raise _truncated({name}, {width}, pos, end)")
        if type_ == "uuid":
            self.put(ind, f"{var} = _uuid(buf[pos:pos + 16])")
        else:
            unpack = self.const(_FIXED[type_].unpack_from)
            self.put(ind, f"{var} = {unpack}(buf, pos)[0]")
        self.put(ind, f"pos += {width}")

    def length(
        self, f: Field, version: int, flexible: bool, width: int, ind: int
    ) -> tuple[str, str]:
        """Length/count prefix into a fresh variable; returns (n var, start var).

        Emits an `if` whose body handles null and leaves the caller's code at `ind` inside the
        non-null `else:` branch (the caller writes at `ind + 1`).
        """
        n, start = self.tmp("n"), self.tmp("s")
        name = self.const(f.name)
        self.put(ind, f"{start} = pos")
        if flexible:
            self.uvarint(ind, n, name)
            self.put(ind, f"if {n} == 0:")
        else:
            what = self.const(f"length of {f.name}")
            unpack = self.const((_INT16 if width == 2 else _INT32).unpack_from)
            self.put(ind, f"if end - pos < {width}:")
            self.put(ind + 1, f"raise _truncated({what}, {width}, pos, end)")
            self.put(ind, f"{n} = {unpack}(buf, pos)[0]")
            self.put(ind, f"pos += {width}")
            self.put(ind, f"if {n} < 0:")
            self.put(ind + 1, f"if {n} < -1:")
            self.put(
                ind + 2,
                f'raise DecodeError(f"negative length {{{n}}} of {{{name}}} at byte {{{start}}}")',
            )
        return n, start

    def null(self, f: Field, version: int, ind: int, var: str) -> None:
        if f.nullable_in(version):
            self.put(ind, f"{var} = None")
        else:
            name = self.const(f.name)
            self.put(ind, f'raise DecodeError(f"null in non-nullable field {{{name}}}")')

    def blob(self, f: Field, version: int, flexible: bool, text: bool, ind: int, var: str) -> None:
        n, start = self.length(f, version, flexible, 2 if text else 4, ind)
        self.null(f, version, ind + 1, var)
        self.put(ind, "else:")
        if flexible:
            self.put(ind + 1, f"{n} -= 1")
        name = self.const(f.name)
        self.put(ind + 1, f"if {n} > end - pos:")
        self.put(
            ind + 2,
            f'raise DecodeError(f"length {{{n}}} of {{{name}}} exceeds the {{end - pos}}'
            f' bytes left at byte {{{start}}}")',
        )
        if text:
            self.put(ind + 1, "try:")
            self.put(ind + 2, f"{var} = buf[pos:pos + {n}].decode()")
            self.put(ind + 1, "except UnicodeDecodeError:")
            self.put(
                ind + 2,
                f'raise DecodeError(f"invalid UTF-8 in {{{name}}} at byte {{pos}}") from None',
            )
        else:
            self.put(ind + 1, f"{var} = buf[pos:pos + {n}]")
        self.put(ind + 1, f"pos += {n}")

    def value(self, f: Field, type_: str, version: int, flexible: bool, ind: int, var: str) -> None:
        """`Reader.value`: one value of `type_` (a field's type or its array element type)."""
        if type_ in FIXED_WIDTH:
            self.fixed(f, type_, ind, var)
        elif type_ in ("string", "bytes"):
            self.blob(f, version, flexible, type_ == "string", ind, var)
        else:
            message = self.const(f"unsupported type {type_} of {f.name}")
            self.put(ind, f"raise DecodeError({message})")

    # -- fields and structs -----------------------------------------------------------------

    def field(
        self, f: Field, version: int, flexible: bool, tagged: bool, ind: int, var: str
    ) -> None:
        """`Reader.field`."""
        if f.is_array:
            self.array(f, version, flexible, ind, var)
        elif f.is_struct:
            if f.nullable_in(version):
                what = self.const(f"presence of {f.name}")
                p = self.tmp("p")
                if tagged:
                    self.uvarint(ind, p, what)
                    self.put(ind, f"if {p} == 0:")
                else:
                    unpack = self.const(_FIXED["int8"].unpack_from)
                    self.put(ind, "if end - pos < 1:")
                    self.put(ind + 1, f"raise _truncated({what}, 1, pos, end)")
                    self.put(ind, f"{p} = {unpack}(buf, pos)[0]")
                    self.put(ind, "pos += 1")
                    self.put(ind, f"if {p} < 0:")
                self.put(ind + 1, f"{var} = None")
                self.put(ind, "else:")
                self.struct(f.fields, version, flexible, ind + 1, var)
            else:
                self.struct(f.fields, version, flexible, ind, var)
        else:
            self.value(f, f.type, version, flexible, ind, var)

    def array(self, f: Field, version: int, flexible: bool, ind: int, var: str) -> None:
        """`Reader._array`."""
        n, start = self.length(f, version, flexible, 4, ind)
        self.null(f, version, ind + 1, var)
        self.put(ind, "else:")
        ind += 1
        if flexible:
            self.put(ind, f"{n} -= 1")
        elem = f.element
        width = FIXED_WIDTH.get(elem, 1)
        name = self.const(f.name)
        self.put(ind, f"if {n} * {width} > end - pos:")
        self.put(
            ind + 1,
            f'raise DecodeError(f"count {{{n}}} of {{{name}}} exceeds the {{end - pos}}'
            f' bytes left at byte {{{start}}}")',
        )
        # DEC-LIMIT: the generic reader notes the check (compiled readers return no such note);
        # `exceeds_reader_limits(n)` of an array inlined (a call per array cost 5% of a record)
        self.put(ind, f"if {n} > {MAX_ARRAY_ELEMENTS}:")
        self.put(ind + 1, "raise ReaderLimitExceeded")
        if f.is_struct:
            item = self.tmp("d")
            self.put(ind, f"{var} = []")
            self.put(ind, f"for _ in range({n}):")
            self.struct(f.fields, version, flexible, ind + 1, item)
            self.put(ind + 1, f"{var}.append({item})")
        elif elem in _FIXED:
            code = _FIXED[elem].format[1:]
            small = self.const(
                tuple(struct.Struct(f">{k}{code}").unpack_from for k in range(_SMALL_ARRAYS + 1))
            )
            self.put(ind, f"if {n} <= {_SMALL_ARRAYS}:")
            self.put(ind + 1, f"{var} = list({small}[{n}](buf, pos))")
            self.put(ind, "else:")
            self.put(ind + 1, f'{var} = list(_unpack_from(f">{{{n}}}{code}", buf, pos))')
            self.put(ind, f"pos += {n} * {width}")
        elif elem == "uuid":
            self.put(ind, f"{var} = [_uuid(buf[i:i + 16]) for i in range(pos, pos + 16 * {n}, 16)]")
            self.put(ind, f"pos += 16 * {n}")
        else:
            item = self.tmp("e")
            self.put(ind, f"{var} = []")
            self.put(ind, f"for _ in range({n}):")
            self.value(f, elem, version, flexible, ind + 1, item)
            self.put(ind + 1, f"{var}.append({item})")

    def default(self, f: Field) -> str:
        """Expression for `f.default_value()`: a fresh list for arrays without a default."""
        if f.default is NO_DEFAULT and f.is_array:
            return "[]"
        value = f.default_value()
        if value is None or type(value) in (int, bool, str, bytes):
            return repr(value)
        return self.const(value)

    def run(self, run: list[Field], ind: int, variables: list[str]) -> None:
        """Consecutive fixed-width fields: one bounds check and one unpack."""
        width = sum(FIXED_WIDTH[f.type] for f in run)
        unpack = self.const(struct.Struct(">" + "".join(_code(f.type) for f in run)).unpack_from)
        steps = self.const(tuple((f.name, FIXED_WIDTH[f.type]) for f in run))
        self.put(ind, f"if end - pos < {width}:")
        self.put(ind + 1, f"raise _run_error(pos, end, {steps})")
        self.put(ind, f"{', '.join(variables)}, = {unpack}(buf, pos)")
        self.put(ind, f"pos += {width}")
        for f, var in zip(run, variables, strict=True):
            if f.type == "uuid":
                self.put(ind, f"{var} = _uuid({var})")

    def struct(
        self, fields: tuple[Field, ...], version: int, flexible: bool, ind: int, var: str
    ) -> None:
        """`Reader.struct`: positional fields in order, the dict, then the tagged section."""
        positional, tagged, all_fields = plan(fields, version, flexible)
        read: dict[str, str] = {}  # name -> variable of the last positional field of that name
        i = 0
        while i < len(positional):
            j = i
            while j < len(positional) and _is_fixed_scalar(positional[j]):
                j += 1
            if j - i >= 2:
                run = list(positional[i:j])
                variables = [self.tmp("v") for _ in run]
                self.run(run, ind, variables)
                read.update((f.name, v) for f, v in zip(run, variables, strict=True))
                i = j
                continue
            f = positional[i]
            v = self.tmp("v")
            self.field(f, version, flexible, False, ind, v)
            read[f.name] = v
            i += 1
        items: dict[str, str] = {}
        for f in all_fields:
            items[f.name] = self.default(f)
        items.update(read)
        body = ", ".join(f"{name!r}: {expr}" for name, expr in items.items())
        self.put(ind, f"{var} = {{{body}}}")
        if flexible:
            self.tagged_section(tagged, version, ind, var)

    def tagged_section(self, known: dict[int, Field], version: int, ind: int, var: str) -> None:
        """`Reader._tagged_section` inlined: known tags read in place, bounded by their size."""
        c, t, at, size, payload_end = (self.tmp(p) for p in ("c", "t", "a", "z", "e"))
        self.put(ind, f"{c} = buf[pos] if pos < end else 128")
        self.put(ind, f"if {c} == 0:")
        self.put(ind + 1, "pos += 1")
        self.put(ind, "else:")
        ind += 1
        self.uvarint(ind, c, '"tagged-field count"', peeked=True)
        self.put(ind, f"if _exceeds({c}, end - pos):")  # DEC-LIMIT, as in `array`
        self.put(ind + 1, "raise ReaderLimitExceeded")  # a count over the bytes left too
        self.put(ind, f"for _ in range({c}):")
        ind += 1
        self.uvarint(ind, t, '"tag"')
        self.put(ind, f"{at} = pos")
        self.uvarint(ind, size, f'f"size of tag {{{t}}}"')
        self.put(ind, f"if {size} > end - pos:")
        self.put(
            ind + 1,
            f'raise DecodeError(f"size {{{size}}} of tag {{{t}}} exceeds the {{end - pos}}'
            f' bytes left at byte {{{at}}}")',
        )
        self.put(ind, f"{payload_end} = pos + {size}")
        keyword = "if"
        for tag, f in known.items():
            self.put(ind, f"{keyword} {t} == {tag!r}:")
            keyword = "elif"
            v = self.tmp("v")
            outer, self.end = self.end, payload_end
            self.field(f, version, True, True, ind + 1, v)
            self.end = outer
            self.put(ind + 1, f"{var}[{f.name!r}] = {v}")
        if known:
            self.put(ind, "else:")
            self.put(ind + 1, "unknown += 1")
        else:
            self.put(ind, "unknown += 1")
        self.put(ind, f"pos = {payload_end}")


_INT16 = _FIXED["int16"]
_INT32 = _FIXED["int32"]

_STRUCTS: dict[tuple[int, int, bool], tuple[tuple[Field, ...], Compiled]] = {}
_FIELDS: dict[tuple[int, int, bool, bool], tuple[Field, Compiled]] = {}


def compile_struct(fields: tuple[Field, ...], version: int, flexible: bool) -> Compiled:
    """Reader of a struct at one version/encoding: `read(buf, pos, end) -> (dict, pos, unknown)`.

    Cached by table identity (the key keeps the table alive, so ids are never reused).
    """
    key = (id(fields), version, flexible)
    cached = _STRUCTS.get(key)
    if cached is None:
        gen = _Gen()
        gen.put(0, "def read(buf, pos, end):")
        gen.put(1, "unknown = 0")
        gen.struct(fields, version, flexible, 1, "out")
        gen.put(1, "return out, pos, unknown")
        names = ",".join(f.name for f in fields)
        cached = (fields, gen.build(f"struct({names}) v{version}{' flexible' if flexible else ''}"))
        _STRUCTS[key] = cached
    return cached[1]


def compile_field(f: Field, version: int, flexible: bool, *, tagged: bool = False) -> Compiled:
    """Reader of one field (`Reader.field`): `read(buf, pos, end) -> (value, pos, unknown)`."""
    key = (id(f), version, flexible, tagged)
    cached = _FIELDS.get(key)
    if cached is None:
        gen = _Gen()
        gen.put(0, "def read(buf, pos, end):")
        gen.put(1, "unknown = 0")
        gen.field(f, version, flexible, tagged, 1, "out")
        gen.put(1, "return out, pos, unknown")
        cached = (f, gen.build(f"field {f.name} v{version}{' tagged' if tagged else ''}"))
        _FIELDS[key] = cached
    return cached[1]
