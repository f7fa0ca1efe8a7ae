"""NDGL: negative-distribution-guided learning (Zhou et al., AAAI 2025; no public code).

A target similarity matrix (mean of K reference models) guides the learned one through
margin regularisation (MR) and hardest-negative rectification (HNR) on top of an online
triplet objective: ``L = L_online + lambda_mr * L_MR + lambda_hnr * L_HNR``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from tags.mining.base import Miner, MinerOutput, gather_rows, masked_max
from tags.mining.registry import get_miner, register_miner

__all__ = ["KL_DIRECTIONS", "NDGLMiner", "ReferenceScores", "load_reference_scores"]

#: ``target||predicted``: ``KL(Q || P)`` (default, distillation: the target distribution is
#: the reference); ``predicted||target``: ``KL(P || Q)``, the argument order of the paper's
#: notation ``KL(P, Q)`` read literally.
KL_DIRECTIONS = ("target||predicted", "predicted||target")


def _load_matrix(path: Path) -> torch.Tensor:
    if path.suffix == ".npy":
        return torch.from_numpy(np.load(path))
    obj = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(obj, dict):
        obj = obj["scores"]
    if not isinstance(obj, torch.Tensor):
        raise TypeError(f"{path}: expected a tensor or a dict with 'scores'")
    return obj


def load_reference_scores(paths: Sequence[str | Path]) -> torch.Tensor:
    """Mean of K reference score matrices ``[N_img, N_cap]`` from ``.pt`` (a tensor or
    ``{"scores": tensor}``) or ``.npy`` files. All must share one shape."""
    if not paths:
        raise ValueError("need at least one reference score file")
    total: torch.Tensor | None = None
    for p in paths:
        m = _load_matrix(Path(p)).to(torch.float64)
        if total is not None and m.shape != total.shape:
            raise ValueError(f"{p}: shape {tuple(m.shape)} != {tuple(total.shape)}")
        total = m if total is None else total + m
    assert total is not None
    return (total / len(paths)).to(torch.float32)


class ReferenceScores:
    """Target similarities over the training set, sliced per batch."""

    def __init__(self, scores: torch.Tensor) -> None:
        if scores.dim() != 2:
            raise ValueError("reference scores must be [N_img, N_cap]")
        self.scores = scores

    @classmethod
    def from_files(cls, paths: Sequence[str | Path]) -> ReferenceScores:
        return cls(load_reference_scores(paths))

    def batch(self, image_index: torch.Tensor, caption_index: torch.Tensor) -> torch.Tensor:
        """``T[image_index[i], caption_index[j]]`` as ``[B_img, B_cap]`` (square for a batch
        of pairs: feed it to :func:`tags.mining.batch_pairs` like the predicted matrix)."""
        image_index = torch.as_tensor(image_index, dtype=torch.long).cpu()
        caption_index = torch.as_tensor(caption_index, dtype=torch.long).cpu()
        return self.scores[image_index][:, caption_index]


@register_miner("ndgl")
class NDGLMiner(Miner):
    """Online triplet + margin-distribution KL + hardest-negative rectification, per anchor.

    With predicted scores ``s`` and target scores ``t`` of one anchor over its negatives ``n``:

    - ``L_online``: the ``online`` miner (default ``"hardest"``, VSE++) on ``s``.
    - ``L_MR = KL(Q || P)`` with ``P = softmax_n((s_p - s_n) / T)``,
      ``Q = softmax_n((t_p - t_n) / T)``: the target distribution of margins is the reference
      (distillation direction; ``kl_direction="predicted||target"`` gives ``KL(P || Q)``, the
      paper's argument order). ``T = temperature`` (default 1.0, i.e. no temperature).
    - ``L_HNR = [gamma + s(n_s) - s(n_t)]_+`` with ``n_s = argmax_n s_n`` (predicted hardest)
      and ``n_t = argmax_n t_n`` (target hardest); 0 when ``n_s == n_t``; ``gamma = 0.01``.
      It pushes the target-chosen hardest negative above the predicted one.

    ``lambda_mr = 100`` and ``lambda_hnr = 0.5`` by default: the paper's values (lambda_1 and
    lambda_2, given after its Table 2). No public code exists.
    Extra inputs: ``target_scores`` ``[A, C]`` and ``target_positive`` ``[A]``.
    """

    def __init__(
        self,
        margin: float = 0.2,
        online: str = "hardest",
        lambda_mr: float = 100.0,
        lambda_hnr: float = 0.5,
        gamma: float = 0.01,
        temperature: float = 1.0,
        kl_direction: str = "target||predicted",
    ) -> None:
        super().__init__(margin)
        if online == "ndgl":
            raise ValueError("online miner cannot be ndgl itself")
        if kl_direction not in KL_DIRECTIONS:
            raise ValueError(f"kl_direction {kl_direction!r}: choose from {KL_DIRECTIONS}")
        self.kl_direction = kl_direction
        self.online = get_miner(online, margin=margin)
        self.lambda_mr = float(lambda_mr)
        self.lambda_hnr = float(lambda_hnr)
        self.gamma = float(gamma)
        self.temperature = float(temperature)

    def margin_kl(
        self,
        scores: torch.Tensor,
        positive: torch.Tensor,
        target_scores: torch.Tensor,
        target_positive: torch.Tensor,
        negative_mask: torch.Tensor,
    ) -> torch.Tensor:
        """``KL(Q || P)`` (or ``KL(P || Q)``, see ``kl_direction``) per anchor over its
        negatives (0 without negatives)."""
        neg_inf = -1e9  # finite, so masked entries give exact zeros and no NaN gradients
        pred = ((positive[:, None] - scores) / self.temperature).masked_fill(
            ~negative_mask, neg_inf
        )
        tgt = (target_positive[:, None] - target_scores).to(scores.dtype) / self.temperature
        tgt = tgt.masked_fill(~negative_mask, neg_inf)
        log_p = F.log_softmax(pred, dim=1)
        log_q = F.log_softmax(tgt, dim=1)
        if self.kl_direction == "predicted||target":
            log_p, log_q = log_q, log_p
        kl = torch.where(negative_mask, log_q.exp() * (log_q - log_p), torch.zeros_like(log_p))
        return kl.sum(1) * negative_mask.any(1)

    def forward(
        self,
        scores: torch.Tensor,
        positive: torch.Tensor,
        negative_mask: torch.Tensor,
        target_scores: torch.Tensor | None = None,
        target_positive: torch.Tensor | None = None,
        **extra: Any,
    ) -> MinerOutput:
        self.check_inputs(scores, positive, negative_mask)
        if target_scores is None or target_positive is None:
            raise ValueError("NDGL needs target_scores [A, C] and target_positive [A]")
        target_scores = target_scores.to(scores.device)
        target_positive = target_positive.to(scores.device)
        online = self.online(scores, positive, negative_mask, **extra)
        mr = self.margin_kl(scores, positive, target_scores, target_positive, negative_mask)
        _, pred_index, valid = masked_max(scores.detach(), negative_mask)
        _, target_index, _ = masked_max(target_scores, negative_mask)
        differ = (pred_index != target_index) & valid
        hnr = self.gamma + gather_rows(scores, pred_index) - gather_rows(scores, target_index)
        hnr = hnr.clamp(min=0) * differ
        loss = online.loss + self.lambda_mr * mr + self.lambda_hnr * hnr
        selected = negative_mask.clone()  # L_MR involves every negative
        return MinerOutput(
            loss=loss,
            index=online.index,
            selected=selected,
            extras={
                "online": online.loss.detach(),
                "margin_kl": mr.detach(),
                "hnr": hnr.detach(),
                "target_index": target_index,
            },
        )

    def extra_repr(self) -> str:
        return (
            f"margin={self.margin}, lambda_mr={self.lambda_mr}, lambda_hnr={self.lambda_hnr}, "
            f"gamma={self.gamma}, temperature={self.temperature}, "
            f"kl_direction={self.kl_direction!r}"
        )
