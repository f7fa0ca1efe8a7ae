"""Turn score matrices into (scores, positive, negative_mask) per retrieval direction.

Pairs that share an image id are never negatives of each other: every caption of an image is
a positive of that image (multiple captions per image, see DESIGN.md).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

__all__ = ["BatchPairs", "DirectionPairs", "batch_pairs", "direction_pairs"]


class DirectionPairs(NamedTuple):
    """Miner inputs for one direction: ``scores`` [A, C], ``positive`` [A], ``negative_mask`` [A, C]."""

    scores: torch.Tensor
    positive: torch.Tensor
    negative_mask: torch.Tensor


class BatchPairs(NamedTuple):
    """Both directions of a batch: image->text (rows) and text->image (columns)."""

    i2t: DirectionPairs
    t2i: DirectionPairs


def _as_ids(ids: torch.Tensor | list[int], device: torch.device) -> torch.Tensor:
    return torch.as_tensor(ids, device=device).reshape(-1)


def direction_pairs(
    scores: torch.Tensor,
    positive_index: torch.Tensor,
    anchor_ids: torch.Tensor | list[int],
    candidate_ids: torch.Tensor | list[int],
) -> DirectionPairs:
    """General case: anchors ``[A]`` against candidates ``[C]`` (e.g. local rows vs gathered
    columns plus a memory queue).

    Args:
        scores: ``[A, C]`` anchor-by-candidate similarities.
        positive_index: ``[A]`` column of each anchor's own positive pair.
        anchor_ids / candidate_ids: image id of each anchor / candidate; a candidate is a
            negative iff its image id differs from the anchor's.
    """
    a_ids = _as_ids(anchor_ids, scores.device)
    c_ids = _as_ids(candidate_ids, scores.device)
    if scores.shape != (a_ids.numel(), c_ids.numel()):
        raise ValueError(
            f"scores {tuple(scores.shape)} do not match ids ({a_ids.numel()}, {c_ids.numel()})"
        )
    positive_index = torch.as_tensor(positive_index, device=scores.device).reshape(-1, 1)
    positive = scores.gather(1, positive_index).squeeze(1)
    negative_mask = a_ids[:, None] != c_ids[None, :]
    return DirectionPairs(scores, positive, negative_mask)


def batch_pairs(similarity: torch.Tensor, image_ids: torch.Tensor | list[int]) -> BatchPairs:
    """Both directions of a square batch matrix.

    Args:
        similarity: ``S`` ``[B, B]``, ``S[i, j]`` = score of the image of pair ``i`` with the
            caption of pair ``j``; the diagonal holds the positive pairs.
        image_ids: ``[B]`` image id of each pair (captions of one image share it).

    Returns:
        ``BatchPairs(i2t, t2i)``: i2t anchors are the rows (images), t2i anchors the columns
        (captions, i.e. ``S.T``). Positives are the diagonal in both directions.
    """
    if similarity.dim() != 2 or similarity.shape[0] != similarity.shape[1]:
        raise ValueError(f"similarity must be square, got {tuple(similarity.shape)}")
    ids = _as_ids(image_ids, similarity.device)
    if ids.numel() != similarity.shape[0]:
        raise ValueError("image_ids must have one entry per pair")
    positive = similarity.diagonal()
    negative_mask = ids[:, None] != ids[None, :]
    i2t = DirectionPairs(similarity, positive, negative_mask)
    t2i = DirectionPairs(similarity.t(), positive, negative_mask.t())
    return BatchPairs(i2t, t2i)
