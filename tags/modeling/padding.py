"""Padding of model inputs: token id lists and region sets to rectangular batches.

May import: torch only.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def pad_text(
    sequences: Sequence[Sequence[int] | torch.Tensor], pad_token_id: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad token id lists to ``input_ids [N, L]`` and ``attention_mask [N, L]``."""
    rows = [torch.as_tensor(s, dtype=torch.long) for s in sequences]
    length = max((r.numel() for r in rows), default=1)
    input_ids = torch.full((len(rows), length), pad_token_id, dtype=torch.long)
    attention = torch.zeros((len(rows), length), dtype=torch.long)
    for i, r in enumerate(rows):
        input_ids[i, : r.numel()] = r
        attention[i, : r.numel()] = 1
    return input_ids, attention


def pad_regions(
    features: Sequence[torch.Tensor], boxes: Sequence[torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Stack ``[R_i, D]`` / ``[R_i, 7]`` into ``[N, R, D]``, ``[N, R, 7]`` and ``region_mask``.

    Padded boxes are zeros (inside [0, 1]); the mask hides them from attention."""
    count = max(f.shape[0] for f in features)
    out_f = features[0].new_zeros(len(features), count, features[0].shape[-1])
    out_b = boxes[0].new_zeros(len(boxes), count, boxes[0].shape[-1])
    mask = torch.zeros(len(features), count, dtype=torch.long)
    for i, (f, b) in enumerate(zip(features, boxes)):
        out_f[i, : f.shape[0]] = f
        out_b[i, : b.shape[0]] = b
        mask[i, : f.shape[0]] = 1
    return out_f, out_b, mask


__all__ = ["pad_regions", "pad_text"]
