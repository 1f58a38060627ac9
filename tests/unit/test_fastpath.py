"""The numpy fast path for offset commits agrees with the generic codec on every row it accepts."""

from __future__ import annotations

import random
import uuid

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsets_lib import wire
from offsets_lib.wire import fastpath
from offsets_lib.wire.batch_decode import decode_record_row
from offsets_lib.wire.decoded import DECODED_ARROW, POSITIONED_ARROW, absent_as_null
from tests.reference.decode import decode_batch, value_json

RAW = POSITIONED_ARROW
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)


def _batch(pairs: list[tuple[bytes | None, bytes | None]]) -> pa.RecordBatch:
    rows = [
        {
            "log_partition": 0,
            "log_offset": i,
            "log_timestamp_ms": 0,
            "key": k,
            "value": v,
            "producer_id": None,
            "producer_epoch": None,
            "is_transactional": None,
            "is_control": None,
        }
        for i, (k, v) in enumerate(pairs)
    ]
    return pa.RecordBatch.from_pylist(rows, schema=RAW)


@st.composite
def offset_commits(draw: st.DrawFn) -> tuple[bytes, bytes | None]:
    record_type = draw(st.sampled_from([0, 1, 1, 1]))
    key = wire.encode_key(
        record_type,
        {"group": draw(TEXT), "topic": draw(TEXT), "partition": draw(st.integers(0, 2**31 - 1))},
    )
    if draw(st.integers(0, 9)) == 0:
        return key, None
    version = draw(st.integers(0, 4))
    fields = {
        "offset": draw(st.integers(-1, 2**63 - 1)),
        "leaderEpoch": draw(st.integers(-1, 2**31 - 1)),
        "metadata": draw(st.text(max_size=300)),
        "commitTimestamp": draw(st.integers(-1, 2**45)),
        "expireTimestamp": draw(st.integers(-1, 2**45)),
        "topicId": draw(st.sampled_from([uuid.UUID(int=0), uuid.uuid4()])),
    }
    return key, wire.encode_value(1, version, fields)


def _mutate(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    choice = rng.randrange(3)
    if choice == 0:
        return data[: rng.randrange(len(data))]
    if choice == 1:
        i = rng.randrange(len(data))
        return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :]
    return data + b"\x00"


@settings(max_examples=60)
@given(st.lists(offset_commits(), min_size=1, max_size=40), st.integers(0, 2**32))
def test_fast_path_equals_codec_row_by_row(pairs: list, seed: int) -> None:
    rng = random.Random(seed)
    mutated = [
        (
            _mutate(k, rng) if rng.random() < 0.1 else k,
            _mutate(v, rng) if v and rng.random() < 0.2 else v,
        )
        for k, v in pairs
    ]
    batch = _batch(mutated)
    decoded = decode_batch(batch).to_pylist()
    for (key, value), row in zip(mutated, decoded, strict=True):
        expected = {c: None for c in DECODED_ARROW.names}
        row_of_codec = decode_record_row(key, value)
        if "fields" in row_of_codec:
            row_of_codec["value_json"] = value_json(row_of_codec.pop("fields"))
        expected.update(_with_sentinels_as_null(row_of_codec))
        if expected["error"] is None:
            expected["key"] = expected["value"] = None
        else:
            expected["key"], expected["value"] = key, value
        for column in DECODED_ARROW.names:
            if column in (
                "log_partition",
                "log_offset",
                "log_timestamp_ms",
                "producer_id",
                "producer_epoch",
                "is_transactional",
                "is_control",
            ):
                continue
            assert row[column] == expected[column], (column, key, value)


@settings(max_examples=40)
@given(st.lists(offset_commits(), min_size=1, max_size=40), st.integers(0, 2**32))
def test_narrow_positions_decode_as_wide_ones(pairs: list, seed: int) -> None:
    """int32 positions (a batch's usual bytes) and int64 ones (over NARROW_BELOW_BYTES) give
    the same rows, malformed ones included."""
    rng = random.Random(seed)
    batch = _batch(
        [
            (
                _mutate(k, rng) if rng.random() < 0.2 else k,
                _mutate(v, rng) if v and rng.random() < 0.2 else v,
            )
            for k, v in pairs
        ]
    )
    narrow = fastpath.decode_offset_commits(batch)
    saved = fastpath.NARROW_BELOW_BYTES
    fastpath.NARROW_BELOW_BYTES = 0
    try:
        assert fastpath.buffers(batch.column("value"), narrow=True)[1].dtype == np.int64
        wide = fastpath.decode_offset_commits(batch)
    finally:
        fastpath.NARROW_BELOW_BYTES = saved
    assert fastpath.buffers(batch.column("value"), narrow=True)[1].dtype == np.int32
    assert np.array_equal(narrow.handled, wide.handled)
    assert narrow.columns.keys() == wide.columns.keys()
    for name, column in narrow.columns.items():
        assert column.equals(wide.columns[name]), name


def _with_sentinels_as_null(row: dict) -> dict:
    """The codec's row with the one sentinel rule (decoded.absent_as_null) applied."""
    names = [n for n in ("leader_epoch", "expire_timestamp_ms", "topic_id") if n in row]
    arrays = {n: pa.array([row[n]], DECODED_ARROW.field(n).type) for n in names}
    return {**row, **{n: a[0].as_py() for n, a in absent_as_null(arrays).items()}}


def test_fast_path_takes_the_common_layouts() -> None:
    """Valid v0-v4 commits and tombstones never fall back to the per-row codec."""
    pairs = []
    for version in range(5):
        key = wire.encode_key(1, {"group": "g", "topic": "orders", "partition": version})
        fields = {
            "offset": 42,
            "leaderEpoch": 3,
            "metadata": "m" * version,
            "commitTimestamp": 1_700_000_000_000,
            "expireTimestamp": 1_700_000_100_000,
            "topicId": uuid.UUID("5f3b0e2a-9c4d-4e1f-8a7b-6c5d4e3f2a1b"),
        }
        pairs.append((key, wire.encode_value(1, version, fields)))
    pairs.append((wire.encode_key(0, {"group": "g", "topic": "t", "partition": 1}), None))
    result = fastpath.decode_offset_commits(_batch(pairs))
    assert result.handled.all()
    assert result.columns["topic_id"].to_pylist()[4] == "5f3b0e2a-9c4d-4e1f-8a7b-6c5d4e3f2a1b"
    assert result.columns["expire_timestamp_ms"].to_pylist() == [
        None,
        1_700_000_100_000,
        None,
        None,
        None,
        None,
    ]
    assert result.columns["leader_epoch"].to_pylist() == [None, None, None, 3, 3, None]


def test_invalid_utf8_falls_back_with_the_codecs_reason() -> None:
    key = b"\x00\x01\x00\x02\xff\xfe\x00\x01t\x00\x00\x00\x00"
    value = wire.encode_value(
        1, 3, {"offset": 1, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 0}
    )
    (row,) = decode_batch(_batch([(key, value)])).to_pylist()
    assert row["error"] == wire.decode_record(key, value).error
    assert row["key"] == key


# a binary column in up to five chunks, nulls among the values
_CHUNKS = st.lists(
    st.lists(st.one_of(st.none(), st.binary(max_size=12)), max_size=6), min_size=1, max_size=5
)


@settings(max_examples=200)
@given(chunks=_CHUNKS, data=st.data())
def test_take_rows_equals_arrows_take_in_any_order(chunks: list, data) -> None:
    """Rows taken chunk by chunk, in any order, with repeats: what Arrow's own take gives."""
    column = pa.chunked_array([pa.array(c, pa.binary()) for c in chunks], pa.binary())
    rows = data.draw(st.lists(st.integers(0, max(len(column) - 1, 0)), max_size=20))
    rows = rows if len(column) else []
    expected = column.take(pa.array(rows, pa.int64())).combine_chunks()
    assert fastpath.take_rows(column, rows).equals(expected)
    assert fastpath.take_rows(column.combine_chunks(), rows).equals(expected)


@settings(max_examples=200)
@given(chunks=_CHUNKS, data=st.data())
def test_rows_buffers_hold_each_taken_rows_bytes(chunks: list, data) -> None:
    """The gathered buffer gives every taken row its own bytes, null rows flagged, in the
    order asked, with the zero padding after the last byte."""
    column = pa.chunked_array([pa.array(c, pa.binary()) for c in chunks], pa.binary())
    rows = data.draw(st.lists(st.integers(0, max(len(column) - 1, 0)), max_size=20))
    rows = rows if len(column) else []
    buffer, starts, lengths, is_valid = fastpath.rows_buffers(column, rows)
    values = column.to_pylist()
    assert is_valid.tolist() == [values[r] is not None for r in rows]
    got = [bytes(buffer[s : s + n]) for s, n in zip(starts.tolist(), lengths.tolist(), strict=True)]
    assert got == [values[r] or b"" for r in rows]
    assert not buffer[-fastpath.PAD :].any()


def test_is_one_of_is_np_isin_for_a_few_choices() -> None:
    values = np.array([0, 1, 2, 3, -1, 17, 2, 0], dtype=np.int64)
    for choices in ((0, 1), (2, 3, 11, 17), (), frozenset({-1})):
        expected = np.isin(values, list(choices)).tolist()
        assert fastpath.is_one_of(values, choices).tolist() == expected
    assert fastpath.is_one_of(values, {2: "a field", 17: "another"}).tolist() == [
        False, False, True, False, False, True, True, False,
    ]  # fmt: skip


@settings(max_examples=300)
@given(
    values=st.lists(st.one_of(st.none(), st.binary(max_size=6), TEXT.map(str.encode)), max_size=12),
    data=st.data(),
)
def test_as_text_is_arrows_utf8_cast_of_any_slice(values: list, data) -> None:
    """ASCII bytes are viewed as strings, others checked: the same strings as Arrow's cast, and
    the same refusal of bytes that are not UTF-8, for a slice whose neighbours are not text."""
    whole = pa.array([b"\xff", *values, b"\xfe"], pa.binary())
    start = data.draw(st.integers(1, len(values) + 1))
    part = whole.slice(start, data.draw(st.integers(0, len(values) + 1 - start)))
    try:
        expected = part.cast(pa.string())
    except pa.ArrowInvalid:
        with pytest.raises(pa.ArrowInvalid):
            fastpath.as_text(part)
        return
    assert fastpath.as_text(part).equals(expected)
