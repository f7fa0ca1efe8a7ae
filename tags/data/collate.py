"""Padding helpers and the pair collator (right-padded text, padded regions, masks)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from tags.modeling.padding import pad_regions, pad_text


class PairCollator:
    """Items of :class:`~tags.data.dataset.ImageTextDataset` -> one batch dict.

    Tensors: ``input_ids``, ``attention_mask`` ``[B, L]``; ``region_features`` ``[B, R, D]``,
    ``region_boxes`` ``[B, R, 7]``, ``region_mask`` ``[B, R]``; ``image_ids`` ``[B]`` (dense
    image index) and ``index`` ``[B]`` (dataset index). Lists: ``texts``, ``caption_ids``.
    """

    def __init__(self, pad_token_id: int = 0) -> None:
        self.pad_token_id = pad_token_id

    def __call__(self, items: Sequence[dict[str, Any]]) -> dict[str, Any]:
        input_ids, attention = pad_text([it["input_ids"] for it in items], self.pad_token_id)
        feats, boxes, mask = pad_regions(
            [it["features"] for it in items], [it["boxes"] for it in items]
        )
        return {
            "input_ids": input_ids,
            "attention_mask": attention,
            "region_features": feats,
            "region_boxes": boxes,
            "region_mask": mask,
            "image_ids": torch.tensor([it["image_index"] for it in items], dtype=torch.long),
            "index": torch.tensor([it["index"] for it in items], dtype=torch.long),
            "texts": [it["text"] for it in items],
            "caption_ids": [it["caption_id"] for it in items],
        }


__all__ = ["PairCollator", "pad_regions", "pad_text"]
