"""A backend as the negative engine's refill model and top-m scorer.

The engine (:mod:`tags.negatives`) passes images through opaquely: for pixel backends an
"image" is one preprocessed ``[3, H, W]`` tensor (see :class:`PixelImageStore`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from tags.backends.masked_lm import MaskedLMAdapter


class BackendMaskedLM(MaskedLMAdapter):
    """``logits_at`` over a backend's :meth:`~tags.backends.VLBackend.mlm_logits`."""

    def __init__(self, backend: Any, device: Any = None, use_image: bool = True) -> None:
        device = torch.device(device) if device is not None else backend.device
        super().__init__(backend.tokenizer, device, conditions_on_image=use_image)
        self.backend = backend

    def _logits(self, input_ids, attention_mask, masked_positions, images):
        text = {"input_ids": input_ids, "attention_mask": attention_mask}
        image = None
        if images is not None:
            image = {
                k: v.to(self.device) for k, v in self.backend.collate_images(list(images)).items()
            }
        was_training = self.backend.model.training
        self.backend.model.eval()
        try:
            return self.backend.mlm_logits(text, image, masked_positions)
        finally:
            self.backend.model.train(was_training)


class BackendPairScorer:
    """``score(texts, image)``: matching probabilities of captions against one image."""

    def __init__(
        self, backend: Any, device: Any = None, batch_size: int = 256, max_length: int = 128
    ) -> None:
        self.backend = backend
        self.device = torch.device(device) if device is not None else backend.device
        self.batch_size = batch_size
        self.max_length = max_length

    @torch.no_grad()
    def score(self, texts: Sequence[str], image: Any) -> list[float]:
        pixels = {k: v.to(self.device) for k, v in self.backend.collate_images([image]).items()}
        was_training = self.backend.model.training
        self.backend.model.eval()
        scores: list[float] = []
        try:
            for start in range(0, len(texts), self.batch_size):
                chunk = list(texts[start : start + self.batch_size])
                text = self.backend.text_inputs(chunk, self.max_length)
                text = {k: v.to(self.device) for k, v in text.items()}
                values = self.backend.pair_probability(self.backend.score_pairs(text, pixels))
                scores.extend(values.float().cpu().reshape(-1).tolist())
        finally:
            self.backend.model.train(was_training)
        return scores


class PixelImageStore:
    """A region-store look-alike over preprocessed pixels; image id = row."""

    def __init__(self, pixel_values: torch.Tensor) -> None:
        self.items = list(pixel_values.detach().unbind(0))

    def get(self, image_id: Any, filename: str | None = None, position: int | None = None) -> Any:
        return self.items[int(image_id)]


__all__ = ["BackendMaskedLM", "BackendPairScorer", "PixelImageStore"]
