"""Loop position saved with every checkpoint (``register_for_checkpointing``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass
class TrainState:
    """``step``: optimizer steps done; ``epoch`` / ``batch_in_epoch``: data position (micro
    batches consumed in the current epoch); ``phase``: the phase whose start has run;
    ``skipped``: steps skipped for a non-finite loss (``max_nonfinite_steps``); ``best`` /
    ``best_step``: the best value of ``eval.metric`` so far and its step; ``stale``:
    evaluations since it (early stopping, ``eval.patience``)."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    phase: int = -1
    skipped: int = 0  # optimizer steps skipped for a non-finite loss
    best: float = float("-inf")
    best_step: int = 0
    stale: int = 0

    def state_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        kinds = {f.name: type(f.default) for f in dataclasses.fields(self)}
        for key, value in state.items():  # checkpoints older than a field lack it
            setattr(self, key, kinds.get(key, int)(value))


__all__ = ["TrainState"]
