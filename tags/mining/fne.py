"""FNE: false negative elimination by Bayesian negative sampling (Li et al., ACM MM 2023;
official LuminosityX/FNE).

Per epoch, Gaussian models of positive and hardest-negative similarities are accumulated from
"right" anchors (:class:`FNEStatistics`); each candidate ``s`` gets the posterior

    P(match | s) = prior N(s; mu_p, var_p) / (prior N(s; mu_p, var_p) + (1 - prior) N(s; mu_n, var_n))

and a sampling weight

    w = exp(-tau * P)                   if P > threshold   (likely false negatives: damped)
    w = exp(-alpha * (s - s_pos) ** 2)  otherwise          ("cut-down" for easy negatives)
    w = 0   for masked candidates (same image) and, with ``cut`` (the official code; not in
            the paper), for s <= mu_p - margin.

One negative per anchor is drawn with ``torch.multinomial`` and the loss is the hinge with it.
Rows whose weights are all zero take their hardest negative; until ``min_count`` right anchors
were seen in the current epoch every anchor takes its hardest negative (VSE++).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from tags.core.distributed import all_reduce_sum
from tags.mining.base import Miner, MinerOutput, gather_rows, hinge, masked_max, one_hot_mask
from tags.mining.registry import register_miner

__all__ = [
    "BRANCH_FALLBACK",
    "BRANCH_SAMPLED",
    "BRANCH_WARMUP",
    "FNE_PRESETS",
    "FNEMiner",
    "FNEStatistics",
    "inverse_cdf",
    "right_anchor_similarities",
]

#: ``(tau, threshold, alpha, cut)`` per preset. ``official``: LuminosityX/FNE ``loss.py``
#: (``tau = 0.5`` for both exponentials, ``false_margin = 0.999`` i.e. P > 1e-3, and the cut
#: of candidates at or below ``mu_p - margin``); ``paper``: exp(-P) and threshold 0.01 as
#: written in the paper, no cut (the paper has none); alpha kept at the code's 0.5 in both.
FNE_PRESETS: dict[str, dict[str, float | bool]] = {
    "official": {"tau": 0.5, "threshold": 1e-3, "alpha": 0.5, "cut": True},
    "paper": {"tau": 1.0, "threshold": 1e-2, "alpha": 0.5, "cut": False},
}

BRANCH_WARMUP = 0  # not enough statistics yet: hardest negative
BRANCH_SAMPLED = 1  # negative drawn from the FNE weights
BRANCH_FALLBACK = 2  # all weights were zero: hardest negative


def right_anchor_similarities(
    similarity: torch.Tensor,
    image_ids: torch.Tensor | list[int],
    anchors: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Positive and hardest-negative similarities of the "right" anchors of a square batch.

    Pair ``i`` is right when the top-1 of row ``i`` (image -> captions) and the top-1 of column
    ``i`` (caption -> images) are both positives (same image id; with one caption per image this
    is "the diagonal wins its row and its column", as the official code checks). A right pair
    contributes ``S[i, i]`` to the positives and its hardest row and hardest column negatives
    to the negatives.

    Args:
        similarity: ``S`` ``[B, B]`` (detached internally).
        image_ids: ``[B]`` image id of each pair.
        anchors: optional pair indices to consider (a rank's own pairs when ``S`` is the
            gathered global matrix), default all.

    Returns:
        ``(positives [P], negatives [Q])``.
    """
    s = similarity.detach()
    ids = torch.as_tensor(image_ids, device=s.device).reshape(-1)
    same = ids[:, None] == ids[None, :]
    n = s.shape[0]
    rows = torch.arange(n, device=s.device) if anchors is None else anchors.to(s.device)
    row_top = s[rows].argmax(dim=1)
    col_top = s[:, rows].argmax(dim=0)
    right = same[rows, row_top] & same[col_top, rows]
    rows = rows[right]
    pos = s[rows, rows]
    row_neg, _, row_ok = masked_max(s[rows], ~same[rows])
    col_neg, _, col_ok = masked_max(s[:, rows].t(), ~same[rows])
    neg = torch.stack([row_neg, col_neg], dim=1)[torch.stack([row_ok, col_ok], dim=1)]
    return pos, neg


class FNEStatistics(nn.Module):
    """Running Gaussian sufficient statistics (count, sum, sum of squares) of positive and
    negative similarities, kept in float64 buffers (so they are in ``state_dict``).

    :meth:`update` all-reduces the batch sums over processes before adding them, so every rank
    holds the statistics of the global batch. The variance is the unbiased one (``n - 1``).
    """

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("pos", torch.zeros(3, dtype=torch.float64))
        self.register_buffer("neg", torch.zeros(3, dtype=torch.float64))

    def reset(self) -> None:
        """Forget everything (start of an epoch)."""
        self.pos.zero_()
        self.neg.zero_()

    @staticmethod
    def _sums(x: torch.Tensor) -> torch.Tensor:
        x = x.detach().to(torch.float64).reshape(-1)
        return torch.stack([x.new_tensor(float(x.numel())), x.sum(), (x * x).sum()])

    @torch.no_grad()
    def update(self, positives: torch.Tensor, negatives: torch.Tensor) -> None:
        """Add the (globally reduced) sums of a batch."""
        batch = torch.stack([self._sums(positives), self._sums(negatives)]).to(self.pos.device)
        batch = all_reduce_sum(batch)
        self.pos += batch[0]
        self.neg += batch[1]

    @staticmethod
    def _moments(s: torch.Tensor) -> tuple[float, float]:
        n, total, sq = (float(v) for v in s)
        if n < 1:
            return float("nan"), float("nan")
        mean = total / n
        var = (sq - n * mean * mean) / (n - 1) if n > 1 else float("nan")
        return mean, max(var, 0.0)

    @property
    def pos_count(self) -> int:
        return int(self.pos[0].item())

    @property
    def neg_count(self) -> int:
        return int(self.neg[0].item())

    @property
    def pos_moments(self) -> tuple[float, float]:
        """``(mean, variance)`` of the positives."""
        return self._moments(self.pos)

    @property
    def neg_moments(self) -> tuple[float, float]:
        """``(mean, variance)`` of the negatives."""
        return self._moments(self.neg)


def inverse_cdf(weights: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """Column drawn per row with probability proportional to ``weights`` ``[A, C]`` (rows with
    a positive sum), from ``uniforms`` ``[A]`` in [0, 1): the first column whose cumulative
    share exceeds the row's number (zero-weight columns are never drawn)."""
    cdf = weights.detach().double().cumsum(1)
    cdf = cdf / cdf[:, -1:]
    u = uniforms.detach().to(cdf).reshape(-1, 1)
    index = torch.searchsorted(cdf, u, right=True).squeeze(1)
    return index.clamp(max=weights.shape[1] - 1)


def _log_normal(x: torch.Tensor, mean: float, var: float) -> torch.Tensor:
    var = max(var, 1e-12)  # a degenerate (constant) sample would divide by zero
    return -0.5 * (x - mean) ** 2 / var - 0.5 * math.log(2 * math.pi * var)


@register_miner("fne")
class FNEMiner(Miner):
    """FNE sampling of one negative per anchor.

    Args:
        margin: triplet margin (also the ``mu_p - margin`` cut-off), 0.2.
        preset: ``"official"`` (default: the released code that produced the paper's numbers,
            exp(-0.5 P), threshold 1e-3, cut on) or ``"paper"`` (exp(-P), threshold 0.01, no
            cut).
        tau, threshold, alpha: override the preset's constants.
        cut: zero weight for candidates at or below ``mu_p - margin`` (official code only);
            ``None``: the preset's.
        prior: prior probability of a match, 1e-4 (the code's ``match_para = 10000``).
        min_count: right anchors needed in the current epoch before sampling (official
            ``nums_right_sims = 200``; strictly more are required, as there).

    Call :meth:`start_epoch` at every epoch start and :meth:`observe` with the in-batch matrix
    once per step before the forward calls (the official order). ``forward`` draws with
    ``torch.multinomial`` (optional ``generator``) or, given ``uniforms`` ``[A]`` in [0, 1)
    (one per anchor, e.g. seeded by the anchor's dataset index), by inverse CDF: then every
    anchor's draw is the same however the batch is split over processes.
    """

    def __init__(
        self,
        margin: float = 0.2,
        preset: str = "official",
        tau: float | None = None,
        threshold: float | None = None,
        alpha: float | None = None,
        prior: float = 1e-4,
        min_count: int = 200,
        cut: bool | None = None,
    ) -> None:
        super().__init__(margin)
        if preset not in FNE_PRESETS:
            raise ValueError(f"preset must be one of {sorted(FNE_PRESETS)}")
        constants = FNE_PRESETS[preset]
        self.preset = preset
        self.tau = float(constants["tau"] if tau is None else tau)
        self.threshold = float(constants["threshold"] if threshold is None else threshold)
        self.alpha = float(constants["alpha"] if alpha is None else alpha)
        self.cut = bool(constants["cut"] if cut is None else cut)
        if not 0.0 < prior < 1.0:
            raise ValueError("prior must lie in (0, 1)")
        self.prior = float(prior)
        self.min_count = int(min_count)
        self.stats = FNEStatistics()

    # statistics -------------------------------------------------------------------------
    def start_epoch(self) -> None:
        """Reset the statistics (the official code resets them at every epoch)."""
        self.stats.reset()

    reset_statistics = start_epoch

    @torch.no_grad()
    def observe(
        self,
        similarity: torch.Tensor,
        image_ids: torch.Tensor | list[int],
        anchors: torch.Tensor | None = None,
    ) -> None:
        """Accumulate right-anchor statistics of a square in-batch matrix (all ranks)."""
        pos, neg = right_anchor_similarities(similarity, image_ids, anchors)
        self.stats.update(pos, neg)

    @property
    def ready(self) -> bool:
        """Whether enough statistics exist to sample."""
        return self.stats.pos_count > max(self.min_count, 1) and self.stats.neg_count > 1

    def posterior(self, scores: torch.Tensor) -> torch.Tensor:
        """``P(match | s)`` under the current Gaussians (computed in log space), in at least
        fp32 (a bf16 posterior could not tell the 1e-3 threshold from 0)."""
        mu_p, var_p = self.stats.pos_moments
        mu_n, var_n = self.stats.neg_moments
        s = scores.detach().to(torch.float64)
        logit = (
            math.log(self.prior)
            + _log_normal(s, mu_p, var_p)
            - math.log1p(-self.prior)
            - _log_normal(s, mu_n, var_n)
        )
        return torch.sigmoid(logit).to(torch.promote_types(scores.dtype, torch.float32))

    def sampling_weights(
        self, scores: torch.Tensor, positive: torch.Tensor, negative_mask: torch.Tensor
    ) -> torch.Tensor:
        """Unnormalised FNE weights ``[A, C]`` (detached; at least fp32)."""
        dtype = torch.promote_types(scores.dtype, torch.float32)
        s = scores.detach().to(dtype)
        p = self.posterior(s)
        easy = torch.exp(-self.alpha * (s - positive.detach().to(dtype)[:, None]) ** 2)
        damped = torch.exp(-self.tau * p)
        w = torch.where(p > self.threshold, damped, easy)
        keep = negative_mask
        if self.cut:
            keep = keep & (s > self.stats.pos_moments[0] - self.margin)
        return torch.where(keep, w, torch.zeros_like(w))

    # loss -------------------------------------------------------------------------------
    def forward(
        self,
        scores: torch.Tensor,
        positive: torch.Tensor,
        negative_mask: torch.Tensor,
        generator: torch.Generator | None = None,
        uniforms: torch.Tensor | None = None,
        **_: Any,
    ) -> MinerOutput:
        self.check_inputs(scores, positive, negative_mask)
        _, hard_index, valid = masked_max(scores.detach(), negative_mask)
        if not self.ready:
            index = hard_index
            branch = torch.full_like(index, BRANCH_WARMUP)
            weights = None
        else:
            weights = self.sampling_weights(scores, positive, negative_mask)
            empty = weights.sum(1) <= 0
            draw = torch.where(empty[:, None], torch.ones_like(weights), weights)
            if uniforms is None:
                sampled = torch.multinomial(draw, 1, generator=generator).squeeze(1)
            else:
                sampled = inverse_cdf(draw, uniforms)
            index = torch.where(empty, hard_index, sampled)
            branch = torch.where(empty, BRANCH_FALLBACK, BRANCH_SAMPLED)
        index = torch.where(valid, index, torch.full_like(index, -1))
        loss = hinge(self.margin, gather_rows(scores, index), positive) * valid
        return MinerOutput(
            loss=loss,
            index=index,
            selected=one_hot_mask(index, scores.shape[1]),
            weights=weights,
            branch=branch,
        )

    def extra_repr(self) -> str:
        return (
            f"margin={self.margin}, preset={self.preset!r}, tau={self.tau}, "
            f"threshold={self.threshold}, alpha={self.alpha}, prior={self.prior}, "
            f"min_count={self.min_count}, cut={self.cut}"
        )
