"""Progress for long commands (``parse``, ``generate``, ``evaluate``, ``report``): a tqdm bar
on a terminal (or anywhere with ``--progress``), periodic one-line reports otherwise (logs,
``nohup``, batch jobs), nothing with ``--quiet`` / ``--no-progress``.

Library code deep in a command (e.g. retrieval scoring) asks for a bar with :func:`stage`;
it draws only inside a :func:`bars` block, which the command opens with its settings, so
library calls stay silent by default.

tqdm hides itself when stderr is not a terminal, so a redirected run printed nothing until
the end; :class:`LineProgress` prints ``desc: N/total unit (p%), r/s, eta Ts`` at most every
``every`` seconds, and a last line when closed.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any, TextIO

from tqdm import tqdm

#: Seconds between two progress lines when stderr is not a terminal.
DEFAULT_EVERY = 30.0


class LineProgress:
    """A tqdm-like counter that prints a line at most every ``every`` seconds."""

    def __init__(
        self,
        total: int | None = None,
        desc: str = "progress",
        unit: str = " items",
        every: float = DEFAULT_EVERY,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = total
        self.desc = desc
        self.unit = unit
        self.every = float(every)
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.n = 0
        self.start = self._last = clock()
        self._closed = False

    def _line(self, now: float) -> str:
        elapsed = max(now - self.start, 1e-9)
        rate = self.n / elapsed
        text = f"{self.desc}: {self.n}"
        if self.total:
            text += f"/{self.total}{self.unit} ({100.0 * self.n / self.total:.0f}%)"
        else:
            text += self.unit
        text += f", {rate:.1f}/s, {elapsed:.0f}s"
        if self.total and rate > 0 and self.n < self.total:
            text += f", eta {(self.total - self.n) / rate:.0f}s"
        return text

    def update(self, count: int = 1) -> None:
        self.n += count
        now = self.clock()
        if now - self._last >= self.every:
            self._last = now
            print(self._line(now), file=self.stream, flush=True)

    def set_postfix(self, **_: Any) -> None:
        """Accepted for tqdm compatibility (not printed)."""

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            print(self._line(self.clock()) + " (done)", file=self.stream, flush=True)

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress(
    total: int | None = None,
    desc: str = "progress",
    unit: str = " items",
    disable: bool = False,
    every: float = DEFAULT_EVERY,
    stream: TextIO | None = None,
    force: bool = False,
) -> Any:
    """A tqdm bar on a terminal (or anywhere with ``force``: ``--progress``),
    :class:`LineProgress` elsewhere, a disabled bar when ``disable``. Both have
    ``update(n)``, ``n``, ``close()`` and are context managers."""
    stream = stream if stream is not None else sys.stderr
    if disable:
        return tqdm(total=total, disable=True)
    isatty = getattr(stream, "isatty", None)
    if force or (isatty is not None and isatty()):
        return tqdm(total=total, desc=desc, unit=unit, file=stream)
    return LineProgress(total, desc, unit, every, stream)


def track(iterable: Iterable[Any], bar: Any) -> Iterator[Any]:
    """Iterate ``iterable`` counting one per item on ``bar`` (either kind)."""
    for item in iterable:
        yield item
        bar.update(1)


#: The settings of the innermost :func:`bars` block (None: outside any; stages are silent).
_SETTINGS: ContextVar[dict[str, Any] | None] = ContextVar("tags_progress", default=None)


@contextlib.contextmanager
def bars(
    setting: bool | None = None,
    *,
    enabled: bool = True,
    every: float = DEFAULT_EVERY,
    stream: TextIO | None = None,
) -> Iterator[None]:
    """Within the block, :func:`stage` draws bars: ``setting`` True (``--progress``: always
    a tqdm bar), None (a bar on a terminal, lines elsewhere) or False (``--quiet``: none);
    ``enabled`` False silences them too (e.g. on all but the main process)."""
    off = setting is False or not enabled
    token = _SETTINGS.set(
        {"disable": off, "force": setting is True, "every": every, "stream": stream}
    )
    try:
        yield
    finally:
        _SETTINGS.reset(token)


def stage(total: int | None, desc: str, unit: str = " items") -> Any:
    """A bar for one stage of work under the settings of the enclosing :func:`bars` block;
    a disabled bar outside one."""
    settings = _SETTINGS.get()
    if settings is None:
        return tqdm(total=total, disable=True)
    return progress(total, desc, unit, **settings)


__all__ = ["DEFAULT_EVERY", "LineProgress", "bars", "progress", "stage", "track"]
