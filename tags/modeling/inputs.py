"""Shape and value checks for the model inputs, with clear errors instead of silent garbage."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tags.modeling.configuration_tags import TagsConfig
from tags.modeling.embeddings import expand_boxes

BOX_TOLERANCE = 1e-4


@dataclass
class TagsInputs:
    """Validated inputs: text and/or regions with explicit padding masks and a common batch."""

    input_ids: torch.Tensor | None
    attention_mask: torch.Tensor | None
    token_type_ids: torch.Tensor | None
    region_features: torch.Tensor | None
    region_boxes: torch.Tensor | None
    region_mask: torch.Tensor | None

    @property
    def text_length(self) -> int:
        return 0 if self.input_ids is None else self.input_ids.shape[1]

    @property
    def num_regions(self) -> int:
        return 0 if self.region_features is None else self.region_features.shape[1]

    def joint_mask(self) -> torch.Tensor:
        """``[batch, text_len + num_regions]`` padding mask of the concatenated sequence."""
        parts = [m for m in (self.attention_mask, self.region_mask) if m is not None]
        return torch.cat([m.to(torch.long) for m in parts], dim=1)


def _check_text(config: TagsConfig, input_ids: torch.Tensor, attention_mask: torch.Tensor | None):
    if input_ids.dim() != 2:
        raise ValueError(f"input_ids must be [batch, seq_len], got shape {tuple(input_ids.shape)}")
    if input_ids.shape[1] == 0:
        raise ValueError("input_ids has no tokens (seq_len is 0)")
    if input_ids.shape[1] > config.max_position_embeddings:
        raise ValueError(
            f"text has {input_ids.shape[1]} tokens but the model has max_position_embeddings="
            f"{config.max_position_embeddings}; truncate when tokenizing "
            f"(tokenizer(..., truncation=True, max_length={config.max_position_embeddings}))"
        )
    if attention_mask is not None and attention_mask.shape != input_ids.shape:
        raise ValueError(
            f"attention_mask shape {tuple(attention_mask.shape)} does not match input_ids "
            f"shape {tuple(input_ids.shape)}"
        )


def _check_regions(
    config: TagsConfig,
    region_features: torch.Tensor,
    region_boxes: torch.Tensor | None,
    region_mask: torch.Tensor | None,
):
    if region_features.dim() != 3:
        raise ValueError(
            f"region_features must be [batch, regions, {config.region_feature_size}], got shape "
            f"{tuple(region_features.shape)}"
        )
    batch, regions, size = region_features.shape
    if size != config.region_feature_size:
        raise ValueError(
            f"region features have size {size} but the model expects region_feature_size="
            f"{config.region_feature_size}"
        )
    if regions == 0:
        raise ValueError(
            "empty region set: an image needs at least one region (for text-only use, pass "
            "region_features=None)"
        )
    if regions > config.max_regions:
        raise ValueError(
            f"{regions} regions exceed max_regions={config.max_regions}; keep the top-scoring "
            "boxes or raise max_regions in the config"
        )
    if region_boxes is None:
        raise ValueError("region_boxes is required with region_features")
    if region_boxes.dim() != 3 or region_boxes.shape[:2] != (batch, regions):
        raise ValueError(
            f"region_boxes must be [batch, regions, 4 or 7] = [{batch}, {regions}, 7], got shape "
            f"{tuple(region_boxes.shape)}"
        )
    if region_boxes.shape[-1] not in (4, 7):
        raise ValueError(
            f"region_boxes must have 4 (x1, y1, x2, y2) or 7 (+ w, h, area) values, got "
            f"{region_boxes.shape[-1]}"
        )
    if region_mask is not None and region_mask.shape != (batch, regions):
        raise ValueError(
            f"region_mask shape {tuple(region_mask.shape)} does not match regions ({batch}, {regions})"
        )


def _broadcast(tensor: torch.Tensor | None, batch: int) -> torch.Tensor | None:
    if tensor is None or tensor.shape[0] == batch:
        return tensor
    return tensor.expand(batch, *tensor.shape[1:])


def _check_values(config: TagsConfig, inputs: TagsInputs) -> None:
    """Value checks, gathered into one device sync."""
    checks: list[tuple[torch.Tensor, str]] = []
    if inputs.input_ids is not None:
        ids, mask = inputs.input_ids, inputs.attention_mask
        checks += [
            (
                ((ids < 0) | (ids >= config.vocab_size)).any(),
                f"input_ids outside the vocabulary [0, {config.vocab_size})",
            ),
            (((mask != 0).sum(dim=1) == 0).any(), "a text row has no attended token"),
            (
                (mask[:, 0] == 0).any(),
                "text must be right-padded: the first token ([CLS]) of every row must be attended",
            ),
        ]
    if inputs.token_type_ids is not None:
        types = inputs.token_type_ids
        checks.append(
            (
                ((types < 0) | (types >= config.type_vocab_size)).any(),
                f"token_type_ids outside [0, {config.type_vocab_size})",
            )
        )
    if inputs.region_features is not None:
        valid = inputs.region_mask != 0
        boxes = inputs.region_boxes[valid]
        checks += [
            (
                (valid.sum(dim=1) == 0).any(),
                "empty region set: an image row has no unmasked region",
            ),
            (
                ((boxes < -BOX_TOLERANCE) | (boxes > 1 + BOX_TOLERANCE) | boxes.isnan()).any(),
                "region_boxes outside [0, 1]: boxes must be normalised by the image size "
                "(see tags.modeling.normalize_boxes)",
            ),
            (
                ~torch.isfinite(inputs.region_features[valid]).all(),
                "region_features contain NaN or infinite values",
            ),
        ]
    if not checks:
        return
    failed = torch.stack([flag for flag, _ in checks]).tolist()
    messages = [message for (_, message), bad in zip(checks, failed) if bad]
    if messages:
        raise ValueError("; ".join(messages))


def prepare_inputs(
    config: TagsConfig,
    input_ids: torch.Tensor | None = None,
    attention_mask: torch.Tensor | None = None,
    token_type_ids: torch.Tensor | None = None,
    region_features: torch.Tensor | None = None,
    region_boxes: torch.Tensor | None = None,
    region_mask: torch.Tensor | None = None,
) -> TagsInputs:
    """Check the inputs and fill in defaults.

    Missing masks become all-ones; 4-d boxes become 7-d; a batch of one on either side is
    broadcast against the other (one image scored against many captions, or the reverse).
    Value checks (vocabulary range, right padding, non-empty rows, boxes in [0, 1], finite
    features) run when ``config.validate_inputs`` is set.

    Raises:
        ValueError: with a message naming the offending input.
    """
    if input_ids is None and region_features is None:
        raise ValueError("give text (input_ids), regions (region_features), or both")
    if input_ids is not None:
        _check_text(config, input_ids, attention_mask)
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if token_type_ids is not None and token_type_ids.shape != input_ids.shape:
            raise ValueError("token_type_ids must have the shape of input_ids")
    if region_features is not None:
        _check_regions(config, region_features, region_boxes, region_mask)
        region_boxes = expand_boxes(region_boxes)
        if region_mask is None:
            region_mask = torch.ones(
                region_features.shape[:2], dtype=torch.long, device=region_features.device
            )
    if input_ids is not None and region_features is not None:
        text_batch, image_batch = input_ids.shape[0], region_features.shape[0]
        if text_batch != image_batch and 1 not in (text_batch, image_batch):
            raise ValueError(
                f"batch sizes differ: {text_batch} texts vs {image_batch} images (only a batch "
                "of one is broadcast)"
            )
        batch = max(text_batch, image_batch)
        input_ids, attention_mask, token_type_ids = (
            _broadcast(t, batch) for t in (input_ids, attention_mask, token_type_ids)
        )
        region_features, region_boxes, region_mask = (
            _broadcast(t, batch) for t in (region_features, region_boxes, region_mask)
        )
    inputs = TagsInputs(
        input_ids, attention_mask, token_type_ids, region_features, region_boxes, region_mask
    )
    if config.validate_inputs:
        _check_values(config, inputs)
    return inputs


__all__ = ["TagsInputs", "prepare_inputs"]
