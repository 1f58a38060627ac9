"""The class archive `make setup` built is one this checkout's local sessions can map."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from offsets_lib.job import local_tuning

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# A session whose JVM must map the archive (-Xshare:on) or not start at all.
_CHILD = textwrap.dedent(
    """
    from offsets_lib.job import session
    # after the tuning's options: the last -Xshare wins
    spark = session.get_or_create(
        "class-archive-check", show_progress=False, extra_conf={session.JAVA_OPTIONS: "-Xshare:on"}
    )
    assert spark.range(3).count() == 3
    spark.stop()
    """
)


def test_a_local_session_maps_the_class_archive() -> None:
    """With -Xshare:auto a JVM that cannot map the archive starts anyway, ~2.5 s slower and
    silently: as when another checkout's venv built it (its class path entries are elsewhere)."""
    archive = local_tuning.class_archive()
    assert archive is not None and archive.exists(), "make setup builds the class archive"
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
