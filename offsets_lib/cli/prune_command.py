"""`offsets prune`: keep the last N runs and/or a time span of runs in every table."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING

import click

from offsets_lib.cli.app import (
    EXIT_INPUT,
    EXIT_LOCKED,
    EXIT_USAGE,
    fail,
    tables_options,
    tables_root,
)
from offsets_lib.job.config import tables_conf_option

if TYPE_CHECKING:  # imported when the command runs: `offsets --help` stays quick
    from offsets_lib.io.run_pruning import PruneReport


@click.command("prune")
@tables_conf_option()
@tables_options
@click.option("--keep-runs", type=int, help="Keep the N newest runs (any status).")
@click.option("--keep-for", help="Keep the runs that finished within this span, e.g. 7d, 48h.")
@click.option(
    "--vacuum-after",
    help="Delete removed files once they were removed this long ago (whole hours; default: "
    "each table's delta.deletedFileRetentionDuration, 7d). Readers of an older snapshot fail.",
)
@click.option("--no-vacuum", is_flag=True, help="Only remove the runs; leave files for later.")
@click.option("--dry-run", is_flag=True, help="Say what would be removed; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document for scripts.")
def prune_command(
    output: str | None,
    database: str | None,
    warehouse: str | None,
    keep_runs: int | None,
    keep_for: str | None,
    vacuum_after: str | None,
    no_vacuum: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Remove old runs from every table: all but the --keep-runs newest and/or the runs of the
    last --keep-for; never the latest succeeded run (what readers read).

    Safe while readers read: a removal is a new Delta version and files stay until a vacuum
    after the retention (7 days by default). Holds the output's lock (exit 5 while a run writes).
    Incremental Kafka runs keep their current checkpoint and kept records. See TABLES.md.

    `--conf FILE` takes the tables' location from the profile the run ran with (e.g. the
    hourly DAG's: `offsets prune --conf prod-example.toml --keep-for 7d --keep-runs 48`).
    """
    from offsets_lib.audit.run_selection import Retention
    from offsets_lib.io.lock import OutputLocked
    from offsets_lib.io.run_pruning import prune
    from offsets_lib.io.storage import StoreUnreachable
    from offsets_lib.job.options import UsageError, parse_retention

    try:
        span = None if keep_for is None else _span(parse_retention(keep_for, "--keep-for"))
        after = None
        if vacuum_after is not None:
            after = _span(parse_retention(vacuum_after, "--vacuum-after"))
        if no_vacuum and after is not None:
            raise UsageError("--no-vacuum and --vacuum-after exclude each other")
        retention = Retention(keep_runs=keep_runs, keep_for=span)
    except (UsageError, ValueError) as exc:
        fail(EXIT_USAGE, str(exc))
    root = tables_root(output, database, warehouse)
    try:
        report = prune(root, retention, dry_run=dry_run, vacuum=not no_vacuum, vacuum_after=after)
    except (LookupError, StoreUnreachable) as exc:  # the lease: a store we may not write
        fail(EXIT_INPUT, str(exc))
    except OutputLocked as exc:
        fail(EXIT_LOCKED, str(exc))
    if as_json:
        doc = {"output": root, **report.__dict__}
        click.echo(json.dumps(doc, indent=2, sort_keys=True))
        return
    _print_report(report, dry_run=dry_run)


def _print_report(report: PruneReport, *, dry_run: bool) -> None:
    """The prune's summary lines, for people (`--json` prints the report itself)."""
    verb = "would remove" if dry_run else "removed"
    click.echo(
        f"{verb} {len(report.removed)} runs, kept {len(report.kept)}"
        f" (latest succeeded: {report.latest or 'none'})"
    )
    if report.removed:
        click.echo(f"  {verb}: {', '.join(report.removed)}")
    for name, count in sorted(report.commits.items()):
        click.echo(f"  {name}: {count} partitions")
    for partition in report.protected:
        click.echo(f"  kept for the current checkpoint: {partition}")
    if report.vacuumed:
        files = ", ".join(f"{n} {c}" for n, c in sorted(report.vacuumed.items()))
        click.echo(f"  vacuum deleted files: {files}")


def _span(ms: int) -> timedelta:
    return timedelta(milliseconds=ms)
