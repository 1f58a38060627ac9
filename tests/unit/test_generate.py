"""`offsets generate` (offsets_lib/tools/generate/): determinism, content, layout, CLI. No Spark.

Dumps here stay small (<= 50k records); speed is measured by `make bench`, never asserted.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from offsets_lib import wire
from offsets_lib.tools.generate import (
    END_MS,
    SCHEMA,
    GenerateError,
    fill_column,
    generate_dump,
    java_hash,
    partition_for,
    template,
)

SMALL = {"groups": 300, "records": 40_000, "seed": 7}


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object, list[dict]]:
    out = tmp_path_factory.mktemp("dump")
    report = generate_dump(str(out), **SMALL)
    rows = pq.read_table(out).to_pylist()
    return out, report, rows


@pytest.fixture(scope="module")
def decoded(dump) -> list[tuple[dict, object]]:
    _, _, rows = dump
    return [
        (r, None if r["is_control"] else wire.decode_record(r["key"], r["value"])) for r in rows
    ]


def _digest(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.glob("part-*.parquet"))
    }


# --- hashing ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("g1", 3242),  # 'g' * 31 + '1' = 103 * 31 + 49
        ("hello", 99162322),
        ("Aa", 2112),
        ("BB", 2112),
        ("", 0),
        ("polygenelubricants", -(2**31)),  # Integer.MIN_VALUE
        ("😀", 1772899),  # surrogate pair 0xD83D 0xDE00: 0xD83D * 31 + 0xDE00
    ],
)
def test_java_hash_matches_java(text: str, expected: int) -> None:
    assert java_hash(text) == expected


def test_partition_for_uses_abs_and_min_value_rule() -> None:
    assert partition_for("g1", 50) == 3242 % 50 == 42
    assert partition_for("polygenelubricants", 50) == 0  # abs(MIN_VALUE) taken as 0
    negative = next(s for s in (f"group-{i}" for i in range(1000)) if java_hash(s) < 0)
    assert partition_for(negative, 50) == abs(java_hash(negative)) % 50


# --- files, schema, determinism --------------------------------------------------------------


def test_schema_and_exact_record_count(dump) -> None:
    out, report, rows = dump
    files = sorted(out.glob("part-*.parquet"))
    assert len(files) == report.files == 1
    assert pq.read_schema(files[0]).remove_metadata() == SCHEMA
    assert len(rows) == report.records == SMALL["records"]
    assert {r["topic"] for r in rows} == {"__consumer_offsets"}
    assert {r["timestampType"] for r in rows} == {0}
    assert (out / "_generate.json").exists()


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    args = {"groups": 120, "records": 15_000}
    generate_dump(str(tmp_path / "a"), seed=3, **args)
    generate_dump(str(tmp_path / "b"), seed=3, **args)
    generate_dump(str(tmp_path / "c"), seed=4, **args)
    a, b, c = (_digest(tmp_path / x) for x in "abc")
    assert a and a == b
    assert a != c


def test_rerun_into_same_folder_replaces_stale_parts(tmp_path: Path) -> None:
    (tmp_path / "part-00009.parquet").write_bytes(b"stale")
    generate_dump(str(tmp_path), groups=50, records=5_000, seed=1)
    assert [p.name for p in tmp_path.glob("part-*.parquet")] == ["part-00000.parquet"]


# --- log order ------------------------------------------------------------------------------


def test_offsets_strictly_increase_and_timestamps_never_decrease(dump) -> None:
    _, _, rows = dump
    part = np.array([r["partition"] for r in rows])
    off = np.array([r["offset"] for r in rows])
    ts = np.array([r["timestamp"].timestamp() for r in rows])
    order = np.lexsort((off, part))
    same = part[order][1:] == part[order][:-1]
    assert np.all(np.diff(off[order])[same] > 0)
    assert np.all(np.diff(ts[order])[same] >= 0)
    assert ts.max() * 1000 <= END_MS
    assert ts.max() - ts.min() > 6 * 86400  # about a week of history


def test_every_group_record_is_on_its_hashed_partition(decoded) -> None:
    checked = 0
    for row, rec in decoded:
        if rec is None or rec.error:
            continue
        group = rec.key.get("group", rec.key.get("GroupId"))
        assert row["partition"] == partition_for(group, 50), group
        checked += 1
    assert checked > 30_000


# --- content ---------------------------------------------------------------------------------


def test_every_record_type_of_the_realistic_profile_is_present(decoded) -> None:
    types = Counter(rec.record_type for _, rec in decoded if rec is not None and not rec.error)
    expected = {0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17, 19, 20, 21, 22, 23}
    assert expected <= set(types), sorted(expected - set(types))
    assert types[1] > 0.8 * sum(types.values())
    versions = Counter(rec.version for _, rec in decoded if rec and rec.record_type == 1)
    assert {0, 1, 2, 3, 4} <= set(versions)
    assert versions[3] > versions[1] > versions[0]


def test_group_kinds_and_life_cycle(dump, decoded) -> None:
    _, report, _ = dump
    assert set(report.groups) == {"classic", "simple", "connect", "consumer", "streams", "share"}
    gm = [rec for _, rec in decoded if rec and not rec.error and rec.record_type == 2]
    protocols = Counter(rec.value["protocolType"] for rec in gm if rec.value)
    assert protocols["consumer"] > protocols["connect"] > 0
    # rebalances: one group's GroupMetadata rewritten with growing generations
    gens: dict[str, list[int]] = {}
    for rec in gm:
        if rec.value:
            gens.setdefault(rec.key["group"], []).append(rec.value["generation"])
    assert any(len(g) > 2 and g == sorted(g) for g in gens.values())
    # groups going Empty (no members, no protocol) and deleted (tombstones)
    assert any(rec.value and not rec.value["members"] for rec in gm)
    assert any(rec.is_tombstone for rec in gm)
    # KIP-848 niceties: regex records, AssignmentEpochs tags, member churn tombstones
    c848 = [rec for _, rec in decoded if rec and not rec.error and rec.record_type == 8]
    assert any(
        tp.get("AssignmentEpochs") for r in c848 if r.value for tp in r.value["AssignedPartitions"]
    )
    assert any(r.is_tombstone for r in c848)
    # member states are the STABLE code of each family (consumer/share 0, streams 1)
    states = {
        (rec.record_type, rec.value["State"])
        for _, rec in decoded
        if rec and not rec.error and rec.record_type in (8, 14, 22) and rec.value
    }
    assert states == {(8, 0), (14, 0), (22, 1)}


def test_classic_members_carry_real_consumer_protocol_bytes(decoded) -> None:
    seen = 0
    for _, rec in decoded:
        if rec and not rec.error and rec.record_type == 2 and rec.value:
            if rec.value["protocolType"] != "consumer":
                continue
            for m in rec.value["members"]:
                sub = wire.decode_subscription(m["subscription"])
                asg = wire.decode_assignment(m["assignment"])
                assert sub["error"] is None and sub["Topics"], sub
                assert asg["error"] is None and asg["trailing_bytes"] == 0
                seen += 1
    assert seen > 100


def test_tombstones_transactions_and_markers(dump, decoded) -> None:
    _, report, rows = dump
    n = len(rows)
    tombstones = sum(r["value"] is None for r in rows)
    assert 0.01 * n < tombstones < 0.05 * n
    assert report.tombstones == tombstones
    markers = [r for r in rows if r["is_control"]]
    outcomes = Counter(wire.decode_control(r["key"], r["value"]).type for r in markers)
    assert outcomes["COMMIT"] > outcomes["ABORT"] > 0
    assert all(r["is_transactional"] and r["producer_id"] >= 0 for r in markers)
    txn = [r for r in rows if r["is_transactional"] and not r["is_control"]]
    assert txn and all(r["producer_id"] >= 0 for r in txn)
    plain = [r for r in rows if not r["is_transactional"]]
    assert all(r["producer_id"] == -1 and r["producer_epoch"] == -1 for r in plain)
    # each marker follows records of its producer on the same partition
    first_txn = {}
    for r in txn:
        k = (r["partition"], r["producer_id"])
        first_txn[k] = min(first_txn.get(k, r["offset"]), r["offset"])
    assert all(first_txn[(m["partition"], m["producer_id"])] < m["offset"] for m in markers)
    assert report.pending_transactions > 0


def test_corrupt_records_fail_and_everything_else_decodes(dump, decoded) -> None:
    _, report, rows = dump
    errors = [(row, rec) for row, rec in decoded if rec is not None and rec.error]
    assert len(errors) == report.corrupt
    assert 0 < len(errors) <= 0.001 * len(rows) + 4
    kinds = Counter(rec.error.split(" ")[0] for _, rec in errors)
    assert {"truncated:", "unknown", "invalid"} <= set(kinds), kinds
    assert any("unknown record type" in rec.error for _, rec in errors)
    assert any("unknown value version" in rec.error for _, rec in errors)
    for _, rec in decoded:
        if rec is not None and not rec.error:
            assert rec.trailing_bytes == 0 and rec.key_trailing_bytes == 0


# --- byte layout equals the codec ------------------------------------------------------------


def test_bulk_offset_commits_equal_the_codec_encoding(decoded) -> None:
    commits = [(row, rec) for row, rec in decoded if rec and not rec.error and rec.value]
    commits = [(row, rec) for row, rec in commits if rec.record_type in (0, 1)]
    sample = commits[:: max(1, len(commits) // 3000)]
    by_version = Counter()
    for row, rec in sample:
        assert wire.encode_key(rec.record_type, rec.key) == row["key"]
        assert wire.encode_value(rec.record_type, rec.version, rec.value) == row["value"]
        by_version[rec.version] += 1
    assert {1, 3, 4} <= set(by_version)


def test_group_records_equal_the_codec_encoding(decoded) -> None:
    n = 0
    for row, rec in decoded:
        if rec is None or rec.error or rec.value is None or rec.record_type == 1:
            continue
        assert wire.encode_key(rec.record_type, rec.key) == row["key"]
        assert wire.encode_value(rec.record_type, rec.version, rec.value) == row["value"]
        n += 1
    assert n > 1000


def test_templates_fill_numbers_where_the_wire_writer_puts_them() -> None:
    fields = {
        "MemberEpoch": 0,
        "PreviousMemberEpoch": 0,
        "State": 0,
        "AssignedPartitions": [],
        "PartitionsPendingRevocation": [],
    }
    t8 = template(
        lambda f: wire.encode_value(8, 0, f), fields, {"MemberEpoch": 4, "PreviousMemberEpoch": 4}
    )
    for epoch in (0, 7, 2**31 - 1):
        filled = t8.fill(MemberEpoch=epoch, PreviousMemberEpoch=epoch - 1)
        expected = {**fields, "MemberEpoch": epoch, "PreviousMemberEpoch": epoch - 1}
        assert filled == wire.encode_value(8, 0, expected)
    keys = [
        template(
            lambda f: wire.encode_key(1, f),
            {"group": g, "topic": "t", "partition": 0},
            {"partition": 4},
        )
        for g in ("g", "group-über")
    ]
    column = fill_column(keys, np.array([1, 0, 1]), {"partition": np.array([5, -1, 70000])})
    assert column.to_pylist() == [
        wire.encode_key(1, {"group": "group-über", "topic": "t", "partition": 5}),
        wire.encode_key(1, {"group": "g", "topic": "t", "partition": -1}),
        wire.encode_key(1, {"group": "group-über", "topic": "t", "partition": 70000}),
    ]


def _rows_digest(folder: Path) -> str:
    """Every row's values and `_end_offsets.csv` (independent of the Parquet writer's bytes)."""
    h = hashlib.sha256()
    table = pq.read_table(folder)
    for name in table.column_names:
        h.update(name.encode())
        for v in table[name].to_pylist():
            h.update(repr(v).encode())
    h.update((folder / "_end_offsets.csv").read_bytes())
    return h.hexdigest()


# Digests of the dumps: the content of a dump for a given seed and options never changes (last
# changed when every group reading a topic partition got that partition's one log: same base
# offset and rate, so lags run from zero to millions).
GOLDEN_SMALL = "b034628de9504463521eeccf0b28d38663cff80311527e78127f337fd8bbfb09"
GOLDEN_DOMINANT = "42cb27df96010cd47d0ff38c8669a430fc8e41e9fde7086f47e49e3b2f0f4511"


def test_small_dump_content_is_unchanged(dump) -> None:
    out, _report, _rows = dump
    assert _rows_digest(out) == GOLDEN_SMALL


def test_dominant_group_dump_content_is_unchanged(tmp_path: Path) -> None:
    generate_dump(str(tmp_path), groups=120, records=15_000, seed=5, dominant_group_share=0.3)
    assert _rows_digest(tmp_path) == GOLDEN_DOMINANT


# --- profiles, arguments, CLI ------------------------------------------------------------------


def test_bench_profile_mix(tmp_path: Path) -> None:
    report = generate_dump(str(tmp_path), groups=200, records=50_000, seed=1, profile="bench")
    assert set(report.groups) == {"classic", "simple", "consumer"}
    assert report.corrupt == 0 and report.control == 0 and report.transactional == 0
    t = report.records_by_type
    assert t["t1"] > 0.9 * report.records
    assert set(k for k in t if k.startswith("t1.v")) == {"t1.v1", "t1.v3"}
    assert 0.005 * report.records < t["t2"] < 0.03 * report.records
    kip848 = sum(t.get(f"t{i}", 0) for i in (3, 4, 5, 6, 7, 8, 16))
    assert 0.01 * report.records < kip848 < 0.06 * report.records
    assert 0.01 * report.records < report.tombstones < 0.04 * report.records


@pytest.mark.parametrize(
    "kwargs",
    [
        {"groups": 100, "records": 99},
        {"groups": 0, "records": 100},
        {"groups": 10, "records": 100, "partitions": 0},
        {"groups": 10, "records": 100, "profile": "nope"},
        {"groups": 1000, "records": 1000},  # too few rows for the groups' own records
    ],
)
def test_bad_arguments_raise(tmp_path: Path, kwargs: dict) -> None:
    with pytest.raises(GenerateError):
        generate_dump(str(tmp_path), seed=1, **{"partitions": 50, **kwargs})


def test_cli_generate_prints_one_summary_line(tmp_path: Path) -> None:
    from offsets_lib.cli import main

    out = tmp_path / "dump"
    args = ["generate", "--out", str(out), "--groups", "40", "--records", "4000", "--seed", "2"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "4000 records" in lines[0] and "corrupt" in lines[0]
    assert len(pq.read_table(out)) == 4000


@pytest.mark.parametrize(
    "args",
    [
        ["--groups", "100", "--records", "50"],
        ["--groups", "-1"],
        ["--partitions", "0"],
        ["--profile", "huge"],
        [],  # --out missing
    ],
)
def test_cli_generate_bad_arguments_exit_2(tmp_path: Path, args: list[str]) -> None:
    from offsets_lib.cli import main

    out = [] if not args else ["--out", str(tmp_path / "d")]
    result = CliRunner().invoke(main, ["generate", *out, *args])
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "d").exists() or not list((tmp_path / "d").iterdir())


def test_small_scale_timing_is_reported_not_asserted(tmp_path: Path) -> None:
    started = time.perf_counter()
    report = generate_dump(str(tmp_path), groups=100, records=20_000, seed=5)
    elapsed = time.perf_counter() - started
    assert report.seconds > 0
    print(f"generate 20k records: {elapsed:.2f}s ({20_000 / elapsed:,.0f} rec/s)")
