"""Test-only entry point: `offsets` that dies (exit 137, like kill -9) right after one table's
commit, to check what a crash between two table commits leaves behind.

    python -m tests.support.crash_after_commit <table> run --input ... --output ...

The production write path knows nothing of this: the Delta writer's per-commit callback
(`sink.write_run_tables(on_commit=...)`) is injected here.
"""

from __future__ import annotations

import functools
import os
import sys

from offsets_lib.io import sink


def _dying_after(table: str):
    write = sink.write_run_tables

    @functools.wraps(write)
    def write_then_die(*args, **kwargs):
        def on_commit(committed: str) -> None:
            if committed == table:
                os._exit(137)

        return write(*args, **kwargs, on_commit=on_commit)

    return write_then_die


def main() -> None:
    table, *arguments = sys.argv[1:]
    sink.write_run_tables = _dying_after(table)
    from offsets_lib.cli import main as cli

    cli(args=arguments, prog_name="offsets")


if __name__ == "__main__":
    main()
