"""The `offsets` command line: every subcommand registered here, in one place.

Each command module (a thin shell over `offsets_lib` functions) defines a click command and
imports only `app`; this module adds them to the group, so nothing imports in a circle.
"""

from __future__ import annotations

from offsets_lib.cli import fetch, generate, inspect_command, lag, prune, run
from offsets_lib.cli.app import main

for _command in (
    run.run_command,
    inspect_command.inspect_command,
    fetch.fetch_command,
    fetch.fence_check_command,
    lag.lag_command,
    generate.generate_command,
    prune.prune_command,
):
    main.add_command(_command)

__all__ = ["main"]
