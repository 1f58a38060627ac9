"""The `offsets` command line: every subcommand registered here, in one place.

Each command module (a thin shell over `offsets_lib` functions) defines a click command and
imports only `app`; this module adds them to the group, so nothing imports in a circle.
"""

from __future__ import annotations

from offsets_lib.cli import (
    fence_check_command,
    fetch_command,
    generate_command,
    inspect_command,
    lag_command,
    prune_command,
    report_command,
    run_command,
)
from offsets_lib.cli.app import main

for _command in (
    run_command.run_command,
    inspect_command.inspect_command,
    fetch_command.fetch_command,
    fence_check_command.fence_check_command,
    lag_command.lag_command,
    generate_command.generate_command,
    prune_command.prune_command,
    report_command.report_command,
):
    main.add_command(_command)

__all__ = ["main"]
