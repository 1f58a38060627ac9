# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Consumer-group lag audit
#
# Reads the Delta tables written by `offsets run` (no Spark needed: delta-rs + pandas; for a
# catalog `database` a Spark session only finds where its tables are) and answers, for one run:
#
# 1. which groups lag the most (or, without a `lag` table, have not committed for longest);
# 2. which committed offsets expire within 24 hours and within 7 days, and which lagging groups
#    lose their position with them (the data-loss list);
# 3. which offsets are stale because their topic is no longer subscribed;
#
# with plots of lag by group, the expiry timeline and the commit rate. All queries live in
# `offsets_lib.tools.notebook_queries`, shared with `offsets report`; this notebook only
# presents them. Times are UTC and relative
# to the run's `as_of` (the instant the run evaluated the coordinator at), not to "now".
#
# Run it headless with papermill, e.g.
# `papermill notebooks/lag_audit.ipynb out.ipynb -p output sample/tables -k python3`
# (or `-p database audit -p warehouse W` for the tables of `offsets run --database audit`).

# %% tags=["parameters"]
output = "../sample/tables"  # root folder (or URI) of the Delta tables: `offsets run --output`
database = ""  # or a catalog database of `offsets run --database` (then output is not read)
warehouse = ""  # local catalog folder given to `offsets run --warehouse` ("" = none)
run_id = ""  # "" = the latest successful run
top_n = 15  # rows in the "worst" lists and bars in the lag plot
figures_dir = ""  # also save the plots as PNG files in this folder when set

# %%
# ruff: noqa: E402  (a notebook: the imports follow the parameters cell)
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless; figures are shown as PNG images below
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Image, Markdown, display
from matplotlib.ticker import FuncFormatter

from offsets_lib.tools import fonts
from offsets_lib.tools import notebook_queries as q

# Group ids in CJK or with emoji draw from the fallback fonts `make setup` fetches, not as boxes.
missing_fonts = fonts.use_fallback_fonts()
if missing_fonts:
    display(
        Markdown(
            f"_Fonts {missing_fonts} are missing (`make setup` fetches them): CJK and "
            "emoji group ids draw as empty boxes._"
        )
    )

pd.set_option("display.width", 160)
pd.set_option("display.max_colwidth", 60)


@FuncFormatter
def readable(value, _position=None):
    """Axis numbers as people write them (35.7 B, 1.2 M, 950), never 1e10 notation."""
    for size, suffix in ((1e12, " T"), (1e9, " B"), (1e6, " M"), (1e3, " k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}"


def show(fig, name):
    """Display a figure as PNG (and save it under figures_dir when set)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    if figures_dir:
        Path(figures_dir).mkdir(parents=True, exist_ok=True)
        (Path(figures_dir) / f"{name}.png").write_bytes(buffer.getvalue())
    display(Image(data=buffer.getvalue(), format="png"))


# %%
run = q.load_run(
    None if database else output, run_id, database=database or None, warehouse=warehouse or None
)
offsets = run.tables["offsets"]
groups = run.tables["groups"]
decisions = run.tables["offset_decisions"]
display(
    Markdown(
        f"Run **{run.run_id}**, as of **{run.as_of:%Y-%m-%d %H:%M:%S} UTC**: "
        f"{len(groups)} groups, {len(offsets)} committed offsets, "
        f"{int(decisions['expired'].sum())} already expired. "
        f"Tables absent from this run: {[n for n, t in run.tables.items() if t is None] or 'none'}."
    )
)

# %% [markdown]
# ## Worst-lagging groups
#
# From the `lag` table (LAG = log-end offset - committed offset, summed over a group's
# partitions) when the run wrote one. Without it (a dump of `__consumer_offsets` alone does
# not know the log-end offsets), the time since a group's newest commit stands in for lag:
# a group that stopped committing is the one falling behind, or gone.

# %%
worst = q.worst_lagging_groups(run.tables["lag"], top_n) if run.has("lag") else None
if worst is not None and worst["total_lag"].notna().any():
    lag_column, lag_label = "total_lag", "total lag (records)"
else:
    display(Markdown("_No lag known in this run: showing hours since the last commit._"))
    worst = q.staleness_by_group(offsets, run.as_of, top_n)
    lag_column, lag_label = "hours_since_commit", "hours since the group's last commit"
display(worst)

# %%
if worst.empty:
    display(Markdown("_Nothing to plot: no group has committed offsets in this run._"))
else:
    fig, ax = plt.subplots(figsize=(9, 0.35 * max(len(worst), 3) + 1))
    ax.barh(worst["group_id"][::-1], worst[lag_column][::-1], color="tab:red")
    ax.xaxis.set_major_formatter(readable)
    ax.set_xlabel(lag_label)
    ax.set_title(f"Lag by group (top {len(worst)})")
    show(fig, "lag_by_group")

# %% [markdown]
# ## Offsets expiring soon
#
# Not expired at `as_of`, and `offset_decisions.expires_at` within the window. `rule` is the
# row of the coordinator's decision table (docs/semantics.md section 4) that set the expiry.

# %%
expiring_24h = q.expiring_within(decisions, run.as_of, pd.Timedelta(hours=24))
expiring_7d = q.expiring_within(decisions, run.as_of, pd.Timedelta(days=7))
display(Markdown(f"**{len(expiring_24h)}** offsets expire within 24 h:"))
display(expiring_24h.head(50))

# %% [markdown]
# ### The data-loss list
#
# Lagging groups (lag above zero) whose offsets expire within 24 h: when they expire the group
# restarts from `auto.offset.reset` and skips or replays the messages behind it. The report's
# Now page and its `report.json` show the same list.

# %%
if run.has("lag"):
    data_loss = q.data_loss_list(run.tables["lag"], decisions, run.as_of)
    display(Markdown(f"**{len(data_loss)}** lagging groups lose their offsets within 24 h:"))
    display(data_loss.head(50))
else:
    display(Markdown("_No lag table in this run: the data-loss list needs log-end offsets._"))

# %%
display(Markdown(f"**{len(expiring_7d)}** offsets expire within 7 days (by group and rule):"))
display(
    expiring_7d.groupby(["group_id", "rule"])
    .agg(offsets=("partition", "size"), first_expiry=("expires_at", "min"))
    .sort_values("first_expiry")
    .reset_index()
)

# %%
timeline = q.expiry_timeline(decisions, run.as_of, pd.Timedelta(days=7), freq="6h")
if timeline.empty or not timeline["offsets"].any():
    display(Markdown("_Nothing to plot: no offset expires within 7 days of `as_of`._"))
else:
    fig, ax = plt.subplots(figsize=(9, 3.5))
    ax.bar(timeline["bin_start"], timeline["offsets"], width=0.25, align="edge", label="per 6 h")
    ax2 = ax.twinx()
    ax2.step(timeline["bin_start"], timeline["cumulative"], where="post", color="tab:orange")
    ax2.yaxis.set_major_formatter(readable)
    ax2.set_ylabel("cumulative")
    ax.axvline(run.as_of + pd.Timedelta(hours=24), color="grey", linestyle="--", linewidth=1)
    ax.yaxis.set_major_formatter(readable)
    ax.set_ylabel("offsets expiring")
    ax.set_title("Expiry timeline: the next 7 days after as_of (dashed: +24 h)")
    fig.autofmt_xdate()
    show(fig, "expiry_timeline")

# %% [markdown]
# ## Stale offsets of topics no longer subscribed
#
# Offsets that expire only because the group stopped subscribing to their topic: rules
# `EXP-STABLE-UNSUBSCRIBED` (classic consumer group, Stable) and `EXP-MODERN-COMMIT-TS`
# (consumer/streams group), with the topic absent from `groups.subscribed_topics`. They hold
# a position nobody reads from; they go away `offsets.retention.minutes` after their commit.
# Empty groups and groups whose subscription is unknown are left out (they subscribe to
# nothing, so every offset would match): the same count as TABLES.md's stale-subscriptions
# query and the report's tile.

# %%
stale = q.stale_unsubscribed(decisions, groups, offsets)
display(Markdown(f"**{len(stale)}** stale offsets in {stale['group_id'].nunique()} groups:"))
display(
    stale.groupby(["group_id", "group_type", "state", "topic"])
    .agg(
        partitions=("partition", "size"), expired=("expired", "sum"), expires=("expires_at", "min")
    )
    .reset_index()
)

# %% [markdown]
# ## Commit rate
#
# From the `metrics` table (every offset commit in the log, per hour) when the run wrote one;
# otherwise from `offsets.commit_timestamp`, which keeps only each partition's latest commit.

# %%
rate, rate_label = q.commit_rate(offsets, run.tables.get("metrics"))
if rate.empty:
    display(Markdown("_Nothing to plot: no offset commit in this run._"))
else:
    fig, ax = plt.subplots(figsize=(9, 3))
    ax.plot(rate["hour"], rate["commits"], drawstyle="steps-post")
    ax.yaxis.set_major_formatter(readable)
    ax.set_ylabel("commits / hour")
    ax.set_title(rate_label)
    fig.autofmt_xdate()
    show(fig, "commit_rate")
