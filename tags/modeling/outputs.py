"""Output dataclasses of :class:`~tags.modeling.TagsModel`."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers.utils import ModelOutput


@dataclass
class TagsModelOutput(ModelOutput):
    r"""Encoder states plus the logits of the heads requested in ``forward(heads=...)``.

    Args:
        last_hidden_state (`torch.FloatTensor` of shape `(batch, text_len + num_regions, hidden)`):
            Joint sequence: text tokens first, then regions (padding included).
        pooler_output (`torch.FloatTensor` of shape `(batch, hidden)`):
            Tanh-pooled first token (``[CLS]`` for text; the first region when image-only).
        text_hidden_state (`torch.FloatTensor` of shape `(batch, text_len, hidden)`, *optional*):
            Text part of ``last_hidden_state`` (a view); ``None`` when no text was given.
        region_hidden_state (`torch.FloatTensor` of shape `(batch, num_regions, hidden)`, *optional*):
            Region part of ``last_hidden_state`` (a view); ``None`` when no regions were given.
        itm_logits (`torch.FloatTensor` of shape `(batch,)`, *optional*):
            Image-text matching logits.
        itm_scores (`torch.FloatTensor` of shape `(batch,)`, *optional*):
            ``sigmoid(itm_logits)``, in [0, 1], always fp32 (also under bf16/fp16 autocast,
            where a half-precision sigmoid would round saturated logits into ties).
        mlm_logits (`torch.FloatTensor`, *optional*):
            Vocabulary logits, `(batch, text_len, vocab)`, or `(num_masked, vocab)` when
            ``masked_positions`` was given.
        wod_logits (`torch.FloatTensor` of shape `(batch, text_len, 2)`, *optional*):
            Word discrimination logits (class 1: token matches the positive caption).
        woc_logits (`torch.FloatTensor`, *optional*):
            Word correction logits, shaped like ``mlm_logits``.
    """

    last_hidden_state: torch.FloatTensor | None = None
    pooler_output: torch.FloatTensor | None = None
    text_hidden_state: torch.FloatTensor | None = None
    region_hidden_state: torch.FloatTensor | None = None
    itm_logits: torch.FloatTensor | None = None
    itm_scores: torch.FloatTensor | None = None
    mlm_logits: torch.FloatTensor | None = None
    wod_logits: torch.FloatTensor | None = None
    woc_logits: torch.FloatTensor | None = None


@dataclass
class TagsITMOutput(ModelOutput):
    r"""Image-text matching result for a batch of pairs.

    Args:
        scores (`torch.FloatTensor` of shape `(batch,)`): Matching probability in [0, 1]
            (fp32, see ``TagsModelOutput.itm_scores``).
        logits (`torch.FloatTensor` of shape `(batch,)`): Pre-sigmoid logits.
    """

    scores: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None


@dataclass
class TagsMaskedLMOutput(ModelOutput):
    r"""Vocabulary logits at the masked text positions only.

    Args:
        logits (`torch.FloatTensor` of shape `(num_masked, vocab)`):
            One row per ``True`` entry of ``masked_positions``, in row-major order
            (``masked_positions.nonzero()`` order).
        masked_positions (`torch.BoolTensor` of shape `(batch, text_len)`):
            Where the logits were taken.
    """

    logits: torch.FloatTensor | None = None
    masked_positions: torch.BoolTensor | None = None


__all__ = ["TagsITMOutput", "TagsMaskedLMOutput", "TagsModelOutput"]
