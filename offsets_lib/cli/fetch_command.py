"""`offsets fetch`: committed offsets as a batched OffsetFetch would return them (`tools.fetch`).

Reads one run (the latest succeeded one, or --run-id) with delta-rs and pyarrow; no Spark
session is started for --output (for --database, one asks the catalog where the tables are).
Exit 3 with one line on stderr when the output has no tables or no such run.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime
from typing import Any

import click

from offsets_lib.cli.app import (
    EXIT_INPUT,
    EXIT_USAGE,
    fail,
    iso_utc,
    tables_options,
    tables_root,
)
from offsets_lib.job.config import tables_conf_option

FETCH_COLUMNS = [
    "GROUP",
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "LOG-END-OFFSET",
    "LAG",
    "LAST-COMMIT",
    "EXPIRES-AT",
]


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, datetime):
        return iso_utc(obj)
    return obj


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return (iso_utc(value) or "-").replace(".000000", "")
    return str(value)


def render_table(rows: list[list[str]], header: list[str]) -> str:
    """Columns padded to their widest cell, two spaces apart, as Kafka's tools print. Returns the
    table's lines joined, trailing spaces removed."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = [header, *rows]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def format_fetch(results) -> str:
    """kafka-consumer-groups --describe style table; ERROR column only when some row has one,
    IN-DOUBT only when some offset is in doubt (TXN-MARKER-UNREAD). Returns the table; a group
    without partitions or with a group-level error is one row of dashes. An offset in doubt that the
    answer does not list (a request for all topics lists only the run's offsets) is a row of its own
    with CURRENT-OFFSET "-"."""
    rows: list[list[str]] = []
    errors: list[str] = []
    doubts: list[str] = []
    for g in results:
        group = "<null>" if g.group_id is None else (g.group_id or '""')
        answered = {(p.topic, p.partition) for p in g.partitions}
        unlisted = [d for d in g.offsets_in_doubt if (d["topic"], d["partition"]) not in answered]
        if (g.error is not None or not g.partitions) and not unlisted:
            rows.append([group, "-", "-", "-", "-", "-", "-", "-"])
            errors.append(g.error or "")
            doubts.append("")
            continue
        for p in g.partitions:
            current = "-" if p.committed_offset < 0 else str(p.committed_offset)
            rows.append(
                [
                    group,
                    p.topic,
                    str(p.partition),
                    current,
                    _cell(p.log_end_offset),
                    _cell(p.lag),
                    _cell(p.last_commit),
                    _cell(p.expires_at),
                ]
            )
            errors.append(p.error or "")
            doubts.append("" if p.in_doubt_offset is None else str(p.in_doubt_offset))
        for d in unlisted:
            rows.append([group, d["topic"], str(d["partition"]), "-", "-", "-", "-", "-"])
            errors.append(g.error or "")
            doubts.append(str(d["in_doubt_offset"]))
    header = list(FETCH_COLUMNS)
    if any(errors):
        header.append("ERROR")
        rows = [[*r, e or "-"] for r, e in zip(rows, errors, strict=True)]
    if any(doubts):
        header.append("IN-DOUBT")
        rows = [[*r, d or "-"] for r, d in zip(rows, doubts, strict=True)]
    return render_table(rows, header)


def _notes(results) -> list[str]:
    from offsets_lib.tools.in_doubt import InDoubt

    notes = []
    doubts = InDoubt(
        {
            (g.group_id, d["topic"], d["partition"]): d["in_doubt_offset"]
            for g in results
            for d in g.offsets_in_doubt
        },
        frozenset(g.group_id for g in results if g.is_group_in_doubt),
    )
    if doubts.note():
        notes.append(doubts.note())
    for g in results:
        if g.is_group_in_doubt:
            notes.append(
                f"note: group {g.group_id!r}: exists only if an unread COMMIT marker re-creates"
                " an offset in doubt (TXN-MARKER-UNREAD)"
            )
        if g.note:
            notes.append(f"note: group {g.group_id!r}: {g.note}")
        for p in g.partitions:
            if p.note:
                notes.append(f"note: {g.group_id} {p.topic}-{p.partition}: {p.note}")
    return notes


@click.command("fetch", epilog="Each rule id (FETCH-...) is explained in docs/rules.md.")
@tables_conf_option()
@tables_options
@click.option(
    "--group",
    "groups",
    multiple=True,
    metavar="G[:TOPIC[:P,P..]]",
    help="Group, optionally one topic and its partitions (repeatable). A known group id is "
    "taken whole; --group-id takes any id literally.",
)
@click.option(
    "--group-id",
    "group_ids",
    multiple=True,
    metavar="ID",
    help="Group id taken literally (it may contain ':'), all its topics (repeatable).",
)
@click.option("--all-groups", is_flag=True, help="Every group of the run that exists.")
@click.option(
    "--topic-id",
    "topic_ids",
    multiple=True,
    metavar="TOPIC=ID",
    help="Name TOPIC by this topic id, as OffsetFetch v10+ does (Kafka's 22-character form or a"
    " UUID): an offset stored with another id answers -1 (FETCH-TOPICID: the topic was deleted"
    " and re-created). Repeatable.",
)
@click.option(
    "--require-stable",
    is_flag=True,
    help="Partitions with a pending transactional offset get UNSTABLE_OFFSET_COMMIT.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document for scripts.")
@click.option("--run-id", help="Run to read (default: the latest successful run).")
def fetch_command(
    output: str | None,
    database: str | None,
    warehouse: str | None,
    groups: tuple[str, ...],
    group_ids: tuple[str, ...],
    all_groups: bool,
    topic_ids: tuple[str, ...],
    require_stable: bool,
    as_json: bool,
    run_id: str | None,
) -> None:
    """Committed offsets of groups, as a batched OffsetFetch (KIP-709) would return them."""
    from offsets_lib.tools.fetch import fetch_offsets
    from offsets_lib.tools.fetch_rules import FetchRequest
    from offsets_lib.tools.run_tables import NoRunError

    if bool(groups or group_ids) == all_groups:
        fail(
            EXIT_USAGE,
            "fetch needs --group G[:TOPIC[:P,P..]] or --group-id ID ... or --all-groups (not both)",
        )
    if topic_ids and all_groups:
        fail(EXIT_USAGE, "--topic-id names topics of --group requests (not --all-groups)")
    ids = _topic_ids(topic_ids)
    root = tables_root(output, database, warehouse)
    try:
        results = fetch_offsets(
            root,
            None if all_groups else [*(FetchRequest(g) for g in group_ids), *groups],
            require_stable=require_stable,
            run_id=run_id,
            topic_ids=ids,
        )
    except NoRunError as exc:
        fail(EXIT_INPUT, str(exc))
    except ValueError as exc:
        fail(EXIT_USAGE, str(exc))
    if as_json:
        click.echo(json.dumps(fetch_json(results, run_id, require_stable), indent=2))
        return
    if results:
        click.echo(f"run {results[0].run_id} (as of {iso_utc(results[0].as_of)})", err=True)
    click.echo(format_fetch(results))
    for line in _notes(results):
        click.echo(line, err=True)


def _topic_ids(pairs: tuple[str, ...]) -> dict[str, str]:
    """--topic-id TOPIC=ID options as topic -> UUID form; exit 2 with one line when bad."""
    from offsets_lib.tools.fetch_rules import parse_topic_id

    ids: dict[str, str] = {}
    for pair in pairs:
        topic, sep, text = pair.partition("=")
        if not sep or not topic:
            fail(EXIT_USAGE, f"--topic-id {pair!r}: expected TOPIC=ID")
        try:
            ids[topic] = parse_topic_id(text)
        except ValueError as exc:
            fail(EXIT_USAGE, f"--topic-id {pair!r}: {exc}")
    return ids


def fetch_json(results: list, run_id: str | None, require_stable: bool) -> dict[str, Any]:
    """The --json document of `offsets fetch`: the run (``run_id`` as asked when no group
    answered), the flag and one object per group (timestamps as ISO 8601 UTC)."""
    run = results[0] if results else None
    return {
        "run_id": run.run_id if run else run_id,
        "as_of": iso_utc(run.as_of) if run else None,
        "require_stable": require_stable,
        "groups": [
            {k: v for k, v in _jsonable(asdict(g)).items() if k not in ("run_id", "as_of")}
            for g in results
        ],
    }
