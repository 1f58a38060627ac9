"""Unit-test helpers: where the shared spec folder lives (a sibling of the repository)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.spec_data import spec_root

SHARED = spec_root()
"""`../shared` next to the checkout, else the vendored subset in tests/data (same layout)."""


def shared_path(*parts: str) -> Path:
    """Path inside the shared folder, skipping the calling test when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared spec folder not available: {path} does not exist")
    return path
