"""Region features from pixels: crop each object's box (and optionally the whole image),
resize, and run a frozen CNN. Only pixels go in; labels never reach the features."""

from __future__ import annotations

import itertools
import warnings
from typing import Protocol

import numpy as np
import torch
from PIL import Image
from torch import nn

from tags.benchmark.config import FEATURIZERS
from tags.benchmark.efficientnet import MEAN, STD, load_efficientnet_lite0, packaged_weights
from tags.benchmark.scenes import Scene


class Featurizer(Protocol):
    """``crops`` uint8 ``[N, H, W, 3]`` -> float32 ``[N, dim]``."""

    name: str
    dim: int

    def __call__(self, crops: np.ndarray) -> np.ndarray: ...


def region_boxes(scene: Scene, whole_image: bool = True) -> np.ndarray:
    """Pixel boxes ``[R, 4]`` ``(x1, y1, x2, y2)``: one per object, then the whole image."""
    boxes = [obj.box for obj in scene.objects]
    if whole_image:
        boxes.append((0.0, 0.0, float(scene.width), float(scene.height)))
    out = np.asarray(boxes, dtype=np.float32).reshape(-1, 4)
    return np.clip(out, 0, np.array([scene.width, scene.height] * 2, dtype=np.float32))


def crop_regions(
    image: Image.Image, boxes: np.ndarray, crop_size: int, pad: float = 0.1
) -> np.ndarray:
    """Each box widened by ``pad`` of its side, cropped and resized: uint8 ``[R, S, S, 3]``."""
    crops = np.empty((len(boxes), crop_size, crop_size, 3), dtype=np.uint8)
    for k, (x1, y1, x2, y2) in enumerate(boxes.tolist()):
        dx, dy = pad * (x2 - x1), pad * (y2 - y1)
        box = (
            max(0, round(x1 - dx)),
            max(0, round(y1 - dy)),
            min(image.width, round(x2 + dx)),
            min(image.height, round(y2 + dy)),
        )
        crop = image.crop(box).resize((crop_size, crop_size), Image.Resampling.BILINEAR)
        crops[k] = np.asarray(crop, dtype=np.uint8)
    return crops


def _to_tensor(crops: np.ndarray) -> torch.Tensor:
    x = torch.from_numpy(np.ascontiguousarray(crops)).permute(0, 3, 1, 2).float() / 255.0
    return (x - MEAN) / STD


class _Pooled(nn.Module):
    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net.features(x)


class _BatchedCNN:
    """Shared batching: run ``self.module`` on chunks of ``batch_size`` crops."""

    module: nn.Module
    batch_size: int

    def __call__(self, crops: np.ndarray) -> np.ndarray:
        outputs = []
        with torch.inference_mode():
            for start in range(0, len(crops), self.batch_size):
                batch = _to_tensor(crops[start : start + self.batch_size])
                outputs.append(self.module(batch).float().numpy())
        if not outputs:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.concatenate(outputs).astype(np.float32, copy=False)


class EfficientNetFeaturizer(_BatchedCNN):
    """Frozen ImageNet EfficientNet-Lite0: 1280-d pooled features per crop.

    With ``optimize`` the network is traced and frozen (conv-BN folding, oneDNN), about
    twice as fast on CPU; eager mode is the fallback."""

    name = "efficientnet-lite0"
    dim = 1280

    def __init__(self, batch_size: int = 256, optimize: bool = True, crop_size: int = 64) -> None:
        self.batch_size = batch_size
        self.net = load_efficientnet_lite0()
        self.module: nn.Module = _Pooled(self.net).eval()
        if optimize:
            try:
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    example = torch.zeros(2, 3, crop_size, crop_size)
                    traced = torch.jit.trace(self.module, example)
                    self.module = torch.jit.optimize_for_inference(traced)
            except Exception:
                self.module = _Pooled(self.net).eval()


class RandomConvFeaturizer(_BatchedCNN):
    """A fixed, seeded random CNN (4 convolutions, ReLU, average pooling): the fallback
    when the pretrained weights are not installed."""

    name = "random-conv"

    def __init__(self, dim: int = 256, seed: int = 0, batch_size: int = 256) -> None:
        self.dim = dim
        self.batch_size = batch_size
        widths = (3, 32, 64, 128)
        layers: list[nn.Module] = []
        for cin, cout in itertools.pairwise(widths):
            layers += [nn.Conv2d(cin, cout, 3, 2, 1), nn.ReLU()]
        layers += [nn.Conv2d(widths[-1], dim, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        self.module = nn.Sequential(*layers).eval()
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for layer in self.module:
                if isinstance(layer, nn.Conv2d):
                    fan_in = layer.in_channels * layer.kernel_size[0] * layer.kernel_size[1]
                    layer.weight.normal_(0.0, (2.0 / fan_in) ** 0.5, generator=generator)
                    layer.bias.normal_(0.0, 0.1, generator=generator)


def make_featurizer(
    name: str = "auto", batch_size: int = 256, crop_size: int = 64, seed: int = 0
) -> Featurizer:
    """``auto``: EfficientNet-Lite0 when its weights package is installed, else random-conv."""
    if name not in FEATURIZERS:
        raise ValueError(f"featurizer must be one of {FEATURIZERS}, got {name!r}")
    if name == "efficientnet" or (name == "auto" and packaged_weights() is not None):
        return EfficientNetFeaturizer(batch_size=batch_size, crop_size=crop_size)
    return RandomConvFeaturizer(seed=seed, batch_size=batch_size)


__all__ = [
    "FEATURIZERS",
    "EfficientNetFeaturizer",
    "Featurizer",
    "RandomConvFeaturizer",
    "crop_regions",
    "make_featurizer",
    "region_boxes",
]
