"""`offsets fetch` and `offsets fence-check`: operator questions answered from the written tables.

Both read one run (the latest successful one, or --run-id) with delta-rs and pyarrow; no Spark
session is started for --output (for --database, one asks the catalog where the tables are).
Exit 3 with one line on stderr when the output has no tables or no such run.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

import click

from offsets_lib.cli.app import EXIT_INPUT, EXIT_USAGE, fail, tables_options, tables_root

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


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, datetime):
        return _iso(obj)
    return obj


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return (_iso(value) or "-").replace(".000000", "")
    return str(value)


def render_table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = [header, *rows]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def format_fetch(results) -> str:
    """kafka-consumer-groups --describe style table; ERROR column only when some row has one."""
    rows: list[list[str]] = []
    errors: list[str] = []
    for g in results:
        group = "<null>" if g.group_id is None else (g.group_id or '""')
        if g.error is not None or not g.partitions:
            rows.append([group, "-", "-", "-", "-", "-", "-", "-"])
            errors.append(g.error or "")
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
    header = list(FETCH_COLUMNS)
    if any(errors):
        header.append("ERROR")
        rows = [[*r, e or "-"] for r, e in zip(rows, errors, strict=True)]
    return render_table(rows, header)


def _notes(results) -> list[str]:
    notes = []
    for g in results:
        if g.note:
            notes.append(f"note: group {g.group_id!r}: {g.note}")
        for p in g.partitions:
            if p.note:
                notes.append(f"note: {g.group_id} {p.topic}-{p.partition}: {p.note}")
    return notes


@click.command("fetch", epilog="Each rule id (FETCH-...) is explained in docs/rules.md.")
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
    from offsets_lib.tools.fetch import FetchRequest, NoRunError, fetch_offsets, parse_topic_id

    if bool(groups or group_ids) == all_groups:
        fail(
            EXIT_USAGE,
            "fetch needs --group G[:TOPIC[:P,P..]] or --group-id ID ... or --all-groups (not both)",
        )
    if topic_ids and all_groups:
        fail(EXIT_USAGE, "--topic-id names topics of --group requests (not --all-groups)")
    ids: dict[str, str] = {}
    for pair in topic_ids:
        topic, sep, text = pair.partition("=")
        if not sep or not topic:
            fail(EXIT_USAGE, f"--topic-id {pair!r}: expected TOPIC=ID")
        try:
            ids[topic] = parse_topic_id(text)
        except ValueError as exc:
            fail(EXIT_USAGE, f"--topic-id {pair!r}: {exc}")
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
        run = results[0] if results else None
        doc = {
            "run_id": run.run_id if run else run_id,
            "as_of": _iso(run.as_of) if run else None,
            "require_stable": require_stable,
            "groups": [
                {k: v for k, v in _jsonable(asdict(g)).items() if k not in ("run_id", "as_of")}
                for g in results
            ],
        }
        click.echo(json.dumps(doc, indent=2))
        return
    if results:
        click.echo(f"run {results[0].run_id} (as of {_iso(results[0].as_of)})", err=True)
    click.echo(format_fetch(results))
    for line in _notes(results):
        click.echo(line, err=True)


# ---- fence-check -----------------------------------------------------------------------------


def load_fencing_group(run, group_id: str):
    """The FencingGroup of ``group_id`` in ``run`` (None when absent or Dead)."""
    from offsets_lib.tools.fence import FencingGroup, FencingMember, PartitionEpoch
    from offsets_lib.tools.fetch import choose_group_rows, read_run_rows

    rows = read_run_rows(
        run,
        "groups",
        ["group_id", "group_type", "state", "generation", "offsets_partition"],
        [group_id],
    )
    row, _ = choose_group_rows(rows)
    if row is None or row["state"] == "Dead":
        return None

    def parts(values) -> tuple[PartitionEpoch, ...]:
        return tuple(
            PartitionEpoch(v["topic"], v["topic_id"], v["partition"], v["assignment_epoch"])
            for v in values or ()
        )

    members = tuple(
        FencingMember(
            member_id=m["member_id"],
            member_epoch=m["member_epoch"],
            instance_id=m["group_instance_id"],
            # ClassicMemberMetadata (session timeout) marks a classic-protocol member
            uses_classic_protocol=row["group_type"] == "consumer"
            and m["session_timeout_ms"] is not None,
            assigned=None if m["assigned_partitions"] is None else parts(m["assigned_partitions"]),
            pending_revocation=parts(m["partitions_pending_revocation"]),
        )
        for m in read_run_rows(
            run,
            "members",
            [
                "group_id",
                "member_id",
                "group_instance_id",
                "member_epoch",
                "session_timeout_ms",
                "assigned_partitions",
                "partitions_pending_revocation",
                "offsets_partition",
            ],
            [group_id],
        )
        if m["offsets_partition"] == row["offsets_partition"]
    )
    return FencingGroup(
        group_id=group_id,
        group_type=row["group_type"],
        state=row["state"],
        generation=row["generation"],
        members=members,
    )


def topic_ids_for(run, topic: str) -> frozenset[str]:
    """Topic ids the run's offsets table knows for a topic name (OffsetCommit v4+ values)."""
    import pyarrow.compute as pc

    from offsets_lib.tools.fetch import _delta_dataset

    dataset = _delta_dataset(run.output, "offsets")
    if dataset is None:
        return frozenset()
    condition = (
        (pc.field("run_id") == run.run_id)
        & (pc.field("topic") == topic)
        & pc.field("topic_id").is_valid()
    )
    ids = dataset.to_table(columns=["topic_id"], filter=condition).column("topic_id")
    return frozenset(ids.unique().to_pylist())


def _java_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def run_coordinator(run) -> str | None:
    """The --coordinator the run was made with (runs.coordinator); None when not recorded."""
    import pyarrow.compute as pc

    from offsets_lib.tools.fetch import _delta_dataset

    dataset = _delta_dataset(run.output, "runs")
    if dataset is None or "coordinator" not in dataset.schema.names:
        return None
    rows = dataset.to_table(columns=["coordinator"], filter=pc.field("run_id") == run.run_id)
    return next((c for c in rows.column("coordinator").to_pylist() if c), None)


@click.command("fence-check", epilog="Each rule id (FEN-...) is explained in docs/rules.md.")
@tables_options
@click.option("--group", required=True, help="Group id.")
@click.option("--member", required=True, help="Member id ('' for none).")
@click.option(
    "--member-epoch",
    type=int,
    required=True,
    help="Member epoch the client sends (the generation for classic groups; -1 for none).",
)
@click.option("--topic", required=True, help="Topic of the committed partition (name or id).")
@click.option("--partition", type=int, required=True)
@click.option("--transactional", is_flag=True, help="A TxnOffsetCommit (from a producer).")
@click.option("--instance-id", help="group.instance.id of a static member.")
@click.option(
    "--coordinator",
    type=click.Choice(["new", "classic-2.4", "classic-2.1", "pre-2.1"]),
    help="Coordinator that answers the commit (default: the run's --coordinator).",
)
@click.option(
    "--api-version",
    type=int,
    help="Request version: OffsetCommit, or TxnOffsetCommit with --transactional (FEN-G2/G3/G3T,"
    " FEN-M4, FEN-M5). Default: the newest the coordinator speaks (new: OffsetCommit v10,"
    " TxnOffsetCommit v6).",
)
@click.option("--metadata", default="", help="Offset metadata to commit (FEN-G5 size check).")
@click.option("--json", "as_json", is_flag=True)
@click.option("--run-id", help="Run to read (default: the latest successful run).")
def fence_check_command(**kw: Any) -> None:
    """Would this offset commit be fenced? Strict (== epoch) and relaxed (KIP-1251) rules.

    The last line says what the chosen coordinator's own rule answers (new: relaxed, as Kafka
    4.3+; the Scala coordinators: strict), and so does the exit status: 0 accepted, 6 fenced
    (the broker answers an error), 7 the tables cannot tell; 2 bad usage, 3 no tables or no
    such run.
    """
    import sys

    from offsets_lib.audit.coordinator import Coordinator
    from offsets_lib.cli.app import EXIT_FENCED, EXIT_UNDECIDED
    from offsets_lib.tools.fence import (
        CommitRequest,
        decide_relaxed,
        decide_strict,
        is_fenced,
        newest_version,
    )
    from offsets_lib.tools.fetch import NoRunError, load_run

    root = tables_root(kw["output"], kw["database"], kw["warehouse"])
    try:
        run = load_run(root, kw["run_id"])
    except NoRunError as exc:
        fail(EXIT_INPUT, str(exc))
    coordinator = Coordinator(kw["coordinator"] or run_coordinator(run) or Coordinator.NEW)
    newest = newest_version(coordinator, transactional=kw["transactional"])
    version = newest if kw["api_version"] is None else kw["api_version"]
    if not 0 <= version <= newest:
        kind = "TxnOffsetCommit" if kw["transactional"] else "OffsetCommit"
        fail(
            EXIT_USAGE,
            f"--api-version {version}: the {coordinator} coordinator answers {kind} v0-v{newest}",
        )
    group = load_fencing_group(run, kw["group"])
    if group is not None and group.group_type == "consumer":
        ids = topic_ids_for(run, kw["topic"])
        if ids:
            group = type(group)(**{**group.__dict__, "topic_ids": {kw["topic"]: ids}})
    request = CommitRequest(
        group_id=kw["group"],
        member_id=kw["member"],
        member_epoch=kw["member_epoch"],
        topic=kw["topic"],
        partition=kw["partition"],
        transactional=kw["transactional"],
        instance_id=kw["instance_id"],
        api_version=version,
        metadata_length=_java_length(kw["metadata"]),
    )
    decisions = {"strict": decide_strict(group, request), "relaxed": decide_relaxed(group, request)}
    deciding = "strict" if coordinator.is_scala else "relaxed"
    fenced = is_fenced(decisions[deciding])
    if kw["as_json"]:
        doc = {
            "run_id": run.run_id,
            "as_of": _iso(run.as_of),
            "coordinator": str(coordinator),
            "group_type": group.group_type if group else None,
            "group_state": group.state if group else None,
            "request": asdict(request),
            **{
                name: {"outcome": d.outcome, "rule": d.rule, "reason": d.reason}
                for name, d in decisions.items()
            },
            "decided_by": deciding,
            "fenced": fenced,
        }
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(f"run {run.run_id} (as of {_iso(run.as_of)})", err=True)
        for name, d in decisions.items():
            click.echo(f"{name}: {d.outcome} ({d.rule})")
        for name, d in decisions.items():
            click.echo(f"  {name + ':':<8} {d.reason}")
        verdict = {True: "yes", False: "no", None: "cannot tell"}[fenced]
        click.echo(f"fenced: {verdict} ({deciding} rule of the {coordinator} coordinator)")
    if fenced is None:
        sys.exit(EXIT_UNDECIDED)
    if fenced:
        sys.exit(EXIT_FENCED)
