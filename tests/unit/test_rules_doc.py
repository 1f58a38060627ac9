"""docs/rules.md against the code: one section per rule id the tables and commands can carry,
no section for a rule the code does not have, and the coordinators each EXP and ODEL row is used
by."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from offsets_lib.audit.coordinator import Coordinator
from offsets_lib.audit.rules import EXPIRATION_TABLES, OFFSET_DELETE_TABLES

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "rules.md"
# the files whose string constants are the rule values (the decision tables' row ids)
DECIDERS = (
    "audit/rules.py", "audit/group_deletion.py", "audit/compaction.py", "tools/fetch_rules.py",
    "tools/fence.py",
)  # fmt: skip
RULE_ID = re.compile(r"(?:EXP|ODEL|DEL|FETCH|FEN|TXN)-[A-Z0-9]+(?:-[A-Z0-9]+)*")
# replay notes that start with a LOG or EV row id (e.g. "EV-EMPTY-EPOCH: group epoch ..."), and
# the rule ids load failures are noted under ("LOG-7", "DEC-LIMIT")
NOTE_ID = re.compile(r"((?:LOG|EV|DEC)-[A-Z0-9]+(?:-[A-Z0-9]+)*)(?::|$)")
NOTES = ("audit/replay.py", "audit/partition_claims.py")
# Rows another branch adds to the code (semantics.md 1.2, 5.2, 7, 8.1): documented already;
# once they are in the code this set changes nothing.
DOCUMENTED_AHEAD = {"FEN-G3T", "DEL-STREAMS-PLUGIN", "FETCH-TOPICID"}


def _strings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def code_rule_ids() -> set[str]:
    package = REPO / "offsets_lib"
    ids = {s for f in DECIDERS for s in _strings(package / f) if RULE_ID.fullmatch(s)}
    ids |= {m.group(1) for f in NOTES for s in _strings(package / f) if (m := NOTE_ID.match(s))}
    return ids


def doc_sections() -> dict[str, str]:
    """Rule id -> the text of its `### ID` section."""
    parts = re.split(r"^### (\S+)\n", DOC.read_text(), flags=re.MULTILINE)
    return {parts[i]: parts[i + 1].split("\n## ")[0] for i in range(1, len(parts), 2)}


def test_the_code_finds_the_rules() -> None:
    ids = code_rule_ids()
    assert {"EXP-SUBSCRIBED", "ODEL-OK", "DEL-NEW", "FETCH-OK", "FEN-R5"} <= ids
    assert len(ids) >= 50


def test_every_rule_of_the_code_has_a_section() -> None:
    assert sorted(code_rule_ids() - doc_sections().keys()) == []


def test_every_section_is_a_rule_of_the_code() -> None:
    assert sorted(doc_sections().keys() - code_rule_ids() - DOCUMENTED_AHEAD) == []


def test_every_section_says_condition_decision_and_kafka_code() -> None:
    for rule_id, text in doc_sections().items():
        for label in ("**Condition:**", "**Decision:**", "**Kafka:**"):
            assert label in text, (rule_id, label)
        kafka = text.split("**Kafka:**")[1]
        assert re.search(r"`[A-Za-z]+\.[A-Za-z]+", kafka) or "API key" in kafka, rule_id


def _documented_coordinators(text: str) -> set[str]:
    line = re.search(r"\*\*Coordinators:\*\* ([^\n(]+)", text)
    assert line is not None
    return {c.strip() for c in line.group(1).split(",")}


def test_exp_and_odel_coordinators_are_those_of_the_decision_tables() -> None:
    sections = doc_sections()
    used: dict[str, set[str]] = {}
    for tables in (EXPIRATION_TABLES, OFFSET_DELETE_TABLES):
        for coordinator, rows in tables.items():
            for row in rows:
                used.setdefault(row.id, set()).add(str(coordinator))
    documented = {rule: _documented_coordinators(sections[rule]) for rule in used}
    assert documented == used
    assert set().union(*documented.values()) == {str(c) for c in Coordinator}


def test_the_help_and_tables_md_point_to_it() -> None:
    from click.testing import CliRunner

    from offsets_lib.cli import main

    for command in ([], ["fetch"], ["fence-check"]):
        result = CliRunner().invoke(main, [*command, "--help"])
        assert result.exit_code == 0 and "docs/rules.md" in result.output, command
    assert "(docs/rules.md)" in (REPO / "TABLES.md").read_text()
