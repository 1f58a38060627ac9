"""The codec's readers (decode never raises); its writers are `wire.encoders`.

Decoding classifies every record instead of failing (records.md section 8): unknown types,
unknown versions and malformed bytes come back as precise error strings, so one bad record
never aborts a Spark job.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

from offsets_lib.wire.codec import _INT16, DecodeError, Reader, ReaderLimitExceeded
from offsets_lib.wire.compiled import Compiled, compile_field, compile_struct
from offsets_lib.wire.layouts import (
    ASSIGNMENT,
    CONTROL_KEY,
    CONTROL_TYPES,
    CONTROL_VALUE,
    RECORD_TYPES,
    SUBSCRIPTION,
    Message,
    RecordType,
    current_value,
)


@dataclass(frozen=True)
class DecodedKey:
    record_type: int | None
    fields: dict
    error: str | None
    trailing_bytes: int = 0


@dataclass(frozen=True)
class DecodedValue:
    """`fields` is None for a tombstone (value None) or an error; `layout` names the table."""

    version: int | None
    fields: dict | None
    layout: str
    error: str | None
    trailing_bytes: int = 0
    unknown_tags: int = 0
    reader_limit: str | None = None  # DEC-LIMIT: 'CHECK: detail' (codec.reader_limit)


@dataclass(frozen=True)
class DecodedRecord:
    """Key and value together; `error` is the key's error if any, else the value's."""

    record_type: int | None
    name: str | None
    key: dict
    version: int | None
    value: dict | None
    layout: str
    is_tombstone: bool
    error: str | None
    trailing_bytes: int = 0
    key_trailing_bytes: int = 0
    unknown_tags: int = 0
    reader_limit: str | None = None  # DEC-LIMIT: 'CHECK: detail' (codec.reader_limit)


@dataclass(frozen=True)
class DecodedControl:
    """A transaction marker; `type` is "ABORT", "COMMIT", another control name or "UNKNOWN"."""

    type: str | None
    type_id: int | None
    version: int | None
    coordinator_epoch: int | None
    error: str | None


_BYTES_LIKE = (bytes, bytearray, memoryview)


def _describe(exc: Exception) -> str:
    """Error string for any failure; unexpected exceptions keep their class name."""
    if isinstance(exc, DecodeError):
        return str(exc)
    return f"internal error: {type(exc).__name__}: {exc}"


_COMPILED = True
"""Decode `bytes` with the readers compiled from the tables (`compiled.py`); False routes every
call through the generic `Reader` (the reference the tests compare the compiled path with).
Other buffer types (bytearray, memoryview) always take the generic path."""

_I16 = _INT16.unpack_from
_new = object.__new__
_setattr = object.__setattr__


def decode_key(key: bytes | None) -> DecodedKey:
    """Read the int16 record type and the key fields (always classic, no tagged section)."""
    if _COMPILED and type(key) is bytes:
        parts = _key_parts(key)
        if parts is not None:
            return DecodedKey(*parts)
    return _decode_key_generic(key)


_KEY_READERS: dict[int, tuple[RecordType, Compiled]] = {}


def _key_parts(key: bytes) -> tuple[int | None, dict, str | None, int] | None:
    """decode_key of `bytes` as a tuple; None when the generic path should answer (short key)."""
    try:
        n = len(key)
        if n < 2:
            return None
        record_type = _I16(key, 0)[0]
        entry = _KEY_READERS.get(record_type)
        if entry is None:
            rt = RECORD_TYPES.get(record_type)
            if rt is None:
                return record_type, {}, f"unknown record type {record_type}", 0
            entry = _KEY_READERS[record_type] = (rt, compile_struct(rt.key.fields, 0, False))
        try:
            fields_, pos, _ = entry[1](key, 2, n)
        except DecodeError as exc:
            return record_type, {}, str(exc), 0
        return record_type, fields_, None, n - pos
    except Exception as exc:  # never escape: the caller is a Spark task
        return None, {}, _describe(exc), 0


def _decode_key_generic(key: bytes | None) -> DecodedKey:
    try:
        if key is None:
            return DecodedKey(None, {}, "null key")
        if not isinstance(key, _BYTES_LIKE):
            return DecodedKey(None, {}, f"key is {type(key).__name__}, not bytes")
        if len(key) == 0:
            return DecodedKey(None, {}, "empty key")
        reader = Reader(key)
        record_type = reader.fixed("int16", "record type")
        rt = RECORD_TYPES.get(record_type)
        if rt is None:
            return DecodedKey(record_type, {}, f"unknown record type {record_type}")
        try:
            fields_ = reader.struct(rt.key.fields, 0, False)
        except DecodeError as exc:
            return DecodedKey(record_type, {}, str(exc))
        return DecodedKey(record_type, fields_, None, reader.remaining)
    except Exception as exc:  # never escape: the caller is a Spark task
        return DecodedKey(None, {}, _describe(exc))


def decode_value(record_type: int, value: bytes | None) -> DecodedValue:
    """Decode a value with the table of its own version; None is a tombstone, not an error.

    Types with older same-version layouts (records.md section 7) are retried with those when
    the current layout fails or leaves bytes over; the winning layout's label is reported.
    """
    if _COMPILED and type(value) is bytes:
        try:
            rt = RECORD_TYPES.get(record_type)
        except Exception as exc:
            return DecodedValue(None, None, "current", _describe(exc))
        if rt is not None:
            parts = _value_parts(rt, value)
            if parts is not None:
                return DecodedValue(*parts)
    return _decode_value_generic(record_type, value)


_SHORT_VALUE = "truncated: value version needs 2 bytes at byte 0, 1 left"
_ValueParts = tuple[int | None, dict | None, str, str | None, int, int]
_VALUE_READERS: dict[tuple[int, int], tuple[tuple[str, Compiled], ...]] = {}


def _value_parts(rt: RecordType, value: bytes) -> _ValueParts | None:
    """decode_value of `bytes` of a known record type with compiled readers, as a tuple; None
    when a count is over DEC-LIMIT's limits (the generic reader notes which)."""
    try:
        n = len(value)
        if n < 2:
            if n == 0:
                return None, None, "current", "zero-length value (not a tombstone)", 0, 0
            return None, None, "current", _SHORT_VALUE, 0, 0
        version = _I16(value, 0)[0]
        candidates = _VALUE_READERS.get((rt.type, version))
        if candidates is None:
            current = current_value(rt)
            if not current.accepts(version):
                valid = current.valid_text()
                msg = f"unknown value version {version} for {rt.name} (valid {valid})"
                return version, None, "current", msg, 0, 0
            candidates = _VALUE_READERS[(rt.type, version)] = tuple(
                (m.label, compile_struct(m.fields, version, m.is_flexible(version)))
                for m in (current, *rt.historical)
                if m.accepts(version)
            )
        # the tie-break of _decode_layouts, over compiled readers
        first_error: str | None = None
        with_unknown_tags: _ValueParts | None = None
        with_trailing: _ValueParts | None = None
        for label, read in candidates:
            try:
                out, pos, unknown = read(value, 2, n)
            except DecodeError as exc:
                first_error = first_error or str(exc)
                continue
            if pos == n and unknown == 0:
                return version, out, label, None, 0, 0
            result = (version, out, label, None, n - pos, unknown)
            if pos == n:
                with_unknown_tags = with_unknown_tags or result
            else:
                with_trailing = with_trailing or result
        if with_unknown_tags is not None or with_trailing is not None:
            return with_unknown_tags or with_trailing  # type: ignore[return-value]
        return version, None, "current", first_error, 0, 0
    except ReaderLimitExceeded:
        return None
    except Exception as exc:
        return None, None, "current", _describe(exc), 0, 0


def _decode_value_generic(record_type: int, value: bytes | None) -> DecodedValue:
    try:
        if value is None:
            return DecodedValue(None, None, "current", None)
        rt = RECORD_TYPES.get(record_type)
        if rt is None:
            return DecodedValue(None, None, "current", f"unknown record type {record_type}")
        if not isinstance(value, _BYTES_LIKE):
            return DecodedValue(None, None, "current", f"value is {type(value).__name__}")
        if len(value) == 0:
            return DecodedValue(None, None, "current", "zero-length value (not a tombstone)")
        try:
            version = Reader(value).fixed("int16", "value version")
        except DecodeError as exc:
            return DecodedValue(None, None, "current", str(exc))
        current = current_value(rt)
        if not current.accepts(version):
            msg = f"unknown value version {version} for {rt.name} (valid {current.valid_text()})"
            return DecodedValue(version, None, "current", msg)
        return _decode_layouts(version, value, (current, *rt.historical))
    except Exception as exc:
        return DecodedValue(None, None, "current", _describe(exc))


def _decode_layouts(version: int, value: Any, candidates: tuple[Message, ...]) -> DecodedValue:
    """First exact fit wins; else the first fit that needed unknown tags, else one with trailing
    bytes; else the first error.

    The early-access layouts reuse version numbers, so some bytes fit two layouts: an old
    trailing array can read as a tagged section of the current layout. A layout that consumes
    every byte without skipping unknown tags is the better explanation of the bytes.
    """
    first_error: str | None = None
    first_limit: str | None = None
    with_unknown_tags: DecodedValue | None = None
    with_trailing: DecodedValue | None = None
    for message in candidates:
        if not message.accepts(version):
            continue
        reader = Reader(value, 2)
        try:
            out = reader.struct(message.fields, version, message.is_flexible(version))
        except DecodeError as exc:
            if first_error is None:
                first_error, first_limit = str(exc), reader.limit
            continue
        result = DecodedValue(
            version, out, message.label, None, reader.remaining, reader.unknown_tags, reader.limit
        )
        if reader.remaining == 0 and reader.unknown_tags == 0:
            return result
        if reader.remaining == 0:
            with_unknown_tags = with_unknown_tags or result
        else:
            with_trailing = with_trailing or result
    if with_unknown_tags is not None or with_trailing is not None:
        return with_unknown_tags or with_trailing
    return DecodedValue(version, None, "current", first_error, reader_limit=first_limit)


def decode_record(key: bytes | None, value: bytes | None) -> DecodedRecord:
    """Decode key then value; a key error stops there (the value's layout is unknown)."""
    if _COMPILED and type(key) is bytes and (value is None or type(value) is bytes):
        try:
            k = _key_parts(key)
            if k is not None:
                record_type, key_fields, key_error, key_trailing = k
                rt = RECORD_TYPES.get(record_type) if record_type is not None else None
                name = rt.name if rt is not None else None
                if key_error is not None or rt is None:
                    return _record(
                        record_type, name, key_fields, None, None, "current", value is None,
                        key_error, 0, 0, 0,
                    )  # fmt: skip
                if value is None:
                    return _record(
                        record_type, name, key_fields, None, None, "current", True, None, 0,
                        key_trailing, 0,
                    )  # fmt: skip
                parts = _value_parts(rt, value)
                if parts is None:
                    return _decode_record_generic(key, value)
                version, fields_, layout, error, trailing, unknown = parts
                return _record(
                    record_type, name, key_fields, version, fields_, layout, False, error,
                    trailing, key_trailing, unknown,
                )  # fmt: skip
        except Exception as exc:
            return DecodedRecord(None, None, {}, None, None, "current", False, _describe(exc))
    return _decode_record_generic(key, value)


def _record(
    record_type: int | None,
    name: str | None,
    key: dict,
    version: int | None,
    value: dict | None,
    layout: str,
    is_tombstone: bool,
    error: str | None,
    trailing_bytes: int,
    key_trailing_bytes: int,
    unknown_tags: int,
) -> DecodedRecord:
    """`DecodedRecord(...)` without the frozen dataclass's per-field `object.__setattr__`."""
    record = _new(DecodedRecord)
    _setattr(
        record,
        "__dict__",
        {
            "record_type": record_type,
            "name": name,
            "key": key,
            "version": version,
            "value": value,
            "layout": layout,
            "is_tombstone": is_tombstone,
            "error": error,
            "trailing_bytes": trailing_bytes,
            "key_trailing_bytes": key_trailing_bytes,
            "unknown_tags": unknown_tags,
        },
    )
    return record


def _decode_record_generic(key: bytes | None, value: bytes | None) -> DecodedRecord:
    try:
        k = decode_key(key)
        rt = RECORD_TYPES.get(k.record_type) if k.record_type is not None else None
        name = rt.name if rt is not None else None
        if k.error is not None:
            return DecodedRecord(
                k.record_type, name, k.fields, None, None, "current", value is None, k.error
            )
        v = decode_value(k.record_type, value)  # type: ignore[arg-type]
        return DecodedRecord(
            k.record_type,
            name,
            k.fields,
            v.version,
            v.fields,
            v.layout,
            value is None,
            v.error,
            v.trailing_bytes,
            k.trailing_bytes,
            v.unknown_tags,
            v.reader_limit,
        )
    except Exception as exc:
        return DecodedRecord(None, None, {}, None, None, "current", False, _describe(exc))


def _decode_embedded(message: Message, data: Any, empty_means_none: bool) -> dict:
    """Consumer-protocol payload -> {"version", "error", "trailing_bytes", **fields}."""
    meta: dict[str, Any] = {"version": None, "error": None, "trailing_bytes": 0}
    try:
        if data is None or len(data) == 0:
            if not empty_means_none:
                meta["error"] = "null payload" if data is None else "empty payload"
            return meta
        compiled = _COMPILED and type(data) is bytes
        reader = Reader(data)
        if compiled and len(data) >= 2:
            version = _I16(data, 0)[0]
        else:
            version = reader.fixed("int16", "version")
        meta["version"] = version
        if version < 0:
            meta["error"] = f"negative version {version} for {message.name}"
            return meta
        hi = message.valid[1]
        layout_version = hi if hi is not None and version > hi else version
        flexible = message.is_flexible(layout_version)
        if compiled:
            end = len(data)
            try:
                out, pos, _ = compile_struct(message.fields, layout_version, flexible)(data, 2, end)
            except ReaderLimitExceeded:  # DEC-LIMIT concerns coordinator records: read them all
                compiled = False
            else:
                meta["trailing_bytes"] = end - pos
        if not compiled:
            reader.pos = 2
            out = reader.struct(message.fields, layout_version, flexible)
            meta["trailing_bytes"] = reader.remaining
        return {**meta, **out}
    except Exception as exc:
        meta["error"] = _describe(exc)
        return meta


def decode_subscription(data: bytes) -> dict:
    """ConsumerProtocolSubscription -> {"version", "error", "trailing_bytes", Topics, ...}.

    Versions above 3 parse as 3 (extra bytes counted in trailing_bytes); never raises.
    """
    return _decode_embedded(SUBSCRIPTION, data, empty_means_none=False)


def subscription_topics(data: bytes | None) -> list[str] | None:
    """Only the topic list of a ConsumerProtocolSubscription, or None when it does not parse.

    The coordinator reads subscriptions with the version-0 layout: the topic list is the common
    prefix of every version (semantics.md SUB-C3), so later fields are never looked at.
    """
    try:
        if not data:
            return None
        if _COMPILED and type(data) is bytes:
            if len(data) < 2 or _I16(data, 0)[0] < 0:
                return None
            try:
                return _TOPICS(data, 2, len(data))[0]
            except ReaderLimitExceeded:
                pass  # the generic reader reads any count the bytes hold
        reader = Reader(data)
        if reader.fixed("int16", "version") < 0:
            return None
        return reader.field(SUBSCRIPTION.fields[0], 0, False)
    except Exception:
        return None


_TOPICS = compile_field(SUBSCRIPTION.fields[0], 0, False)


def decode_assignment(data: bytes) -> dict:
    """ConsumerProtocolAssignment; empty bytes mean "no assignment" (version None, no error)."""
    return _decode_embedded(ASSIGNMENT, data, empty_means_none=True)


def decode_control(key: bytes, value: bytes | None) -> DecodedControl:
    """Transaction marker of a control batch; only ABORT/COMMIT values are read."""
    try:
        if key is None or len(key) == 0:
            return DecodedControl(
                None, None, None, None, "null key" if key is None else "empty key"
            )
        reader = Reader(key)
        version = reader.fixed("int16", "control key version")
        type_id = reader.struct(CONTROL_KEY.fields, 0, False)["type"]
        name = CONTROL_TYPES.get(type_id, "UNKNOWN")
        if name not in ("ABORT", "COMMIT"):
            return DecodedControl(name, type_id, version, None, None)
        if value is None or len(value) == 0:
            return DecodedControl(name, type_id, version, None, "marker without value")
        vreader = Reader(value)
        vreader.fixed("int16", "marker version")
        epoch = vreader.struct(CONTROL_VALUE.fields, 0, False)["coordinatorEpoch"]
        return DecodedControl(name, type_id, version, epoch, None)
    except Exception as exc:
        return DecodedControl(None, None, None, None, _describe(exc))


def to_jsonable(obj: Any) -> Any:
    """Plain JSON types: bytes -> hex, UUID -> canonical string, dataclasses -> dicts."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, _BYTES_LIKE):
        return bytes(obj).hex()
    if isinstance(obj, uuid.UUID):
        return str(obj)
    if is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in fields(obj)}
    return obj
