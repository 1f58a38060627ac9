"""`offsets fence-check`: would this offset commit be fenced? (`tools.fence_check`).

Reads one run (the latest succeeded one, or --run-id) with delta-rs and pyarrow; no Spark
session is started for --output. Exit statuses: 0 accepted, 6 fenced, 7 the tables cannot tell,
2 bad usage, 3 no tables or no such run.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import click

from offsets_lib.cli.app import (
    EXIT_FENCED,
    EXIT_INPUT,
    EXIT_UNDECIDED,
    EXIT_USAGE,
    fail,
    iso_utc,
    tables_options,
    tables_root,
)
from offsets_lib.job.config import tables_conf_option

if TYPE_CHECKING:
    from offsets_lib.tools.fence_check import FenceCheck


@click.command("fence-check", epilog="Each rule id (FEN-...) is explained in docs/rules.md.")
@tables_conf_option()
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
    type=click.Choice(["new", "classic-2.4", "classic-2.4.0-2.6.0", "classic-2.1", "pre-2.1"]),
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
    from offsets_lib.tools.fence_check import check_commit
    from offsets_lib.tools.run_tables import NoRunError, load_run

    root = tables_root(kw["output"], kw["database"], kw["warehouse"])
    try:
        run = load_run(root, kw["run_id"])
    except NoRunError as exc:
        fail(EXIT_INPUT, str(exc))
    try:
        check = check_commit(
            run,
            group_id=kw["group"],
            member_id=kw["member"],
            member_epoch=kw["member_epoch"],
            topic=kw["topic"],
            partition=kw["partition"],
            transactional=kw["transactional"],
            instance_id=kw["instance_id"],
            coordinator=kw["coordinator"],
            api_version=kw["api_version"],
            metadata=kw["metadata"],
        )
    except ValueError as exc:
        fail(EXIT_USAGE, str(exc))
    if kw["as_json"]:
        click.echo(json.dumps(check_json(check), indent=2))
    else:
        _print_check(check)
    if check.fenced is None:
        sys.exit(EXIT_UNDECIDED)
    if check.fenced:
        sys.exit(EXIT_FENCED)


def check_json(check: FenceCheck) -> dict[str, Any]:
    """The --json document of `offsets fence-check`. Returns the run, the coordinator, the group as
    the tables show it, the request, both rules' decisions, the rule that decides and the verdict
    (null: the tables cannot tell)."""
    run, group = check.run, check.group
    return {
        "run_id": run.run_id,
        "as_of": iso_utc(run.as_of),
        "coordinator": str(check.coordinator),
        "group_type": group.group_type if group else None,
        "group_state": group.state if group else None,
        "request": asdict(check.request),
        **{
            name: {"outcome": d.outcome, "rule": d.rule, "reason": d.reason}
            for name, d in check.decisions.items()
        },
        "decided_by": check.deciding,
        "fenced": check.fenced,
    }


def _print_check(check: FenceCheck) -> None:
    run = check.run
    click.echo(f"run {run.run_id} (as of {iso_utc(run.as_of)})", err=True)
    for name, d in check.decisions.items():
        click.echo(f"{name}: {d.outcome} ({d.rule})")
    for name, d in check.decisions.items():
        click.echo(f"  {name + ':':<8} {d.reason}")
    verdict = {True: "yes", False: "no", None: "cannot tell"}[check.fenced]
    click.echo(f"fenced: {verdict} ({check.deciding} rule of the {check.coordinator} coordinator)")
