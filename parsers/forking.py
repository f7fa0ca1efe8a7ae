"""Ordered work in forked processes that fails loudly.

The parser and the negative generator both fan batches out to forked workers, which share
the parent's tables copy-on-write. :func:`fork_map` is that fan-out: results come back in
input order, at most ``in_flight`` items per worker wait at a time (flat memory on any
corpus), and a worker that dies (killed, out of memory, a crash in native code) raises
:class:`WorkerDiedError` instead of leaving the parent waiting forever, as
``multiprocessing.Pool`` does.
"""

from __future__ import annotations

import multiprocessing as mp
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class WorkerDiedError(RuntimeError):
    """A forked worker process ended without returning its result."""


def fork_map(
    fn: Callable[[T], R],
    items: Iterable[T],
    processes: int,
    *,
    initializer: Callable[[], Any] | None = None,
    in_flight: int = 2,
) -> Iterator[R]:
    """Yield ``fn(item)`` for every item, in input order, computed in ``processes`` forked
    workers. ``fn`` and its inputs must be picklable by reference (module-level functions);
    what ``fn`` reads from module globals set before the call is shared with the workers.

    Raises:
        WorkerDiedError: a worker ended (signal, ``os._exit``, out of memory) mid-task.
    """
    if processes < 1:
        raise ValueError(f"processes must be >= 1, got {processes}")
    pool = ProcessPoolExecutor(
        processes, mp_context=mp.get_context("fork"), initializer=initializer
    )
    pending: deque[Future[R]] = deque()
    try:
        for item in items:
            pending.append(pool.submit(fn, item))
            while len(pending) > in_flight * processes:
                yield _result(pending.popleft())
        while pending:
            yield _result(pending.popleft())
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _result(future: Future[R]) -> R:
    try:
        return future.result()
    except BrokenProcessPool as exc:
        raise WorkerDiedError(
            "a worker process died before returning its batch (killed, out of memory, or a "
            "crash in native code); rerun with fewer workers or a smaller batch size"
        ) from exc
