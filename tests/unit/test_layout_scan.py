"""The vectorized layout walk vouches for exactly the records the codec decodes cleanly.

`layout_scan` may only vouch for a record the codec decodes without error with its current
layout, to the last byte, with no unknown tag and ASCII-only text; and it must vouch for every
such record (else the audit loses its speed, not its correctness). The keys and columns it cuts
must be the codec's. Checked on every record type, version and historical layout, mutated bytes
and a synthetic table with every type and encoding. Then the audit of a task is the same whether
it decodes every value or only the values the replay reads.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offsets_lib import wire
from offsets_lib.audit import replay, task_audit, task_input
from offsets_lib.engine.routing import positioned_table
from offsets_lib.tools.generate import generate_dump

# private layout_scan._Walker.is_ascii: the text check alone; no public call returns it
from offsets_lib.wire import batch_decode, fastpath, layout_scan
from offsets_lib.wire.batch_decode import decode_record_row
from offsets_lib.wire.codec import DecodeError, Reader, Writer
from tests.log_builder import classic_group_value
from tests.unit.strategies import message_values, struct_values, value_cases
from tests.unit.test_wire_compiled import SYNTHETIC
from tests.unit.test_wire_fuzz import _mutations

GROUP_CASES = [case for case in value_cases() if case[0] >= 2]
SETTINGS = settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])


def _is_ascii(value: object) -> bool:
    """Whether every text inside a decoded value is ASCII (bytes and uuids are not text)."""
    if isinstance(value, str):
        return value.isascii()
    if isinstance(value, dict):
        return all(_is_ascii(v) for v in value.values())
    if isinstance(value, list):
        return all(_is_ascii(v) for v in value)
    return True


def _vouchable(key: bytes | None, value: bytes | None) -> bool:
    record = wire.decode_record(key, value)
    return (
        record.error is None
        and (record.record_type or 0) >= 2
        and record.layout == "current"
        and record.trailing_bytes == 0
        and record.key_trailing_bytes == 0
        and record.unknown_tags == 0
        and _is_ascii(record.key)
        and _is_ascii(record.value)
    )


@st.composite
def group_records(draw: st.DrawFn) -> tuple[bytes | None, bytes | None]:
    record_type, version, message = draw(st.sampled_from(GROUP_CASES))
    key = wire.encode_key(
        record_type, draw(struct_values(wire.RECORD_TYPES[record_type].key.fields, 0))
    )
    value = wire.encode_value(
        record_type, version, draw(message_values(message, version)), layout=message.label
    )
    shape = draw(st.sampled_from(["clean", "clean", "tombstone", "value", "key", "bytes"]))
    if shape == "tombstone":
        return key, None
    if shape == "value":
        return key, draw(_mutations(value))
    if shape == "key":
        return draw(_mutations(key)), value
    if shape == "bytes":
        return draw(st.none() | st.binary(max_size=24)), draw(st.none() | st.binary(max_size=48))
    return key, value


def _check(pairs: list[tuple[bytes | None, bytes | None]]) -> layout_scan.Scanned:
    keys = pa.array([k for k, _ in pairs], pa.binary())
    values = pa.array([v for _, v in pairs], pa.binary())
    scanned = layout_scan.scan_records(keys, values)
    vouched = scanned.rows.tolist()
    assert vouched == [i for i, (k, v) in enumerate(pairs) if _vouchable(k, v)]
    for j, i in enumerate(vouched):
        row = decode_record_row(*pairs[i])
        for name, column in scanned.columns.items():
            assert column[j].as_py() == row.get(name), (name, pairs[i])
        fields = row.get("fields") or {}
        for name, counts in scanned.counts.items():
            listed = fields.get(name)
            expected = -1 if listed is None else len(listed)
            assert counts[j] == expected, (name, pairs[i])
    return scanned


@SETTINGS
@given(st.lists(group_records(), min_size=1, max_size=8))
def test_walk_vouches_exactly_for_clean_current_records(pairs) -> None:
    _check(pairs)


@pytest.mark.parametrize(("record_type", "version", "message"), GROUP_CASES)
@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_walk_on_every_layout(record_type, version, message, data) -> None:
    """Several records of one layout at once: arrays of different lengths walk side by side."""
    key_fields = wire.RECORD_TYPES[record_type].key.fields
    pairs = []
    for _ in range(data.draw(st.integers(1, 5))):
        key = wire.encode_key(record_type, data.draw(struct_values(key_fields, 0)))
        values = data.draw(message_values(message, version))
        pairs.append((key, wire.encode_value(record_type, version, values, layout=message.label)))
    _check(pairs)


def test_walk_leaves_text_beyond_ascii_and_unknown_tags_to_the_codec() -> None:
    key = wire.encode_key(5, {"GroupId": "g", "MemberId": "m"})
    member = {
        "InstanceId": None,
        "RackId": None,
        "ClientId": "client-é",  # valid UTF-8, not ASCII: the codec decodes it
        "ClientHost": "h",
        "SubscribedTopicNames": ["t"],
        "SubscribedTopicRegex": None,
        "RebalanceTimeoutMs": 1,
        "ServerAssignor": None,
        "ClassicMemberMetadata": None,
    }
    non_ascii = wire.encode_value(5, 0, member)
    ascii_value = wire.encode_value(5, 0, {**member, "ClientId": "client"})
    unknown_tag = ascii_value[:-1] + b"\x01\x07\x01\x00"  # tag 7, one byte: unknown
    scanned = _check([(key, non_ascii), (key, ascii_value), (key, unknown_tag), (key, None)])
    assert scanned.rows.tolist() == [1, 3]
    assert wire.decode_record(key, non_ascii).error is None
    assert wire.decode_record(key, unknown_tag).unknown_tags == 1


def test_walk_vouches_for_no_offset_commit_or_control_key() -> None:
    offset_key = wire.encode_key(1, {"group": "g", "topic": "t", "partition": 0})
    offset_value = wire.encode_value(1, 3, {"offset": 1, "metadata": "", "commitTimestamp": 1})
    control_key = struct.pack(">hh", 0, 1)
    scanned = layout_scan.scan_records(
        pa.array([offset_key, control_key, None, b""], pa.binary()),
        pa.array([offset_value, b"\x00\x00\x00\x00\x00\x00", None, None], pa.binary()),
    )
    assert scanned.rows.tolist() == []


def _walk_fits(fields, version: int, flexible: bool, raw: pa.Array, skip: int) -> np.ndarray:
    """Whether each binary value of `raw`, after `skip` bytes, is exactly one struct of the
    table, as the walk (layout_scan._Walker) vouches for it."""
    data, start, length, present = fastpath.array_bytes(raw)
    end = start + length
    ok = present & (length >= skip)
    pos, ok = layout_scan._Walker(data).struct(fields, version, flexible, start + skip, end, ok)
    return ok & (pos == end)


def _reader_fits(version: int, flexible: bool, raw: bytes | None) -> bool:
    if raw is None or len(raw) < 2:
        return False
    reader = Reader(raw, 2)
    try:
        out = reader.struct(SYNTHETIC, version, flexible)
    except DecodeError:
        return False
    return reader.pos == len(raw) and reader.unknown_tags == 0 and _is_ascii(out)


@pytest.mark.slow  # hypothesis fuzzing, seconds per case: `make test`, not test-fast
@pytest.mark.parametrize(("version", "flexible"), [(0, False), (1, False), (1, True)])
@settings(max_examples=120, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_synthetic_table_walk_equals_the_reader(version: int, flexible: bool, data) -> None:
    """Every type, nullability and encoding the tables allow: bool, int8, uint16, uuid arrays,
    nullable byte arrays, nullable and tagged structs, tagged scalars."""
    raws: list[bytes | None] = []
    for _ in range(data.draw(st.integers(1, 6))):
        writer = Writer()
        writer.fixed("int16", version, "version")
        writer.struct(
            SYNTHETIC, data.draw(struct_values(SYNTHETIC, version)), version, flexible, "S"
        )
        raw = bytes(writer.out)
        raws.append(
            data.draw(st.sampled_from([raw, raw, None]) | _mutations(raw) | st.binary(max_size=64))
        )
    fits = _walk_fits(SYNTHETIC, version, flexible, pa.array(raws, pa.binary()), skip=2)
    assert fits.tolist() == [_reader_fits(version, flexible, raw) for raw in raws]


# ---- the audit with values decoded only where the replay reads them --------------------------


def _audit(monkeypatch, batches: list[pa.RecordBatch], every_value_of) -> dict[str, pa.Table]:
    real = batch_decode.decode_task_records
    with monkeypatch.context() as patch:
        patch.setattr(
            task_input,
            "decode_task_records",
            lambda b, **kw: real(b, **{**kw, "every_value_of": every_value_of}),
        )
        return task_audit.audit_records(batches)


def _sorted(table: pa.Table) -> pa.Table:
    keys = [
        c
        for c in ("log_partition", "group_id", "topic", "partition", "log_offset", "hour_ms")
        if c in table.column_names
    ]
    return table.sort_by([(c, "ascending") for c in keys]) if keys else table


def _assert_same_audit(monkeypatch, batches: list[pa.RecordBatch]) -> None:
    every = _audit(monkeypatch, batches, None)
    needed = _audit(monkeypatch, batches, replay.EVERY_VALUE_TYPES)
    assert every.keys() == needed.keys()
    for kind in every:
        assert _sorted(needed[kind]).equals(_sorted(every[kind])), kind


@pytest.mark.parametrize("seed", [3, 17])
def test_audit_reads_only_needed_values_and_gives_the_same_tables(
    monkeypatch, tmp_path, seed: int
) -> None:
    root = tmp_path / "dump"
    generate_dump(str(root), groups=60, records=6_000, seed=seed, profile="realistic")
    table = positioned_table(pq.read_table(root))
    _assert_same_audit(monkeypatch, table.to_batches(max_chunksize=997))


def _raw_batch(rows: list[tuple[int, bytes, bytes | None]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(
        [
            {"log_partition": 0, "log_offset": offset, "log_timestamp_ms": 1_000 + offset,
             "key": key, "value": value, "is_history": False}
            for offset, key, value in rows
        ],
        schema=task_input.RAW_ARROW,
    )  # fmt: skip


def test_an_undecodable_newest_record_keeps_the_older_value(monkeypatch) -> None:
    """The newest record of a key is corrupt: the replay must use the older, decodable value,
    so that value is decoded although a newer record of its key exists."""
    member_key = wire.encode_key(5, {"GroupId": "g", "MemberId": "m"})
    member = {
        "InstanceId": None, "RackId": "r1", "ClientId": "c", "ClientHost": "h",
        "SubscribedTopicNames": ["orders"], "SubscribedTopicRegex": None,
        "RebalanceTimeoutMs": 5, "ServerAssignor": None, "ClassicMemberMetadata": None,
    }  # fmt: skip
    good = wire.encode_value(5, 0, member)
    rows = [
        (0, wire.encode_key(3, {"GroupId": "g"}), wire.encode_value(3, 0, {"Epoch": 4})),
        (1, member_key, wire.encode_value(5, 0, {**member, "RackId": "old"})),
        (2, member_key, good),
        (3, member_key, good[:-3]),  # truncated: a reject
        (4, wire.encode_key(3, {"GroupId": "g"}), b"\x00\x00\x00\x00"),  # truncated too
    ]
    batch = _raw_batch(rows)
    _assert_same_audit(monkeypatch, [batch])
    tables = task_audit.audit_records([batch])
    assert tables[task_audit.REJECT].column("log_offset").to_pylist() == [3, 4]
    group = tables[task_audit.GROUP].to_pylist()[0]
    assert (group["generation"], group["subscribed_topics"]) == (4, ["orders"])
    assert group["members"][0]["rack_id"] == "r1"


def test_metrics_count_group_metadata_writes_without_their_values(monkeypatch) -> None:
    key = wire.encode_key(2, {"group": "g"})

    def metadata(members: int) -> bytes:
        return classic_group_value(
            members, protocol_type="consumer", protocol="range", generation=1, state_ms=5
        )

    batch = _raw_batch([(0, key, metadata(2)), (1, key, metadata(0)), (2, key, metadata(1))])
    _assert_same_audit(monkeypatch, [batch])
    metrics = task_audit.audit_records([batch])[task_audit.METRIC]
    assert metrics.column("group_metadata_writes").to_pylist() == [2]


def test_a_current_assignment_tombstone_keeps_the_state_of_the_value_before_it(monkeypatch) -> None:
    """G-M4: the tombstone resets epochs and partitions but not the member's state, so the value
    before the tombstone (not the newest record of its key) must be decoded too."""

    def record(record_type: int, value: dict | None, **key: str) -> tuple[bytes, bytes | None]:
        key_bytes = wire.encode_key(record_type, {"GroupId": "g", **key})
        encoded = None if value is None else wire.encode_value(record_type, 0, value)
        return key_bytes, encoded

    assignment = {"MemberEpoch": 2, "PreviousMemberEpoch": 1, "State": 1}  # UNREVOKED_PARTITIONS
    rows = [
        record(3, {"Epoch": 2}),
        record(6, {"AssignmentEpoch": 2}),
        record(5, {"ClientId": "c", "SubscribedTopicNames": ["orders"]}, MemberId="m"),
        record(8, assignment, MemberId="m"),
        record(8, None, MemberId="m"),
    ]
    batch = _raw_batch([(offset, key, value) for offset, (key, value) in enumerate(rows)])
    _assert_same_audit(monkeypatch, [batch])
    (group,) = task_audit.audit_records([batch])[task_audit.GROUP].to_pylist()
    (member,) = group["members"]
    assert (member["member_epoch"], member["previous_member_epoch"], member["member_state"]) == (
        -1, -1, "UNREVOKED_PARTITIONS",
    )  # fmt: skip
    assert group["state"] == "Reconciling"


@st.composite
def _mostly_ascii(draw: st.DrawFn) -> bytes:
    """Bytes of any kind, or ASCII with at most two high bytes (ranges of many words then
    differ in one byte)."""
    if draw(st.booleans()):
        return draw(st.binary(max_size=40))
    raw = bytearray(draw(st.lists(st.integers(0, 0x7F), max_size=40)))
    for at in draw(st.lists(st.integers(0, 39), max_size=2)):
        if at < len(raw):
            raw[at] = draw(st.integers(0x80, 0xFF))
    return bytes(raw)


@settings(max_examples=300)
@given(
    _mostly_ascii(),
    st.lists(st.tuples(st.integers(-3, 45), st.integers(-3, 45)), max_size=8),
)
def test_text_ranges_are_ascii_where_no_byte_of_them_is_high(
    raw: bytes, ranges: list[tuple[int, int]]
) -> None:
    data = np.frombuffer(raw, dtype=np.uint8)
    start = np.array([s for s, _ in ranges], dtype=np.int64)
    stop = np.array([e for _, e in ranges], dtype=np.int64)
    found = layout_scan._Walker(data).is_ascii(start, stop)
    assert found.tolist() == [max(raw[max(s, 0) : max(e, 0)], default=0) < 0x80 for s, e in ranges]


def test_pieces_decoded_in_runs_give_the_tables_of_pieces_decoded_alone(
    monkeypatch, tmp_path
) -> None:
    root = tmp_path / "dump"
    generate_dump(str(root), groups=60, records=6_000, seed=5, profile="realistic")
    pieces = positioned_table(pq.read_table(root)).to_batches(max_chunksize=997)
    in_runs = task_audit.audit_records(pieces)
    monkeypatch.setattr(batch_decode, "DECODE_RUN_RECORDS", 1)  # each piece alone
    alone = task_audit.audit_records(pieces)
    assert in_runs.keys() == alone.keys()
    for kind in in_runs:
        assert _sorted(in_runs[kind]).equals(_sorted(alone[kind])), kind


def test_decode_runs_join_consecutive_batches_of_one_schema_up_to_the_bounds(
    monkeypatch,
) -> None:
    monkeypatch.setattr(batch_decode, "DECODE_RUN_RECORDS", 5)
    batch = pa.record_batch({"x": pa.array([1, 2], pa.int64())})
    other = pa.record_batch({"y": pa.array([3], pa.int64())})
    runs = batch_decode.decode_runs([batch, batch, batch, other, batch])
    assert [r.num_rows for r in runs] == [4, 2, 1, 2]  # 2+2 fit in 5, a third does not
    assert [r.schema.names for r in runs] == [["x"], ["x"], ["y"], ["x"]]
    assert pa.Table.from_batches(runs[:2]).column("x").to_pylist() == [1, 2] * 3
    monkeypatch.setattr(batch_decode, "DECODE_RUN_BYTES", batch.nbytes)  # one batch's bytes
    assert [r.num_rows for r in batch_decode.decode_runs([batch, batch])] == [2, 2]
