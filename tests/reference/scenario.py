"""Golden scenarios (shared/spec/scenarios/*.json) -> raw-record rows, as a Kafka dump has them.

Scenario records name fields in snake_case of Kafka's names; one generic rule plus a short
override table maps them (semantics.md section 9), and the project's own encoder writes the
bytes, so the scenarios exercise the same codec the pipeline decodes with.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from offsets_lib import wire
from offsets_lib.wire.codec import Writer
from offsets_lib.wire.layouts import ASSIGNMENT, SUBSCRIPTION, Field, Message

TOPIC = "__consumer_offsets"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

NAME_OVERRIDES: dict[str, str] = {
    "commitTimestamp": "commit_timestamp_ms",
    "expireTimestamp": "expire_timestamp_ms",
    "currentStateTimestamp": "current_state_timestamp_ms",
    "rebalanceTimeout": "rebalance_timeout_ms",
    "sessionTimeout": "session_timeout_ms",
    "ConsumerGroupRegularExpressionValue.Version": "regex_version",
    "ConsumerProtocolAssignment.AssignedPartitions": "partitions",
}
"""Kafka name (or "Message.Field") -> scenario JSON name where the snake_case rule differs."""

EMBEDDED: dict[str, Message] = {"subscription": SUBSCRIPTION, "assignment": ASSIGNMENT}
"""Bytes fields whose JSON form may be a decoded consumer-protocol object."""


def snake(name: str) -> str:
    """Kafka's lowerCamel/UpperCamel field or record name -> snake_case."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def json_name(message: Message, field: Field) -> str:
    return NAME_OVERRIDES.get(
        f"{message.name}.{field.name}", NAME_OVERRIDES.get(field.name, snake(field.name))
    )


RECORD_TYPE_BY_NAME: dict[str, int] = {
    snake(rt.name): rt.type for rt in reversed(list(wire.RECORD_TYPES.values()))
}
"""Scenario `type` -> record type ("offset_commit" -> 1; legacy type 0 is never chosen)."""


def to_fields(message: Message, version: int, obj: dict) -> dict:
    """Scenario JSON object -> Kafka field dict for `message` at `version`."""
    return _struct_in(message, message.fields, version, obj)


def _struct_in(message: Message, fields: tuple[Field, ...], version: int, obj: dict) -> dict:
    by_json = {json_name(message, f): f for f in fields}
    unknown = set(obj) - set(by_json)
    if unknown:
        raise ValueError(f"{message.name}: unknown scenario field(s) {sorted(unknown)}")
    out: dict[str, Any] = {}
    for name, value in obj.items():
        f = by_json[name]
        out[f.name] = _value_in(message, f, version, value)
    return out


def _value_in(message: Message, f: Field, version: int, value: Any) -> Any:
    if value is None:
        return None
    if f.is_struct:
        if f.is_array:
            return [_struct_in(message, f.fields, version, v) for v in value]
        return _struct_in(message, f.fields, version, value)
    if f.element == "uuid":
        return [uuid.UUID(v) for v in value] if f.is_array else uuid.UUID(value)
    if f.type == "bytes":
        return _bytes_in(f, value)
    return value


def _bytes_in(f: Field, value: Any) -> bytes:
    """Opaque {"utf8"}/{"hex"}, or a decoded consumer-protocol object with a "version"."""
    if isinstance(value, dict) and "utf8" in value:
        return value["utf8"].encode("utf-8")
    if isinstance(value, dict) and "hex" in value:
        return bytes.fromhex(value["hex"])
    if isinstance(value, dict) and "version" in value and f.name in EMBEDDED:
        embedded = EMBEDDED[f.name]
        rest = {k: v for k, v in value.items() if k != "version"}
        version = value["version"]
        fields = to_fields(embedded, min(version, embedded.valid[1] or version), rest)
        encode = wire.encode_assignment if embedded is ASSIGNMENT else wire.encode_subscription
        return encode(version, fields)
    if isinstance(value, str):
        return bytes.fromhex(value)
    raise ValueError(f"{f.name}: cannot turn {value!r} into bytes")


def from_fields(
    message: Message, version: int, fields: dict, protocol_type: str | None = None
) -> dict:
    """Kafka field dict -> scenario JSON (fields of that version; tags only when set)."""
    return _struct_out(message, message.fields, version, fields, protocol_type)


def _struct_out(
    message: Message,
    fields: tuple[Field, ...],
    version: int,
    values: dict,
    protocol_type: str | None,
) -> dict:
    protocol_type = values.get("protocolType", protocol_type)
    out: dict[str, Any] = {}
    for f in fields:
        if not f.present_in(version):
            continue
        value = values.get(f.name, f.default_value())
        if f.tagged_in(version) and value == f.default_value():
            continue
        out[json_name(message, f)] = _value_out(message, f, version, value, protocol_type)
    return out


def _value_out(
    message: Message, f: Field, version: int, value: Any, protocol_type: str | None
) -> Any:
    if value is None:
        return None
    if f.is_struct:
        if f.is_array:
            return [_struct_out(message, f.fields, version, v, protocol_type) for v in value]
        return _struct_out(message, f.fields, version, value, protocol_type)
    if f.element == "uuid":
        return [str(v) for v in value] if f.is_array else str(value)
    if f.type == "bytes":
        if protocol_type == "consumer" and f.name in EMBEDDED:
            return _embedded_out(EMBEDDED[f.name], value)
        return _opaque_out(value)
    return value


def _embedded_out(message: Message, data: bytes) -> Any:
    decoded = (wire.decode_assignment if message is ASSIGNMENT else wire.decode_subscription)(data)
    if decoded["error"] or decoded["version"] is None:
        return _opaque_out(data)
    version = decoded["version"]
    layout_version = min(version, message.valid[1] or version)
    return {"version": version, **from_fields(message, layout_version, decoded)}


def _opaque_out(data: bytes) -> dict:
    try:
        return {"utf8": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"hex": data.hex()}


def has_batch_metadata(scenario: dict) -> bool:
    """Whether any record carries producer/control information (then rows get batch columns)."""
    return any("producer_id" in r or r.get("type") == "control" for r in scenario["records"])


def encode_record(rec: dict) -> tuple[bytes, bytes | None]:
    """(key, value) bytes of one scenario record."""
    if rec["type"] == "control":
        return wire.encode_control(rec["marker"], rec.get("coordinator_epoch", 0))
    record_type = RECORD_TYPE_BY_NAME[rec["type"]]
    rt = wire.RECORD_TYPES[record_type]
    key = wire.encode_key(record_type, to_fields(rt.key, 0, rec["key"]))
    if rec.get("value") is None:
        return key, None
    obj = dict(rec["value"])
    version = obj.pop("version")
    layout = obj.pop("layout", "current")
    unknown_tags = obj.pop("unknown_tags", 0)  # DEC-LIMIT: that many unknown tags of size 0
    message = next(
        m
        for m in (wire.RECORD_TYPES[rt.value_from or record_type].value, *rt.historical)
        if m.label == layout
    )
    fields = to_fields(message, version, obj)
    value = wire.encode_value(record_type, version, fields, layout=layout)
    if unknown_tags:  # the value's own (last, empty) tagged-field section gets them
        assert value.endswith(b"\x00"), rec
        section = Writer()
        section.uvarint(unknown_tags)
        value = value[:-1] + bytes(section.out) + b"\x64\x00" * unknown_tags
    return key, value


def scenario_rows(scenario: dict) -> list[dict]:
    """One raw-record row per scenario record, in the scenario's order."""
    batch = has_batch_metadata(scenario)
    rows = []
    for rec in scenario["records"]:
        key, value = encode_record(rec)
        row: dict[str, Any] = {
            "key": key,
            "value": value,
            "topic": TOPIC,
            "partition": rec.get("partition", 0),
            "offset": rec["offset"],
            "timestamp": _EPOCH + timedelta(milliseconds=rec["timestamp_ms"]),
            "timestampType": 0,
        }
        if batch:
            is_control = rec["type"] == "control"
            producer_id = rec.get("producer_id", -1)
            row["producer_id"] = producer_id
            row["producer_epoch"] = 0
            row["is_transactional"] = is_control or producer_id != -1
            row["is_control"] = is_control
        rows.append(row)
    return rows
