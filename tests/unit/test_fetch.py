"""OffsetFetch decisions (semantics.md section 7): every FETCH row, request parsing, output."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from offsets_lib.cli.fetch_command import format_fetch

# private fetch._as_requests: the merged requests; fetch_offsets returns only their results
from offsets_lib.tools import fetch, fetch_rules
from offsets_lib.tools.fetch_rules import (
    FetchRequest,
    GroupResult,
    GroupSnapshot,
    MemberEpoch,
    OffsetRow,
    decide_group,
    merge_requests,
    parse_group_spec,
    parse_topic_id,
)

T0 = datetime(2023, 11, 14, tzinfo=UTC)


def group(**kw) -> GroupSnapshot:
    offsets = {
        ("orders", 0): OffsetRow(
            "orders", 0, 10, leader_epoch=3, metadata="m", commit_timestamp=T0, expires_at=T0
        ),
        ("orders", 1): OffsetRow("orders", 1, 5, has_pending_transaction=True),
        ("payments", 0): OffsetRow("payments", 0, 8, metadata=None),
    }
    base = {"group_id": "g1", "group_type": "classic", "state": "Empty", "offsets": offsets}
    return GroupSnapshot(**{**base, **kw})


def triples(result: GroupResult) -> list[tuple]:
    return [
        (p.topic, p.partition, p.committed_offset, p.leader_epoch, p.metadata, p.error, p.rule)
        for p in result.partitions
    ]


def test_fetch_nullid() -> None:
    result = decide_group(FetchRequest(None), group())
    assert (result.error, result.rule, result.partitions) == (
        "INVALID_GROUP_ID",
        "FETCH-NULLID",
        [],
    )


def test_empty_group_id_is_valid() -> None:
    result = decide_group(FetchRequest(""), group(group_id=""))
    assert result.error is None and result.rule == "FETCH-OK"


@pytest.mark.parametrize(
    "snapshot",
    [None, group(state="Dead", offsets={}), group(group_type="share", state="Stable")],
    ids=["absent", "dead", "share"],
)
def test_fetch_nogroup(snapshot) -> None:
    some = decide_group(FetchRequest("g1", {"orders": (1, 0)}), snapshot)
    assert some.error is None and some.rule == "FETCH-NOGROUP"
    assert triples(some) == [
        ("orders", 0, -1, -1, "", None, "FETCH-NOGROUP"),
        ("orders", 1, -1, -1, "", None, "FETCH-NOGROUP"),
    ]
    everything = decide_group(FetchRequest("g1"), snapshot)
    assert (everything.error, everything.partitions) == (None, [])


@pytest.mark.parametrize(
    ("member_id", "epoch", "classic", "error"),
    [
        ("nobody", 3, False, "UNKNOWN_MEMBER_ID"),
        ("m1", 2, False, "STALE_MEMBER_EPOCH"),
        ("m1", 2, True, "ILLEGAL_GENERATION"),
    ],
)
def test_fetch_member(member_id, epoch, classic, error) -> None:
    snap = group(group_type="consumer", state="Stable", members=(MemberEpoch("m1", 3, classic),))
    result = decide_group(FetchRequest("g1", None, member_id, epoch), snap)
    assert (result.error, result.rule, result.partitions) == (error, "FETCH-MEMBER", [])
    ok = decide_group(FetchRequest("g1", None, "m1", 3), snap)
    assert ok.error is None and len(ok.partitions) == 3
    classic_group = decide_group(FetchRequest("g1", None, "nobody", 3), group())
    assert classic_group.rule == "FETCH-OK"  # member fields are checked for modern groups only


def test_fetch_unstable_only_with_require_stable() -> None:
    request = FetchRequest("g1", {"orders": (1,)})
    stable = decide_group(request, group(), require_stable=True)
    assert triples(stable) == [
        ("orders", 1, -1, -1, "", "UNSTABLE_OFFSET_COMMIT", "FETCH-UNSTABLE")
    ]
    latest = decide_group(request, group())
    assert triples(latest) == [("orders", 1, 5, -1, "", None, "FETCH-OK")]


def test_fetch_none_and_ok() -> None:
    result = decide_group(FetchRequest("g1", {"orders": (0, 7), "nope": (0,)}), group())
    assert triples(result) == [
        ("nope", 0, -1, -1, "", None, "FETCH-NONE"),
        ("orders", 0, 10, 3, "m", None, "FETCH-OK"),
        ("orders", 7, -1, -1, "", None, "FETCH-NONE"),
    ]
    ok = result.partitions[1]
    assert (ok.last_commit, ok.expires_at) == (T0, T0)


def test_all_topics_lists_committed_partitions_only() -> None:
    result = decide_group(FetchRequest("g1"), group(), require_stable=True)
    assert [(p.topic, p.partition, p.rule) for p in result.partitions] == [
        ("orders", 0, "FETCH-OK"),
        ("orders", 1, "FETCH-UNSTABLE"),
        ("payments", 0, "FETCH-OK"),
    ]
    assert result.partitions[2].metadata == ""  # null metadata -> ""


def test_topic_without_partitions_means_its_committed_partitions() -> None:
    result = decide_group(FetchRequest("g1", {"orders": None}), group())
    assert [(p.topic, p.partition) for p in result.partitions] == [("orders", 0), ("orders", 1)]


def test_pending_only_partitions_are_flagged_not_guessed() -> None:
    snap = group(has_pending_transactions=True)
    result = decide_group(FetchRequest("g1", {"orders": (9,)}), snap, require_stable=True)
    (p,) = result.partitions
    assert (p.rule, p.error) == ("FETCH-NONE", None)
    assert "UNSTABLE_OFFSET_COMMIT" in p.note
    plain = decide_group(FetchRequest("g1", {"orders": (9,)}), snap)
    assert plain.partitions[0].note is None


def test_every_fetch_row_has_a_named_function() -> None:
    for row in ["nullid", "nogroup", "member", "unstable", "none", "topicid", "ok"]:
        function = getattr(fetch_rules, f"fetch_{row}")
        assert function.__doc__.startswith(f"FETCH-{row.upper()}")


OLD_ID = "3f1c9a2e-5b7d-4e10-9a3b-0c2d4e6f8a01"
NEW_ID = "00000000-0000-4000-8000-000000000002"


def test_fetch_topicid_answers_none_for_an_offset_of_a_re_created_topic() -> None:
    """FETCH-TOPICID (v10+, by id): -1 when the stored id differs; an offset stored without an
    id (v0-v3) matches; a topic named by name or "all topics" is never compared."""
    offsets = {
        ("orders", 0): OffsetRow("orders", 0, 10, leader_epoch=3, topic_id=OLD_ID),
        ("orders", 1): OffsetRow("orders", 1, 5),  # value v3: no topic id
        ("payments", 0): OffsetRow("payments", 0, 8, topic_id=OLD_ID),
    }
    snap = group(offsets=offsets)
    by_new_id = FetchRequest(
        "g1", {"orders": (0, 1), "payments": (0,)}, topic_ids={"orders": NEW_ID}
    )
    result = decide_group(by_new_id, snap)
    assert triples(result) == [
        ("orders", 0, -1, -1, "", None, "FETCH-TOPICID"),
        ("orders", 1, 5, -1, "", None, "FETCH-OK"),
        ("payments", 0, 8, -1, "", None, "FETCH-OK"),  # named by name
    ]
    assert [p.topic_id for p in result.partitions] == [NEW_ID, NEW_ID, None]
    assert result.partitions[0].note == (
        f"the offset was committed for topic id {OLD_ID}, not {NEW_ID}: the topic was deleted "
        "and re-created since"
    )
    by_old_id = FetchRequest("g1", {"orders": (0,)}, topic_ids={"orders": OLD_ID})
    assert triples(decide_group(by_old_id, snap)) == [("orders", 0, 10, 3, "", None, "FETCH-OK")]
    every_topic = FetchRequest("g1", None, topic_ids={"orders": NEW_ID})
    assert [p.rule for p in decide_group(every_topic, snap).partitions] == ["FETCH-OK"] * 3
    # FETCH-UNSTABLE is decided first
    pending = group(
        offsets={
            ("orders", 1): OffsetRow("orders", 1, 5, has_pending_transaction=True, topic_id=OLD_ID)
        }
    )
    request = FetchRequest("g1", {"orders": (1,)}, topic_ids={"orders": NEW_ID})
    unstable = decide_group(request, pending, require_stable=True)
    assert [p.rule for p in unstable.partitions] == ["FETCH-UNSTABLE"]


def test_parse_topic_id_takes_kafkas_form_and_uuids() -> None:
    assert parse_topic_id("PxyaLlt9ThCaOwwtTm-KAQ") == OLD_ID
    assert parse_topic_id("PxyaLlt9ThCaOwwtTm+KAQ") == OLD_ID  # confluent-kafka's standard base64
    assert parse_topic_id(OLD_ID) == OLD_ID
    assert parse_topic_id(OLD_ID.replace("-", "").upper()) == OLD_ID
    with pytest.raises(ValueError, match="expected Kafka's 22-character form"):
        parse_topic_id("orders")


# ---- --group specs ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "known", "expected"),
    [
        ("g1", (), ("g1", None, None)),
        ("g1:orders", (), ("g1", "orders", None)),
        ("g1:orders:0,2", (), ("g1", "orders", (0, 2))),
        ("a:b:orders:1", (), ("a:b", "orders", (1,))),
        ("team:etl", ("team:etl",), ("team:etl", None, None)),
        ("team:etl", (), ("team", "etl", None)),
        ("", (), ("", None, None)),
    ],
)
def test_parse_group_spec(spec, known, expected) -> None:
    assert parse_group_spec(spec, known_groups=known) == expected


def test_parse_group_spec_rejects_a_trailing_colon() -> None:
    with pytest.raises(ValueError, match="expected G"):
        parse_group_spec("g1:orders:")


def test_merge_requests() -> None:
    merged = merge_requests(
        [
            ("g1", "orders", (1,)),
            ("g1", "orders", (0,)),
            ("g1", "payments", None),
            ("g2", "x", (0,)),
            ("g2", None, None),
        ]
    )
    assert merged == [
        FetchRequest("g1", {"orders": (0, 1), "payments": None}),
        FetchRequest("g2", None),
    ]


def test_literal_group_ids_merge_with_group_specs(monkeypatch) -> None:
    """`--group-id app:prod` names that group whatever the tables hold; `--group` of the same
    group is one request with it."""
    monkeypatch.setattr(fetch, "read_run_rows", lambda *args: [])  # no group is known
    requests = fetch._as_requests(
        None, [FetchRequest("app:prod"), "app:prod", "g1:orders:1", FetchRequest("g1", {"t": None})]
    )
    assert requests == [
        FetchRequest("app:prod", None),
        FetchRequest("app", {"prod": None}),
        FetchRequest("g1", {"orders": (1,), "t": None}),
    ]
    member = FetchRequest("g2", member_id="m", member_epoch=1)
    assert fetch._as_requests(None, [member, "g2"]) == [member, FetchRequest("g2", None)]


# ---- text output ------------------------------------------------------------------------------


def test_format_fetch_has_the_describe_columns_and_error_only_when_needed() -> None:
    ok = decide_group(FetchRequest("g1", {"orders": (0,)}), group())
    text = format_fetch([ok]).splitlines()
    assert text[0].split() == [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "LAST-COMMIT",
        "EXPIRES-AT",
    ]
    assert text[1].split() == [
        "g1",
        "orders",
        "0",
        "10",
        "-",
        "-",
        "2023-11-14T00:00:00Z",
        "2023-11-14T00:00:00Z",
    ]
    unstable = decide_group(FetchRequest("g1", {"orders": (1,)}), group(), require_stable=True)
    text = format_fetch([ok, unstable]).splitlines()
    assert text[0].split()[-1] == "ERROR"
    assert text[1].split()[-1] == "-"
    assert text[2].split()[-1] == "UNSTABLE_OFFSET_COMMIT"
    nullid = decide_group(FetchRequest(None), None)
    assert format_fetch([nullid]).splitlines()[1].split()[-1] == "INVALID_GROUP_ID"
