"""Which retrieved candidates of a TAGS-DC step enter the ITM forward.

The scored pools (:func:`tags.training.retrieval.score_pools`) feed FNE's statistics first
(the official order: observe, then sample), then each anchor keeps ``k`` pool columns per
direction: the ``k`` best-scored (UNITER's 399 -> 31) or, when the ITM miner is FNE, ``k``
drawn by FNE's weights (:func:`tags.mining.fne_pool.draw_from_pool`). Each anchor's draw uses
a generator seeded by the step and its dataset index, so it is the same on any number of
processes and after a resume.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from tags.mining.fne import FNEMiner
from tags.mining.fne_pool import PoolDraw, draw_from_pool, observe_pool, top_m

__all__ = ["PoolSelection", "select_from_pools"]

#: ``StepContext.generator`` keys of the two directions' draws.
DRAW_KEYS = {"i2t": 11, "t2i": 12}


@dataclass
class PoolSelection:
    """Pool columns kept per anchor (``[B, <=k]``, ``-1`` = none) and FNE's draws (if any)."""

    i2t: torch.Tensor
    t2i: torch.Tensor
    draws: dict[str, PoolDraw] | None = None


def select_from_pools(
    pools: Any,
    k: int,
    fne_miners: Sequence[FNEMiner],
    draw: bool,
    ctx: Any,
    index: Sequence[int],
) -> PoolSelection:
    """Update every FNE miner's statistics from ``pools`` (needs ``pools.positive``), then
    keep the top ``k`` per anchor and direction, or FNE's draw of ``k`` when ``draw`` (by
    ``fne_miners[0]``)."""
    directions = {
        "i2t": (pools.caption_scores, pools.caption_mask),
        "t2i": (pools.image_scores, pools.image_mask),
    }
    for miner in fne_miners:
        observe_pool(miner, pools.positive, *directions["i2t"], *directions["t2i"])
    if not draw:
        return PoolSelection(*(top_m(s, m, k) for s, m in directions.values()))
    draws = {
        name: draw_from_pool(
            fne_miners[0],
            scores,
            pools.positive,
            mask,
            k,
            [ctx.generator(DRAW_KEYS[name], i) for i in index],
        )
        for name, (scores, mask) in directions.items()
    }
    return PoolSelection(draws["i2t"].index, draws["t2i"].index, draws)
