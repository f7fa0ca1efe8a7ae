"""Region features from pixels (the testbed's ``pixels`` perception).

The batch builders (worker processes included) render each scene
(:func:`tags.benchmark.render.render_scene`) and crop each object's box
(:func:`tags.benchmark.features.crop_regions`): :class:`PixelCrops`. The model's frozen CNN
(:class:`FrozenCNN`: EfficientNet-Lite0's ImageNet features when its weights package is
installed, else a seeded random CNN, as :func:`tags.benchmark.features.make_featurizer`
chooses) turns the crops into one vector per object on the training device, once per batch
(:func:`pixel_features`). Only pixels go in: which words name a region must be learned from
them, as for a detector's features.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from tags.benchmark.scenes import Scene


@dataclass(frozen=True)
class PixelCrops:
    """``scenes`` -> uint8 ``[S, max_regions, crop, crop, 3]`` crops of each object's box
    (zeros where a scene has fewer objects)."""

    crop_size: int = 64
    max_regions: int = 4

    def __call__(self, scenes: Sequence[Scene]) -> np.ndarray:
        from tags.benchmark.features import crop_regions, region_boxes
        from tags.benchmark.render import render_scene

        c = self.crop_size
        out = np.zeros((len(scenes), self.max_regions, c, c, 3), np.uint8)
        for i, scene in enumerate(scenes):
            boxes = region_boxes(scene, whole_image=False)[: self.max_regions]
            out[i, : len(boxes)] = crop_regions(render_scene(scene), boxes, c)
        return out


class FrozenCNN(nn.Module):
    """A frozen CNN over uint8 crops ``[..., H, W, 3]`` -> ``[..., dim]`` (kept in eval mode;
    no gradients). ``name``: ``efficientnet``, ``random-conv`` or ``auto``."""

    def __init__(self, name: str = "auto") -> None:
        super().__init__()
        from tags.benchmark.efficientnet import MEAN, STD, packaged_weights
        from tags.benchmark.features import EfficientNetFeaturizer, RandomConvFeaturizer

        if name == "efficientnet" or (name == "auto" and packaged_weights() is not None):
            featurizer = EfficientNetFeaturizer(optimize=False)  # eager: movable to a GPU
        else:
            featurizer = RandomConvFeaturizer()
        self.net: nn.Module = featurizer.module
        self.dim, self.name = featurizer.dim, featurizer.name
        self.mean, self.std = MEAN, STD
        self.requires_grad_(False)
        self.eval()

    def train(self, mode: bool = True) -> FrozenCNN:
        return super().train(False)  # batch norms keep their ImageNet statistics

    @torch.no_grad()
    def forward(self, crops: torch.Tensor, chunk: int = 1024) -> torch.Tensor:
        lead = crops.shape[:-3]
        x = crops.reshape(-1, *crops.shape[-3:])
        out = []
        for start in range(0, x.shape[0], chunk):
            part = x[start : start + chunk].permute(0, 3, 1, 2).float() / 255.0
            out.append(self.net((part - self.mean) / self.std).float())
        return torch.cat(out).reshape(*lead, self.dim)


def pixel_features(cnn: FrozenCNN, crops, device) -> torch.Tensor:
    """The CNN's features of ``crops`` (uint8 array or tensor) on ``device``."""
    return cnn(torch.as_tensor(crops).to(device))


__all__ = ["FrozenCNN", "PixelCrops", "pixel_features"]
