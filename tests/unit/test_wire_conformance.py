"""layouts.py must agree, field by field, with Kafka's own message definitions.

The reference files under shared/reference/kafka-messages/ are verbatim Kafka JSON (with `//`
comments); records.json additionally carries the historical layouts of records.md section 7.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from offsets_lib.wire import RECORD_TYPES
from offsets_lib.wire.layout_types import ZERO_UUID
from offsets_lib.wire.layouts import ASSIGNMENT, SUBSCRIPTION, Field, Message, parse_range
from tests.unit.conftest import SHARED, shared_path

REFERENCE = SHARED / "reference" / "kafka-messages"
REFERENCE_FILES = sorted(REFERENCE.glob("*.json")) + sorted(REFERENCE.glob("removed/*.json"))


def strip_comments(text: str) -> str:
    """Drop `//` comments outside JSON strings (Kafka's definitions carry them)."""
    out, in_string, i = [], False, 0
    while i < len(text):
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\":
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def load_reference(path: Path) -> dict:
    return json.loads(strip_comments(path.read_text()))


def layout_for(ref: dict) -> Message:
    """The layouts.py message that a reference definition describes."""
    if ref["type"] == "data":
        return {
            "ConsumerProtocolSubscription": SUBSCRIPTION,
            "ConsumerProtocolAssignment": ASSIGNMENT,
        }[ref["name"]]
    rt = RECORD_TYPES[ref["apiKey"]]
    return rt.key if ref["type"] == "coordinator-key" else rt.value


_INT_TYPES = {"int8", "int16", "int32", "int64", "uint16"}


def expected_default(ref: dict, type_: str) -> Any:
    """Effective default of a reference field, as Kafka's generator interprets it."""
    raw = ref.get("default")
    is_array = type_.startswith("[]")
    if raw is None or raw == "null":
        if "default" in ref:
            return None
        if is_array:
            return []
        if type_ in _INT_TYPES:
            return 0
        return {"string": "", "bytes": b"", "bool": False, "uuid": ZERO_UUID}.get(type_)
    if type_ in _INT_TYPES:
        return int(raw)
    if type_ == "uuid":
        return uuid.UUID(raw)
    if type_ == "bool":
        return raw in (True, "true")
    return raw


def assert_fields_match(
    ours: tuple[Field, ...], ref_fields: list[dict], structs: dict[str, list], where: str
) -> None:
    assert [f.name for f in ours] == [r["name"] for r in ref_fields], where
    for field, ref in zip(ours, ref_fields, strict=True):
        at = f"{where}.{ref['name']}"
        assert field.type == ref["type"], at
        # A tagged field may omit "versions" (the generator then uses taggedVersions);
        # records.json omits it for key fields, which exist in key version 0 only.
        versions = ref.get("versions") or ref.get("taggedVersions") or "0"
        assert field.versions == parse_range(versions), at
        assert field.nullable == parse_range(ref.get("nullableVersions")), at
        assert field.tag == ref.get("tag"), at
        assert field.tagged == parse_range(ref.get("taggedVersions")), at
        assert field.default_value() == expected_default(ref, ref["type"]), at
        element = ref["type"].removeprefix("[]")
        nested = ref.get("fields") or structs.get(element)
        if nested is None:
            assert not field.fields, f"{at}: layouts has nested fields, reference has none"
        else:
            assert_fields_match(field.fields, nested, structs, at)


@pytest.mark.parametrize("path", REFERENCE_FILES, ids=lambda p: p.name)
def test_layout_matches_kafka_definition(path: Path) -> None:
    ref = load_reference(path)
    message = layout_for(ref)
    assert message.name == ref["name"]
    assert message.valid == parse_range(ref["validVersions"])
    assert message.flexible == parse_range(ref["flexibleVersions"])
    structs = {s["name"]: s["fields"] for s in ref.get("commonStructs", [])}
    assert_fields_match(message.fields, ref["fields"], structs, ref["name"])


def test_reference_folder_covers_every_layout() -> None:
    shared_path("reference", "kafka-messages")
    seen = {(r.get("apiKey"), r["type"]) for r in map(load_reference, REFERENCE_FILES)}
    for record_type in range(24):
        assert (record_type, "coordinator-key") in seen
        assert (record_type, "coordinator-value") in seen
    assert sorted(RECORD_TYPES) == list(range(24))
    assert len(REFERENCE_FILES) == 50


def _records_json() -> dict:
    return json.loads(shared_path("spec", "records.json").read_text())


def test_historical_layouts_match_records_json() -> None:
    spec = _records_json()
    for entry in spec["recordTypes"]:
        rt = RECORD_TYPES[entry["recordType"]]
        assert rt.name == entry["name"]
        history = entry.get("historicalLayouts", [])
        assert len(rt.historical) == len(history), rt.name
        for message, hist in zip(rt.historical, history, strict=True):
            assert message.label != "current"
            assert message.valid == parse_range(hist["validVersions"])
            assert message.flexible == parse_range(hist["flexibleVersions"])
            assert_fields_match(message.fields, hist["fields"], {}, f"{rt.name}@{message.label}")


def test_current_layouts_match_records_json() -> None:
    spec = _records_json()
    for entry in spec["recordTypes"]:
        rt = RECORD_TYPES[entry["recordType"]]
        assert_fields_match(rt.key.fields, entry["key"], {}, f"{rt.name} key")
        value = entry["value"]
        assert rt.value.valid == parse_range(value["validVersions"])
        assert_fields_match(rt.value.fields, value["fields"], {}, f"{rt.name} value")
    for message in (SUBSCRIPTION, ASSIGNMENT):
        embedded = spec["embedded"][message.name]
        assert_fields_match(message.fields, embedded["fields"], {}, message.name)


def test_control_record_layouts_match_records_json() -> None:
    from offsets_lib.wire.layouts import CONTROL_KEY, CONTROL_VALUE

    control = _records_json()["controlRecords"]
    # records.json lists the int16 version as a field; the codec reads it as framing.
    assert [f["name"] for f in control["key"]] == ["version", *[f.name for f in CONTROL_KEY.fields]]
    assert [f["name"] for f in control["value"]] == [
        "version",
        *[f.name for f in CONTROL_VALUE.fields],
    ]
    assert [f["type"] for f in control["value"]][1:] == [f.type for f in CONTROL_VALUE.fields]
