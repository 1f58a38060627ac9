"""`offsets inspect`: decoded records of a Parquet dump, one per line (no Spark, no JVM)."""

from __future__ import annotations

import os
import sys

import click

from offsets_lib.cli.app import EXIT_INPUT


def _quiet_broken_pipe() -> None:
    """The reader went away (`| head`): stop without a traceback or a flush error at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file descriptor (tests)
        pass
    sys.exit(0)


@click.command("inspect")
@click.option(
    "--input",
    "inputs",
    multiple=True,
    required=True,
    help="Parquet dump: file, folder or glob (repeatable).",
)
@click.option(
    "--group",
    help="Only records whose key's group id is G (control records and undecodable keys drop out).",
)
@click.option("--limit", type=click.IntRange(min=0), help="Stop after N printed records.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per record.")
def inspect_command(
    inputs: tuple[str, ...], group: str | None, limit: int | None, as_json: bool
) -> None:
    """Print every record of a raw __consumer_offsets dump, decoded, in (partition, offset) order.

    One line per record: position, record type, key fields -> value fields; undecodable
    records say REJECTED with the reason. Runs without Spark. Each file is sorted on its own
    when it is not already in order, then the files are merged while streaming.
    """
    from offsets_lib.io.sources import InputNotReadable
    from offsets_lib.tools.inspect_dump import inspect_dump

    out = sys.stdout

    def echo(line: str) -> None:
        out.write(line + "\n")

    try:
        inspect_dump(list(inputs), echo, group=group, limit=limit, as_json=as_json)
        out.flush()
    except InputNotReadable as exc:
        try:
            out.flush()
        except BrokenPipeError:
            _quiet_broken_pipe()
        click.echo(f"offsets: {exc}", err=True)
        sys.exit(EXIT_INPUT)
    except BrokenPipeError:
        _quiet_broken_pipe()
