"""The `--py-files` archive of the job: every file of `offsets_lib` (what `make package` builds).

python -m offsets_lib.job.package dist/offsets_lib.zip
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # offsets_lib/


def build_pyfiles(destination: Path) -> Path:
    """Zip offsets_lib (no __pycache__) with paths relative to the package's parent, so
    executors import it from the archive on their sys.path.

    Args:
        destination: the zip file to write.

    Returns:
        The path written.
    """
    destination.parent.mkdir(parents=True, exist_ok=True)
    files = sorted(
        p for p in PACKAGE_DIR.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )
    with zipfile.ZipFile(destination, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            archive.write(path, path.relative_to(PACKAGE_DIR.parent))
    return destination


if __name__ == "__main__":
    print(build_pyfiles(Path(sys.argv[1] if len(sys.argv) > 1 else "dist/offsets_lib.zip")))
