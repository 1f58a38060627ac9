"""Test-only entry point: `offsets` that dies (exit 137, like kill -9) right after one table's
commit, to check what a crash between two table commits leaves behind.

    python -m tests.support.crash_after_commit <table> run --input ... --output ...

The production write path knows nothing of this: the Delta writer's per-table commit
(`sink.commit_files`, which `sink.write_run_tables` calls for each table) is wrapped here.
"""

from __future__ import annotations

import functools
import os
import sys

from offsets_lib.io import sink


def _dying_after(table: str):
    commit = sink.commit_files

    @functools.wraps(commit)
    def commit_then_die(spec, *args, **kwargs):
        version = commit(spec, *args, **kwargs)
        if spec.name == table:
            os._exit(137)
        return version

    return commit_then_die


def main() -> None:
    table, *arguments = sys.argv[1:]
    sink.commit_files = _dying_after(table)
    from offsets_lib.cli import main as cli

    cli(args=arguments, prog_name="offsets")


if __name__ == "__main__":
    main()
