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

import pandas as pd

from offsets_lib.io import sink

__all__ = [
    "NOTEBOOK_TABLES",
    "STALE_RULES",
    "AuditRun",
    "commit_rate",
    "expiring_within",
    "expiry_timeline",
    "latest_run_id",
    "load_run",
    "stale_unsubscribed",
    "staleness_by_group",
    "table_exists",
    "tables_root",
    "worst_lagging_groups",
]

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

    def has(self, name: str) -> bool:
        """Whether the run wrote the table `name`."""
        frame = self.tables.get(name)
        return frame is not None


def tables_root(output: str | None, database: str | None, warehouse: str | None = None) -> str:
    """The folder to read: ``output``, or the tables' folder of a catalog database.

    Args:
        output: the tables' root folder (or URI), or None.
        database: a catalog database of `offsets run --database`, or None.
        warehouse: a local session's catalog folder, as for run.

    Returns:
        The root folder the tables are read from.
    """
    from offsets_lib.io.catalog import resolve_tables_root
    from offsets_lib.job import session

    return resolve_tables_root(
        output, database, warehouse=warehouse, open_session=session.get_or_create
    )


def table_exists(output: str, name: str) -> bool:
    """True when ``<output>/<name>`` is a Delta table.

    Args:
        output: the tables' root folder (or URI).
        name: the table.
    """
    from offsets_lib.io import storage

    return storage.is_delta_table(sink.table_uri(output, name))


def latest_run_id(output: str) -> str:
    """Id of the latest succeeded run, as every reader picks it (`io.runs.latest_run`; ``runs``
    is committed last, so its tables are complete).

    Args:
        output: the tables' root folder (or URI).

    Returns:
        The run id.

    Raises:
        LookupError: no succeeded run.
    """
    from offsets_lib.io import runs

    return str(runs.latest_run(output)["run_id"])


def load_run(
    output: str | None,
    run_id: str | None = None,
    tables: Iterable[str] = NOTEBOOK_TABLES,
    *,
    database: str | None = None,
    warehouse: str | None = None,
) -> AuditRun:
    """Load one run's tables from a root folder or a catalog database.

    Args:
        output: the tables' root folder (or URI), or None with ``database``.
        run_id: the run; None for the latest succeeded run.
        tables: the tables to load.
        database: the catalog database of `offsets run --database` (a Spark session then asks
            the catalog where the tables are).
        warehouse: a local session's catalog folder, as for run.

    Returns:
        The run: its id, as_of and tables as pandas frames (None for a table it did not write).
    """
    output = tables_root(output, database, warehouse)
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
    return AuditRun(output=output, run_id=run_id, as_of=pd.Timestamp(row["as_of"]), tables=loaded)


def worst_lagging_groups(lag: pd.DataFrame, n: int = 10) -> pd.DataFrame:
    """Groups by total lag (sum over their partitions), largest first.

    Args:
        lag: the ``lag`` table's rows.
        n: how many groups.

    Returns:
        Per group: partitions, total_lag, max_lag, last_commit_at.
    """
    known = lag.dropna(subset=["lag"])
    out = (
        known.groupby("group_id")
        .agg(
            partitions=("partition", "size"),
            total_lag=("lag", "sum"),
            max_lag=("lag", "max"),
            last_commit_at=("last_commit_at", "max"),
        )
        .sort_values(["total_lag", "max_lag"], ascending=False)
        .head(n)
        .reset_index()
    )
    out[["total_lag", "max_lag"]] = out[["total_lag", "max_lag"]].astype("int64")
    return out


def staleness_by_group(offsets: pd.DataFrame, as_of: pd.Timestamp, n: int = 10) -> pd.DataFrame:
    """Lag proxy when no ``lag`` table exists: time since each group's newest commit.

    A group that stopped committing is the one falling behind (or gone); ``hours_since_commit``
    uses the group's newest ``commit_timestamp``, ``oldest_commit_hours`` its oldest partition.

    Args:
        offsets: the ``offsets`` table's rows.
        as_of: the run's evaluation time.
        n: how many groups.

    Returns:
        The stalest groups first.
    """
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

    Args:
        decisions: the ``offset_decisions`` table's rows.
        as_of: the run's evaluation time.
        window: how far ahead.

    Returns:
        group_id, topic, partition, expires_at, expires_in_hours and rule, soonest first.
    """
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
    """Offsets of topics the group no longer subscribes to (the STALE_RULES, topic unsubscribed).

    A null ``subscribed_topics`` (no member reported one) counts as not subscribed.

    Args:
        decisions: the ``offset_decisions`` table's rows.
        groups: the ``groups`` table's rows.
        offsets: the ``offsets`` table's rows, for their commit timestamps (optional).

    Returns:
        The offsets, by group, topic and partition.
    """
    stale = decisions[decisions["rule"].isin(STALE_RULES)]
    cols = ["group_id", "group_type", "state", "subscribed_topics"]
    merged = stale.merge(groups[cols], on="group_id", how="left")
    subscribed = [
        isinstance(subs, Iterable) and not isinstance(subs, str) and topic in list(subs)
        for topic, subs in zip(merged["topic"], merged["subscribed_topics"], strict=True)
    ]
    merged = merged[[not s for s in subscribed]]
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
) -> pd.DataFrame:
    """Offsets expiring per ``freq`` bin within ``horizon`` after ``as_of`` (empty bins kept).

    Args:
        decisions: the ``offset_decisions`` table's rows.
        as_of: the run's evaluation time.
        horizon: how far ahead.
        freq: the bins' width (a pandas frequency).

    Returns:
        bin_start, offsets and cumulative per bin.
    """
    soon = expiring_within(decisions, as_of, horizon)
    start = as_of.floor(freq)
    bins = pd.date_range(start, as_of + horizon, freq=freq, tz=as_of.tz)
    counts = soon.groupby(soon["expires_at"].dt.floor(freq)).size()
    out = counts.reindex(bins, fill_value=0).rename("offsets").to_frame()
    out.index.name = "bin_start"
    out["cumulative"] = out["offsets"].cumsum()
    return out.reset_index()


def commit_rate(
    offsets: pd.DataFrame | None = None, metrics: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, str]:
    """Offset commits per hour, and what they count.

    From ``metrics`` (every commit written to the log) when given; otherwise from
    ``offsets.commit_timestamp``, which only holds each partition's *latest* commit, so it shows
    when groups last committed rather than the full rate.

    Args:
        offsets: the ``offsets`` table's rows.
        metrics: the ``metrics`` table's rows.

    Returns:
        (commits per hour, a sentence saying which source counted them).
    """
    if metrics is not None and not metrics.empty:
        per_hour = metrics.groupby("hour")["offset_commits"].sum().rename("commits")
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
