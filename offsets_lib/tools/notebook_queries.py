"""Small pandas queries over the audit tables, for notebooks and dashboards (no Spark, no JVM;
a catalog database needs a session only to find where its tables are).

The tables are read with pyarrow (:func:`offsets_lib.io.storage.delta_dataset`); every function
below takes and returns pandas DataFrames, so a notebook only presents what these return::

    run = load_run("sample/tables")                    # latest successful run
    run = load_run(None, database="audit")             # the tables of `offsets run --database`
    worst_lagging_groups(run.tables["lag"])            # or staleness_by_group(offsets, as_of)
    expiring_within(run.tables["offset_decisions"], run.as_of, pd.Timedelta("24h"))
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from offsets_lib.io import sink

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

NOTEBOOK_TABLES = ("offsets", "groups", "offset_decisions", "lag", "metrics")
# Rules of semantics.md section 4 that expire an offset because its topic is not subscribed.
STALE_RULES = ("EXP-STABLE-UNSUBSCRIBED", "EXP-MODERN-COMMIT-TS")


@dataclass
class AuditRun:
    """One run's tables as pandas DataFrames (``None`` for a table the run did not write)."""

    output: str
    run_id: str
    as_of: pd.Timestamp
    tables: dict[str, pd.DataFrame | None] = field(default_factory=dict)
    info: dict = field(default_factory=dict)  # the run's row of the ``runs`` table

    def has(self, name: str) -> bool:
        """Whether the run wrote the table `name`."""
        return self.tables.get(name) is not None


def tables_root(
    output: str | None,
    database: str | None,
    warehouse: str | None = None,
    spark: SparkSession | None = None,
) -> str:
    """The folder to read: ``output``, or the tables' folder of a catalog ``database`` (of
    `offsets run --database`) in ``spark``'s catalog, else the running session's: none is
    started here (a local catalog's database folder needs none)."""
    from offsets_lib.io.catalog import resolve_tables_root
    from offsets_lib.job import session

    if spark is None and database is not None and output is None:
        spark = session.running_session()  # the notebook's own, when it has one
    return resolve_tables_root(output, database, warehouse=warehouse, spark=spark)


def table_exists(output: str, name: str) -> bool:
    """True when ``<output>/<name>`` is a Delta table."""
    from offsets_lib.io import storage

    return storage.is_delta_table(sink.table_uri(output, name))


def latest_run_id(output: str) -> str:
    """Id of the latest succeeded run, as every reader picks it (`io.runs.latest_run`; ``runs``
    is committed last, so its tables are complete); LookupError when none succeeded."""
    from offsets_lib.io import runs

    return str(runs.latest_run(output)["run_id"])


def load_run(
    output: str | None,
    run_id: str | None = None,
    tables: Iterable[str] = NOTEBOOK_TABLES,
    *,
    database: str | None = None,
    warehouse: str | None = None,
    spark: SparkSession | None = None,
) -> AuditRun:
    """One run's tables (the latest succeeded run's without ``run_id``) as pandas frames, None
    for a table it did not write; from ``output`` or a catalog ``database`` (`tables_root`)."""
    output = tables_root(output, database, warehouse, spark)
    run_id = run_id or latest_run_id(output)
    runs = sink.read_table(output, "runs", run_id=run_id).to_pandas()
    if runs.empty:
        raise LookupError(f"run {run_id!r} not found in {output!r}/runs")
    row = runs.iloc[0]
    if row["status"] != "succeeded":
        raise LookupError(f"run {run_id!r} did not succeed ({row['status']}): {row['error']}")
    loaded = {
        name: sink.read_table(output, name, run_id=run_id).to_pandas()
        if table_exists(output, name)
        else None
        for name in tables
    }
    return AuditRun(
        output=output,
        run_id=run_id,
        as_of=pd.Timestamp(row["as_of"]),
        tables=loaded,
        info=row.to_dict(),
    )


def worst_lagging_groups(lag: pd.DataFrame, n: int = 10) -> pd.DataFrame:
    """Groups by total lag (sum over their partitions), largest first (:func:`top_lag`). Returns per
    group: partitions, total_lag, max_lag, last_commit_at."""
    return top_lag(lag, None, "total_lag", n)


def staleness_by_group(offsets: pd.DataFrame, as_of: pd.Timestamp, n: int = 10) -> pd.DataFrame:
    """Lag proxy when no ``lag`` table exists: time since each group's newest commit.

    A group that stopped committing is the one falling behind (or gone); ``hours_since_commit`` uses
    the group's newest ``commit_timestamp``, ``oldest_commit_hours`` its oldest partition. Returns
    the stalest groups first."""
    per_group = offsets.groupby("group_id").agg(
        partitions=("partition", "size"),
        last_commit_at=("commit_timestamp", "max"),
        oldest_commit_at=("commit_timestamp", "min"),
    )
    hour = pd.Timedelta(hours=1)
    per_group["hours_since_commit"] = (as_of - per_group["last_commit_at"]) / hour
    per_group["oldest_commit_hours"] = (as_of - per_group["oldest_commit_at"]) / hour
    return (
        per_group.sort_values(["hours_since_commit", "oldest_commit_hours"], ascending=False)
        .head(n)
        .reset_index()
    )


def expiring_within(
    decisions: pd.DataFrame, as_of: pd.Timestamp, window: pd.Timedelta
) -> pd.DataFrame:
    """Offsets not expired at ``as_of`` whose ``expires_at`` falls within ``window`` after it.
    Returns group_id, topic, partition, expires_at, expires_in_hours and rule, soonest first."""
    live = decisions[~decisions["expired"] & decisions["expires_at"].notna()]
    soon = live[live["expires_at"] <= as_of + window].copy()
    soon["expires_in_hours"] = (soon["expires_at"] - as_of) / pd.Timedelta(hours=1)
    columns = ["group_id", "topic", "partition", "expires_at", "expires_in_hours", "rule"]
    return soon.sort_values(["expires_at", "group_id", "topic", "partition"])[columns].reset_index(
        drop=True
    )


def stale_unsubscribed(
    decisions: pd.DataFrame, groups: pd.DataFrame, offsets: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Offsets of topics a group no longer reads: the project's one definition of "stale".

    A STALE_RULES offset whose topic is absent from the group's ``subscribed_topics``, in a group
    that is not Empty and whose subscription is known. Empty groups and unknown subscriptions are
    left out: they subscribe to nothing, so every offset of theirs would match (their offsets expire
    by the Empty-group rules and are counted there). TABLES.md's stale-subscriptions query says the
    same. Returns the offsets, by group, topic and partition."""
    stale = decisions[decisions["rule"].isin(STALE_RULES)]
    # a group lives on one offsets partition; the tables key it by both
    on = [c for c in ("offsets_partition", "group_id") if c in stale and c in groups]
    cols = [*on, "group_type", "state", "subscribed_topics"]
    merged = stale.merge(groups[cols], on=on, how="inner")
    unsubscribed = [
        state != "Empty" and subs is not None and topic not in list(subs)
        for topic, subs, state in zip(
            merged["topic"], merged["subscribed_topics"], merged["state"], strict=True
        )
    ]
    merged = merged[np.array(unsubscribed, dtype=bool)]  # a plain empty list picks no columns
    if offsets is not None:
        keys = ["group_id", "topic", "partition"]
        merged = merged.merge(offsets[[*keys, "commit_timestamp"]], on=keys, how="left")
    columns = [
        c
        for c in (
            "group_id",
            "group_type",
            "state",
            "topic",
            "partition",
            "rule",
            "expired",
            "expires_at",
            "commit_timestamp",
        )
        if c in merged.columns
    ]
    return merged.sort_values(["group_id", "topic", "partition"])[columns].reset_index(drop=True)


def expiry_timeline(
    decisions: pd.DataFrame,
    as_of: pd.Timestamp,
    horizon: pd.Timedelta = pd.Timedelta(days=7),  # noqa: B008
    freq: str = "6h",
    by_rule: bool = False,
) -> pd.DataFrame:
    """Offsets expiring per ``freq`` bin (a pandas frequency) within ``horizon`` after ``as_of``.
    Returns bin_start, offsets and cumulative per bin (empty bins kept); with ``by_rule``,
    bin_start, rule and offsets by bin then rule."""
    soon = expiring_within(decisions, as_of, horizon)
    soon["bin_start"] = soon["expires_at"].dt.floor(freq)
    if by_rule:
        out = soon.groupby(["bin_start", "rule"]).size().rename("offsets").reset_index()
        return out.sort_values(["bin_start", "rule"]).reset_index(drop=True)
    bins = pd.date_range(as_of.floor(freq), as_of + horizon, freq=freq, tz=as_of.tz)
    out = soon.groupby("bin_start").size().reindex(bins, fill_value=0).rename("offsets").to_frame()
    out.index.name = "bin_start"
    out["cumulative"] = out["offsets"].cumsum()
    return out.reset_index()


def commit_rate(
    offsets: pd.DataFrame | None = None, metrics: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, str]:
    """Offset commits per hour, and what they count.

    From ``metrics`` (every commit written to the log) when given; otherwise from
    ``offsets.commit_timestamp``, which only holds each partition's *latest* commit, so it shows
    when groups last committed rather than the full rate. Returns (commits per hour, a sentence
    saying which source counted them)."""
    if metrics is not None and not metrics.empty:
        meters = meters_per_hour(metrics).set_index("hour")
        per_hour = meters["offset_commits"].rename("commits")
        label = "offset commits per hour (metrics table)"
    elif offsets is not None:
        stamps = offsets["commit_timestamp"].dropna()
        per_hour = stamps.groupby(stamps.dt.floor("h")).size().rename("commits")
        label = "latest commits per hour (offsets.commit_timestamp; metrics table absent)"
    else:
        raise ValueError("commit_rate needs the offsets or the metrics table")
    per_hour.index.name = "hour"
    if not per_hour.empty:
        hours = pd.date_range(per_hour.index.min(), per_hour.index.max(), freq="h")
        per_hour = per_hour.reindex(hours, fill_value=0)
        per_hour.index.name = "hour"
    return per_hour.astype("int64").reset_index(), label


# ---- the report's panels (`offsets report`); each number of the page comes from one of these --

REPORT_TABLES = (
    *NOTEBOOK_TABLES,
    "group_decisions",
    "load_failures",
    "unread_marker_offsets",
)
HOUR = pd.Timedelta(hours=1)
DAY = pd.Timedelta(days=1)
WEEK = pd.Timedelta(days=7)


def read_runs(output: str) -> pd.DataFrame:
    """Every row of the ``runs`` table, oldest first in the readers' order of recency."""
    from offsets_lib.audit.run_selection import recency_key

    frame = sink.read_table(output, "runs").to_pandas()
    keys = [
        recency_key(None if pd.isna(f) else f, r)
        for f, r in zip(frame["finished_at"], frame["run_id"], strict=True)
    ]
    order = sorted(range(len(frame)), key=keys.__getitem__)
    frame = frame.iloc[order].drop(columns=["tables_written"], errors="ignore")
    return frame.reset_index(drop=True)


def rejects_by_error(output: str, run_id: str) -> pd.DataFrame:
    """The run's rejected records counted per ``error`` (the bytes are not read)."""
    if not table_exists(output, "rejects"):
        return pd.DataFrame({"error": [], "records": []})
    rejects = sink.read_table(output, "rejects", run_id=run_id, columns=["error"]).to_pandas()
    counts = rejects.groupby("error").size().rename("records").reset_index()
    return counts.sort_values(["records", "error"], ascending=[False, True]).reset_index(drop=True)


def groups_deleted_within(
    group_decisions: pd.DataFrame, as_of: pd.Timestamp, window: pd.Timedelta = DAY
) -> pd.DataFrame:
    """Groups deleted at ``as_of`` or by ``as_of + window`` (TABLES.md groups-deleted-soon)."""
    soon = group_decisions[
        group_decisions["deleted"] | (group_decisions["deletes_at"] <= as_of + window)
    ]
    columns = ["group_id", "group_type", "state", "deleted", "deletes_at", "rule"]
    return soon.sort_values(["deleted", "deletes_at", "group_id"], ascending=[False, True, True])[
        columns
    ].reset_index(drop=True)


def data_loss_list(
    lag: pd.DataFrame, decisions: pd.DataFrame, as_of: pd.Timestamp, window: pd.Timedelta = DAY
) -> pd.DataFrame:
    """Lagging groups whose offsets expire within ``window``: when they expire, the group
    restarts from ``auto.offset.reset`` and skips or replays the messages behind it.

    An offset counts when its lag is above zero and it expires within the window
    (:func:`expiring_within`). Returns per group: partitions at risk, their summed lag, the first
    expiry and its rule; the soonest expiry first, then the largest lag."""
    soon = expiring_within(decisions, as_of, window)
    keys = ["group_id", "topic", "partition"]
    at_risk = soon.merge(lag[[*keys, "lag"]], on=keys, how="inner")
    at_risk = at_risk[at_risk["lag"] > 0].sort_values(
        ["expires_at", "group_id", "topic", "partition"]
    )
    out = (
        at_risk.groupby("group_id", sort=False)
        .agg(
            partitions=("partition", "size"),
            lag=("lag", "sum"),
            expires_at=("expires_at", "min"),
            rule=("rule", "first"),
        )
        .reset_index()
    )
    out["lag"] = out["lag"].astype("int64")
    out["expires_in_hours"] = (out["expires_at"] - as_of) / HOUR
    return out.sort_values(["expires_at", "lag", "group_id"], ascending=[True, False, True])[
        ["group_id", "partitions", "lag", "expires_at", "expires_in_hours", "rule"]
    ].reset_index(drop=True)


def tiles(run: AuditRun, data_loss: pd.DataFrame | None = None) -> dict[str, int]:
    """The Now page's counts (and report.json's): what expires or goes, and what went wrong.

    ``expiring_*``: offsets not expired whose ``expires_at`` is within the window;
    ``groups_deleted_24h``: :func:`groups_deleted_within`; ``data_loss_groups``:
    :func:`data_loss_list` (``data_loss`` when the caller has it); ``stale_offsets``:
    :func:`stale_unsubscribed`; ``rejects``, ``load_failures``, ``unread_markers``: rows of
    those tables for the run.
    """
    t = run.tables
    decisions, as_of = t["offset_decisions"], run.as_of
    if data_loss is None and run.has("lag"):
        data_loss = data_loss_list(t["lag"], decisions, as_of)
    deleted = (
        groups_deleted_within(t["group_decisions"], as_of) if run.has("group_decisions") else ()
    )
    return {
        "expiring_1h": len(expiring_within(decisions, as_of, HOUR)),
        "expiring_24h": len(expiring_within(decisions, as_of, DAY)),
        "expiring_7d": len(expiring_within(decisions, as_of, WEEK)),
        "groups_deleted_24h": len(deleted),
        "data_loss_groups": 0 if data_loss is None else len(data_loss),
        "stale_offsets": len(stale_unsubscribed(decisions, t["groups"])),
        "rejects": int(run.info.get("records_rejected") or 0),
        "load_failures": len(t["load_failures"]) if run.has("load_failures") else 0,
        "unread_markers": len(t["unread_marker_offsets"])
        if run.has("unread_marker_offsets")
        else 0,
    }


def top_lag(
    lag: pd.DataFrame, as_of: pd.Timestamp | None, by: str = "total_lag", n: int | None = 15
) -> pd.DataFrame:
    """Groups by total or by worst-partition lag (``by``: total_lag | max_lag), largest first (the
    first ``n``; None: every group). Returns per group: partitions, total_lag, max_lag,
    last_commit_at and, with ``as_of``, commit_age_hours (hours since its newest commit)."""
    known = lag.dropna(subset=["lag"])
    out = (
        known.groupby("group_id", sort=False)
        .agg(
            partitions=("partition", "size"),
            total_lag=("lag", "sum"),
            max_lag=("lag", "max"),
            last_commit_at=("last_commit_at", "max"),
        )
        .reset_index()
    )
    out[["total_lag", "max_lag"]] = out[["total_lag", "max_lag"]].astype("int64")
    if as_of is not None:
        out["commit_age_hours"] = (as_of - out["last_commit_at"]) / HOUR
    other = "max_lag" if by == "total_lag" else "total_lag"
    ranked = out.sort_values([by, other, "group_id"], ascending=[False, False, True])
    return (ranked if n is None else ranked.head(n)).reset_index(drop=True)


def groups_table(run: AuditRun) -> pd.DataFrame:
    """One row per group: the Groups page's table.

    Columns: group_id, group_type, state, members, topics (the topics of its committed offsets,
    a sorted list), lag (summed over its partitions; null without a lag table or a
    log-end offset), last_commit_at, expires_at (its first offset expiry not yet past), deletes_at
    (the coordinator's deletion of the group) and rule (the deletion rule).
    """
    t = run.tables
    key = ["offsets_partition", "group_id"]
    offsets = t["offsets"]
    # hash grouping and integer codes: sorting the string keys took seconds for 100,000 groups
    owners = offsets.groupby(key, sort=False)
    per_group = owners.agg(last_commit_at=("commit_timestamp", "max"))
    topic_codes, topic_names = pd.factorize(offsets["topic"], sort=True)
    width = max(len(topic_names), 1)
    pairs = np.unique(owners.ngroup().to_numpy(np.int64) * width + topic_codes)
    owner, topic = np.divmod(pairs, width)
    bounds = [0, *(np.flatnonzero(np.diff(owner)) + 1).tolist(), len(pairs)] if len(pairs) else [0]
    names = topic_names.to_numpy()[topic].tolist()
    per_group["topics"] = [names[a:b] for a, b in pairwise(bounds)]
    live = t["offset_decisions"][~t["offset_decisions"]["expired"]]
    per_group = per_group.join(live.groupby(key, sort=False)["expires_at"].min()).reset_index()
    if run.has("lag"):  # lag rows have no offsets partition: a group id lives on one
        totals = t["lag"].groupby("group_id", sort=False)["lag"].sum(min_count=1)
        per_group = per_group.merge(totals.astype("Int64").reset_index(), on="group_id", how="left")
    else:
        per_group["lag"] = pd.array([pd.NA] * len(per_group), dtype="Int64")
    groups = t["groups"][[*key, "group_type", "state", "member_count"]]
    out = groups.rename(columns={"member_count": "members"}).merge(per_group, on=key, how="left")
    if run.has("group_decisions"):
        out = out.merge(t["group_decisions"][[*key, "deletes_at", "rule"]], on=key, how="left")
    else:
        out["deletes_at"], out["rule"] = pd.NaT, None
    out["topics"] = [t if isinstance(t, list) else [] for t in out["topics"]]
    return out.drop(columns="offsets_partition").sort_values("group_id").reset_index(drop=True)


def type_state_counts(groups: pd.DataFrame) -> pd.DataFrame:
    """Groups per group_type (rows) and state (columns)."""
    return (
        groups.groupby(["group_type", "state"]).size().unstack(fill_value=0).astype("int64")
    ).sort_index()


METERS = (
    "offset_commits",
    "offset_tombstones",
    "group_metadata_writes",
    "groups_created",
    "groups_deleted",
)


def meters_per_hour(metrics: pd.DataFrame) -> pd.DataFrame:
    """The KIP-496-style meters of ``metrics`` summed per hour over the offsets partitions."""
    meters = [m for m in METERS if m in metrics.columns]
    return metrics.groupby("hour")[meters].sum().astype("int64").reset_index()


def commits_per_offsets_partition(metrics: pd.DataFrame) -> pd.DataFrame:
    """Offset commits per partition of ``__consumer_offsets`` (its coordinator's load), busiest
    first."""
    out = metrics.groupby("offsets_partition")["offset_commits"].sum().astype("int64")
    return (
        out.rename("commits")
        .reset_index()
        .sort_values(["commits", "offsets_partition"], ascending=[False, True])
        .reset_index(drop=True)
    )


def run_health(runs: pd.DataFrame, n: int) -> pd.DataFrame:
    """The last ``n`` runs of ``runs`` (:func:`read_runs` order): status, duration and records."""
    recent = runs.tail(n).copy()
    recent["duration_s"] = (recent["finished_at"] - recent["started_at"]).dt.total_seconds()
    columns = [
        "run_id",
        "status",
        "as_of",
        "started_at",
        "duration_s",
        "records_read",
        "records_decoded",
        "records_rejected",
        "error",
    ]
    return recent[columns].reset_index(drop=True)


def missing_hourly_runs(runs: pd.DataFrame) -> list[pd.Timestamp]:
    """Hours between the first and the last succeeded run's ``as_of`` that no succeeded run
    evaluated (an hourly schedule's gaps)."""
    hours = runs.loc[runs["status"] == "succeeded", "as_of"].dropna().dt.floor("h")
    if hours.empty:
        return []
    every = pd.date_range(hours.min(), hours.max(), freq="h")
    return [h for h in every if h not in set(hours)]


def lag_history(output: str, run_ids: list[str], groups: list[str]) -> pd.DataFrame:
    """Total lag of ``groups`` in each of ``run_ids`` (runs without a lag table are absent). Returns
    run_id, as_of, group_id, total_lag; by as_of then group."""
    if not run_ids or not groups or not table_exists(output, "lag"):
        return pd.DataFrame({"run_id": [], "as_of": [], "group_id": [], "total_lag": []})
    import pyarrow.dataset as ds

    from offsets_lib.io import storage

    dataset = storage.delta_dataset(sink.table_uri(output, "lag"))
    condition = ds.field("run_id").isin(run_ids) & ds.field("group_id").isin(groups)
    columns = ["run_id", "as_of", "group_id", "lag"]
    rows = dataset.to_table(filter=condition, columns=columns).to_pandas().dropna(subset=["lag"])
    out = rows.groupby(["run_id", "as_of", "group_id"])["lag"].sum().astype("int64")
    out = out.rename("total_lag").reset_index()
    return out.sort_values(["as_of", "group_id"]).reset_index(drop=True)


def lag_trend(history: pd.DataFrame) -> pd.DataFrame:
    """Per group: the least-squares slope of its total lag over the runs' ``as_of``, in messages
    per hour (positive = falling further behind); null with fewer than two runs."""
    rows = []
    for group, frame in history.groupby("group_id"):
        hours = (frame["as_of"] - frame["as_of"].min()) / HOUR
        slope = None
        if hours.nunique() > 1:
            x, y = hours.to_numpy(float), frame["total_lag"].to_numpy(float)
            slope = float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())
        rows.append({"group_id": group, "runs": len(frame), "lag_per_hour": slope})
    return pd.DataFrame(rows, columns=["group_id", "runs", "lag_per_hour"])


def estimated_time_lag(output: str, run_ids: list[str], lag: pd.DataFrame) -> pd.DataFrame:
    """An estimate of each group's lag in time: its lag divided by the rate its partitions' log
    end offsets grew between the first and the last of ``run_ids`` (oldest first; messages per
    second).

    Partitions whose log-end offset did not move give no estimate (null). Returns per group:
    total_lag, rate_per_s (summed over its partitions), est_seconds."""
    if len(run_ids) < 2 or not table_exists(output, "lag"):
        return pd.DataFrame({"group_id": [], "total_lag": [], "rate_per_s": [], "est_seconds": []})
    import pyarrow.dataset as ds

    from offsets_lib.io import storage

    dataset = storage.delta_dataset(sink.table_uri(output, "lag"))
    columns = ["run_id", "as_of", "topic", "partition", "log_end_offset"]
    first_and_last = [run_ids[0], run_ids[-1]]
    ends = (
        dataset.to_table(filter=ds.field("run_id").isin(first_and_last), columns=columns)
        .to_pandas()
        .dropna(subset=["log_end_offset"])
        .drop_duplicates(["run_id", "topic", "partition"])
    )
    first = ends[ends["as_of"] == ends["as_of"].min()]
    last = ends[ends["as_of"] == ends["as_of"].max()]
    both = last.merge(first, on=["topic", "partition"], suffixes=("", "_0"))
    seconds = (both["as_of"] - both["as_of_0"]).dt.total_seconds()
    both["rate_per_s"] = (both["log_end_offset"] - both["log_end_offset_0"]) / seconds
    known = lag.dropna(subset=["lag"]).merge(
        both[["topic", "partition", "rate_per_s"]], on=["topic", "partition"], how="left"
    )
    out = known.groupby("group_id").agg(total_lag=("lag", "sum"), rate_per_s=("rate_per_s", "sum"))
    out["est_seconds"] = out["total_lag"] / out["rate_per_s"].where(out["rate_per_s"] > 0)
    return out.reset_index()
