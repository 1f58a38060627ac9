"""The codec must load without Spark, Arrow or numpy (executors and notebooks import it alone)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("pyspark", "pyarrow", "numpy", "pandas")


def test_importing_wire_pulls_in_no_heavy_dependency() -> None:
    code = (
        "import sys, offsets_lib.wire, offsets_lib.wire.layouts, offsets_lib.wire.codec;"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "", f"offsets_lib.wire imported: {out.stdout.strip()}"
