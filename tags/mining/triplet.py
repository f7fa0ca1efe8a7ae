"""Classic triplet objectives: all negatives, hardest (VSE++), semi-hard, top-k (UNITER/TAGS)."""

from __future__ import annotations

from typing import Any

import torch

from tags.mining.base import (
    Miner,
    MinerOutput,
    gather_rows,
    hinge,
    masked_max,
    one_hot_mask,
)
from tags.mining.registry import register_miner

__all__ = ["AllNegativesMiner", "HardestMiner", "SemiHardMiner", "TopKMiner"]


@register_miner("all")
class AllNegativesMiner(Miner):
    """Hinge over every valid negative: ``sum_n [m + s_n - s_p]_+ / N`` (``reduction="mean"``,
    the default) or the plain sum (``"sum"``, VSE0 as in vsepp)."""

    def __init__(self, margin: float = 0.2, reduction: str = "mean") -> None:
        super().__init__(margin)
        if reduction not in ("mean", "sum"):
            raise ValueError("reduction must be 'mean' or 'sum'")
        self.reduction = reduction

    def forward(
        self, scores: torch.Tensor, positive: torch.Tensor, negative_mask: torch.Tensor, **_: Any
    ) -> MinerOutput:
        self.check_inputs(scores, positive, negative_mask)
        cost = hinge(self.margin, scores, positive[:, None]) * negative_mask
        loss = cost.sum(1)
        if self.reduction == "mean":
            loss = loss / negative_mask.sum(1).clamp(min=1)
        return MinerOutput(loss=loss, selected=negative_mask.clone())


@register_miner("hardest")
class HardestMiner(Miner):
    """VSE++ max violation: ``[m + max_n s_n - s_p]_+`` (hardest negative by score)."""

    def forward(
        self, scores: torch.Tensor, positive: torch.Tensor, negative_mask: torch.Tensor, **_: Any
    ) -> MinerOutput:
        self.check_inputs(scores, positive, negative_mask)
        _, index, valid = masked_max(scores.detach(), negative_mask)
        hard = gather_rows(scores, index)
        loss = hinge(self.margin, hard, positive) * valid
        return MinerOutput(loss=loss, index=index, selected=one_hot_mask(index, scores.shape[1]))


@register_miner("semi_hard")
class SemiHardMiner(Miner):
    """Hardest negative among those scored below the positive (``s_n < s_p``, detached).

    Anchors without such a negative get loss 0 and index -1.
    """

    def forward(
        self, scores: torch.Tensor, positive: torch.Tensor, negative_mask: torch.Tensor, **_: Any
    ) -> MinerOutput:
        self.check_inputs(scores, positive, negative_mask)
        detached = scores.detach()
        eligible = negative_mask & (detached < positive.detach()[:, None])
        _, index, valid = masked_max(detached, eligible)
        loss = hinge(self.margin, gather_rows(scores, index), positive) * valid
        return MinerOutput(loss=loss, index=index, selected=one_hot_mask(index, scores.shape[1]))


@register_miner("topk")
class TopKMiner(Miner):
    """Mean hinge over the ``k`` highest-scored negatives (UNITER/TAGS: 399 scored -> 31 kept).

    ``num_candidates`` optionally first draws that many valid negatives per anchor uniformly at
    random (UNITER's 399; pass a ``generator`` for reproducibility), then keeps the top ``k``.
    Anchors with fewer than ``k`` negatives average over the ones they have.
    """

    def __init__(self, margin: float = 0.2, k: int = 31, num_candidates: int | None = None) -> None:
        super().__init__(margin)
        if k < 1:
            raise ValueError("k must be >= 1")
        self.k = int(k)
        self.num_candidates = num_candidates

    def _subsample(self, mask: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        noise = torch.rand(mask.shape, generator=generator, device="cpu").to(mask.device)
        noise = noise.masked_fill(~mask, -1.0)
        n = min(self.num_candidates, mask.shape[1])  # type: ignore[type-var]
        keep = noise.topk(n, dim=1).indices
        out = torch.zeros_like(mask)
        out.scatter_(1, keep, True)
        return out & mask

    def forward(
        self,
        scores: torch.Tensor,
        positive: torch.Tensor,
        negative_mask: torch.Tensor,
        generator: torch.Generator | None = None,
        **_: Any,
    ) -> MinerOutput:
        self.check_inputs(scores, positive, negative_mask)
        mask = negative_mask
        if self.num_candidates is not None:
            mask = self._subsample(mask, generator)
        k = min(self.k, scores.shape[1])
        filled = scores.detach().masked_fill(~mask, float("-inf"))
        top = filled.topk(k, dim=1).indices  # [A, k]
        top_valid = mask.gather(1, top)
        cost = hinge(self.margin, scores.gather(1, top), positive[:, None]) * top_valid
        loss = cost.sum(1) / top_valid.sum(1).clamp(min=1)
        selected = torch.zeros_like(mask)
        selected.scatter_(1, top, top_valid)
        index = torch.where(top_valid[:, 0], top[:, 0], torch.full_like(top[:, 0], -1))
        topk_index = torch.where(top_valid, top, torch.full_like(top, -1))
        return MinerOutput(
            loss=loss, index=index, selected=selected, extras={"topk_index": topk_index}
        )

    def extra_repr(self) -> str:
        return f"margin={self.margin}, k={self.k}, num_candidates={self.num_candidates}"
