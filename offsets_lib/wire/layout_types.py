"""Layout vocabulary: `Field`, `Message`, `RecordType` and the table-writing helpers.

The table in `layouts.py` is written with `F`/`M`/`R`, which take Kafka's own version
strings ("0+", "3+", "1", "0-4", "none") so that adding a Kafka version is a one-line table
edit; the dataclasses store parsed ranges so the codec never parses strings while decoding.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import Enum
from typing import Any

Range = tuple[int, int | None]
"""Inclusive version range; `None` as upper bound means "and every later version"."""

ZERO_UUID = uuid.UUID(int=0)


class _NoDefault(Enum):
    """Marker for "no explicit default": the type's implicit default applies (an enum member
    stays one object through pickling, as the `is` checks need)."""

    NO_DEFAULT = "NO_DEFAULT"

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault.NO_DEFAULT

FIXED_WIDTH = {"int8": 1, "int16": 2, "uint16": 2, "int32": 4, "int64": 8, "bool": 1, "uuid": 16}
"""Byte width of the fixed-width primitive types (section 3 of records.md)."""

_IMPLICIT = {"bool": False, "string": "", "bytes": b"", "uuid": ZERO_UUID}


def parse_range(text: str | None) -> Range | None:
    """Parse a Kafka version string: "N", "N+", "A-B"; "none"/None -> None."""
    if text is None or text == "none":
        return None
    if text.endswith("+"):
        return (int(text[:-1]), None)
    lo, _, hi = text.partition("-")
    return (int(lo), int(hi) if hi else int(lo))


def in_range(rng: Range | None, version: int) -> bool:
    """Whether `version` falls inside an inclusive range (None = empty range)."""
    if rng is None:
        return False
    lo, hi = rng
    return version >= lo and (hi is None or version <= hi)


@dataclass(frozen=True)
class Field:
    """One field of a message or nested struct, exactly as Kafka's message JSON defines it."""

    name: str
    type: str
    versions: Range
    nullable: Range | None = None
    tag: int | None = None
    tagged: Range | None = None
    default: Any = NO_DEFAULT
    fields: tuple[Field, ...] = ()
    since: str = ""
    note: str = ""

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element(self) -> str:
        """Element type of an array (`[]int32` -> `int32`), else the type itself."""
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        """Struct or array of structs (nested `fields`)."""
        return bool(self.fields)

    def present_in(self, version: int) -> bool:
        return in_range(self.versions, version)

    def nullable_in(self, version: int) -> bool:
        return in_range(self.nullable, version)

    def tagged_in(self, version: int) -> bool:
        return in_range(self.tagged, version)

    def default_value(self) -> Any:
        """Value assumed when the field is not in the bytes (fresh object for arrays)."""
        if self.default is not NO_DEFAULT:
            return self.default
        if self.is_array:
            return []
        if self.is_struct:
            return None
        return _IMPLICIT.get(self.type, 0)


@dataclass(frozen=True)
class Message:
    """A key, value or embedded payload layout.

    `label` names the layout ("current" or a historical label such as "3.6-3.7 early access").
    `clamp_newer` makes a reader parse versions above the maximum with the newest layout
    (consumer protocol and control records do that; coordinator values must not).
    """

    name: str
    valid: Range
    flexible: Range | None
    fields: tuple[Field, ...]
    label: str = "current"
    clamp_newer: bool = False
    note: str = ""

    def is_flexible(self, version: int) -> bool:
        return in_range(self.flexible, version)

    def accepts(self, version: int) -> bool:
        return in_range(self.valid, version)

    def valid_text(self) -> str:
        lo, hi = self.valid
        if hi is None:
            return f"{lo}+"
        return f"{lo}" if lo == hi else f"{lo}-{hi}"


@dataclass(frozen=True)
class RecordType:
    """One `__consumer_offsets` record type: key layout, value layout, older value layouts.

    `value_from` points at another record type whose value table decodes this type's values
    (type 0 keys carry OffsetCommitValue of any version, records.md section 5/8).
    """

    type: int
    name: str
    key: Message
    value: Message
    historical: tuple[Message, ...] = ()
    since: str = ""
    status: str = ""
    value_from: int | None = None


def F(
    name: str,
    type: str,
    versions: str,
    *,
    nullable: str | None = None,
    tag: int | None = None,
    tagged: str | None = None,
    default: Any = NO_DEFAULT,
    fields: tuple[Field, ...] = (),
    since: str = "",
    note: str = "",
) -> Field:
    """Build a `Field` from Kafka-style version strings."""
    rng = parse_range(versions)
    assert rng is not None, f"field {name} has no versions"
    return Field(
        name,
        type,
        rng,
        parse_range(nullable),
        tag,
        parse_range(tagged),
        default,
        fields,
        since,
        note,
    )


def M(
    name: str,
    valid: str,
    flexible: str,
    *,
    fields: tuple[Field, ...],
    label: str = "current",
    clamp_newer: bool = False,
    note: str = "",
) -> Message:
    """Build a `Message` from Kafka-style version strings."""
    rng = parse_range(valid)
    assert rng is not None, f"message {name} has no versions"
    return Message(name, rng, parse_range(flexible), fields, label, clamp_newer, note)


def K(name: str, *string_fields: str) -> Message:
    """A record key of string fields only (every group-coordinator key but the offset commit's).

    Keys are never flexible and carry the single version 0 (records.md section 2).
    """
    return M(name, "0", "none", fields=tuple(F(f, "string", "0") for f in string_fields))


def R(
    type: int,
    name: str,
    *,
    key: Message,
    value: Message,
    historical: tuple[Message, ...] = (),
    since: str = "",
    status: str = "",
    value_from: int | None = None,
) -> RecordType:
    """Build a `RecordType` table entry."""
    return RecordType(type, name, key, value, historical, since, status, value_from)
