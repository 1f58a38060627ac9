"""wire.layout_read against the codec: many values read at once give what the codec gives one
by one (clean values of every GroupMetadata version, consumer-protocol payloads, and their
mutations, which go to the codec), and the classic rows built as columns for many groups equal
those built for each alone."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offsets_lib import wire
from offsets_lib.audit.group_rows import GROUP_METADATA, classic_group_rows
from offsets_lib.wire import fastpath, layout_read
from offsets_lib.wire.layouts import ASSIGNMENT, SUBSCRIPTION, Message
from tests.reference.decode import classic_group_row
from tests.unit.strategies import message_values
from tests.unit.test_wire_fuzz import _mutations

SETTINGS = settings(max_examples=30, suppress_health_check=[HealthCheck.too_slow])
GROUP_METADATA_VERSIONS = range(0, 5)


@st.composite
def payloads(
    draw: st.DrawFn, message: Message, encode: Callable[[int, dict], bytes], versions: range
) -> bytes | None:
    """A payload of `message`, clean or mutated, or none at all."""
    version = draw(st.sampled_from(versions))
    raw = encode(version, draw(message_values(message, min(version, message.valid[1]))))
    shape = draw(st.sampled_from(["clean", "clean", "mutated", "none", "empty"]))
    if shape == "mutated":
        return draw(_mutations(raw))
    return {"none": None, "empty": b""}.get(shape, raw)


def _group_metadata_value(version: int, fields: dict) -> bytes:
    return wire.encode_value(2, version, fields)


group_metadata = payloads(
    wire.RECORD_TYPES[2].value, _group_metadata_value, GROUP_METADATA_VERSIONS
)


@SETTINGS
@given(st.lists(group_metadata.filter(bool), min_size=1, max_size=8))
def test_values_read_at_once_equal_the_codec(raws: list[bytes]) -> None:
    values, versions = layout_read.record_values(2, fastpath.array_bytes(pa.array(raws)))
    decoded = [wire.decode_value(2, raw) for raw in raws]
    assert values.to_pylist() == pa.array([d.fields for d in decoded], GROUP_METADATA).to_pylist()
    for version, d in zip(versions.to_pylist(), decoded, strict=True):
        assert d.fields is None or version == d.version


current_assignments = payloads(
    wire.RECORD_TYPES[8].value, lambda version, fields: wire.encode_value(8, version, fields),
    range(0, 1),
)  # fmt: skip


def _uuids_as_text(value: object) -> object:
    if isinstance(value, dict):
        return {name: _uuids_as_text(v) for name, v in value.items()}
    if isinstance(value, list):
        return [_uuids_as_text(v) for v in value]
    return str(value) if isinstance(value, uuid.UUID) else value


@SETTINGS
@given(st.lists(current_assignments.filter(bool), min_size=1, max_size=8))
def test_current_assignments_read_at_once_equal_the_codec(raws: list[bytes]) -> None:
    """Uuids (topic ids) and tagged fields (assignment epochs) too; topic ids as text."""
    values, _ = layout_read.record_values(8, fastpath.array_bytes(pa.array(raws)))
    expected = [_uuids_as_text(wire.decode_value(8, raw).fields) for raw in raws]
    assert values.to_pylist() == expected


def _assigned(raw: bytes | None) -> list | None:
    if not raw:
        return None
    decoded = wire.decode_assignment(raw)
    return None if decoded.get("error") else decoded.get("AssignedPartitions")


@SETTINGS
@given(
    st.lists(payloads(SUBSCRIPTION, wire.encode_subscription, range(0, 5)), max_size=8),
    st.lists(payloads(ASSIGNMENT, wire.encode_assignment, range(0, 5)), max_size=8),
)
def test_embedded_payloads_read_at_once_equal_the_codec(
    subscriptions: list[bytes | None], assignments: list[bytes | None]
) -> None:
    topics = layout_read.subscription_topic_lists(pa.array(subscriptions, pa.binary()))
    assert topics.to_pylist() == [
        wire.subscription_topics(raw) if raw else None for raw in subscriptions
    ]
    assigned = layout_read.assignment_lists(pa.array(assignments, pa.binary()))
    expected = pa.array([_assigned(raw) for raw in assignments], layout_read.ASSIGNED)
    assert assigned.to_pylist() == expected.to_pylist()


@st.composite
def consumer_groups(draw: st.DrawFn) -> tuple[dict, int]:
    """A GroupMetadata value whose members carry (possibly mutated) consumer payloads."""
    version = draw(st.sampled_from(GROUP_METADATA_VERSIONS))
    fields = draw(message_values(wire.RECORD_TYPES[2].value, version))
    fields["protocolType"] = draw(st.sampled_from(["consumer", "consumer", "connect", ""]))
    for member in fields.get("members") or []:
        member["subscription"] = (
            draw(payloads(SUBSCRIPTION, wire.encode_subscription, range(5))) or b""
        )
        member["assignment"] = draw(payloads(ASSIGNMENT, wire.encode_assignment, range(5))) or b""
    decoded = wire.decode_value(2, wire.encode_value(2, version, fields))
    return decoded.fields, version


@SETTINGS
@given(st.lists(consumer_groups(), min_size=1, max_size=6))
def test_classic_rows_of_many_groups_equal_each_built_alone(groups: list[tuple[dict, int]]) -> None:
    values = pa.array([value for value, _ in groups], GROUP_METADATA)
    built = classic_group_rows(values, pa.array([v for _, v in groups], pa.int16()))
    assert built.to_pylist() == [classic_group_row(value, v) for value, v in groups]
