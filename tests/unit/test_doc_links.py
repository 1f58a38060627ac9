"""The docs cite only what the repository holds: every relative link and every file name in
README.md, TABLES.md, docs/ and the notebook names a file (or folder) of the checkout."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [
    REPO / "README.md",
    REPO / "TABLES.md",
    *sorted((REPO / "docs").glob("*.md")),
    REPO / "notebooks" / "lag_audit.py",
]
# Markdown links and images: [text](target) / ![alt](target), not web addresses or anchors only
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
# A file name: a path-like word ending in one of the repository's own kinds of files
_KINDS = "md|py|toml|ipynb|txt|cfg|properties|png|csv|json|yaml|yml"
_NAME = re.compile(rf"(?<![\w./*<>-])((?:\.{{0,2}}/)?[\w][\w./-]*\.(?:{_KINDS}))(?![\w/*-])")
# What a run, a report or a build writes (not in a checkout), and Kafka's own source files that
# docs/semantics.md cites by their path in Kafka's repository
_NOT_OURS = re.compile(
    r"^(sample|dist|build|bench/data|bench/results\.json|dump|tables)(/|$)"
    r"|^(core|group-coordinator|clients|server-common|metadata)/"
    r"|end_offsets\.csv$|^out\.ipynb$|^report\.(json|html)$"
)


def _tracked() -> set[str]:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    folders = {str(Path(f).parent) for f in listed}
    return set(listed) | {p for f in folders for p in [f, *map(str, Path(f).parents)]}


TRACKED = _tracked()
BASENAMES = {Path(f).name for f in TRACKED}


def _exists(doc: Path, target: str) -> bool:
    target = target.split("#", 1)[0].rstrip("/")
    if not target:
        return True  # an anchor in the same page
    here = (doc.parent / target).resolve()
    # relative to the page, to the repository, or to the package (`audit/rules.py`)
    for candidate in (here, (REPO / target).resolve(), (REPO / "offsets_lib" / target).resolve()):
        try:
            relative = str(candidate.relative_to(REPO))
        except ValueError:
            continue
        if relative in TRACKED or candidate.exists():
            return True
    return "/" not in target and target in BASENAMES  # a bare name of a file of the repo


def _cited(doc: Path) -> list[str]:
    text = doc.read_text()
    links = [t for t in _LINK.findall(text) if not re.match(r"^[a-z]+:", t)]
    names = [
        n
        for n in _NAME.findall(text)
        if not n.startswith("/") and not _NOT_OURS.search(n.lstrip("./"))
    ]  # an absolute path is on a deployment's machine (/etc/pki/..., /srv/<release>/...)
    return links + names


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_and_file_name_is_in_the_repository(doc: Path) -> None:
    missing = sorted({t for t in _cited(doc) if not _exists(doc, t)})
    assert missing == [], f"{doc.relative_to(REPO)} cites what the repository does not hold"


def test_the_checker_sees_a_missing_file(tmp_path: Path) -> None:
    page = REPO / "docs" / "nothing-here.md"
    assert not _exists(page, "../shared/spec/semantics.md")
    assert not _exists(page, "contract-v2.md")
    assert _exists(page, "semantics.md") and _exists(page, "../TABLES.md#the-tables")
