"""The :class:`~tags.modeling.TagsModel` backend: UNITER-style single stream on regions.

A thin adapter: every call is the model's own entry point, so numbers are those of
``TagsModel`` itself (``score_pairs``, ``encode_text`` / ``encode_image``,
``masked_lm_logits``, the text states of ``forward``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from tags.backends.base import VLBackend
from tags.backends.registry import register_backend

REGION_KEYS = ("region_features", "region_boxes", "region_mask")
#: TagsModel's heads and their state-dict prefixes
HEAD_PREFIXES = {"itm": "itm_head.", "mlm": "mlm_head.", "wod": "wod_head.", "woc": "woc_head."}


def load_checked(path: str | Path, **kwargs: Any) -> Any:
    """``TagsModel.from_pretrained`` that notes, as ``model.tags_missing_heads``, the heads
    whose weights the checkpoint lacked (transformers initialises them at random)."""
    from tags.backends.heads import missing_head_weights
    from tags.modeling import TagsModel

    model, info = TagsModel.from_pretrained(path, output_loading_info=True, **kwargs)
    model.tags_missing_heads = missing_head_weights(info.get("missing_keys", ()), HEAD_PREFIXES)
    return model


def _regions(image: dict[str, torch.Tensor] | None) -> dict[str, torch.Tensor]:
    return {} if image is None else {k: image[k] for k in REGION_KEYS if k in image}


@register_backend("tags")
class TagsBackend(VLBackend):
    name = "tags"
    image_kind = "regions"
    capabilities = frozenset({"itm", "itc", "token_states", "mlm"})
    contrastive_loss = "triplet"

    @classmethod
    def from_pretrained(cls, path: str | Path, **kwargs: Any) -> TagsBackend:
        from transformers import AutoTokenizer

        model = load_checked(path, **kwargs)
        try:
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        except (OSError, ValueError):
            tokenizer = None
        return cls(model, tokenizer)

    def head_problem(self, name: str) -> str | None:
        """A head is usable when the config builds it, the checkpoint held its weights and,
        where ``config.trained_heads`` is recorded, a recipe trained it."""
        if name not in HEAD_PREFIXES:
            return super().head_problem(name)
        config = self.model.config
        if not getattr(config, f"use_{name}_head", False):
            return f"not built (config.json: use_{name}_head false)"
        if name in getattr(self.model, "tags_missing_heads", ()):
            return "not in the checkpoint's weights (it would be randomly initialised)"
        trained = getattr(config, "trained_heads", None)
        if trained is not None and name not in trained:
            return f"saved but never trained (trained_heads: {', '.join(trained) or 'none'})"
        return None

    def mark_trained_heads(self, names: tuple[str, ...]) -> None:
        config = self.model.config
        done = set(getattr(config, "trained_heads", None) or []) | set(names)
        config.trained_heads = [n for n in HEAD_PREFIXES if n in done]

    @property
    def max_text_length(self) -> int:
        return int(self.model.config.max_position_embeddings)

    @property
    def embedding_dim(self) -> int:
        return int(self.model.config.hidden_size)

    def collate_images(self, items):
        from tags.data import pad_regions

        feats, boxes, mask = pad_regions([f for f, _ in items], [b for _, b in items])
        return {"region_features": feats, "region_boxes": boxes, "region_mask": mask}

    def image_items(self, batch):
        return [
            (f[: int(m.sum())], b[: int(m.sum())])
            for f, b, m in zip(
                batch["region_features"], batch["region_boxes"], batch["region_mask"]
            )
        ]

    def image_batch(self, batch):
        return {k: batch[k] for k in REGION_KEYS}

    def row_images(self, items, rows):
        """The bank padded once, then indexed per row."""
        bank = self.collate_images(items)
        index = torch.tensor(rows)
        return {k: v[index] for k, v in bank.items()}

    @property
    def mask_token_id(self) -> int:
        return int(self.model.config.mask_token_id)

    @property
    def vocab_size(self) -> int:
        return int(self.model.config.vocab_size)

    @property
    def heads(self) -> Any:
        return self.model

    def ensure_heads(self, names=("mlm", "wod", "woc")):
        return self.model

    def save_extras(self, path):
        """TagsModel's heads are part of the model."""

    def trainable_module(self, names=("mlm", "wod", "woc")):
        return self.model

    def masked_lm_adapter(self, tokenizer, device, use_image=True):
        from tags.negatives import TagsMaskedLM

        return TagsMaskedLM(self.model, tokenizer, device, use_image=use_image)

    def pair_scorer(self, tokenizer, device, max_length=128):
        from tags.negatives import TagsPairScorer

        return TagsPairScorer(self.model, tokenizer, device, max_length=max_length)

    def score_pairs(self, text, image):
        return self.model.score_pairs(**text, **_regions(image)).logits

    def encode_text(self, text):
        return self.model.encode_text(text["input_ids"], text.get("attention_mask"))

    def encode_image(self, image):
        return self.model.encode_image(
            image["region_features"], image["region_boxes"], image.get("region_mask")
        )

    def text_token_states(self, text, image):
        return self.model(**text, **_regions(image)).text_hidden_state

    def mlm_logits(self, text, image, masked_positions):
        return self.model.masked_lm_logits(
            **text, **_regions(image), masked_positions=masked_positions
        ).logits


__all__ = ["HEAD_PREFIXES", "TagsBackend", "load_checked"]
