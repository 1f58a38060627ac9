"""Registration of the `offsets` subcommands; each lives next to the code it drives."""

from __future__ import annotations

from offsets_lib import (
    cli_inspect,  # noqa: F401
    cli_run,  # noqa: F401
)
from offsets_lib import cli_generate  # noqa: F401
