"""Hypothesis strategies derived from the layout tables (so new layouts are covered for free)."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import strategies as st

from offsets_lib.wire.layouts import RECORD_TYPES, Field, Message

_INTS = {
    "int8": st.integers(-(2**7), 2**7 - 1),
    "int16": st.integers(-(2**15), 2**15 - 1),
    "uint16": st.integers(0, 2**16 - 1),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1),
}


def _scalar(type_: str) -> st.SearchStrategy[Any]:
    if type_ in _INTS:
        return _INTS[type_]
    if type_ == "bool":
        return st.booleans()
    if type_ == "uuid":
        return st.just(uuid.UUID(int=0)) | st.uuids()
    if type_ == "string":
        return st.text(max_size=12)
    if type_ == "bytes":
        return st.binary(max_size=24)
    raise AssertionError(f"no strategy for {type_}")


def field_values(f: Field, version: int) -> st.SearchStrategy[Any]:
    """Values of one field at one version, null included where the version allows it."""
    if f.is_struct:
        inner = struct_values(f.fields, version)
        base = st.lists(inner, max_size=3) if f.is_array else inner
    elif f.is_array:
        base = st.lists(_scalar(f.element), max_size=4)
    else:
        base = _scalar(f.type)
    if f.nullable_in(version):
        base = st.none() | base
    if f.tagged_in(version):  # absent tags must come back as their default
        base = st.just(f.default_value()) | base
    return base


def struct_values(fields: tuple[Field, ...], version: int) -> st.SearchStrategy[dict]:
    present = {f.name: field_values(f, version) for f in fields if f.present_in(version)}
    return st.fixed_dictionaries(present)


def message_values(message: Message, version: int) -> st.SearchStrategy[dict]:
    return struct_values(message.fields, version)


def with_defaults(fields: tuple[Field, ...], values: dict) -> dict:
    """What a decoder returns for `values`: every layout field, defaults where absent."""
    out = {}
    for f in fields:
        if f.name not in values:
            out[f.name] = f.default_value()
            continue
        value = values[f.name]
        if f.is_struct and value is not None:
            if f.is_array:
                value = [with_defaults(f.fields, v) for v in value]
            else:
                value = with_defaults(f.fields, value)
        out[f.name] = value
    return out


def value_cases() -> list[tuple[int, int, Message]]:
    """(record type, version, layout) for every type, version and historical layout."""
    cases = []
    for rt in RECORD_TYPES.values():
        current = RECORD_TYPES[rt.value_from].value if rt.value_from is not None else rt.value
        for message in (current, *rt.historical):
            lo, hi = message.valid
            for version in range(lo, (hi if hi is not None else lo) + 1):
                cases.append((rt.type, version, message))
    return cases
