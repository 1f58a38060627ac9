"""The `--py-files` zip (`make package`): every module beside its compiled `.pyc`, which the
executors' zip importer loads instead of compiling the source (it cannot cache a compile), and
which a traceback still shows with its source line."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from offsets_lib.job.package import PACKAGE_DIR, build_pyfiles

# run in a fresh interpreter with the zip first on sys.path: where the task modules come from,
# and a traceback from a zipped module's own code
PROBE = """
import sys, traceback
sys.path.insert(0, sys.argv[1])
import offsets_lib.engine.exchange, offsets_lib.engine.staging, offsets_lib.io.sink
from offsets_lib.audit.tables import table_spec
print(offsets_lib.engine.exchange.__file__)
try:
    table_spec("no such table")
except KeyError:
    print(traceback.format_exc().splitlines()[-3:-1])
"""


def test_every_module_is_zipped_beside_its_bytecode(tmp_path: Path) -> None:
    names = zipfile.ZipFile(build_pyfiles(tmp_path / "offsets_lib.zip")).namelist()
    sources = sorted(n for n in names if n.endswith(".py"))
    expected = sorted(
        str(p.relative_to(PACKAGE_DIR.parent))
        for p in PACKAGE_DIR.rglob("*.py")
        if "__pycache__" not in p.parts
    )
    assert sources == expected
    assert sorted(n[:-1] for n in names if n.endswith(".pyc")) == sources
    assert not [n for n in names if "__pycache__" in n]


def test_executors_import_the_bytecode_and_tracebacks_show_the_source(tmp_path: Path) -> None:
    archive = build_pyfiles(tmp_path / "offsets_lib.zip")
    shown = subprocess.run(
        [sys.executable, "-c", PROBE, str(archive)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.splitlines()
    assert shown[0] == f"{archive}/offsets_lib/engine/exchange.pyc"
    source = (PACKAGE_DIR / "audit" / "tables.py").read_text().splitlines()
    line = next(i for i, text in enumerate(source, 1) if 'raise KeyError(f"unknown table' in text)
    assert shown[1] == str(
        [
            f'  File "offsets_lib/audit/tables.py", line {line}, in table_spec',
            f"    {source[line - 1].strip()}",
        ]
    )
