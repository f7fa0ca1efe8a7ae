"""``MiningLoss``: a miner applied in both retrieval directions to dual-encoder features,
across processes (open_clip ``ClipLoss`` style)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from tags.core.distributed import (
    all_gather_no_grad,
    gather_sizes,
    gather_with_grad,
    get_rank,
    get_world_size,
)
from tags.mining.base import MinerOutput
from tags.mining.pairs import direction_pairs
from tags.mining.registry import get_miner

__all__ = ["MiningLoss", "MiningLossOutput", "create_loss"]


@dataclass
class MiningLossOutput:
    """Scalar ``loss`` plus each direction's :class:`MinerOutput` (local anchors)."""

    loss: torch.Tensor
    i2t: MinerOutput
    t2i: MinerOutput


class MiningLoss(nn.Module):
    """Triplet-style objective with a pluggable miner on image/text embeddings.

    Every rank scores its local anchors against the candidates of all ranks (gathered with
    gradients), so the per-anchor losses equal those of one process on the concatenated batch.
    ``loss`` = mean over local anchors of each direction, summed over the two directions; with
    DDP's gradient averaging the effective objective is the global mean (equal local batches).

    Args:
        miner: a miner module or a registered name (``miner_kwargs`` go to its constructor).

    Scores are dot products: pass L2-normalised features for cosine similarity.
    """

    def __init__(self, miner: nn.Module | str = "hardest", **miner_kwargs: Any) -> None:
        super().__init__()
        self.miner = get_miner(miner, **miner_kwargs) if isinstance(miner, str) else miner

    @property
    def rank(self) -> int:
        return get_rank()

    @property
    def world_size(self) -> int:
        return get_world_size()

    def forward(
        self,
        image_features: torch.Tensor,
        text_features: torch.Tensor,
        image_ids: torch.Tensor,
        i2t_extra: dict[str, Any] | None = None,
        t2i_extra: dict[str, Any] | None = None,
        **extra: Any,
    ) -> MiningLossOutput:
        """``image_features``/``text_features`` ``[B, D]`` of ``B`` local pairs (row ``i`` of
        each is pair ``i``), ``image_ids`` ``[B]``. ``extra`` goes to both miner calls,
        ``i2t_extra``/``t2i_extra`` to one direction each."""
        ids = torch.as_tensor(image_ids, device=image_features.device).reshape(-1)
        all_images = gather_with_grad(image_features)
        all_texts = gather_with_grad(text_features)
        all_ids = all_gather_no_grad(ids)
        offset = sum(gather_sizes(image_features.shape[0], image_features.device)[: self.rank])
        own = offset + torch.arange(image_features.shape[0], device=image_features.device)
        i2t = direction_pairs(image_features @ all_texts.t(), own, ids, all_ids)
        t2i = direction_pairs(text_features @ all_images.t(), own, ids, all_ids)
        out_i2t = self.miner(*i2t, **extra, **(i2t_extra or {}))
        out_t2i = self.miner(*t2i, **extra, **(t2i_extra or {}))
        loss = out_i2t.loss.mean() + out_t2i.loss.mean()
        return MiningLossOutput(loss=loss, i2t=out_i2t, t2i=out_t2i)


def create_loss(miner: str = "hardest", **miner_kwargs: Any) -> MiningLoss:
    """Factory: ``MiningLoss`` around the registered miner ``miner``."""
    return MiningLoss(miner, **miner_kwargs)
