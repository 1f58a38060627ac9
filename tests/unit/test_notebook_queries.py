"""offsets_lib.tools.notebook_queries on hand-built frames (and one tiny Delta folder); no Spark."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from deltalake import write_deltalake

from offsets_lib.tools import notebook_queries as q

AS_OF = pd.Timestamp("2026-11-21 10:00", tz="UTC")


def ts(text: str) -> pd.Timestamp:
    return pd.Timestamp(text, tz="UTC")


def decisions(rows: list[tuple]) -> pd.DataFrame:
    frame = pd.DataFrame(
        rows, columns=["group_id", "topic", "partition", "expired", "expires_at", "rule"]
    )
    frame["expires_at"] = pd.to_datetime(frame["expires_at"], utc=True)
    return frame


DECISIONS = decisions(
    [
        ("g1", "t", 0, False, "2026-11-21 11:00", "EXP-EMPTY-STATE-TS"),  # in 1 h
        ("g1", "t", 1, False, "2026-11-22 10:00", "EXP-EMPTY-STATE-TS"),  # in exactly 24 h
        ("g2", "u", 0, False, "2026-11-25 00:00", "EXP-MODERN-COMMIT-TS"),  # in 3.6 days
        ("g2", "v", 0, False, "2026-11-30 00:00", "EXP-MODERN-COMMIT-TS"),  # beyond 7 days
        ("g3", "w", 0, True, "2026-11-20 00:00", "EXP-STABLE-UNSUBSCRIBED"),  # already expired
        ("g3", "x", 0, False, None, "EXP-SUBSCRIBED"),  # never
    ]
)
GROUPS = pd.DataFrame(
    {
        "group_id": ["g1", "g2", "g3"],
        "group_type": ["classic", "consumer", "classic"],
        "state": ["Empty", "Stable", "Stable"],
        "subscribed_topics": [None, ["v"], ["x"]],
    }
)


def test_expiring_within_windows() -> None:
    day = q.expiring_within(DECISIONS, AS_OF, pd.Timedelta(hours=24))
    assert list(zip(day["group_id"], day["partition"], strict=True)) == [("g1", 0), ("g1", 1)]
    assert list(day["expires_in_hours"]) == [1.0, 24.0]
    week = q.expiring_within(DECISIONS, AS_OF, pd.Timedelta(days=7))
    assert list(week["topic"]) == ["t", "t", "u"]


def test_stale_unsubscribed_needs_rule_and_unsubscribed_topic() -> None:
    offsets = pd.DataFrame(
        {
            "group_id": ["g2", "g3"],
            "topic": ["u", "w"],
            "partition": [0, 0],
            "commit_timestamp": [ts("2026-11-18"), ts("2026-11-13")],
        }
    )
    stale = q.stale_unsubscribed(DECISIONS, GROUPS, offsets)
    # g2/v is subscribed (excluded); g1 has another rule; g3/x is subscribed and EXP-SUBSCRIBED
    assert list(zip(stale["group_id"], stale["topic"], strict=True)) == [("g2", "u"), ("g3", "w")]
    assert list(stale["commit_timestamp"]) == [ts("2026-11-18"), ts("2026-11-13")]
    assert list(stale["group_type"]) == ["consumer", "classic"]


def test_stale_unsubscribed_leaves_out_unknown_subscriptions_and_empty_groups() -> None:
    groups = GROUPS.assign(subscribed_topics=[["x"], None, ["x"]], state=["Empty"] * 3)
    assert q.stale_unsubscribed(DECISIONS, groups).empty
    groups = GROUPS.assign(subscribed_topics=[["x"], None, ["x"]])
    assert list(q.stale_unsubscribed(DECISIONS, groups)["topic"]) == ["w"]


def test_stale_unsubscribed_without_stale_offsets_keeps_its_columns() -> None:
    stale = q.stale_unsubscribed(DECISIONS.iloc[0:0], GROUPS)
    assert stale.empty
    assert list(stale.columns) == [
        "group_id", "group_type", "state", "topic", "partition", "rule", "expired", "expires_at",
    ]  # fmt: skip


def test_expiry_timeline_bins_and_cumulative() -> None:
    timeline = q.expiry_timeline(DECISIONS, AS_OF, pd.Timedelta(days=7), freq="1D")
    assert timeline["bin_start"].iloc[0] == ts("2026-11-21")
    assert len(timeline) == 8
    assert list(timeline["offsets"][:5]) == [1, 1, 0, 0, 1]
    assert timeline["cumulative"].iloc[-1] == 3


def test_worst_lagging_groups_sums_lag() -> None:
    lag = pd.DataFrame(
        {
            "group_id": ["a", "a", "b", "c"],
            "partition": [0, 1, 0, 0],
            "lag": [5, 10, 12, None],
            "last_commit_at": [ts("2026-11-21")] * 4,
        }
    )
    worst = q.worst_lagging_groups(lag, n=5)
    assert list(worst["group_id"]) == ["a", "b"]
    assert list(worst["total_lag"]) == [15, 12]
    assert list(worst["max_lag"]) == [10, 12]


def test_staleness_by_group_is_the_lag_proxy() -> None:
    offsets = pd.DataFrame(
        {
            "group_id": ["a", "a", "b"],
            "partition": [0, 1, 0],
            "commit_timestamp": [ts("2026-11-21 09:00"), ts("2026-11-20 10:00"), ts("2026-11-21")],
        }
    )
    stale = q.staleness_by_group(offsets, AS_OF, n=5)
    assert list(stale["group_id"]) == ["b", "a"]
    assert list(stale["hours_since_commit"]) == [10.0, 1.0]
    assert list(stale["oldest_commit_hours"]) == [10.0, 24.0]


def test_commit_rate_prefers_metrics() -> None:
    offsets = pd.DataFrame({"commit_timestamp": [ts("2026-11-21 08:10"), ts("2026-11-21 10:59")]})
    rate, label = q.commit_rate(offsets)
    assert list(rate["commits"]) == [1, 0, 1]
    assert "latest commits" in label
    metrics = pd.DataFrame(
        {
            "hour": [ts("2026-11-21 08:00"), ts("2026-11-21 08:00"), ts("2026-11-21 09:00")],
            "offset_commits": [3, 4, 5],
        }
    )
    rate, label = q.commit_rate(offsets, metrics)
    assert list(rate["commits"]) == [7, 5]
    assert "metrics table" in label
    with pytest.raises(ValueError):
        q.commit_rate()


def test_latest_run_and_load_run(tmp_path: Path) -> None:
    output = str(tmp_path)
    with pytest.raises(LookupError, match="no runs table"):
        q.latest_run_id(output)
    runs = pa.table(
        {
            "run_id": ["r1", "r2", "r3"],
            "status": ["succeeded", "succeeded", "failed"],
            "finished_at": pd.to_datetime(
                ["2026-11-21 08:00", "2026-11-21 09:00", "2026-11-21 10:00"], utc=True
            ),
            "as_of": pd.to_datetime(["2026-11-21 07:00", "2026-11-21 08:00", None], utc=True),
            "error": [None, None, "boom"],
        }
    )
    write_deltalake(tmp_path / "runs", runs, partition_by=["run_id"])
    offsets = pa.table({"group_id": ["g", "h"], "run_id": ["r1", "r2"]})
    write_deltalake(tmp_path / "offsets", offsets, partition_by=["run_id"])
    assert q.latest_run_id(output) == "r2"
    run = q.load_run(output, tables=("offsets", "lag"))
    assert (run.run_id, run.as_of) == ("r2", ts("2026-11-21 08:00"))
    assert list(run.tables["offsets"]["group_id"]) == ["h"]
    assert run.tables["lag"] is None and not run.has("lag") and run.has("offsets")
    with pytest.raises(LookupError, match="did not succeed"):
        q.load_run(output, "r3")
    with pytest.raises(LookupError, match="not found"):
        q.load_run(output, "nope")
