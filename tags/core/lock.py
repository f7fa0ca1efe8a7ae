"""An exclusive lock file held for a run: a second writer of the same output is refused.

``OutputLock(path).acquire()`` takes ``fcntl.flock`` on ``path`` (created if needed) without
waiting; the operating system releases it when the process ends, however it ends, so a
killed run never leaves a stale lock. The file records the holder (pid, host, command) for
the refusal message and is removed on :meth:`release`.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import IO

from tags.core.errors import UserError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locking
    fcntl = None  # type: ignore[assignment]


class LockError(UserError, RuntimeError):
    """Another process holds the lock of this output."""


def lock_path(output: str | Path) -> Path:
    """The lock file of an output file: ``<resolved output>.lock``. Keyed by the file the
    path names (symlinks and ``..`` resolved), so two spellings of one output (a symlink, a
    relative path) share one lock."""
    real = Path(output).resolve()
    return real.with_name(real.name + ".lock")


class OutputLock:
    """Exclusive, non-blocking lock file; a context manager."""

    def __init__(self, path: str | Path, what: str = "output") -> None:
        self.path = Path(path)
        self.what = what
        self._handle: IO[str] | None = None

    def acquire(self) -> OutputLock:
        """Take the lock or raise :class:`LockError` naming the holder."""
        if fcntl is None:  # pragma: no cover
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            handle = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 (held for the run)
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.seek(0)
                holder = handle.read().strip() or "another process"
                handle.close()
                raise LockError(
                    f"{self.what} is in use by another run ({holder}; lock file {self.path}): "
                    "wait for it to finish or stop it; two writers would lose or duplicate "
                    "records"
                ) from None
            # the file may have been removed by a releasing holder between open and flock
            try:
                same = os.stat(self.path).st_ino == os.fstat(handle.fileno()).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            handle.close()
        handle.seek(0)
        handle.truncate()
        command = " ".join(sys.argv)[:200]
        handle.write(f"pid {os.getpid()} on {socket.gethostname()}: {command}\n")
        handle.flush()
        self._handle = handle
        return self

    def release(self) -> None:
        """Remove the lock file and drop the lock (idempotent)."""
        if self._handle is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            self._handle.close()  # closing releases the flock
            self._handle = None

    @property
    def held(self) -> bool:
        return self._handle is not None

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


__all__ = ["LockError", "OutputLock", "lock_path"]
