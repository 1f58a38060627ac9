"""Where the tests find the shared specification data.

The source of truth is the `shared` folder next to the checkout (`../shared`, or the folder
named by OFFSETS_SHARED_DIR; OFFSETS_SHARED_DIR=none forces the copies). A clean clone
elsewhere has no such folder, so the data the tests need is also kept in tests/data, in the
same layout: the golden scenarios without their prose descriptions, and Kafka's message
definitions without comments and "about" texts. When the shared folder exists,
tests/test_spec_data.py checks that the copies still equal it.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENDORED = REPO / "tests" / "data"


def shared_root() -> Path | None:
    """The live shared folder, if this checkout has one."""
    named = os.environ.get("OFFSETS_SHARED_DIR")
    if named == "none":
        return None
    for candidate in (named, REPO.parent / "shared", "/work/shared"):
        if candidate and (Path(candidate) / "spec" / "scenarios").is_dir():
            return Path(candidate).resolve()
    return None


def spec_root() -> Path:
    """The shared folder, or its vendored subset (spec/scenarios, reference/kafka-messages)."""
    return shared_root() or VENDORED


def scenario_dir() -> Path:
    return spec_root() / "spec" / "scenarios"


def kafka_messages_dir() -> Path:
    return spec_root() / "reference" / "kafka-messages"
