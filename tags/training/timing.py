"""Per-stage wall-clock timers for training steps, logged as ``time/<stage>`` metrics."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import torch


class StageTimer:
    """Seconds spent per named stage since the last :meth:`metrics` call.

    ``with timer("retrieval"): ...`` adds the block's wall clock to ``retrieval``;
    :meth:`metrics` returns ``{"time/retrieval": tensor(seconds), ...}`` and resets.
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(stage, time.perf_counter() - start)

    def add(self, stage: str, seconds: float) -> None:
        self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds

    def metrics(self, prefix: str = "time/") -> dict[str, torch.Tensor]:
        out = {f"{prefix}{k}": torch.tensor(v) for k, v in self.seconds.items()}
        self.seconds = {}
        return out


def timed_iter(items: Iterable, timer: StageTimer, stage: str) -> Iterator:
    """Yield ``items``, adding the wait for each one (e.g. a data loader's) to ``stage``."""
    it = iter(items)
    while True:
        start = time.perf_counter()
        try:
            item = next(it)
        except StopIteration:
            return
        timer.add(stage, time.perf_counter() - start)
        yield item


__all__ = ["StageTimer", "timed_iter"]
