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

On an object store (s3a://...) a local flock locks nothing: the lock is then a lease object
`<output>/_offsets_audit.lock` written with S3's conditional writes. It is created with
`If-None-Match: *` (exactly one of two racing runs creates it), renewed by its holder with
`If-Match: <etag>` every LEASE_S / 3, and removed on release. A lease that was not renewed for
LEASE_S (its holder was killed) is taken over with `If-Match` on the etag that was read, so two
runs that find the same stale lease cannot both take it. A rerun with the holder's own run id
takes the lease over at once: Airflow retries a run only after its previous attempt ended. Each
Delta commit is itself conditional (io/storage.py), so even without the lease no commit is lost.

Within one process the lock is re-entrant for the same run id: the CLI takes it before the JVM
starts (a second writer is told at once, not after its session's start-up, by which time the
first run may have ended and the two would have written one after the other unknowingly), and
the run itself takes it again.
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
from threading import Event, Thread

from offsets_lib.io import storage

LOCK_NAME = "_offsets_audit.lock"
_HELD: dict[str, str] = {}  # output -> run id, for the locks this process holds
_ATTEMPTS = 20  # re-opens after losing a race with a release that removed the file
LEASE_S = 600.0  # an object-store lease not renewed for this long belongs to a dead run


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
    """Hold the output's lock for the duration of a run (local paths: flock; S3: a lease object
    written with conditional writes; other URIs are not locked).

    Raises OutputLocked at once when another run holds it; this process holding it for the same
    run id is not another run.
    """
    key = output.rstrip("/")
    if _HELD.get(key) == run_id:
        yield  # this run holds it already (taken by the CLI before the JVM started)
        return
    with _held_lock(output, run_id):  # another run of this process holding it is refused too
        _HELD[key] = run_id
        try:
            yield
        finally:
            del _HELD[key]


@contextmanager
def _held_lock(output: str, run_id: str) -> Iterator[None]:
    if storage.scheme(storage.arrow_uri(output)) == "s3":
        with _ObjectStoreLease(output, run_id):
            yield
        return
    if not storage.is_local(output):
        yield  # e.g. gs://, hdfs://, dbfs:/: no lock here; Delta's own commit conflicts only
        return
    root = Path(storage.location(output))
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


class _ObjectStoreLease:
    """The output's lease object on S3 (conditional writes; see the module docstring)."""

    def __init__(self, output: str, run_id: str) -> None:
        self.output, self.run_id = output, run_id
        self.store = storage.object_store(output)
        self.where = f"{output.rstrip('/')}/{LOCK_NAME}"
        self.etag: str | None = None
        self.stop = Event()
        self.renewer = Thread(target=self._renew, name="output-lease", daemon=True)

    def _body(self) -> bytes:
        now = time.time()
        info = {"run_id": self.run_id, "pid": os.getpid(), "host": socket.gethostname()}
        return json.dumps(info | {"since": now, "renewed": now}).encode()

    def __enter__(self) -> None:
        import obstore
        from obstore.exceptions import AlreadyExistsError

        try:
            self.etag = obstore.put(self.store, LOCK_NAME, self._body(), mode="create")["e_tag"]
        except AlreadyExistsError:
            self._take_over()
        except Exception as exc:  # e.g. a policy that allows reading but not writing
            cause = storage.store_fault(str(exc))
            raise storage.StoreUnreachable(f"{self.where}: {cause}") from None
        self.renewer.start()

    def _take_over(self) -> None:
        """The lease exists: take it if it is this run's own or a dead run's."""
        import obstore
        from obstore.exceptions import PreconditionError

        holder, etag = self._holder()
        if etag is None:  # released meanwhile: the next attempt of this run may retry
            raise self._locked({}) from None
        if holder.get("run_id") != self.run_id and not self._expired(holder):
            raise self._locked(holder) from None
        try:  # a dead run's lease, or this run's own earlier attempt
            self.etag = obstore.put(self.store, LOCK_NAME, self._body(), mode={"e_tag": etag})[
                "e_tag"
            ]
        except PreconditionError:
            raise self._locked(self._holder()[0]) from None

    def __exit__(self, *_exc: object) -> None:
        import obstore

        self.stop.set()
        self.renewer.join()
        _holder, etag = self._holder()
        if etag is not None and etag == self.etag:  # still ours
            with contextlib.suppress(Exception):
                obstore.delete(self.store, LOCK_NAME)

    def _holder(self) -> tuple[dict, str | None]:
        import obstore
        from obstore.exceptions import NotFoundError

        try:
            got = obstore.get(self.store, LOCK_NAME)
            body = bytes(got.bytes())
            etag = got.meta["e_tag"]
        except NotFoundError:
            return {}, None
        try:
            info = json.loads(body)
        except ValueError:
            info = {}
        return (info if isinstance(info, dict) else {}), etag

    @staticmethod
    def _expired(holder: dict) -> bool:
        renewed = holder.get("renewed")
        return not isinstance(renewed, int | float) or time.time() - renewed > LEASE_S

    def _locked(self, holder: dict) -> OutputLocked:
        return OutputLocked(
            f"output {self.output} is being written by run {holder.get('run_id', '?')}"
            f" (pid {holder.get('pid', '?')} on {holder.get('host', '?')},"
            f" lease {self.where}); try again later"
        )

    def _renew(self) -> None:
        """Keep the lease fresh while the run lasts; a lost lease is logged (the run's Delta
        commits stay conditional, so nothing is overwritten)."""
        import logging

        import obstore

        while not self.stop.wait(LEASE_S / 3):
            try:
                self.etag = obstore.put(
                    self.store, LOCK_NAME, self._body(), mode={"e_tag": self.etag}
                )["e_tag"]
            except Exception as exc:
                logging.getLogger(__name__).error("could not renew %s: %s", self.where, exc)
