"""FNE momentum memory: an EMA copy of an encoder and a ring-buffer queue of its features."""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn

from tags.core.distributed import all_gather_no_grad

__all__ = ["FeatureQueue", "MomentumEncoder"]


class MomentumEncoder(nn.Module):
    """Exponential-moving-average copy of an encoder (MoCo/ALBEF/FNE style).

    ``update(online)`` sets ``theta_m <- m * theta_m + (1 - m) * theta`` for every parameter and
    copies floating buffers; the copy never receives gradients. ``forward`` runs the copy under
    ``torch.no_grad``. Pass the unwrapped online module (not the DDP wrapper).
    """

    def __init__(self, encoder: nn.Module, momentum: float = 0.995) -> None:
        super().__init__()
        if not 0.0 <= momentum <= 1.0:
            raise ValueError("momentum must lie in [0, 1]")
        self.momentum = float(momentum)
        self.module = copy.deepcopy(encoder)
        for p in self.module.parameters():
            p.requires_grad_(False)

    @torch.no_grad()
    def update(self, encoder: nn.Module) -> None:
        """One EMA step towards ``encoder`` (same architecture as the copy)."""
        m = self.momentum
        for p_m, p in zip(self.module.parameters(), encoder.parameters(), strict=True):
            p_m.mul_(m).add_(p.detach(), alpha=1.0 - m)
        for b_m, b in zip(self.module.buffers(), encoder.buffers(), strict=True):
            b_m.copy_(b)

    @torch.no_grad()
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)


class FeatureQueue(nn.Module):
    """Ring buffer of momentum features of both modalities with their image ids.

    The size is fixed (paper: 8192) and independent of the batch size: a batch that wraps
    around the end is split, one larger than the queue keeps its last ``size`` rows. When
    distributed, :meth:`enqueue` first gathers the keys of every rank (rank order), so all
    ranks hold the same queue. Everything, pointer included, lives in buffers and therefore in
    ``state_dict`` for exact resumption.
    """

    def __init__(
        self, image_dim: int | tuple[int, ...], text_dim: int | None = None, size: int = 8192
    ) -> None:
        """``image_dim``: an image feature's size, or its shape (BLIP-2: ``(queries, D)``)."""
        super().__init__()
        if size < 1:
            raise ValueError("size must be >= 1")
        self.size = int(size)
        image_shape = (image_dim,) if isinstance(image_dim, int) else tuple(image_dim)
        self.register_buffer("image_feats", torch.zeros(size, *image_shape))
        self.register_buffer("text_feats", torch.zeros(size, text_dim or image_shape[-1]))
        self.register_buffer("image_ids", torch.full((size,), -1, dtype=torch.long))
        self.register_buffer("ptr", torch.zeros((), dtype=torch.long))
        self.register_buffer("filled", torch.zeros((), dtype=torch.long))

    def __len__(self) -> int:
        return int(self.filled)

    @torch.no_grad()
    def enqueue(
        self,
        image_feats: torch.Tensor,
        text_feats: torch.Tensor,
        image_ids: torch.Tensor | list[int],
    ) -> None:
        """Write a batch (gathered over ranks) at the pointer, overwriting the oldest rows."""
        ids = torch.as_tensor(image_ids, device=self.image_ids.device).reshape(-1)
        img = all_gather_no_grad(image_feats.detach().to(self.image_feats))
        txt = all_gather_no_grad(text_feats.detach().to(self.text_feats))
        ids = all_gather_no_grad(ids.long())
        if not img.shape[0] == txt.shape[0] == ids.shape[0]:
            raise ValueError("image_feats, text_feats and image_ids must have the same length")
        n = img.shape[0]
        if n > self.size:
            img, txt, ids = img[-self.size :], txt[-self.size :], ids[-self.size :]
            n = self.size
        slots = (int(self.ptr) + torch.arange(n, device=ids.device)) % self.size
        self.image_feats[slots] = img
        self.text_feats[slots] = txt
        self.image_ids[slots] = ids
        self.ptr.fill_((int(self.ptr) + n) % self.size)
        self.filled.fill_(min(int(self.filled) + n, self.size))

    def contents(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(image_feats, text_feats, image_ids)`` of the filled rows, oldest first."""
        n = int(self.filled)
        start = int(self.ptr) if n == self.size else 0
        order = (start + torch.arange(n, device=self.image_ids.device)) % self.size
        return self.image_feats[order], self.text_feats[order], self.image_ids[order]

    def extend(
        self, batch_feats: torch.Tensor, batch_ids: torch.Tensor, modality: str
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Candidates = batch momentum features followed by the queue (``modality`` is
        ``"image"`` or ``"text"``), with their image ids."""
        img, txt, ids = self.contents()
        queued = {"image": img, "text": txt}[modality]
        feats = torch.cat([batch_feats, queued.to(batch_feats)], dim=0)
        return feats, torch.cat([batch_ids.reshape(-1).to(ids), ids], dim=0)

    def extra_repr(self) -> str:
        return f"size={self.size}, filled={int(self.filled)}"
