"""The benchmark's build arguments (torch-free, so the CLI parser stays light)."""

from __future__ import annotations

import math
from dataclasses import dataclass

SPLITS: tuple[str, ...] = ("train", "val", "test")
FEATURIZERS: tuple[str, ...] = ("auto", "efficientnet", "random")
# minimal-pair samplers (see tags.benchmark.minimal_pairs); kept here so the CLI stays light
PAIR_SAMPLERS: tuple[str, ...] = ("balanced", "uniform")
#: the half side of the smallest shape, as a fraction of the image side (tags.benchmark.scenes)
SMALLEST_RADIUS = 0.06
#: pixels across the smallest shape must span at least (below that shapes are not told apart)
MIN_SHAPE_PIXELS = 6
#: the smallest image side whose smallest shape spans MIN_SHAPE_PIXELS
MIN_IMAGE_SIZE = math.ceil(MIN_SHAPE_PIXELS / (2 * SMALLEST_RADIUS))


@dataclass(frozen=True)
class BenchmarkConfig:
    """Everything that decides the output (the cache key)."""

    train: int = 2000
    val: int = 500
    test: int = 500
    seed: int = 0
    image_size: int = 192
    crop_size: int = 64
    min_objects: int = 2
    max_objects: int = 4
    captions_per_image: int = 5
    pairs_per_type: int = 1
    whole_image: bool = True
    save_images: bool = False
    featurizer: str = "auto"
    pair_sampler: str = "balanced"

    def __post_init__(self) -> None:
        if min(self.train, self.val, self.test) < 0 or self.train + self.val + self.test == 0:
            raise ValueError("split sizes must be >= 0 and not all zero")
        if not 2 <= self.min_objects <= self.max_objects <= 4:
            raise ValueError("objects per image: need 2 <= min_objects <= max_objects <= 4")
        if self.image_size < MIN_IMAGE_SIZE:
            across = 2 * SMALLEST_RADIUS * self.image_size
            raise ValueError(
                f"image_size {self.image_size} is too small: the smallest shape would span "
                f"{across:.2g} pixels; need image_size >= {MIN_IMAGE_SIZE} (the smallest shape "
                f"{MIN_SHAPE_PIXELS} pixels or more)"
            )
        if not 32 <= self.crop_size <= 224:
            raise ValueError("crop_size must lie in [32, 224]")
        if self.pairs_per_type < 1:
            raise ValueError(f"pairs_per_type must be >= 1, got {self.pairs_per_type}")
        if self.pair_sampler not in PAIR_SAMPLERS:
            raise ValueError(
                f"pair_sampler must be one of {', '.join(PAIR_SAMPLERS)}, got {self.pair_sampler!r}"
            )

    def split_of(self, image_id: int) -> str:
        if image_id < self.train:
            return "train"
        return "val" if image_id < self.train + self.val else "test"

    @property
    def num_images(self) -> int:
        return self.train + self.val + self.test


__all__ = [
    "FEATURIZERS",
    "MIN_IMAGE_SIZE",
    "PAIR_SAMPLERS",
    "SMALLEST_RADIUS",
    "SPLITS",
    "BenchmarkConfig",
]
