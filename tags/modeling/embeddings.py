"""UNITER image-region embeddings and the box features they read.

Text embeddings are `transformers`' ``BertEmbeddings`` (word + position + token type,
LayerNorm); this module adds the image side.
"""

from __future__ import annotations

import torch
from torch import nn

from tags.modeling.configuration_tags import TagsConfig


def expand_boxes(boxes: torch.Tensor) -> torch.Tensor:
    """Turn normalised ``(x1, y1, x2, y2)`` boxes into UNITER's 7-d ``(..., w, h, w*h)`` form.

    Args:
        boxes: ``[..., 4]`` or ``[..., 7]`` tensor; 7-d input is returned unchanged.
    """
    if boxes.shape[-1] == 7:
        return boxes
    if boxes.shape[-1] != 4:
        raise ValueError(
            f"boxes must have 4 or 7 values in the last dimension, got {boxes.shape[-1]}"
        )
    width = boxes[..., 2:3] - boxes[..., 0:1]
    height = boxes[..., 3:4] - boxes[..., 1:2]
    return torch.cat([boxes, width, height, width * height], dim=-1)


def normalize_boxes(boxes: torch.Tensor, image_width: float, image_height: float) -> torch.Tensor:
    """Pixel ``(x1, y1, x2, y2)`` boxes to UNITER's normalised 7-d box features.

    Coordinates are divided by the image size and clamped to [0, 1] (detectors often
    overshoot the border by a pixel), then expanded with width, height and area.
    """
    if boxes.shape[-1] != 4:
        raise ValueError(f"boxes must be (x1, y1, x2, y2), got last dimension {boxes.shape[-1]}")
    if image_width <= 0 or image_height <= 0:
        raise ValueError(f"image size must be positive, got {image_width}x{image_height}")
    scale = boxes.new_tensor([image_width, image_height, image_width, image_height])
    return expand_boxes((boxes / scale).clamp(0.0, 1.0))


class TagsImageEmbeddings(nn.Module):
    """``LayerNorm(LN(Linear(feature)) + LN(Linear(box)) + type)``, as UNITER's image embeddings.

    Parameter names match UNITER's ``img_embeddings`` so checkpoints convert by prefix only.
    UNITER's ``mask_embedding`` (masked region modelling) is not needed here.
    """

    def __init__(self, config: TagsConfig):
        super().__init__()
        self.img_linear = nn.Linear(config.region_feature_size, config.hidden_size)
        self.img_layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.pos_linear = nn.Linear(config.region_box_size, config.hidden_size)
        self.pos_layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(
        self,
        region_features: torch.Tensor,
        region_boxes: torch.Tensor,
        type_embeddings: torch.Tensor,
    ) -> torch.Tensor:
        """Embed ``[batch, regions, feature]`` features and ``[batch, regions, 7]`` boxes."""
        features = self.img_layer_norm(self.img_linear(region_features))
        positions = self.pos_layer_norm(self.pos_linear(region_boxes))
        return self.dropout(self.LayerNorm(features + positions + type_embeddings))


__all__ = ["TagsImageEmbeddings", "expand_boxes", "normalize_boxes"]
