"""SelHN: selectively hard negative mining (Li et al. 2023; official AAA-Zheng/RVSEPP)."""

from __future__ import annotations

from typing import Any

import torch

from tags.mining.base import Miner, MinerOutput, gather_rows, hinge, masked_max
from tags.mining.registry import register_miner

__all__ = ["BRANCH_ALL", "BRANCH_HARDEST", "SelHNMiner"]

BRANCH_HARDEST = 0
BRANCH_ALL = 1


@register_miner("selhn")
class SelHNMiner(Miner):
    """Per anchor, switch between the all-negatives and the hardest-negative triplet.

    With detached scores, ``d = |s(hardest negative) - s(positive)|``:

    - ``d < eps``: ``sum_n [m + s_n - s_p]_+ / N`` over the anchor's ``N`` valid negatives
      (branch :data:`BRANCH_ALL`);
    - otherwise: ``[m + s_hardest - s_p]_+`` (branch :data:`BRANCH_HARDEST`).

    This is the rule of the official ``TripletSelHNLoss`` (strict ``<``, divisor = number of
    negatives); margin 0.2, eps 0.01. With one caption per image ``N = B - 1`` as there.
    """

    def __init__(self, margin: float = 0.2, eps: float = 0.01) -> None:
        super().__init__(margin)
        self.eps = float(eps)

    def forward(
        self, scores: torch.Tensor, positive: torch.Tensor, negative_mask: torch.Tensor, **_: Any
    ) -> MinerOutput:
        self.check_inputs(scores, positive, negative_mask)
        hard_score, index, valid = masked_max(scores.detach(), negative_mask)
        # compared in fp32 at least: eps is of the order of bf16's spacing near 1
        dtype = torch.promote_types(scores.dtype, torch.float32)
        gap = (hard_score.to(dtype) - positive.detach().to(dtype)).abs()
        use_all = (gap < self.eps) & valid
        cost = hinge(self.margin, scores, positive[:, None]) * negative_mask
        mean_all = cost.sum(1) / negative_mask.sum(1).clamp(min=1)
        hardest = hinge(self.margin, gather_rows(scores, index), positive) * valid
        loss = torch.where(use_all, mean_all, hardest)
        branch = torch.where(use_all, BRANCH_ALL, BRANCH_HARDEST)
        selected = negative_mask & use_all[:, None]
        rows = torch.nonzero(~use_all & valid).squeeze(1)
        selected[rows, index[rows]] = True
        return MinerOutput(
            loss=loss,
            index=index,
            selected=selected,
            branch=branch,
            extras={"gap": gap},
        )

    def extra_repr(self) -> str:
        return f"margin={self.margin}, eps={self.eps}"
