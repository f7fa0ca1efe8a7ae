"""An exclusive lock file held for a run: a second writer of the same output is refused.

``OutputLock(path).acquire()`` takes ``fcntl.flock`` on ``path`` (created if needed) without
waiting; the operating system releases it when the process ends, however it ends, so a
killed run never leaves a held lock. The file records the holder (pid, host, command) for
the refusal message and is removed on :meth:`release`.

The file does not outlive the run: while a lock is held, SIGTERM and SIGHUP (when their
handlers are the default ones) raise :class:`Terminated` in the holder's main thread, so the
run unwinds (``finally`` blocks run, the file is removed) and exits with 128 + the signal's
number; SIGINT raises ``KeyboardInterrupt`` as always. Only ``SIGKILL`` (or a crash of the
machine) leaves the file behind, unlocked: the next run on that output takes it over (the
``flock`` succeeds, the holder line is rewritten) and removes it when it ends.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import IO, Any

from tags.core.errors import UserError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locking
    fcntl = None  # type: ignore[assignment]


class LockError(UserError, RuntimeError):
    """Another process holds the lock of this output."""


class Terminated(SystemExit):
    """SIGTERM or SIGHUP reached a process holding a lock: it unwinds and exits with
    128 + the signal's number (``code``)."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum
        self.name = signal.Signals(signum).name


#: Signals turned into :class:`Terminated` while a lock is held.
_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))
_held: list[OutputLock] = []
_previous: dict[int, Any] = {}
_owner: list[int] = []  # the pid that installed the handlers (a forked child is not it)


def _on_signal(signum: int, frame: Any) -> None:
    if not _owner or os.getpid() != _owner[0]:  # a forked worker: die as it would have
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    raise Terminated(signum)


def _forked_child() -> None:
    """In a forked child (a worker of the run): the default handlers again. Its locks are
    the parent's, and only a default handler ends a process whose main thread is blocked
    (e.g. a pool worker that ``Pool.terminate`` stops while it waits for a task)."""
    for signum, before in _previous.items():
        if signal.getsignal(signum) is _on_signal:
            with contextlib.suppress(ValueError):  # not the main thread
                signal.signal(signum, before)
    _previous.clear()
    _owner.clear()
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked_child)


def _install() -> None:
    """Route SIGTERM/SIGHUP to :class:`Terminated` (main thread; default handlers only)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in _SIGNALS:
        if signal.getsignal(signum) is signal.SIG_DFL:  # another handler is left alone
            _previous[signum] = signal.signal(signum, _on_signal)
    _owner[:] = [os.getpid()]


def _uninstall() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    for signum, before in _previous.items():
        if signal.getsignal(signum) is _on_signal:
            signal.signal(signum, before)
    _previous.clear()
    _owner.clear()


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
        if not _held:
            _install()
        _held.append(self)
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
            if self in _held:
                _held.remove(self)
                if not _held:
                    _uninstall()

    @property
    def held(self) -> bool:
        return self._handle is not None

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


__all__ = ["LockError", "OutputLock", "Terminated", "lock_path"]
