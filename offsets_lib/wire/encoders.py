"""The codec's writers: records, consumer-protocol payloads and transaction markers to bytes.

Every function raises `EncodeError` on bad input (the readers, `wire.api`, never raise). Tests
and the dump generator write records with them; the audit only reads.
"""

from __future__ import annotations

from offsets_lib.wire import layouts
from offsets_lib.wire.codec import EncodeError, Writer
from offsets_lib.wire.layouts import Message, RecordType


def _record_type(record_type: int) -> RecordType:
    rt = layouts.RECORD_TYPES.get(record_type)
    if rt is None:
        raise EncodeError(f"unknown record type {record_type}")
    return rt


def encode_key(record_type: int, fields: dict) -> bytes:
    """int16 record type + key fields in classic encoding."""
    rt = _record_type(record_type)
    writer = Writer()
    writer.fixed("int16", record_type, "record type")
    writer.struct(rt.key.fields, fields, 0, False, rt.key.name)
    return bytes(writer.out)


def encode_value(record_type: int, version: int, fields: dict, *, layout: str = "current") -> bytes:
    """int16 version + value fields with the named layout ("current" or a historical label)."""
    rt = _record_type(record_type)
    candidates = (layouts.current_value(rt), *rt.historical)
    message = next((m for m in candidates if m.label == layout), None)
    if message is None:
        labels = [m.label for m in candidates]
        raise EncodeError(f"no layout {layout!r} for {rt.name}; known: {labels}")
    if not message.accepts(version):
        raise EncodeError(f"unknown value version {version} for {rt.name}")
    return _encode_message(message, version, fields)


def _encode_message(message: Message, version: int, fields: dict) -> bytes:
    writer = Writer()
    writer.fixed("int16", version, "version")
    layout_version = _clamped(message, version)
    flexible = message.is_flexible(layout_version)
    writer.struct(message.fields, fields, layout_version, flexible, message.name)
    return bytes(writer.out)


def _clamped(message: Message, version: int) -> int:
    hi = message.valid[1]
    if message.clamp_newer and hi is not None and version > hi:
        return hi
    if version < 0 or not message.accepts(version):
        raise EncodeError(f"unknown version {version} for {message.name}")
    return version


def encode_subscription(version: int, fields: dict) -> bytes:
    return _encode_message(layouts.SUBSCRIPTION, version, fields)


def encode_assignment(version: int, fields: dict) -> bytes:
    return _encode_message(layouts.ASSIGNMENT, version, fields)


def encode_control(marker: str, coordinator_epoch: int = 0) -> tuple[bytes, bytes]:
    """(key, value) of an ABORT or COMMIT marker, version 0."""
    ids = {name: type_id for type_id, name in layouts.CONTROL_TYPES.items()}
    type_id = ids.get(marker.upper())
    if type_id not in (0, 1):
        raise EncodeError(f"not a transaction marker: {marker!r}")
    key = _encode_message(layouts.CONTROL_KEY, 0, {"type": type_id})
    value = _encode_message(layouts.CONTROL_VALUE, 0, {"coordinatorEpoch": coordinator_epoch})
    return key, value
