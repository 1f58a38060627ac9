"""One writer per output root: a run holds `<output>/_offsets_audit.lock` while it writes.

Two runs on the same output at once would interleave their Delta commits; the second run fails
at once with a message naming the holder instead. The lock file is created atomically
(O_CREAT|O_EXCL); a lock left by a process that no longer exists on this host is taken over,
so a killed run never blocks the next one.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_NAME = "_offsets_audit.lock"


class OutputLocked(RuntimeError):
    """Another run is writing to the same output."""


def _holder_is_alive(info: dict) -> bool:
    if info.get("host") != socket.gethostname():
        return True  # cannot check a process on another host: assume it is running
    try:
        os.kill(int(info.get("pid", -1)), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True


@contextmanager
def output_lock(output: str, run_id: str) -> Iterator[None]:
    """Hold the output's lock for the duration of a run (local paths; other URIs are not locked)."""
    if "://" in output and not output.startswith("file://"):
        yield  # object stores: rely on Delta's own commit conflicts
        return
    root = Path(output.removeprefix("file://"))
    root.mkdir(parents=True, exist_ok=True)
    path = root / LOCK_NAME
    info = {
        "run_id": run_id,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "since": time.time(),
    }
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                holder = json.loads(path.read_text() or "{}")
            except (OSError, ValueError):
                holder = {}
            if holder and not _holder_is_alive(holder):
                path.unlink(missing_ok=True)  # stale lock of a killed run
                continue
            raise OutputLocked(
                f"output {output} is being written by run {holder.get('run_id', '?')}"
                f" (pid {holder.get('pid', '?')} on {holder.get('host', '?')}); try again later"
            ) from None
        with os.fdopen(fd, "w") as handle:
            json.dump(info, handle)
        break
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
