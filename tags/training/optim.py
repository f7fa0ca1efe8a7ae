"""Optimizer (Adam/AdamW, no decay on biases and LayerNorm) and the phase-aware schedule."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn


def create_optimizer(module: nn.Module, config: Any) -> torch.optim.Optimizer:
    """``config``: :class:`~tags.training.config.OptimConfig` (``adam``: L2 weight decay as
    torch's Adam, ``adamw``: decoupled; ``sgd``: plain, mainly for exactness tests, where
    Adam's normalisation would hide a wrongly scaled gradient). The learning rate is set by
    :func:`create_scheduler` (the base lr is 1, the schedule gives the absolute value)."""
    decay, no_decay = [], []
    for name, p in module.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if p.ndim < 2 or "LayerNorm" in name or name.endswith("bias") else decay).append(
            p
        )
    groups = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    if config.optimizer == "sgd":  # plain SGD: updates proportional to gradients (tests)
        return torch.optim.SGD(groups, lr=1.0)
    cls = torch.optim.AdamW if config.optimizer == "adamw" else torch.optim.Adam
    return cls(groups, lr=1.0, betas=tuple(config.betas), eps=config.eps)


def phase_bounds(steps: Sequence[int]) -> list[tuple[int, int]]:
    """``[(start, end), ...]`` global optimizer-step ranges of the phases."""
    out, start = [], 0
    for n in steps:
        out.append((start, start + n))
        start += n
    return out


def phase_of(step: int, steps: Sequence[int]) -> int:
    """Index of the phase that global step ``step`` belongs to (the last one past the end)."""
    for i, (_, end) in enumerate(phase_bounds(steps)):
        if step < end:
            return i
    return len(steps) - 1


def learning_rate(step: int, phases: Sequence[Any], warmup_ratio: float) -> float:
    """Linear warm-up over ``warmup_ratio`` of each phase to its ``lr``, then linear decay
    to 0 at the phase end (restarting in every phase, as each TAGS-DC phase is its own run)."""
    steps = [p.steps for p in phases]
    index = phase_of(step, steps)
    start, end = phase_bounds(steps)[index]
    lr, n = phases[index].lr, end - start
    local = min(step - start, n)
    warmup = int(warmup_ratio * n)
    if warmup and local < warmup:
        return lr * (local + 1) / (warmup + 1)
    return lr * max(0.0, (n - local) / max(1, n - warmup))


def create_scheduler(
    optimizer: torch.optim.Optimizer, phases: Sequence[Any], warmup_ratio: float
) -> torch.optim.lr_scheduler.LambdaLR:
    """``LambdaLR`` whose factor is the absolute lr (the optimizer's base lr is 1)."""
    phases = list(phases)
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: learning_rate(step, phases, warmup_ratio)
    )


__all__ = ["create_optimizer", "create_scheduler", "learning_rate", "phase_bounds", "phase_of"]
