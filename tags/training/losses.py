"""TAGS-DC loss terms as modules (open_clip style).

Token- and anchor-level means are *global*: the local sum is divided by the count summed
over processes (times the world size, which DDP's gradient averaging divides out again), so
two processes give exactly the gradient of one process on the combined batch even when the
processes hold different numbers of tokens or negatives.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tags.core.distributed import all_reduce_sum, get_world_size
from tags.mining import MinerOutput, get_miner

IGNORE_INDEX = -100


def global_mean(total: torch.Tensor, count: torch.Tensor | int) -> torch.Tensor:
    """``total / count`` with ``count`` summed over processes (see module doc)."""
    count = torch.as_tensor(count, dtype=torch.float64, device=total.device)
    global_count = all_reduce_sum(count.detach().clone())
    return total * get_world_size() / global_count.clamp(min=1.0).to(total.dtype)


class TokenCrossEntropy(nn.Module):
    """Cross-entropy summed over labelled tokens, divided by the global number of labels.

    Used for L_MLM (masked positions), L_WoD (2 classes per token: 1 = the token matches the
    positive's) and L_WoC (the positive's token at each position). ``labels == -100`` is
    ignored; ``logits`` ``[..., C]``, ``labels`` ``[...]``.

    ``class_weights`` scales each token's loss by the weight of its label and still divides by
    the number of labelled tokens, as the official TAGS code's WoD (``F.nll_loss(...,
    weight=(1.0, 0.11), reduction="none").mean()``: mismatched tokens 1.0, matching 0.11).
    """

    def __init__(self, class_weights: list[float] | tuple[float, ...] | None = None) -> None:
        super().__init__()
        weights = None if class_weights is None else torch.tensor(class_weights)
        self.register_buffer("class_weights", weights, persistent=False)

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits = logits.reshape(-1, logits.shape[-1]).float()
        labels = labels.reshape(-1)
        keep = labels != IGNORE_INDEX
        weight = None if self.class_weights is None else self.class_weights.to(logits)
        if logits.shape[0] == 0:
            total = logits.sum() * 0.0
        else:
            total = F.cross_entropy(
                logits, labels, weight=weight, ignore_index=IGNORE_INDEX, reduction="sum"
            )
        return global_mean(total, keep.sum())


class PoolTripletLoss(nn.Module):
    """A miner on ``[A, K]`` negative scores of each anchor against its positive score.

    L_ITM uses it per direction on the retrieved negatives, L_ISTM on the synthetic pool
    (default miner ``all``: the mean hinge ``sum_n [m + s_n - s_p]_+ / N`` per anchor, i.e.
    the mean triplet over the pool). The result is the mean over anchors that have at least
    one negative (global over processes).
    """

    def __init__(self, miner: nn.Module | str = "all", **miner_kwargs) -> None:
        super().__init__()
        self.miner = get_miner(miner, **miner_kwargs) if isinstance(miner, str) else miner

    def forward(
        self,
        positive: torch.Tensor,
        negatives: torch.Tensor,
        negative_mask: torch.Tensor | None = None,
        **extra,
    ) -> tuple[torch.Tensor, MinerOutput]:
        if negative_mask is None:
            negative_mask = torch.ones_like(negatives, dtype=torch.bool)
        out = self.miner(negatives, positive, negative_mask, **extra)
        has = negative_mask.any(dim=1)
        return global_mean((out.loss * has).sum(), has.sum()), out


__all__ = ["IGNORE_INDEX", "PoolTripletLoss", "TokenCrossEntropy", "global_mean"]
