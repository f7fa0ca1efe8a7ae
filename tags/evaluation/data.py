"""Minimal in-memory evaluation sets: the images (padded regions) and the texts (tokens).

Both are plain tensors on the CPU; the scoring functions move one chunk at a time to the
model's device. Any reader can build them (see :mod:`tags.evaluation.io` for files).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from tags.modeling.embeddings import expand_boxes

Index = Sequence[int] | np.ndarray | torch.Tensor | slice


def _index(index: Index) -> slice | torch.Tensor:
    if isinstance(index, slice):
        return index
    return torch.as_tensor(np.asarray(index, dtype=np.int64))


def _pick(values: list[Any] | None, index: slice | torch.Tensor) -> list[Any] | None:
    if values is None:
        return None
    if isinstance(index, slice):
        return values[index]
    return [values[i] for i in index.tolist()]


def _used(mask: torch.Tensor) -> int:
    """Length up to the last position any row uses (drops all-padding columns)."""
    used = torch.nonzero(mask.any(dim=0)).flatten()
    return int(used.max()) + 1 if used.numel() else mask.shape[1]


@dataclass
class RetrievalImages:
    """``N`` images as padded region sets.

    Attributes:
        features: ``[N, R, D]`` region features.
        boxes: ``[N, R, 4]`` or ``[N, R, 7]`` normalised boxes (stored as 7-d).
        mask: ``[N, R]`` 1 for real regions, 0 for padding (default: all ones).
        ids: optional image ids, for reports.
    """

    features: torch.Tensor
    boxes: torch.Tensor
    mask: torch.Tensor | None = None
    ids: list[Any] | None = None

    def __post_init__(self) -> None:
        self.features = torch.as_tensor(self.features)
        self.boxes = expand_boxes(torch.as_tensor(self.boxes, dtype=self.features.dtype))
        if self.features.ndim != 3 or self.boxes.shape[:2] != self.features.shape[:2]:
            raise ValueError(
                f"features [N, R, D] and boxes [N, R, 4|7] disagree: "
                f"{tuple(self.features.shape)} vs {tuple(self.boxes.shape)}"
            )
        if self.mask is None:
            self.mask = torch.ones(self.features.shape[:2], dtype=torch.long)
        self.mask = torch.as_tensor(self.mask).long()
        if self.mask.shape != self.features.shape[:2]:
            raise ValueError(f"mask shape {tuple(self.mask.shape)} != [N, R] of the features")
        if self.ids is not None and len(self.ids) != len(self):
            raise ValueError(f"{len(self.ids)} ids for {len(self)} images")

    def __len__(self) -> int:
        return self.features.shape[0]

    def batch(self, index: torch.Tensor, device: torch.device | str) -> dict[str, torch.Tensor]:
        """Backend image batch of the images at ``index`` (padding regions trimmed)."""
        mask = self.mask[index]
        regions = _used(mask)
        return {
            "region_features": self.features[index, :regions].to(device),
            "region_boxes": self.boxes[index, :regions].to(device),
            "region_mask": mask[:, :regions].to(device),
        }

    def select(self, index: Index) -> RetrievalImages:
        """The images at ``index`` (a slice or integer positions), in that order."""
        i = _index(index)
        return RetrievalImages(self.features[i], self.boxes[i], self.mask[i], _pick(self.ids, i))

    @classmethod
    def from_regions(
        cls,
        features: Sequence[Any],
        boxes: Sequence[Any],
        ids: list[Any] | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> RetrievalImages:
        """Pad per-image ``[R_i, D]`` features and ``[R_i, 4|7]`` boxes into one set."""
        if len(features) != len(boxes) or not features:
            raise ValueError(f"need as many box sets as feature sets (>0), got {len(features)}")
        feats = [torch.tensor(np.asarray(f), dtype=dtype) for f in features]
        bxs = [expand_boxes(torch.tensor(np.asarray(b), dtype=dtype)) for b in boxes]
        size = max(f.shape[0] for f in feats)
        out_f = torch.zeros(len(feats), size, feats[0].shape[1], dtype=dtype)
        out_b = torch.zeros(len(feats), size, 7, dtype=dtype)
        mask = torch.zeros(len(feats), size, dtype=torch.long)
        for n, (f, b) in enumerate(zip(feats, bxs)):
            if f.ndim != 2 or b.shape[0] != f.shape[0] or f.shape[1] != out_f.shape[2]:
                raise ValueError(f"image {n}: features {tuple(f.shape)}, boxes {tuple(b.shape)}")
            out_f[n, : f.shape[0]], out_b[n, : f.shape[0]], mask[n, : f.shape[0]] = f, b, 1
        return cls(out_f, out_b, mask, ids)


@dataclass
class RetrievalTexts:
    """``T`` tokenized captions and the image each belongs to.

    Attributes:
        input_ids: ``[T, L]`` right-padded token ids.
        attention_mask: ``[T, L]`` (default: all ones).
        txt2img: ``[T]`` row of each caption's image in the matching :class:`RetrievalImages`.
        captions: optional raw captions, for reports.
    """

    input_ids: torch.Tensor
    txt2img: torch.Tensor
    attention_mask: torch.Tensor | None = None
    captions: list[str] | None = None

    def __post_init__(self) -> None:
        self.input_ids = torch.as_tensor(self.input_ids).long()
        self.txt2img = torch.as_tensor(np.asarray(self.txt2img), dtype=torch.long).reshape(-1)
        if self.attention_mask is None:
            self.attention_mask = torch.ones_like(self.input_ids)
        self.attention_mask = torch.as_tensor(self.attention_mask).long()
        if self.input_ids.ndim != 2 or self.attention_mask.shape != self.input_ids.shape:
            raise ValueError(
                f"input_ids {tuple(self.input_ids.shape)} and attention_mask "
                f"{tuple(self.attention_mask.shape)} must both be [T, L]"
            )
        if self.txt2img.shape[0] != len(self):
            raise ValueError(f"txt2img has {self.txt2img.shape[0]} entries for {len(self)} texts")
        if self.captions is not None and len(self.captions) != len(self):
            raise ValueError(f"{len(self.captions)} captions for {len(self)} texts")

    def __len__(self) -> int:
        return self.input_ids.shape[0]

    def batch(self, index: torch.Tensor, device: torch.device | str) -> dict[str, torch.Tensor]:
        """Backend text batch of the texts at ``index`` (padding columns trimmed)."""
        mask = self.attention_mask[index]
        length = _used(mask)
        return {
            "input_ids": self.input_ids[index, :length].to(device),
            "attention_mask": mask[:, :length].to(device),
        }

    def select(self, index: Index) -> RetrievalTexts:
        """The texts at ``index``, in that order (``txt2img`` values unchanged)."""
        i = _index(index)
        return RetrievalTexts(
            self.input_ids[i], self.txt2img[i], self.attention_mask[i], _pick(self.captions, i)
        )

    @classmethod
    def from_captions(
        cls,
        tokenizer: Any,
        captions: Sequence[str],
        txt2img: Sequence[int],
        max_length: int | None = None,
    ) -> RetrievalTexts:
        """Tokenize ``captions`` (right padding, truncation to ``max_length``)."""
        tokens = tokenizer(
            list(captions),
            padding=True,
            truncation=max_length is not None,
            max_length=max_length,
            return_tensors="pt",
        )
        return cls(tokens["input_ids"], txt2img, tokens["attention_mask"], list(captions))


def image_subset(
    images: RetrievalImages, texts: RetrievalTexts, image_index: Index
) -> tuple[RetrievalImages, RetrievalTexts]:
    """Images at ``image_index`` with exactly their captions; ``txt2img`` is renumbered to
    the new image rows (texts keep their relative order)."""
    i = _index(image_index)
    rows = torch.arange(len(images))[i]
    new_row = torch.full((len(images),), -1, dtype=torch.long)
    new_row[rows] = torch.arange(rows.numel())
    keep = torch.nonzero(new_row[texts.txt2img] >= 0).flatten()
    sub = texts.select(keep)
    sub.txt2img = new_row[sub.txt2img]
    return images.select(rows), sub


__all__ = ["RetrievalImages", "RetrievalTexts", "image_subset"]
