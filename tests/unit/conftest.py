"""Unit-test helpers: where the shared spec folder lives (a sibling of the repository)."""

from __future__ import annotations

from pathlib import Path

import pytest

from offsets_lib.job import session
from tests.spec_data import spec_root

SHARED = spec_root()
"""`../shared` next to the checkout, else the vendored subset in tests/data (same layout)."""


def shared_path(*parts: str) -> Path:
    """Path inside the shared folder, skipping the calling test when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared spec folder not available: {path} does not exist")
    return path


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to build a SparkSession or to launch a JVM fails the test (whether an earlier
    test of the same process already started one does not matter)."""
    import pyspark.context
    import pyspark.java_gateway

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a SparkSession or a JVM was requested")

    monkeypatch.setattr(session, "get_or_create", refuse)
    monkeypatch.setattr(pyspark.java_gateway, "launch_gateway", refuse)
    monkeypatch.setattr(pyspark.context, "launch_gateway", refuse)
