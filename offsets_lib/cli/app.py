"""The `offsets` group, its exit statuses and `fail`; `offsets_lib.cli` adds the commands."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import NoReturn, TypeVar

import click
from click.core import ParameterSource

# Exit statuses of every command (contract.md): 1 is left to unexpected errors.
EXIT_USAGE, EXIT_INPUT, EXIT_REJECTS, EXIT_LOCKED = 2, 3, 4, 5
# fence-check's answer: the commit would be fenced (the broker answers an error), or the tables
# cannot tell; both are answers a script branches on, not failures of the command
EXIT_FENCED, EXIT_UNDECIDED = 6, 7
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT), as shells report it: 128 + 2


def fail(code: int, message: str) -> NoReturn:
    """One clear line on stderr, then the command's exit status."""
    click.echo(f"offsets: {message}", err=True)
    sys.exit(code)


def iso_utc(value: datetime | None) -> str | None:
    """A timestamp as the commands print it: ISO 8601 in UTC with a ``Z`` (naive = UTC). Returns
    ``2023-11-14T22:13:20Z`` style text, or None for None."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


F = TypeVar("F", bound=Callable[..., object])


def tables_options(command: F) -> F:
    """--output PATH or --database NAME [--warehouse DIR]: where a reading command finds the
    tables of `offsets run` (same names as run's options).
    """
    options = [
        click.option("--output", help="Root folder (or URI) of the Delta tables."),
        click.option(
            "--database",
            help="Catalog database of `offsets run --database` (instead of --output).",
        ),
        click.option(
            "--warehouse",
            help="Local sessions: the folder of the catalog given to `offsets run --warehouse`.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def tables_root(output: str | None, database: str | None, warehouse: str | None) -> str:
    """The folder the reading commands read.

    The catalog of a session this process runs is asked; else a local catalog (--warehouse) is read
    without Spark, and another catalog starts a Spark session, stopped once it answered. The tables
    are read without it. Returns --output, or the folder of the database's tables from the catalog;
    exits 2 (bad usage) or 3 (no tables in the database, a catalog or an object store that cannot be
    reached)."""
    from offsets_lib.io import storage
    from offsets_lib.io.catalog import (
        CatalogUnreachable,
        NoTablesInDatabase,
        SessionNeeded,
        resolve_tables_root,
    )
    from offsets_lib.io.metastore import check_metastore_ports
    from offsets_lib.job import session

    output, database = _command_line_wins(output, database)
    spark = started = None
    try:
        if database is not None and output is None:
            spark = session.running_session()  # its catalog is asked (a notebook's, a test's)
        try:
            root = resolve_tables_root(output, database, spark=spark, warehouse=warehouse)
        except SessionNeeded:
            # another catalog than a local one: a session of this command's own, stopped once
            # it answered
            check_metastore_ports(session.metastore_uris_to_start(warehouse))
            spark = started = session.get_or_create(
                warehouse=warehouse, quick_start=True
            )  # only asks: C1
            root = resolve_tables_root(output, database, spark=spark, warehouse=warehouse)
        storage.check_reachable(root)
        return root
    except (NoTablesInDatabase, CatalogUnreachable, storage.StoreUnreachable) as exc:
        fail(EXIT_INPUT, str(exc))
    except ValueError as exc:
        fail(EXIT_USAGE, str(exc))
    finally:
        if started is not None:
            started.stop()


def _command_line_wins(output: str | None, database: str | None) -> tuple[str | None, str | None]:
    """A profile's (``--conf``) output gives way to ``--database`` on the command line, and a
    profile's database to ``--output``: both given stays a usage error only when both come
    from the same place."""
    ctx = click.get_current_context(silent=True)
    if ctx is None or output is None or database is None:
        return output, database
    from_profile = {
        name
        for name in ("output", "database")
        if ctx.get_parameter_source(name) is ParameterSource.DEFAULT_MAP
    }
    if from_profile == {"output"}:
        return None, database
    if from_profile == {"database"}:
        return output, None
    return output, database


DISTRIBUTION = "kafka-offsets-audit"  # pyproject's project name: `offsets --version`


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    package_name=DISTRIBUTION, prog_name="offsets", message="%(prog)s %(version)s"
)
def main() -> None:
    """Audit __consumer_offsets: decode, compact, rebuild groups, predict the broker.

    The tables, their retention (`offsets prune`) and the latest succeeded run: TABLES.md. What
    each rule id of the tables and answers means (EXP-..., ODEL-..., DEL-..., FETCH-...,
    FEN-...): docs/rules.md.
    """


def run_as_job(command: str, argv: list[str], prog_name: str) -> int:
    """A spark-submit entry point (jobs/*.py): ``offsets COMMAND ARGV`` with its exit status
    returned, not raised, so the script ends with ``sys.exit`` of it."""
    try:
        main.main(args=[command, *argv], prog_name=prog_name, standalone_mode=True)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    return 0
