"""The vendored copies in tests/data equal the shared specification (when it is present)."""

from __future__ import annotations

import json
import re

import pytest

from tests.spec_data import VENDORED, shared_root


def _strip(obj: object) -> object:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k != "about"}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def test_vendored_scenarios_equal_the_shared_ones() -> None:
    root = shared_root()
    if root is None:
        pytest.skip("no shared folder next to this checkout; the vendored copies are used")
    shared = sorted((root / "spec" / "scenarios").glob("*.json"))
    assert [p.name for p in shared] == sorted(
        p.name for p in (VENDORED / "spec" / "scenarios").glob("*.json")
    )
    for path in shared:
        expected = json.loads(path.read_text())
        expected.pop("description", None)
        assert json.loads((VENDORED / "spec" / "scenarios" / path.name).read_text()) == expected


def test_vendored_message_definitions_equal_the_shared_ones() -> None:
    root = shared_root()
    if root is None:
        pytest.skip("no shared folder next to this checkout; the vendored copies are used")
    base = root / "reference" / "kafka-messages"
    shared = sorted(p.relative_to(base) for p in base.rglob("*.json"))
    assert shared == sorted(
        p.relative_to(VENDORED / "reference" / "kafka-messages")
        for p in (VENDORED / "reference" / "kafka-messages").rglob("*.json")
    )
    for rel in shared:
        lines = [
            ln for ln in (base / rel).read_text().splitlines() if not ln.strip().startswith("//")
        ]
        text = re.sub(r"(?m)\s//.*$", "", "\n".join(lines))
        vendored = json.loads((VENDORED / "reference" / "kafka-messages" / rel).read_text())
        assert vendored == _strip(json.loads(text))
