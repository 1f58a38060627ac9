"""The compiled readers (`wire/compiled.py`) answer exactly like the generic `Reader`.

Every public decode function is run twice, once on the compiled path and once with
`api._COMPILED = False` (the generic `Reader`, the reference), on the round-trip cases of
test_wire_roundtrip.py and the mutations of test_wire_fuzz.py: same result, same error string
(compared with == and repr, so bool/int or dict-order differences count too). The struct
readers are also compared one layout at a time, historical layouts included, and on a synthetic
table that uses every type and encoding the tables allow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offsets_lib import wire

# private api._COMPILED: the switch to the generic codec, the reference the compiled one equals
from offsets_lib.wire import api
from offsets_lib.wire.codec import DecodeError, Reader, ReaderLimitExceeded, Writer
from offsets_lib.wire.compiled import compile_field, compile_struct
from offsets_lib.wire.layout_types import F
from offsets_lib.wire.layouts import ASSIGNMENT, RECORD_TYPES, SUBSCRIPTION, Message
from tests.unit.strategies import message_values, struct_values, value_cases
from tests.unit.test_wire_fuzz import _mutations

SETTINGS = settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
FUZZ = settings(max_examples=80, suppress_health_check=[HealthCheck.too_slow])
CASES = value_cases()
IDS = [f"t{t}-v{v}-{m.label.replace(' ', '_')}" for t, v, m in CASES]


@contextmanager
def _generic() -> Iterator[None]:
    saved = api._COMPILED
    api._COMPILED = False
    try:
        yield
    finally:
        api._COMPILED = saved


def _same(fn: Callable[..., Any], *args: Any) -> Any:
    compiled = fn(*args)
    with _generic():
        reference = fn(*args)
    assert compiled == reference, (fn.__name__, args)
    assert repr(compiled) == repr(reference), (fn.__name__, args)
    return compiled


def _check_all(key: bytes, value: bytes | None) -> None:
    """Every decode function, compiled vs generic, on these bytes."""
    _same(wire.decode_key, key)
    _same(wire.decode_record, key, value)
    for record_type in (*range(-1, 26), 99):
        _same(wire.decode_value, record_type, value)
    if value is not None:
        _same(wire.decode_subscription, value)
        _same(wire.decode_assignment, value)
        _same(wire.subscription_topics, value)


def _reader_result(fields: tuple, version: int, flexible: bool, raw: bytes, start: int) -> tuple:
    """The generic reader's result; ("limit",) when it notes a DEC-LIMIT check, which the
    compiled readers hand back to it (ReaderLimitExceeded)."""
    reader = Reader(raw, start)
    try:
        out = reader.struct(fields, version, flexible)
    except DecodeError as exc:
        return ("limit",) if reader.limit else ("error", str(exc))
    return ("limit",) if reader.limit else (out, reader.pos, reader.unknown_tags)


def _compiled_result(fields: tuple, version: int, flexible: bool, raw: bytes, start: int) -> tuple:
    try:
        return compile_struct(fields, version, flexible)(raw, start, len(raw))
    except ReaderLimitExceeded:
        return ("limit",)
    except DecodeError as exc:
        return ("error", str(exc))


def _same_struct(fields: tuple, version: int, flexible: bool, raw: bytes, start: int = 2) -> None:
    expected = _reader_result(fields, version, flexible, raw, start)
    got = _compiled_result(fields, version, flexible, raw, start)
    assert got == expected and repr(got) == repr(expected)


def _layouts(record_type: int, version: int) -> list[Message]:
    rt = RECORD_TYPES[record_type]
    current = RECORD_TYPES[rt.value_from].value if rt.value_from is not None else rt.value
    return [m for m in (current, *rt.historical) if m.accepts(version)]


def _key(record_type: int, data: Any) -> bytes:
    fields = RECORD_TYPES[record_type].key.fields
    return wire.encode_key(record_type, data.draw(struct_values(fields, 0)))


@pytest.mark.parametrize(("record_type", "version", "message"), CASES, ids=IDS)
@SETTINGS
@given(data=st.data())
def test_roundtrip_cases_equal_the_generic_reader(record_type, version, message, data) -> None:
    values = data.draw(message_values(message, version))
    raw = wire.encode_value(record_type, version, values, layout=message.label)
    key = _key(record_type, data)
    _check_all(key, raw)
    _same(wire.decode_record, key, None)
    for layout in _layouts(record_type, version):
        _same_struct(layout.fields, version, layout.is_flexible(version), raw)


@pytest.mark.slow  # hypothesis fuzzing, seconds per case: `make test`, not test-fast
@pytest.mark.parametrize(("record_type", "version", "message"), CASES, ids=IDS)
@FUZZ
@given(data=st.data())
def test_fuzz_cases_equal_the_generic_reader(record_type, version, message, data) -> None:
    values = data.draw(message_values(message, version))
    raw = wire.encode_value(record_type, version, values, layout=message.label)
    mutated = data.draw(_mutations(raw))
    key = data.draw(st.sampled_from([_key(record_type, data), mutated]))
    _check_all(key, mutated)
    _check_all(data.draw(_mutations(_key(record_type, data))), raw)
    for layout in _layouts(record_type, version):
        _same_struct(layout.fields, version, layout.is_flexible(version), mutated)


@pytest.mark.slow  # hypothesis fuzzing, seconds per case: `make test`, not test-fast
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(key=st.binary(max_size=64), value=st.none() | st.binary(max_size=128))
def test_random_bytes_equal_the_generic_reader(key: bytes, value: bytes | None) -> None:
    _check_all(key, value)
    _check_all(value or b"", key)


@SETTINGS
@given(
    data=st.data(),
    message=st.sampled_from([SUBSCRIPTION, ASSIGNMENT]),
    version=st.integers(0, 5),
)
def test_embedded_cases_equal_the_generic_reader(data, message: Message, version: int) -> None:
    encode = wire.encode_subscription if message is SUBSCRIPTION else wire.encode_assignment
    raw = encode(version, data.draw(message_values(message, min(version, 3))))
    for payload in (raw, data.draw(_mutations(raw))):
        _same(wire.decode_subscription, payload)
        _same(wire.decode_assignment, payload)
        _same(wire.subscription_topics, payload)


def test_other_buffer_types_take_the_generic_path() -> None:
    key = wire.encode_key(3, {"GroupId": "g"})
    value = wire.encode_value(3, 0, {"Epoch": 7, "MetadataHash": 5})
    expected = wire.decode_record(key, value)
    assert expected.error is None and expected.value == {"Epoch": 7, "MetadataHash": 5}
    for wrap in (bytearray, memoryview):
        assert wire.decode_record(wrap(key), wrap(value)) == expected
        assert wire.decode_value(3, wrap(value)).fields == expected.value


# --- a synthetic table with every type, nullability and encoding -------------------------------

_INNER = (
    F("Flag", "bool", "0+"),
    F("Small", "int8", "0+"),
    F("Port", "uint16", "1+"),
    F("Ids", "[]uuid", "0+"),
    F("Blobs", "[]bytes", "0+", nullable="1+"),
    F("Shorts", "[]int16", "0+"),
    F("Hint", "int32", "1+", tag=3, tagged="1+", default=-1),
)
SYNTHETIC = (
    F("Id", "uuid", "0+"),
    F("A", "int32", "0+"),
    F("B", "int64", "0+"),
    F("Name", "string", "0+", nullable="1+"),
    F("Data", "bytes", "0+", nullable="0+", default=None),
    F("Longs", "[]int64", "0+", nullable="1+"),
    F("Names", "[]string", "0+"),
    F("Inner", "Inner", "0+", nullable="0+", default=None, fields=_INNER),
    F("Items", "[]Inner", "0+", fields=_INNER),
    F("Opt", "Inner", "1+", nullable="1+", tag=0, tagged="1+", default=None, fields=_INNER),
    F("Count", "int64", "1+", tag=1, tagged="1+", default=0),
    F("Gone", "int16", "0", default=-1),
)


@pytest.mark.slow  # hypothesis fuzzing, seconds per case: `make test`, not test-fast
@pytest.mark.parametrize(("version", "flexible"), [(0, False), (1, False), (1, True)])
@FUZZ
@given(data=st.data())
def test_synthetic_table_equals_the_generic_reader(version: int, flexible: bool, data) -> None:
    values = data.draw(struct_values(SYNTHETIC, version))
    writer = Writer()
    writer.fixed("int16", version, "version")
    writer.struct(SYNTHETIC, values, version, flexible, "Synthetic")
    raw = bytes(writer.out)
    _same_struct(SYNTHETIC, version, flexible, raw)
    _same_struct(SYNTHETIC, version, flexible, data.draw(_mutations(raw)))
    _same_struct(SYNTHETIC, version, flexible, data.draw(st.binary(max_size=96)))


@pytest.mark.parametrize("raw", [b"", b"\x00", b"\x00\x00\x00\x00", b"\x00\x01\x00\x00\x00\x00"])
def test_unsupported_type_fails_like_the_generic_reader(raw: bytes) -> None:
    fields = (F("X", "int32", "0+"), F("Odd", "float64", "0+"), F("Odds", "[]float64", "0+"))
    _same_struct(fields, 0, False, raw, start=0)
    _same_struct(fields[2:], 0, False, raw, start=0)


def test_compiled_field_reader_is_reader_field() -> None:
    topics = SUBSCRIPTION.fields[0]
    raw = wire.encode_subscription(1, {"Topics": ["a", "bc"], "UserData": None})
    read = compile_field(topics, 0, False)
    assert read(raw, 2, len(raw))[0] == Reader(raw, 2).field(topics, 0, False) == ["a", "bc"]
