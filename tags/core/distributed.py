"""Process-group helpers that are no-ops in a single process.

``gather_with_grad`` is the autograd-aware all-gather needed for in-batch negatives across
processes (``accelerator.gather`` and ``torch.distributed.all_gather`` cut the graph). It plays
the role of open_clip's ``gather_features(..., gather_with_grad=True)``: the forward concatenates
every rank's tensor along dim 0, the backward sums the incoming gradient over ranks and hands
each rank the slice of its own input, so the gradient of ``sum_r loss_r`` reaches every input.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

__all__ = [
    "all_gather_no_grad",
    "all_reduce_sum",
    "collective_device",
    "gather_sizes",
    "gather_with_grad",
    "get_rank",
    "get_world_size",
    "is_distributed",
]


def is_distributed() -> bool:
    """True when a default process group exists and has more than one process."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def get_world_size() -> int:
    """Number of processes (1 without a process group)."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def get_rank() -> int:
    """Rank of this process (0 without a process group)."""
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def gather_sizes(n: int, device: torch.device | str = "cpu") -> list[int]:
    """First-dimension size of every rank's tensor (``[n]`` when not distributed)."""
    if not is_distributed():
        return [n]
    size = torch.tensor([n], dtype=torch.long, device=device)
    sizes = [torch.zeros_like(size) for _ in range(get_world_size())]
    dist.all_gather(sizes, size)
    return [int(s.item()) for s in sizes]


def _gather_padded(x: torch.Tensor, sizes: list[int]) -> torch.Tensor:
    """All-gather ``x`` (first dims may differ between ranks) and concatenate on dim 0."""
    max_n = max(sizes)
    if x.shape[0] < max_n:
        pad = x.new_zeros((max_n - x.shape[0], *x.shape[1:]))
        x = torch.cat([x, pad], dim=0)
    out = [torch.empty_like(x) for _ in sizes]
    dist.all_gather(out, x.contiguous())
    return torch.cat([o[:n] for o, n in zip(out, sizes)], dim=0)


def all_gather_no_grad(x: torch.Tensor) -> torch.Tensor:
    """Concatenate every rank's ``x`` on dim 0 without a gradient path (e.g. queue keys, ids)."""
    if not is_distributed():
        return x
    with torch.no_grad():
        return _gather_padded(x.detach(), gather_sizes(x.shape[0], x.device))


class _GatherWithGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        sizes = gather_sizes(x.shape[0], x.device)
        rank = get_rank()
        ctx.start = sum(sizes[:rank])
        ctx.n = x.shape[0]
        return _gather_padded(x, sizes)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        grad = grad.contiguous().clone()
        dist.all_reduce(grad, op=dist.ReduceOp.SUM)
        return grad[ctx.start : ctx.start + ctx.n]


def gather_with_grad(x: torch.Tensor) -> torch.Tensor:
    """All-gather along dim 0 keeping the autograd graph (identity when not distributed).

    Ranks may hold different first-dimension sizes. The result is ordered by rank.
    """
    if not is_distributed():
        return x
    return _GatherWithGrad.apply(x)


def collective_device(x: torch.Tensor) -> torch.device:
    """Where ``x`` must live for a collective: NCCL reduces CUDA tensors only, so a CPU
    tensor (e.g. statistics of a module left on the CPU) goes to the current GPU."""
    if x.device.type == "cpu" and is_distributed() and dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return x.device


def all_reduce_sum(x: torch.Tensor) -> torch.Tensor:
    """Sum ``x`` over ranks, returning a new tensor on ``x``'s device (a copy of ``x`` when
    not distributed). Works for CPU tensors under NCCL too (reduced on the current GPU)."""
    out = x.detach().clone()
    if is_distributed():
        device = collective_device(out)
        moved = out.to(device)
        dist.all_reduce(moved, op=dist.ReduceOp.SUM)
        out = moved.to(x.device)
    return out
