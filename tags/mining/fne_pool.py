"""FNE over a retrieved candidate pool (a cross-encoder's 399 -> 31, or a synthetic pool).

The dual-encoder FNE (:mod:`tags.mining.fne`) reads its statistics off the square in-batch
similarity matrix. A cross-encoder has no such matrix: each anchor pair is scored against its
own pools, one per direction (its image against captions of other images, its caption against
other images). The same rules carry over:

- **right anchors**: the pair's positive score beats every candidate of its i2t pool (the
  image's "row") and of its t2i pool (the caption's "column"); it adds the positive score to
  the positives and its hardest i2t and t2i candidates to the negatives
  (:func:`pool_right_anchors`, :func:`observe_pool`: the :class:`~tags.mining.fne.FNEStatistics`
  of an :class:`~tags.mining.fne.FNEMiner`, all-reduced over processes);
- **weights**: the miner's :meth:`~tags.mining.fne.FNEMiner.sampling_weights` (Bayes posterior,
  ``exp(-tau P)`` / cut-down ``exp(-alpha (s - s_pos)^2)`` / zero at or below
  ``mu_pos - margin`` when the miner's ``cut`` is on), unchanged;
- **draw** (:func:`draw_from_pool`): ``m`` candidates per anchor with ``torch.multinomial``
  without replacement from those weights, one generator per anchor (seeded by the step and the
  anchor's dataset index, so the draw is the same on any process layout and after a resume).
  Fewer than ``m`` candidates with a positive weight: those are all taken (zero weight means
  never drawn); none: the top ``m`` by score (branch ``fallback``); statistics not ready
  yet: the top ``m`` (branch ``warmup``, UNITER's selection).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from tags.mining.base import masked_max
from tags.mining.fne import BRANCH_FALLBACK, BRANCH_SAMPLED, BRANCH_WARMUP, FNEMiner

__all__ = ["PoolDraw", "draw_from_pool", "observe_pool", "pool_right_anchors", "top_m"]


def pool_right_anchors(
    positive: torch.Tensor,
    i2t_scores: torch.Tensor,
    i2t_mask: torch.Tensor,
    t2i_scores: torch.Tensor,
    t2i_mask: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Positive and hardest-negative scores of the right anchors of a pool batch.

    Args:
        positive: ``[B]`` score of each anchor pair.
        i2t_scores, i2t_mask: ``[B, P]`` the anchor image against its caption pool.
        t2i_scores, t2i_mask: ``[B, Q]`` the anchor caption against its image pool.

    An anchor is right when its positive score is strictly above every valid candidate of
    both pools (a direction without candidates does not disqualify it; an anchor without any
    candidate is not counted).

    Returns:
        ``(positives [R], negatives [N])``, detached.
    """
    pos = positive.detach()
    row, _, row_ok = masked_max(i2t_scores.detach(), i2t_mask)
    col, _, col_ok = masked_max(t2i_scores.detach(), t2i_mask)
    right = (~row_ok | (pos > row)) & (~col_ok | (pos > col)) & (row_ok | col_ok)
    negatives = torch.stack([row, col], 1)[torch.stack([row_ok, col_ok], 1) & right[:, None]]
    return pos[right], negatives


@torch.no_grad()
def observe_pool(
    miner: FNEMiner,
    positive: torch.Tensor,
    i2t_scores: torch.Tensor,
    i2t_mask: torch.Tensor,
    t2i_scores: torch.Tensor,
    t2i_mask: torch.Tensor,
) -> None:
    """Add the right anchors of a pool batch to ``miner``'s statistics (call on every rank:
    the sums are all-reduced)."""
    miner.stats.update(*pool_right_anchors(positive, i2t_scores, i2t_mask, t2i_scores, t2i_mask))


@dataclass
class PoolDraw:
    """Candidates drawn per anchor.

    Attributes:
        index: ``[A, m]`` pool columns (``-1`` pads anchors that got fewer than ``m``).
        branch: ``[A]`` :data:`~tags.mining.fne.BRANCH_WARMUP` / ``SAMPLED`` / ``FALLBACK``.
        posterior: ``[A, C]`` ``P(match | s)`` of every candidate (``None`` before the
            statistics are ready).
        weights: ``[A, C]`` the sampling weights (``None`` before the statistics are ready).
    """

    index: torch.Tensor
    branch: torch.Tensor
    posterior: torch.Tensor | None = None
    weights: torch.Tensor | None = None

    @property
    def valid(self) -> torch.Tensor:
        """``[A, m]`` True where a candidate was drawn."""
        return self.index >= 0


def top_m(scores: torch.Tensor, mask: torch.Tensor, m: int) -> torch.Tensor:
    """``[A, m]`` columns of the ``m`` highest valid scores per row (``-1`` pads short rows)."""
    m = min(m, scores.shape[1])
    filled = scores.detach().float().masked_fill(~mask, float("-inf"))
    index = filled.topk(m, dim=1).indices
    return torch.where(mask.gather(1, index), index, torch.full_like(index, -1))


@torch.no_grad()
def draw_from_pool(
    miner: FNEMiner,
    scores: torch.Tensor,
    positive: torch.Tensor,
    negative_mask: torch.Tensor,
    m: int,
    generators: Sequence[torch.Generator],
) -> PoolDraw:
    """``m`` candidates per anchor by the FNE weights of ``miner`` (see the module doc).

    ``generators``: one CPU generator per anchor; the draws are made on the CPU, so they do
    not depend on the device either."""
    if scores.shape != negative_mask.shape or positive.shape != scores.shape[:1]:
        raise ValueError("scores [A, C], positive [A] and negative_mask [A, C] must agree")
    if len(generators) != scores.shape[0]:
        raise ValueError(
            f"need one generator per anchor ({scores.shape[0]}), got {len(generators)}"
        )
    top = top_m(scores, negative_mask, m)
    if not miner.ready:
        return PoolDraw(top, torch.full_like(top[:, 0], BRANCH_WARMUP))
    weights = miner.sampling_weights(scores.detach(), positive.detach(), negative_mask)
    posterior = miner.posterior(scores.detach())
    index = torch.full_like(top, -1)
    branch = torch.full_like(top[:, 0], BRANCH_SAMPLED)
    rows = weights.detach().double().cpu()
    for a, (w, g) in enumerate(zip(rows, generators)):
        count = min(int((w > 0).sum()), top.shape[1])
        if count == 0:
            index[a] = top[a]
            branch[a] = BRANCH_FALLBACK
            continue
        drawn = torch.multinomial(w, count, replacement=False, generator=g)
        index[a, :count] = drawn.to(index.device)
    return PoolDraw(index, branch, posterior, weights)
