"""What a failed command said, without its progress: `offsets run` shows each step and, while
one lasts, a line every few seconds (cli/progress.py), indented, before any failure's line."""

from __future__ import annotations


def said(stderr: str) -> list[str]:
    """The lines of `stderr` that are not blank and not progress (indented by two spaces)."""
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith("  ")]
