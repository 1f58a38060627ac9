"""Unit-test helpers: where the shared spec folder lives (a sibling of the repository)."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED = (Path(__file__).resolve().parents[2] / "../shared").resolve()
"""`../shared` next to the checkout; not shipped with the project, so tests skip without it."""


def shared_path(*parts: str) -> Path:
    """Path inside the shared folder, skipping the calling test when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared spec folder not available: {path} does not exist")
    return path
