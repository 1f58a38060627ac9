"""The HTML of `offsets report`: one self-contained page per run, from the query layer's frames.

Every number comes from `offsets_lib.tools.notebook_queries` (the notebook's functions); this
module only lays them out. The file has no outside request: plotly.js is inlined once, the
styles and the small scripts are inline. User data (group ids, topics, errors, run ids) is
escaped everywhere: HTML-escaped in markup and in chart labels (plotly renders a few tags of its
own), and the groups table's rows travel as JSON whose ``<``, ``>`` and ``&`` are ``\\u`` escapes
and are drawn with ``textContent``. Times are UTC.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pandas as pd

from offsets_lib.tools import notebook_queries as q

PAGES = (
    ("now", "Now"),
    ("lag", "Lag"),
    ("groups", "Groups"),
    ("activity", "Commit activity"),
    ("health", "Run health"),
)
SCHEDULE = pd.Timedelta(hours=1)  # the hourly schedule of jobs/airflow_dag.py
TOP_N = 15
HISTORY_GROUPS = 10  # groups drawn in the lag-across-runs chart
DRILL_GROUPS = 50  # groups whose partitions the drill-down holds
TABLE_ROWS = 100  # rows of a list drawn in the page (thousands slow its opening)
TEXT = {"group_id": ' class="text"', "error": ' class="text"'}  # cells that wrap
TILE_LABELS = {
    "data_loss_groups": "lagging groups whose offsets expire within 24 h",
    "expiring_1h": "offsets expiring within 1 h",
    "expiring_24h": "offsets expiring within 24 h",
    "expiring_7d": "offsets expiring within 7 d",
    "groups_deleted_24h": "groups deleted within 24 h",
    "stale_offsets": "offsets on topics the group no longer reads",
    "rejects": "records rejected",
    "load_failures": "offsets partitions that would fail to load",
    "unread_markers": "offsets behind an unread transaction marker",
}


@dataclass
class ReportData:
    """What one page shows: the run, the retained runs and the query layer's answers."""

    run: q.AuditRun
    runs: pd.DataFrame  # every runs row, oldest first (`notebook_queries.read_runs`)
    history_ids: list[str]  # the retained succeeded runs drawn in the history, oldest first
    history: pd.DataFrame  # `lag_history` of the top groups
    time_lag: pd.DataFrame  # `estimated_time_lag`
    rejects: pd.DataFrame  # `rejects_by_error`
    now: pd.Timestamp  # when the report was made (for the "runs are late" banner)
    ranked: pd.DataFrame | None  # `top_lag` of every group, by total lag (None: no lag table)
    tiles: dict[str, int] = field(default_factory=dict)
    data_loss: pd.DataFrame = field(default_factory=pd.DataFrame)


def gather(output: str, run_id: str | None, history: int, now: pd.Timestamp) -> ReportData:
    """Read the run and its retained predecessors through the query layer."""
    run = q.load_run(output, run_id, q.REPORT_TABLES)
    runs = q.read_runs(output)
    succeeded = runs[(runs["status"] == "succeeded") & (runs["as_of"] <= run.as_of)]
    earlier = [r for r in succeeded["run_id"] if r != run.run_id]
    ids = [*(earlier[-(history - 1) :] if history > 1 else []), run.run_id]
    lag = run.tables["lag"] if run.has("lag") else None
    ranked = q.top_lag(lag, run.as_of, n=None) if lag is not None else None
    top = [] if ranked is None else list(ranked["group_id"].head(HISTORY_GROUPS))
    data = ReportData(
        run=run,
        runs=runs,
        history_ids=ids,
        history=q.lag_history(output, ids, top),
        time_lag=q.estimated_time_lag(output, ids, lag) if lag is not None else pd.DataFrame(),
        rejects=q.rejects_by_error(output, run.run_id),
        now=now,
        ranked=ranked,
    )
    data.data_loss = (
        q.data_loss_list(lag, run.tables["offset_decisions"], run.as_of)
        if lag is not None
        else pd.DataFrame(columns=["group_id", "partitions", "lag", "expires_at", "rule"])
    )
    data.tiles = q.tiles(run, data.data_loss)
    return data


def banners(data: ReportData) -> list[str]:
    """The red banner's lines: late runs, a failed newest run, rejects, load failures."""
    out = []
    runs = data.runs
    succeeded = runs[runs["status"] == "succeeded"]
    if not succeeded.empty:
        newest = succeeded["finished_at"].iloc[-1]
        if pd.notna(newest) and data.now - newest > 2 * SCHEDULE:
            out.append(
                f"The newest succeeded run finished {_age(data.now - newest)} ago "
                f"(over twice the {_age(SCHEDULE)} schedule)."
            )
    if not runs.empty and runs["status"].iloc[-1] == "failed":
        out.append(f"The newest run ({runs['run_id'].iloc[-1]}) failed: {runs['error'].iloc[-1]}")
    if data.tiles.get("rejects"):
        out.append(f"{data.tiles['rejects']:,} records of this run were rejected (Run health).")
    if data.tiles.get("load_failures"):
        out.append(
            f"{data.tiles['load_failures']:,} load failures: an offsets partition would fail "
            "to load on the broker."
        )
    return out


def summary(data: ReportData) -> dict:
    """report.json: the tiles and the data-loss list, for alerting."""
    return {
        "run_id": data.run.run_id,
        "as_of": _utc(data.run.as_of, iso=True),
        "banners": banners(data),
        "tiles": data.tiles,
        "data_loss": data.data_loss[["group_id", "partitions", "lag", "expires_at", "rule"]]
        .assign(expires_at=[_utc(t, iso=True) for t in data.data_loss["expires_at"]])
        .to_dict("records"),
    }


# ---- the page ---------------------------------------------------------------------------------


def render(data: ReportData, rules_url: str) -> str:
    """The whole HTML document."""
    charts = _Charts()
    run, t = data.run, data.run.tables
    link = _rule_linker(rules_url)
    pages = {
        "now": _now_page(data, charts, link),
        "lag": _lag_page(data, charts),
        "groups": _groups_page(run),
        "activity": _activity_page(t.get("metrics"), charts),
        "health": _health_page(data),
    }
    nav = "".join(
        f'<button data-page="{key}" id="nav-{key}">{label}</button>' for key, label in PAGES
    )
    body = "".join(
        f'<section class="page" id="page-{key}"><h2>{label}</h2>{pages[key]}</section>'
        for key, label in PAGES
    )
    banner = "".join(f"<p>{_e(line)}</p>" for line in banners(data))
    banner_html = f'<div class="banner" id="banner">{banner}</div>' if banner else ""
    info = run.info
    header = (
        '<header><h1>Consumer offsets audit</h1><dl id="run-header">'
        f"<dt>cluster</dt><dd id='h-cluster'>{_e(info.get('input') or info.get('source'))}</dd>"
        f"<dt>run</dt><dd id='h-run'>{_e(run.run_id)}</dd>"
        f"<dt>as of</dt><dd id='h-as-of'>{_e(_utc(run.as_of))} (UTC)</dd>"
        f"<dt>coordinator</dt><dd id='h-coordinator'>{_e(info.get('coordinator'))}</dd>"
        f"<dt>status</dt><dd id='h-status'>{_e(info.get('status'))}</dd>"
        "</dl></header>"
    )
    rows = _groups_json(q.groups_table(run), rules_url)
    drill = (
        _drill_json(
            t["lag"], t["offset_decisions"], list(data.ranked["group_id"].head(DRILL_GROUPS))
        )
        if data.ranked is not None
        else "{}"
    )
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>offsets report {_e(run.run_id)}</title><style>{STYLE}</style></head>"
        f'<body data-rules="{_e(rules_url)}">'
        f"{header}{banner_html}<nav>{nav}</nav>{body}"
        f'<script type="application/octet-stream" id="groups-data">{rows}</script>'
        f'<script type="application/json" id="drill-data">{drill}</script>'
        f"{charts.scripts()}<script>{SCRIPT}</script></body></html>"
    )


def _now_page(data: ReportData, charts: _Charts, link: Callable[[str], str]) -> str:
    run = data.run
    loss = _table(
        "data-loss",
        data.data_loss,
        [
            ("group_id", "group", _e),
            ("partitions", "partitions", _int),
            ("lag", "lag at risk", _int),
            ("expires_at", "first expiry (UTC)", _utc_e),
            ("rule", "rule", link),
        ],
        empty="No lagging group has offsets expiring within 24 h.",
        more="report.json lists every one.",
        scroll=True,
    )
    tiles = "".join(
        f'<div class="tile" id="tile-{key}"><b>{value:,}</b><span>{_e(TILE_LABELS[key])}</span>'
        "</div>"
        for key, value in data.tiles.items()
    )
    timeline = q.expiry_timeline(run.tables["offset_decisions"], run.as_of, by_rule=True)
    traces = [
        {
            "type": "bar",
            "name": rule,
            "x": [_utc(b) for b in part["bin_start"]],
            "y": [int(v) for v in part["offsets"]],
        }
        for rule, part in timeline.groupby("rule", sort=True)
    ]
    chart = charts.figure(
        "chart-expiry",
        traces,
        "Offsets expiring in the next 7 days, per 6 h and rule",
        "expiry (UTC)",
        "offsets",
        barmode="stack",
    )
    deleted = (
        _table(
            "deleted-soon",
            q.groups_deleted_within(run.tables["group_decisions"], run.as_of),
            [
                ("group_id", "group", _e),
                ("group_type", "type", _e),
                ("state", "state", _e),
                ("deleted", "deleted now", lambda v: "yes" if v else "no"),
                ("deletes_at", "deletes at (UTC)", _utc_e),
                ("rule", "rule", link),
            ],
            empty="No group is deleted within 24 h.",
            more="the Groups page sorts every group by its deletion time.",
            scroll=True,
        )
        if run.has("group_decisions")
        else "<p>No group_decisions table in this run.</p>"
    )
    return (
        "<h3>Data-loss list: lagging groups whose offsets expire within 24 h</h3>"
        "<p>When these offsets expire the group restarts from <code>auto.offset.reset</code> "
        "and skips or replays the messages behind it.</p>"
        f"{loss}<div class='tiles'>{tiles}</div>{chart}"
        f"<h3>Groups deleted within 24 h</h3>{deleted}"
    )


def _lag_page(data: ReportData, charts: _Charts) -> str:
    run = data.run
    if not run.has("lag"):
        return "<p>This run wrote no lag table (no log-end offsets).</p>"
    lag = run.tables["lag"]
    columns = [
        ("group_id", "group", _e),
        ("partitions", "partitions", _int),
        ("total_lag", "total lag", _int),
        ("max_lag", "worst partition", _int),
        ("last_commit_at", "last commit (UTC)", _utc_e),
        ("commit_age_hours", "commit age (h)", _num),
    ]
    by_total = data.ranked.head(TOP_N)
    by_max = q.top_lag(lag, run.as_of, "max_lag", TOP_N)
    bar = charts.figure(
        "chart-top-lag",
        [
            {
                "type": "bar",
                "orientation": "h",
                "x": [int(v) for v in by_total["total_lag"][::-1]],
                "y": [_e(g) for g in by_total["group_id"][::-1]],
            }
        ],
        f"Top {len(by_total)} groups by total lag",
        "messages",
        "",
        height=max(300, 26 * len(by_total) + 120),
    )
    hist = data.history
    lines = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": _e(group),
            "x": [_utc(a) for a in part["as_of"]],
            "y": [int(v) for v in part["total_lag"]],
        }
        for group, part in hist.groupby("group_id", sort=True)
    ]
    history_chart = charts.figure(
        "chart-lag-history",
        lines,
        f"Total lag of the top {HISTORY_GROUPS} groups across {len(data.history_ids)} runs",
        "run as of (UTC)",
        "messages",
    )
    trend = q.lag_trend(hist).merge(by_total[["group_id", "total_lag"]], on="group_id")
    trend = trend.sort_values(["total_lag", "group_id"], ascending=[False, True])
    time_lag = data.time_lag.sort_values("total_lag", ascending=False).head(TOP_N)
    drill = "".join(
        f'<option value="{_e(g)}">{_e(g)}</option>'
        for g in data.ranked["group_id"].head(DRILL_GROUPS)
    )
    return (
        f"<h3>Top groups by total lag</h3>{bar}"
        + _table("top-total", by_total, columns)
        + "<h3>Top groups by worst-partition lag</h3>"
        + _table("top-max", by_max, columns)
        + f"<h3>Lag across the retained runs</h3>{history_chart}"
        + _table(
            "lag-trend",
            trend,
            [
                ("group_id", "group", _e),
                ("runs", "runs", _int),
                ("total_lag", "total lag now", _int),
                ("lag_per_hour", "trend (messages / h)", _num),
            ],
        )
        + "<h3>Estimated time lag</h3><p>An <b>estimate</b>: the group's lag divided by the rate "
        "its partitions' log-end offsets grew across the retained runs (none when they did not "
        "move).</p>"
        + _table(
            "time-lag",
            time_lag,
            [
                ("group_id", "group", _e),
                ("total_lag", "total lag", _int),
                ("rate_per_s", "log-end growth (messages / s)", _num),
                ("est_seconds", "estimated time lag (h)", lambda v: _num(v / 3600)),
            ],
            empty="No estimate: fewer than two retained runs with a lag table.",
        )
        + "<h3>Per-group drill-down</h3><p>The partitions of the "
        f"{DRILL_GROUPS} groups with the largest lag.</p>"
        f'<select id="drill-group"><option value="">(choose a group)</option>{drill}</select>'
        '<div id="drill-table"></div>'
    )


def _groups_page(run: q.AuditRun) -> str:
    counts = q.type_state_counts(run.tables["groups"])
    header = "".join(f"<th>{_e(s)}</th>" for s in counts.columns)
    rows = "".join(
        f"<tr><th>{_e(t)}</th>" + "".join(f"<td>{int(v):,}</td>" for v in row) + "</tr>"
        for t, row in zip(counts.index, counts.to_numpy().tolist(), strict=True)
    )
    states = sorted(run.tables["groups"]["state"].dropna().unique())
    options = "".join(f'<option value="{_e(s)}">{_e(s)}</option>' for s in states)
    return (
        "<h3>Groups by type and state</h3>"
        f'<table id="type-state"><tr><th>type \\ state</th>{header}</tr>{rows}</table>'
        "<h3>Every group</h3><div class='filters'>"
        '<input id="group-search" type="search" placeholder="search group id or topic">'
        f'<select id="group-state"><option value="">every state</option>{options}</select>'
        '<label>lag at least <input id="group-min-lag" type="number" min="0" value="0"></label>'
        '<span id="group-count"></span></div>'
        '<table id="groups-table" class="sortable"><thead><tr>'
        + "".join(f'<th data-col="{i}">{label}</th>' for i, label in enumerate(GROUP_COLUMNS))
        + '</tr></thead><tbody></tbody></table><div id="group-pager"></div>'
    )


GROUP_COLUMNS = (
    "group",
    "type",
    "state",
    "members",
    "topics",
    "lag",
    "last commit (UTC)",
    "expires at (UTC)",
    "deleted at (UTC)",
    "rule",
)


def _groups_json(table: pd.DataFrame, rules_url: str) -> str:
    """Every group as compact JSON, gzipped and base64-encoded (100,000 groups: ~3 MB instead of
    ~19 MB): type, state, rule and topics as indexes into lists, times as epoch seconds, rows by
    lag (largest first, none last) then id, the table's first order. The page's script decodes
    it (DecompressionStream) when the Groups page is first shown."""
    table = table.sort_values("lag", ascending=False, kind="stable", na_position="last")
    doc: dict[str, list] = {"rules_url": rules_url}

    def coded(kind: str, values: pd.Series) -> list[int | None]:
        codes, doc[kind] = pd.factorize(values)
        doc[kind] = [str(v) for v in doc[kind]]
        return [None if c < 0 else c for c in codes.tolist()]

    def column(values: pd.Series) -> list:
        return values.astype(object).where(values.notna(), None).tolist()

    topic_names = sorted({t for ts in table["topics"] for t in ts})
    topic_code = {t: i for i, t in enumerate(topic_names)}
    doc["topics"] = topic_names
    doc["rows"] = [
        list(r)
        for r in zip(
            table["group_id"].tolist(),
            coded("types", table["group_type"]),
            coded("states", table["state"]),
            column(table["members"].astype("Int64")),
            [[topic_code[t] for t in ts] for ts in table["topics"]],
            column(table["lag"].astype("Int64")),
            _epoch_column(table["last_commit_at"]),
            _epoch_column(table["expires_at"]),
            _epoch_column(table["deletes_at"]),
            coded("rules", table["rule"]),
            strict=True,
        )
    ]
    raw = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


def _epoch_column(values: pd.Series) -> list[int | None]:
    """Timestamps as whole epoch seconds (None for NaT)."""
    stamps = pd.to_datetime(values, utc=True)
    secs = stamps.to_numpy("datetime64[s]").astype("int64").tolist()
    return [None if missing else s for s, missing in zip(secs, stamps.isna().tolist(), strict=True)]


def _drill_json(lag: pd.DataFrame, decisions: pd.DataFrame, groups: list[str]) -> str:
    keys = ["group_id", "topic", "partition"]
    rows = lag[lag["group_id"].isin(groups)].merge(
        decisions[[*keys, "expires_at", "rule"]], on=keys, how="left"
    )
    out: dict[str, list] = {g: [] for g in groups}
    for r in rows.sort_values(keys).itertuples():
        out[r.group_id].append(
            [
                r.topic,
                int(r.partition),
                int(r.committed_offset),
                None if pd.isna(r.log_end_offset) else int(r.log_end_offset),
                None if pd.isna(r.lag) else int(r.lag),
                _utc(r.last_commit_at),
                _utc(r.expires_at),
                None if pd.isna(r.rule) else r.rule,
            ]
        )
    return _script_json(out)


def _activity_page(metrics: pd.DataFrame | None, charts: _Charts) -> str:
    if metrics is None or metrics.empty:
        return "<p>This run wrote no metrics table.</p>"
    meters = q.meters_per_hour(metrics)
    hours = [_utc(h) for h in meters["hour"]]
    lines = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": name,
            "x": hours,
            "y": [int(v) for v in meters[name]],
        }
        for name in q.METERS
    ]
    per_partition = q.commits_per_offsets_partition(metrics)
    ordered = per_partition.sort_values("offsets_partition")
    return charts.figure(
        "chart-meters",
        lines,
        "Coordinator meters per hour (offset commits, tombstones, group writes, groups)",
        "hour (UTC)",
        "per hour",
    ) + charts.figure(
        "chart-partitions",
        [
            {
                "type": "bar",
                "x": [int(p) for p in ordered["offsets_partition"]],
                "y": [int(v) for v in ordered["commits"]],
            }
        ],
        "Offset commits per __consumer_offsets partition (hot coordinators stand out)",
        "offsets partition",
        "commits",
    )


def _health_page(data: ReportData) -> str:
    health = q.run_health(data.runs, len(data.history_ids) + 24)
    missing = q.missing_hourly_runs(data.runs)
    gaps = (
        "<p>No hour without a succeeded run between the first and the last.</p>"
        if not missing
        else f"<p id='missing-hours'>{len(missing)} hours without a succeeded run: "
        + ", ".join(_utc(h) for h in missing[:48])
        + (" ..." if len(missing) > 48 else "")
        + "</p>"
    )
    return (
        _table(
            "runs",
            health,
            [
                ("run_id", "run", _e),
                ("status", "status", _e),
                ("as_of", "as of (UTC)", _utc_e),
                ("started_at", "started (UTC)", _utc_e),
                ("duration_s", "duration (s)", _num),
                ("records_read", "read", _int),
                ("records_decoded", "decoded", _int),
                ("records_rejected", "rejected", _int),
                ("error", "error", _e),
            ],
        )
        + f"<h3>Missing hourly runs</h3>{gaps}<h3>Rejects by error</h3>"
        + _table(
            "rejects",
            data.rejects,
            [("error", "error", _e), ("records", "records", _int)],
            empty="No record of this run was rejected.",
        )
    )


# ---- pieces -----------------------------------------------------------------------------------


class _Charts:
    """The page's plotly figures as data: each chart is an empty ``div`` and its traces and
    layout (plain lists, no bdata) travel in one JSON script; the page draws a page's charts
    when it is first shown (plotly.js inlined once, before the page's script)."""

    def __init__(self) -> None:
        self.specs: dict[str, dict] = {}

    def figure(
        self,
        div_id: str,
        traces: list[dict],
        title: str,
        x_title: str,
        y_title: str,
        **layout: object,
    ) -> str:
        self.specs[div_id] = {
            "data": traces,
            "layout": {
                "title": {"text": _e(title)},
                "xaxis": {"title": {"text": x_title}, "automargin": True},
                "yaxis": {"title": {"text": y_title}, "automargin": True},
                "height": 420,
                "margin": {"l": 60, "r": 20, "t": 50, "b": 60},
                **layout,
            },
        }
        empty = f"<p class='empty'>Nothing to draw: {_e(title)} has no data.</p>"
        return f'<div class="chart" id="{div_id}"></div>' + ("" if traces else empty)

    def scripts(self) -> str:
        """plotly.js and the figures' JSON (with the plotly_white template, once)."""
        import plotly.io as pio
        from plotly.offline import get_plotlyjs

        template = pio.templates["plotly_white"].to_plotly_json()
        doc = {"template": template, "charts": self.specs}
        return (
            f'<script type="application/json" id="charts-data">{_script_json(doc)}</script>'
            f"<script>{get_plotlyjs()}</script>"
        )


def _table(
    table_id: str,
    frame: pd.DataFrame,
    columns: Sequence[tuple[str, str, Callable[[object], str]]],
    empty: str = "Nothing to show.",
    more: str = "",
    scroll: bool = False,
) -> str:
    """An HTML table of the first TABLE_ROWS rows (``more`` says where the rest are), in a
    box of its own height when ``scroll``."""
    if frame.empty:
        return f'<p class="empty" id="{table_id}-empty">{_e(empty)}</p>'
    head = "".join(f"<th>{_e(label)}</th>" for _, label, _ in columns)
    body = "".join(
        "<tr>"
        + "".join(f"<td{TEXT.get(name, '')}>{fmt(row[name])}</td>" for name, _, fmt in columns)
        + "</tr>"
        for row in frame[[c for c, _, _ in columns]].head(TABLE_ROWS).to_dict("records")
    )
    rest = (
        f'<p class="more" id="{table_id}-more">The first {TABLE_ROWS} of {len(frame):,}; '
        f"{_e(more)}</p>"
        if len(frame) > TABLE_ROWS
        else ""
    )
    table = f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    return (f"<div class='scroll'>{table}</div>" if scroll else table) + rest


def _rule_linker(rules_url: str) -> Callable[[object], str]:
    def link(rule: object) -> str:
        if rule is None or (isinstance(rule, float) and math.isnan(rule)):
            return ""
        href = f"{rules_url}#{str(rule).lower()}"
        return f'<a class="rule" href="{_e(href)}">{_e(rule)}</a>'

    return link


def _e(value: object) -> str:
    return "" if value is None else html.escape(str(value), quote=True)


def _int(value: object) -> str:
    return "" if value is None or pd.isna(value) else f"{int(value):,}"


def _num(value: object) -> str:
    return "" if value is None or pd.isna(value) else f"{float(value):,.1f}"


def _utc(value: object, iso: bool = False) -> str | None:
    """The instant in UTC: "2026-12-02 07:00:00" for the page (plotly draws wall-clock time; the
    labels say UTC), ISO 8601 "2026-12-02T07:00:00Z" for report.json."""
    if value is None or pd.isna(value):
        return None
    stamp = pd.Timestamp(value)
    stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ" if iso else "%Y-%m-%d %H:%M:%S")


def _utc_e(value: object) -> str:
    return _e(_utc(value))


def _age(delta: pd.Timedelta) -> str:
    hours = delta / pd.Timedelta(hours=1)
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} d"


def _script_json(value: object) -> str:
    """JSON safe inside a <script> element: no ``<``, ``>`` or ``&`` left as such."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


STYLE = """
body{font-family:system-ui,sans-serif,"WenQuanYi Micro Hei",Symbola;margin:0;color:#222}
header{background:#1f2937;color:#fff;padding:8px 16px}
header h1{font-size:18px;margin:0 0 4px}
dl{display:flex;flex-wrap:wrap;gap:4px 16px;margin:0}
dt{opacity:.7}dd{margin:0;font-weight:600;word-break:break-all}
.banner{background:#b91c1c;color:#fff;padding:8px 16px}.banner p{margin:2px 0}
nav{display:flex;gap:4px;padding:8px 16px;border-bottom:1px solid #ddd}
nav button{padding:6px 12px;border:1px solid #bbb;background:#f5f5f5;cursor:pointer}
nav button.active{background:#1f2937;color:#fff}
section.page{padding:8px 16px;display:none}section.page.active{display:block}
table{border-collapse:collapse;margin:8px 0;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
td{white-space:nowrap}td.text{white-space:normal;overflow-wrap:anywhere;min-width:16ch;max-width:60ch}
th[data-col]{cursor:pointer;background:#f0f0f0}
.tiles{display:flex;flex-wrap:wrap;gap:8px;margin:12px 0}
.tile{border:1px solid #ccc;border-radius:4px;padding:8px;width:180px}
.tile b{display:block;font-size:22px}.tile span{font-size:12px}
#tile-data_loss_groups{border-color:#b91c1c}
.filters{display:flex;gap:12px;align-items:center;margin:8px 0}
.empty,.more{color:#666;font-style:italic}
.scroll{max-height:340px;overflow:auto;width:fit-content;border-bottom:1px solid #ddd}
"""

SCRIPT = r"""
(function(){
var RULES = document.body.dataset.rules;
var CHARTS = JSON.parse(document.getElementById('charts-data').textContent);
function show(key){
  document.querySelectorAll('section.page').forEach(function(s){
    s.classList.toggle('active', s.id === 'page-' + key);});
  document.querySelectorAll('nav button').forEach(function(b){
    b.classList.toggle('active', b.dataset.page === key);});
  var page = document.getElementById('page-' + key);
  page.querySelectorAll('div.chart').forEach(function(div){  // drawn once, when first shown
    var spec = CHARTS.charts[div.id];
    if (!spec || div.dataset.drawn) return;
    div.dataset.drawn = '1'; spec.layout.template = CHARTS.template;
    Plotly.newPlot(div, spec.data, spec.layout, {displaylogo: false, responsive: true});
  });
  if (key === 'groups' && !data) loadGroups().catch(function(e){
    count.textContent = 'the groups could not be read: ' + e; });
  if (location.hash !== '#' + key) history.replaceState(null, '', '#' + key);
}
document.querySelectorAll('nav button').forEach(function(b){
  b.addEventListener('click', function(){ show(b.dataset.page); });});
// The groups: decoded once, when the Groups page is first shown. A row is
// [id, type, state, members, topics, lag, last commit, expires at, deletes at, rule] with
// type, state, rule and topics as indexes into data's lists and times as epoch seconds,
// sorted by lag (largest first, none last) then id: the table's first order.
var data, rows = [], topics = [], PAGE = 100, shown = rows, sortCol = 5, sortDir = -1, page = 0;
var CODED = {1: 'types', 2: 'states', 9: 'rules'}, TIMES = {6: 1, 7: 1, 8: 1};
function utc(s){
  return s === null ? null : new Date(s * 1000).toISOString().slice(0, 19).replace('T', ' ');
}
function value(r, c){  // what column c shows (and sorts by: epoch seconds sort as time does)
  if (c === 4) return topics[r.index];
  var v = r[c];
  return v !== null && CODED[c] ? data[CODED[c]][v] : v;
}
function bytes(b64){
  if (Uint8Array.fromBase64) return Uint8Array.fromBase64(b64);
  var text = atob(b64), out = new Uint8Array(text.length);
  for (var i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}
async function loadGroups(){
  var raw = bytes(document.getElementById('groups-data').textContent);
  var stream = new Blob([raw]).stream().pipeThrough(new DecompressionStream('gzip'));
  data = JSON.parse(await new Response(stream).text());
  rows = data.rows;
  topics = rows.map(function(r, i){
    r.index = i; return r[4].map(function(t){ return data.topics[t]; }).join(', '); });
  filter();
}
var search = document.getElementById('group-search'),
    state = document.getElementById('group-state'),
    minLag = document.getElementById('group-min-lag'),
    tbody = document.querySelector('#groups-table tbody'),
    count = document.getElementById('group-count'),
    pager = document.getElementById('group-pager');
function cmp(a, b){
  var x = value(a, sortCol), y = value(b, sortCol);
  if (x === y) return a.index - b.index;  // ties keep the first order
  if (x === null) return 1; if (y === null) return -1;
  return (x < y ? -1 : 1) * sortDir;
}
function filter(){
  if (!data) return;
  var text = search.value.toLowerCase(), lag = Number(minLag.value) || 0;
  var st = state.value ? data.states.indexOf(state.value) : -1;
  shown = !text && st < 0 && lag <= 0 ? rows.slice() : rows.filter(function(r){
    return (st < 0 || r[2] === st) && (lag <= 0 || (r[5] !== null && r[5] >= lag)) &&
      (!text || r[0].toLowerCase().indexOf(text) >= 0 ||
       topics[r.index].toLowerCase().indexOf(text) >= 0);
  });
  if (sortCol !== 5 || sortDir !== -1) shown.sort(cmp);  // else: the rows' own order
  page = 0; draw();
}
function cell(tr, value, isRule, isText){  // ids and topics wrap; numbers, times, rules do not
  var td = document.createElement('td'); if (isText) td.className = 'text';
  if (isRule && value){
    var a = document.createElement('a'); a.className = 'rule';
    a.href = RULES + '#' + value.toLowerCase(); a.textContent = value; td.appendChild(a);
  } else {
    td.textContent = value === null ? '' :
      (typeof value === 'number' ? value.toLocaleString('en-US') : value);
  }
  tr.appendChild(td);
}
function draw(){
  tbody.textContent = '';
  shown.slice(page * PAGE, (page + 1) * PAGE).forEach(function(r){
    var tr = document.createElement('tr');
    for (var c = 0; c < 10; c++) {
      var v = value(r, c); cell(tr, TIMES[c] ? utc(v) : v, c === 9, c === 0 || c === 4);
    }
    tbody.appendChild(tr);
  });
  count.textContent = shown.length.toLocaleString('en-US') + ' of ' +
    rows.length.toLocaleString('en-US') + ' groups';
  pager.textContent = '';
  var pages = Math.max(1, Math.ceil(shown.length / PAGE));
  [['first', 0], ['previous', page - 1], ['next', page + 1], ['last', pages - 1]]
  .forEach(function(p){
    var b = document.createElement('button'); b.textContent = p[0];
    b.disabled = p[1] < 0 || p[1] >= pages || p[1] === page;
    b.addEventListener('click', function(){ page = p[1]; draw(); });
    pager.appendChild(b);
  });
  var info = document.createElement('span');
  info.textContent = ' page ' + (page + 1) + ' of ' + pages; pager.appendChild(info);
}
document.querySelectorAll('#groups-table th[data-col]').forEach(function(th){
  th.addEventListener('click', function(){
    var c = Number(th.dataset.col);
    sortDir = c === sortCol ? -sortDir : 1; sortCol = c; shown.sort(cmp); page = 0; draw();
  });
});
[search, state, minLag].forEach(function(el){ el.addEventListener('input', filter); });
var drill = JSON.parse(document.getElementById('drill-data').textContent);
var select = document.getElementById('drill-group');
if (select) select.addEventListener('change', function(){
  var box = document.getElementById('drill-table'); box.textContent = '';
  var parts = drill[select.value]; if (!parts) return;
  var table = document.createElement('table'), head = document.createElement('tr');
  ['topic','partition','committed','log end','lag','last commit (UTC)','expires at (UTC)','rule']
    .forEach(function(h){
      var th = document.createElement('th'); th.textContent = h; head.appendChild(th); });
  table.appendChild(head);
  parts.forEach(function(r){
    var tr = document.createElement('tr');
    r.forEach(function(v, i){ cell(tr, v, i === 7, i === 0); }); table.appendChild(tr);
  });
  box.appendChild(table);
});
var start = location.hash.slice(1);
show(document.getElementById('page-' + start) ? start : 'now');
})();
"""
