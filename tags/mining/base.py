"""Miner interface: per-anchor losses from an anchor-by-candidate score matrix."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from tags.core.distributed import get_rank, get_world_size

__all__ = ["NEG_INF", "Miner", "MinerOutput", "gather_rows", "hinge", "masked_max", "one_hot_mask"]

NEG_INF = float("-inf")


@dataclass
class MinerOutput:
    """What a miner returns.

    Attributes:
        loss: per-anchor loss ``[A]``, no reduction.
        index: chosen negative column per anchor ``[A]`` (``-1`` where the anchor has no
            valid negative), or ``None`` when the loss averages over many negatives.
        selected: bool ``[A, C]``, True for every candidate that enters the loss.
        weights: per-candidate weights ``[A, C]`` used by the loss or the sampler, if any.
        branch: per-anchor branch id ``[A]`` for strategies that switch rule (SelHN, FNE).
        extras: further named tensors for logging.
    """

    loss: torch.Tensor
    index: torch.Tensor | None = None
    selected: torch.Tensor | None = None
    weights: torch.Tensor | None = None
    branch: torch.Tensor | None = None
    extras: dict[str, torch.Tensor] = field(default_factory=dict)


def hinge(margin: float, negative: torch.Tensor, positive: torch.Tensor) -> torch.Tensor:
    """``max(0, margin + s_neg - s_pos)`` with broadcasting."""
    return (margin + negative - positive).clamp(min=0)


def masked_max(
    scores: torch.Tensor, mask: torch.Tensor, dim: int = -1
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Max of ``scores`` over entries where ``mask`` is True.

    Returns ``(values, index, valid)``; rows without any valid entry get value 0, index -1 and
    ``valid`` False (values of such rows carry no gradient). Ties resolve to the lowest index.
    """
    filled = scores.masked_fill(~mask, NEG_INF)
    values, index = filled.max(dim=dim)
    valid = mask.any(dim=dim)
    values = torch.where(valid, values, torch.zeros_like(values))
    index = torch.where(valid, index, torch.full_like(index, -1))
    return values, index, valid


def gather_rows(scores: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``scores[a, index[a]]`` (0 where ``index`` is -1), differentiable w.r.t. ``scores``."""
    safe = index.clamp(min=0).unsqueeze(-1)
    picked = scores.gather(-1, safe).squeeze(-1)
    return torch.where(index >= 0, picked, torch.zeros_like(picked))


def one_hot_mask(index: torch.Tensor, num_columns: int) -> torch.Tensor:
    """Bool ``[A, C]`` with True at ``index[a]`` (nothing where ``index`` is -1)."""
    mask = torch.zeros(index.shape[0], num_columns, dtype=torch.bool, device=index.device)
    rows = torch.nonzero(index >= 0).squeeze(1)
    mask[rows, index[rows]] = True
    return mask


class Miner(nn.Module):
    """Base class. Subclasses implement :meth:`forward` returning a :class:`MinerOutput`.

    Inputs: ``scores`` ``[A, C]``, ``positive`` ``[A]`` and ``negative_mask`` ``[A, C]`` (bool,
    True where the candidate is a valid negative of the anchor). Scores are similarities:
    higher means more alike. Anchors without any valid negative get loss 0.
    """

    miner_name: str = ""

    def __init__(self, margin: float = 0.2) -> None:
        super().__init__()
        self.margin = float(margin)

    @property
    def rank(self) -> int:
        """Rank of this process in the default process group."""
        return get_rank()

    @property
    def world_size(self) -> int:
        """Number of processes in the default process group."""
        return get_world_size()

    @staticmethod
    def check_inputs(
        scores: torch.Tensor, positive: torch.Tensor, negative_mask: torch.Tensor
    ) -> None:
        """Shape checks shared by every miner."""
        if scores.dim() != 2:
            raise ValueError(f"scores must be [A, C], got {tuple(scores.shape)}")
        if positive.shape != scores.shape[:1]:
            raise ValueError(f"positive must be [A]={scores.shape[0]}, got {tuple(positive.shape)}")
        if negative_mask.shape != scores.shape or negative_mask.dtype != torch.bool:
            raise ValueError("negative_mask must be a bool tensor shaped like scores")

    def forward(
        self,
        scores: torch.Tensor,
        positive: torch.Tensor,
        negative_mask: torch.Tensor,
        **extra: Any,
    ) -> MinerOutput:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return f"margin={self.margin}"
