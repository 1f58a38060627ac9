"""Property tests: whatever the tables allow encodes and decodes back to the same values."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offsets_lib import wire
from offsets_lib.wire.layouts import ASSIGNMENT, RECORD_TYPES, SUBSCRIPTION, Message
from tests.unit.strategies import message_values, struct_values, value_cases, with_defaults

SETTINGS = settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
CASES = value_cases()


@pytest.mark.parametrize(
    ("record_type", "version", "message"),
    CASES,
    ids=[f"t{t}-v{v}-{m.label.replace(' ', '_')}" for t, v, m in CASES],
)
@SETTINGS
@given(data=st.data())
def test_value_roundtrip(record_type: int, version: int, message: Message, data) -> None:
    values = data.draw(message_values(message, version))
    raw = wire.encode_value(record_type, version, values, layout=message.label)
    decoded = wire.decode_value(record_type, raw)
    assert decoded.error is None, decoded.error
    assert decoded.version == version
    assert decoded.trailing_bytes == 0 and decoded.unknown_tags == 0
    if decoded.layout == message.label:
        assert decoded.fields == with_defaults(message.fields, values)
    else:
        # Same-version layouts can be ambiguous (records.md section 7): the bytes must then be
        # a genuine encoding under the layout that won.
        assert message.label != "current"
        assert wire.encode_value(record_type, version, decoded.fields, layout=decoded.layout) == raw
    assert wire.encode_value(record_type, version, decoded.fields, layout=decoded.layout) == raw


@pytest.mark.parametrize("record_type", sorted(RECORD_TYPES))
@SETTINGS
@given(data=st.data())
def test_key_roundtrip(record_type: int, data) -> None:
    key = RECORD_TYPES[record_type].key
    values = data.draw(struct_values(key.fields, 0))
    raw = wire.encode_key(record_type, values)
    assert wire.decode_key(raw) == wire.DecodedKey(record_type, values, None, 0)
    record = wire.decode_record(raw, None)
    assert record.is_tombstone and record.error is None and record.key == values


@pytest.mark.parametrize(
    ("message", "version"), [(m, v) for m in (SUBSCRIPTION, ASSIGNMENT) for v in range(4)]
)
@SETTINGS
@given(data=st.data())
def test_embedded_roundtrip(message: Message, version: int, data) -> None:
    values = data.draw(message_values(message, version))
    encode, decode = (
        (wire.encode_subscription, wire.decode_subscription)
        if message is SUBSCRIPTION
        else (wire.encode_assignment, wire.decode_assignment)
    )
    raw = encode(version, values)
    decoded = decode(raw)
    assert decoded == {"version": version, "error": None, "trailing_bytes": 0,
                       **with_defaults(message.fields, values)}  # fmt: skip


@SETTINGS
@given(
    version=st.integers(4, 2**15 - 1),
    values=message_values(SUBSCRIPTION, 3),
    extra=st.binary(max_size=10),
)
def test_newer_subscription_parses_as_v3(version: int, values: dict, extra: bytes) -> None:
    raw = wire.encode_subscription(version, values) + extra
    decoded = wire.decode_subscription(raw)
    assert decoded["error"] is None and decoded["version"] == version
    assert decoded["trailing_bytes"] == len(extra)
    assert decoded["Topics"] == values["Topics"]


@SETTINGS
@given(
    marker=st.sampled_from(["COMMIT", "ABORT", "commit"]), epoch=st.integers(-(2**31), 2**31 - 1)
)
def test_control_roundtrip(marker: str, epoch: int) -> None:
    key, value = wire.encode_control(marker, epoch)
    decoded = wire.decode_control(key, value)
    assert decoded == wire.DecodedControl(marker.upper(), decoded.type_id, 0, epoch, None)
