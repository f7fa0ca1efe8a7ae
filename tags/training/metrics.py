"""Per-step mining statistics: hardness, SelHN branch shares, FNE posterior summaries.

Every helper returns the same keys whatever the batch holds (empty selections give 0), so
metrics can be averaged over processes without a key mismatch.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from tags.mining import FNEMiner, MinerOutput, SelHNMiner
from tags.mining.base import gather_rows, masked_max
from tags.mining.fne import BRANCH_FALLBACK, BRANCH_SAMPLED, BRANCH_WARMUP


def _mean(x: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
    x = x.detach().float()
    if keep is not None:
        x = x[keep]
    return x.mean() if x.numel() else x.new_zeros(())


def mining_metrics(
    prefix: str,
    miner: nn.Module,
    out: MinerOutput,
    scores: torch.Tensor,
    positive: torch.Tensor,
    negative_mask: torch.Tensor,
) -> dict[str, torch.Tensor]:
    """``{prefix}/hardness`` = mean of s(hardest negative) - s(positive) (ITM(neg) - ITM(pos)
    for cross-encoder scores), ``{prefix}/hardness_selected`` for the negative the miner
    chose (hardest when it averages over many), ``{prefix}/frac_violating`` = share of anchors
    whose hardest negative is within the margin, plus SelHN / FNE branch statistics."""
    hard, _, valid = masked_max(scores.detach(), negative_mask)
    gap = hard - positive.detach()
    index = out.index if out.index is not None else masked_max(scores.detach(), negative_mask)[1]
    chosen = gather_rows(scores.detach(), index) - positive.detach()
    margin = float(getattr(miner, "margin", 0.2))
    metrics = {
        f"{prefix}/hardness": _mean(gap, valid),
        f"{prefix}/hardness_selected": _mean(chosen, index >= 0),
        f"{prefix}/frac_violating": _mean((gap + margin > 0).float(), valid),
    }
    if isinstance(miner, SelHNMiner):
        branch = out.branch if out.branch is not None else torch.zeros_like(index)
        metrics[f"{prefix}/selhn_all_share"] = _mean((branch == 1).float(), valid)
    if isinstance(miner, FNEMiner):
        branch = out.branch if out.branch is not None else torch.zeros_like(index)
        metrics[f"{prefix}/fne_sampled_share"] = _mean((branch == 1).float(), valid)
        metrics[f"{prefix}/fne_warmup_share"] = _mean((branch == 0).float(), valid)
        if miner.ready:
            posterior = miner.posterior(gather_rows(scores.detach(), index))
            metrics[f"{prefix}/fne_posterior_selected"] = _mean(posterior, index >= 0)
            metrics[f"{prefix}/fne_posterior_max"] = (
                posterior[index >= 0].max() if (index >= 0).any() else posterior.new_zeros(())
            ).float()
        else:
            metrics[f"{prefix}/fne_posterior_selected"] = scores.new_zeros(()).float()
            metrics[f"{prefix}/fne_posterior_max"] = scores.new_zeros(()).float()
    for name, value in out.extras.items():
        if value.dim() == 1 and value.numel() == positive.numel() and value.is_floating_point():
            metrics[f"{prefix}/{name}"] = _mean(value)
    return metrics


def fne_draw_metrics(prefix: str, draw: Any) -> dict[str, torch.Tensor]:
    """Branch shares of FNE's pool draw (:class:`~tags.mining.fne_pool.PoolDraw`) and the
    mean posterior of the drawn candidates (0 while the statistics are not ready)."""
    branch = draw.branch
    metrics = {
        f"{prefix}/fne_sampled_share": _mean((branch == BRANCH_SAMPLED).float()),
        f"{prefix}/fne_warmup_share": _mean((branch == BRANCH_WARMUP).float()),
        f"{prefix}/fne_fallback_share": _mean((branch == BRANCH_FALLBACK).float()),
        f"{prefix}/fne_drawn": _mean(draw.valid.sum(1).float()),
    }
    posterior = branch.new_zeros((), dtype=torch.float32)
    if draw.posterior is not None:
        picked = draw.posterior.gather(1, draw.index.clamp(min=0))
        posterior = _mean(picked, draw.valid)
    metrics[f"{prefix}/fne_posterior_selected"] = posterior
    return metrics


def phase_means(rows: list[dict[str, Any]], suffix: str) -> dict[str, float]:
    """Mean of every logged key ending in ``suffix`` per training phase, keyed
    ``"{key}@{phase}"`` (e.g. SelHN's ``itm_i2t/selhn_all_share@0``)."""
    sums: dict[str, list[float]] = {}
    for row in rows:
        for key, value in row.items():
            if key.endswith(suffix) and "phase" in row:
                sums.setdefault(f"{key}@{int(row['phase'])}", []).append(float(value))
    return {key: sum(v) / len(v) for key, v in sums.items()}


def fne_summary(miner: nn.Module, device: torch.device) -> dict[str, torch.Tensor]:
    """Gaussian parameters and counts of FNE's statistics (zeros before any observation)."""
    if not isinstance(miner, FNEMiner):
        return {}
    stats = miner.stats
    pos, neg = stats.pos_count, stats.neg_count
    mu_p, var_p = stats.pos_moments if pos > 1 else (0.0, 0.0)
    mu_n, var_n = stats.neg_moments if neg > 1 else (0.0, 0.0)
    values = {
        "fne/pos_count": pos,
        "fne/neg_count": neg,
        "fne/pos_mean": mu_p,
        "fne/pos_std": var_p**0.5,
        "fne/neg_mean": mu_n,
        "fne/neg_std": var_n**0.5,
        "fne/ready": float(miner.ready),
    }
    return {k: torch.tensor(float(v), device=device) for k, v in values.items()}


__all__ = ["fne_draw_metrics", "fne_summary", "mining_metrics", "phase_means"]
