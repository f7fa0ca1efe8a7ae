"""One item per (caption, image) pair, with the image's region features."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import torch
from torch.utils.data import Dataset, Sampler

from tags.core.regions import (
    CachedRegions,
    MissingFeaturesError,
    NpzRegions,
    RegionStore,
    open_regions,
)
from tags.core.types import Caption, ImageGroup
from tags.data.captions import check_alignment, load_image_groups


class ImageTextDataset(Dataset):
    """Caption-level dataset over image groups.

    Args:
        groups: image groups (all captions of an image are positives of it).
        regions: region features per image (``.npz`` directory or precomp ``_ims.npy``;
            precomp has no boxes, so every region gets the whole-image box).
        tokenizer: fast tokenizer; captions are truncated to ``max_text_len`` tokens.
        max_regions: keep the first ``max_regions`` regions of each image.
        cache_bytes: region features read are kept in memory up to this size
            (:class:`~tags.core.regions.CachedRegions`; 0: read every time).

    ``image_index`` is a dense 0-based image index (the miners' image ids).
    """

    def __init__(
        self,
        groups: Sequence[ImageGroup],
        regions: RegionStore,
        tokenizer: Any,
        max_text_len: int = 40,
        max_regions: int | None = None,
        cache_bytes: int = 1 << 30,
    ) -> None:
        self.groups = list(groups)
        self.regions = CachedRegions(regions, cache_bytes) if regions and cache_bytes else regions
        self.tokenizer = tokenizer
        self.max_text_len = max_text_len
        self.max_regions = max_regions
        self.pairs: list[tuple[int, Caption]] = [
            (g_index, caption) for g_index, g in enumerate(self.groups) for caption in g.captions
        ]
        self.image_of = torch.tensor([g for g, _ in self.pairs], dtype=torch.long)
        self._tokens: dict[int, tuple[int, ...]] = {}

    def __len__(self) -> int:
        return len(self.pairs)

    @property
    def num_images(self) -> int:
        return len(self.groups)

    @property
    def feature_size(self) -> int:
        return int(self.image(0)[0].shape[-1])

    def text(self, index: int) -> str:
        return self.pairs[index][1].text

    def other_captions(self, index: int) -> list[str]:
        """The other annotated captions of the pair's image (false-negative filter)."""
        g_index, caption = self.pairs[index]
        return [c.text for c in self.groups[g_index].captions if c.caption_id != caption.caption_id]

    def tokens(self, index: int) -> list[int]:
        """Token ids of pair ``index`` (tokenized once, then cached)."""
        ids = self._tokens.get(index)
        if ids is None:
            enc = self.tokenizer(self.text(index), truncation=True, max_length=self.max_text_len)
            ids = self._tokens[index] = tuple(enc["input_ids"])
        return list(ids)

    def image(self, image_index: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(features [R, D], boxes [R, 7])`` of a dense image index."""
        group = self.groups[image_index]
        regions = self.regions.get(group.image_id, group.filename, position=image_index)
        feats = torch.from_numpy(regions.features.copy()).float()
        boxes = torch.from_numpy(regions.boxes.copy()).float()
        if self.max_regions is not None:
            feats, boxes = feats[: self.max_regions], boxes[: self.max_regions]
        return feats, boxes

    def __getitem__(self, index: int) -> dict[str, Any]:
        g_index, caption = self.pairs[index]
        feats, boxes = self.image(g_index)
        return {
            "index": index,
            "image_index": g_index,
            "caption_id": caption.caption_id,
            "text": caption.text,
            "input_ids": self.tokens(index),
            "features": feats,
            "boxes": boxes,
        }


class EpochSampler(Sampler[int]):
    """A seeded permutation per epoch: ``set_epoch(e)`` makes epoch ``e``'s order a pure
    function of ``(seed, e)``, so resuming with ``skip_first_batches`` replays it exactly."""

    def __init__(self, length: int, seed: int = 0, shuffle: bool = True) -> None:
        self.length = length
        self.seed = seed
        self.shuffle = shuffle
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return self.length

    def __iter__(self) -> Iterator[int]:
        if not self.shuffle:
            return iter(range(self.length))
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        return iter(torch.randperm(self.length, generator=g).tolist())


def check_feature_files(groups: Sequence[ImageGroup], regions: RegionStore) -> None:
    """Every image of ``groups`` has its ``.npz`` file (one ``stat`` each; a precomp array's
    rows are checked by :func:`~tags.data.captions.check_alignment`), else a
    :class:`MissingFeaturesError` naming how many are missing and the first."""
    if not isinstance(regions, NpzRegions):
        return
    missing: list[str] = []
    for group in groups:
        try:
            regions.path(group.image_id, group.filename)
        except MissingFeaturesError as err:
            missing.append(str(err))
    if missing:
        raise MissingFeaturesError(
            f"{len(missing)} of {len(groups)} images have no features file, e.g. {missing[0]}: "
            "extract their features or drop them from the captions"
        )


def build_dataset(data_config: Any, tokenizer: Any) -> ImageTextDataset:
    """An :class:`ImageTextDataset` from a :class:`~tags.training.config.DataConfig`."""
    fmt = None if data_config.format == "auto" else data_config.format
    regions = open_regions(data_config.features)
    check_alignment(data_config.captions, fmt, regions)  # names both counts
    groups = load_image_groups(
        data_config.captions, fmt, data_config.split, data_config.limit_images
    )
    check_feature_files(groups, regions)
    return ImageTextDataset(
        groups,
        regions,
        tokenizer,
        max_text_len=data_config.max_text_len,
        max_regions=data_config.max_regions,
    )


__all__ = ["EpochSampler", "ImageTextDataset", "build_dataset", "check_feature_files"]
