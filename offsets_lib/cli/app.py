"""The `offsets` group, its exit statuses and `fail`; `offsets_lib.cli` adds the commands."""

from __future__ import annotations

import sys
from typing import NoReturn

import click

# Exit statuses of every command (contract.md): 1 is left to unexpected errors.
EXIT_USAGE, EXIT_INPUT, EXIT_REJECTS, EXIT_LOCKED = 2, 3, 4, 5


def fail(code: int, message: str) -> NoReturn:
    """One clear line on stderr, then the command's exit status."""
    click.echo(f"offsets: {message}", err=True)
    sys.exit(code)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Audit __consumer_offsets: decode, compact, rebuild groups, predict the broker."""
