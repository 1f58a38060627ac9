"""The `offsets` command line (click). Each command is a thin shell over offsets_lib functions."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Audit __consumer_offsets: decode, compact, rebuild groups, predict the broker."""


# Commands are registered by their modules at the bottom to keep this file a table of contents.
from offsets_lib import cli_commands  # noqa: E402,F401
