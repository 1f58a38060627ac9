"""Registration of the `offsets` subcommands; each lives next to the code it drives."""

from __future__ import annotations

from offsets_lib import (
    cli_fetch,  # noqa: F401
    cli_generate,  # noqa: F401
    cli_inspect,  # noqa: F401
    cli_lag,  # noqa: F401
    cli_run,  # noqa: F401
)
