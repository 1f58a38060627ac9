"""One writer per output root: a run holds `<output>/_offsets_audit.lock` while it writes.

Two runs on the same output at once would interleave their Delta commits; the second run fails
at once with a message naming the holder instead.

The lock is an exclusive `flock` on the lock file, not the file's existence: the kernel drops it
when the holding process ends in any way (exception, kill -9, OOM kill), so a lock left behind
by a killed run is simply taken over by the next run. There is no "is that pid still alive?"
guess, so a recycled pid (common in containers, where a restarted job often gets the same pid)
can never make a dead run's lock look held, and two runs that find the same stale file cannot
both take it over. The file holds the holder's run id, pid and host, for the message only.

The file is removed on release (while still locked); a run that locked a file which was removed
or replaced meanwhile retries on the new one, so removal cannot let two runs in.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_NAME = "_offsets_audit.lock"
_ATTEMPTS = 20  # re-opens after losing a race with a release that removed the file


class OutputLocked(RuntimeError):
    """Another run is writing to the same output."""


def _read_holder(path: Path) -> dict:
    """The holder's info; it may still be writing it, so wait briefly for a complete JSON."""
    for _ in range(20):
        try:
            info = json.loads(path.read_text() or "null")
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            info = None
        if isinstance(info, dict):
            return info
        time.sleep(0.01)
    return {}


def _same_file(fd: int, path: Path) -> bool:
    try:
        current = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (current.st_dev, current.st_ino) == (mine.st_dev, mine.st_ino)


def _acquire(path: Path, output: str, info: dict) -> int:
    """Open and exclusively lock the lock file; returns the locked fd or raises OutputLocked."""
    for _ in range(_ATTEMPTS):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            holder = _read_holder(path)
            raise OutputLocked(
                f"output {output} is being written by run {holder.get('run_id', '?')}"
                f" (pid {holder.get('pid', '?')} on {holder.get('host', '?')},"
                f" lock {path}); try again later"
            ) from None
        if not _same_file(fd, path):  # released and removed between our open and our flock
            os.close(fd)
            continue
        os.ftruncate(fd, 0)  # a stale holder's info, if the file was left by a killed run
        os.pwrite(fd, json.dumps(info).encode(), 0)
        return fd
    raise OutputLocked(f"output {output}: could not take the lock {path}; try again later")


@contextmanager
def output_lock(output: str, run_id: str) -> Iterator[None]:
    """Hold the output's lock for the duration of a run (local paths; other URIs are not locked).

    Raises OutputLocked at once when another run holds it.
    """
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
    fd = _acquire(path, output, info)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            if _same_file(fd, path):
                path.unlink()  # still locked: a waiting opener re-checks and retries
        os.close(fd)  # releases the flock
