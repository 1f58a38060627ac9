"""What `make package` builds for spark-submit: the `--py-files` zip of `offsets_lib`, and the
executors' Python environment as a packed venv for `--archives` (docs/deploy.md).

python -m offsets_lib.job.package dist/offsets_lib.zip [dist/executor-env.tar.gz]
"""

from __future__ import annotations

import py_compile
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # offsets_lib/
CONSTRAINTS = PACKAGE_DIR.parent / "jobs" / "executor-constraints.txt"
# where the executors find the unpacked environment: --archives <file>#ENVIRONMENT
ENVIRONMENT = "environment"
EXECUTOR_PYTHON = f"./{ENVIRONMENT}/bin/python"
# Left out of the packed venv: the packages' own test suites, which nothing imports at run
# time (pandas', numpy's, pyarrow's: 3,160 of its 10,611 files, 58 of 573 MB). Every
# executor, and a client-mode driver, unpacks the archive at each application's start.
NOT_PACKED = ("lib/python*/site-packages/*/tests/*",)


def build_pyfiles(destination: Path) -> Path:
    """Zip offsets_lib (no __pycache__) with paths relative to the package's parent, so
    executors import it from the archive on their sys.path. Beside each module, its compiled
    `.pyc` (unchecked hash): Python's zip importer cannot write a cache, so without it every
    executor's Python worker compiles each module it imports, at every application's start.
    A worker of another Python version finds the wrong magic number and compiles the `.py`.
    """
    destination.parent.mkdir(parents=True, exist_ok=True)
    files = sorted(
        p for p in PACKAGE_DIR.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )
    unchecked = py_compile.PycInvalidationMode.UNCHECKED_HASH  # no timestamp to compare
    with (
        tempfile.TemporaryDirectory(prefix="offsets-pyc-") as scratch,
        zipfile.ZipFile(destination, "w", zipfile.ZIP_DEFLATED) as archive,
    ):
        for path in files:
            name = path.relative_to(PACKAGE_DIR.parent)
            archive.write(path, name)
            if path.suffix == ".py":
                compiled = Path(scratch) / f"{name}c"
                shown_as = str(name)  # what tracebacks name: the module's path in the zip
                py_compile.compile(
                    str(path), str(compiled), shown_as, True, invalidation_mode=unchecked
                )
                archive.write(compiled, f"{name}c")
    return destination


def build_executor_env(destination: Path, constraints: Path = CONSTRAINTS) -> Path:
    """A venv of the pinned packages (`constraints`), packed with venv-pack into `destination`
    (.tar.gz): Spark's documented way to give executors the job's Python packages, shipped
    with ``--archives <destination>#environment`` and used with
    ``PYSPARK_PYTHON=./environment/bin/python``. PySpark comes from the executors' Spark. The
    venv links this Python's base interpreter, not a copy: every node needs that interpreter
    (same version) at the same path."""
    import venv_pack

    base = getattr(sys, "_base_executable", sys.executable)
    with tempfile.TemporaryDirectory(prefix="offsets-executor-env-") as scratch:
        env = Path(scratch) / ENVIRONMENT
        subprocess.run([base, "-m", "venv", "--without-pip", str(env)], check=True)
        install = ["install", "--quiet", "--no-deps", "-r", str(constraints)]
        python = ["--python", str(env / "bin" / "python")]
        subprocess.run([sys.executable, "-m", "pip", *python, *install], check=True)
        destination.parent.mkdir(parents=True, exist_ok=True)
        venv_pack.pack(
            prefix=str(env),
            output=str(destination),
            format="tar.gz",
            force=True,
            filters=[("exclude", pattern) for pattern in NOT_PACKED],
        )
    return destination


if __name__ == "__main__":
    print(build_pyfiles(Path(sys.argv[1] if len(sys.argv) > 1 else "dist/offsets_lib.zip")))
    if len(sys.argv) > 2:
        print(build_executor_env(Path(sys.argv[2])))
