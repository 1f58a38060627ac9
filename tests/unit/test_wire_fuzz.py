"""Hostile bytes: no decode_* function may raise, and every failure is a precise DecodeError.

"internal error" in a result would mean an exception other than DecodeError escaped the
reader, i.e. an unchecked path; the tests treat that as a bug.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offsets_lib import wire
from tests.unit.strategies import message_values, value_cases

SETTINGS = settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
CASES = value_cases()


def _check_all(key: bytes | None, value: bytes | None) -> None:
    results = [wire.decode_key(key), wire.decode_record(key, value)]
    if value is not None:
        results += [wire.decode_subscription(value), wire.decode_assignment(value)]
        results.append(wire.decode_control(key or b"", value))
    for record_type in (*range(-1, 26), 99, 2**15 - 1):
        results.append(wire.decode_value(record_type, value))
    for result in results:
        error = result["error"] if isinstance(result, dict) else result.error
        assert error is None or "internal error" not in error, error


@SETTINGS
@given(key=st.none() | st.binary(max_size=64), value=st.none() | st.binary(max_size=128))
def test_random_bytes_never_raise(key: bytes | None, value: bytes | None) -> None:
    _check_all(key, value)


def _mutations(raw: bytes) -> st.SearchStrategy[bytes]:
    """Truncations, bit flips, overwritten lengths/counts, invalid UTF-8, junk tag sections."""
    n = len(raw)
    pos = st.integers(0, max(n - 1, 0))
    junk = st.sampled_from(
        [b"\xff", b"\x7f\xff", b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff\x0f", b"\x80" * 6,
         b"\xc3\x28", b"\xed\xa0\x80", b"\x05\x00\x10", b"\x01\x07\x7f\x00", b"\x00\x00"]
    )  # fmt: skip
    return st.one_of(
        pos.map(lambda i: raw[:i]),
        st.tuples(pos, st.integers(0, 7)).map(
            lambda t: raw[: t[0]] + bytes([raw[t[0]] ^ (1 << t[1])]) + raw[t[0] + 1 :] if n else raw
        ),
        st.tuples(pos, junk).map(lambda t: raw[: t[0]] + t[1] + raw[t[0] + len(t[1]) :]),
        st.tuples(pos, junk).map(lambda t: raw[: t[0]] + t[1] + raw[t[0] :]),
        st.binary(max_size=4).map(lambda b: raw + b),
        st.integers(-(2**15), 2**15 - 1).map(lambda v: v.to_bytes(2, "big", signed=True) + raw[2:]),
    )


@pytest.mark.slow  # hypothesis fuzzing, seconds per case: `make test`, not test-fast
@pytest.mark.parametrize(
    ("record_type", "version", "message"),
    CASES,
    ids=[f"t{t}-v{v}-{m.label.replace(' ', '_')}" for t, v, m in CASES],
)
@settings(max_examples=80, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_values_never_raise(record_type, version, message, data) -> None:
    values = data.draw(message_values(message, version))
    raw = wire.encode_value(record_type, version, values, layout=message.label)
    mutated = data.draw(_mutations(raw))
    result = wire.decode_value(record_type, mutated)
    assert result.error is None or "internal error" not in result.error, result.error
    _check_all(mutated, mutated)


@pytest.mark.slow  # hypothesis fuzzing, seconds per case: `make test`, not test-fast
@SETTINGS
@given(data=st.data(), which=st.sampled_from(["subscription", "assignment"]))
def test_mutated_embedded_never_raise(data, which: str) -> None:
    from offsets_lib.wire.layouts import ASSIGNMENT, SUBSCRIPTION

    message = SUBSCRIPTION if which == "subscription" else ASSIGNMENT
    version = data.draw(st.integers(0, 3))
    encode = wire.encode_subscription if message is SUBSCRIPTION else wire.encode_assignment
    raw = encode(version, data.draw(message_values(message, version)))
    mutated = data.draw(_mutations(raw))
    for decode in (wire.decode_subscription, wire.decode_assignment):
        result = decode(mutated)
        assert result["error"] is None or "internal error" not in result["error"]


def test_wrong_python_types_never_raise() -> None:
    for junk in (123, "text", 1.5, [1, 2], object()):
        assert wire.decode_key(junk).error  # type: ignore[arg-type]
        assert wire.decode_value(1, junk).error  # type: ignore[arg-type]
        assert wire.decode_record(junk, junk).error  # type: ignore[arg-type]
        assert wire.decode_subscription(junk)["error"]  # type: ignore[arg-type]
        assert wire.decode_control(junk, junk).error  # type: ignore[arg-type]
    assert wire.decode_value("1", b"\x00\x00").error  # type: ignore[arg-type]
