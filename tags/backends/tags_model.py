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
from tags.backends.heads import require_heads
from tags.backends.masked_lm import device_of, load_tokenizer
from tags.backends.registry import register_backend
from tags.core.checkpoints import load_tokenizer_dir, read_config
from tags.core.errors import CheckpointError
from tags.modeling.loading import HEAD_PREFIXES, head_problem, load_checked

REGION_KEYS = ("region_features", "region_boxes", "region_mask")


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
        try:  # a damaged tokenizer file is named; a folder without a tokenizer is fine
            tokenizer = load_tokenizer_dir(
                path, lambda: AutoTokenizer.from_pretrained(path, local_files_only=True)
            )
        except CheckpointError:
            raise
        except (OSError, ValueError):
            tokenizer = None
        return cls(model, tokenizer)

    def head_problem(self, name: str) -> str | None:
        """A head is usable when the config builds it, the checkpoint held its weights and,
        where ``config.trained_heads`` is recorded, a recipe trained it."""
        if name not in HEAD_PREFIXES:
            return super().head_problem(name)
        return head_problem(self.model, name)

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
        from tags.modeling.padding import pad_regions

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
        from tags.backends.masked_lm import TagsMaskedLM

        return TagsMaskedLM(self.model, tokenizer, device, use_image=use_image)

    def pair_scorer(self, tokenizer, device, max_length=128):
        from tags.backends.masked_lm import TagsPairScorer

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


def load_tags_model(
    path: str | Path,
    device: str | torch.device | None = None,
    tokenizer_path: str | Path | None = None,
    heads: tuple[str, ...] = ("mlm", "itm"),
) -> tuple[Any, Any]:
    """``(TagsModel, tokenizer)`` from a saved TagsModel directory.

    The tokenizer is read from ``tokenizer_path`` or the model directory itself. ``heads``:
    the heads the caller reads; a :class:`~tags.backends.BackendError` names any of them that
    the checkpoint did not save or that no recipe trained.
    """
    path = Path(path)
    config = path / "config.json"
    if not config.is_file():
        raise FileNotFoundError(f"{path}: no config.json (save the model with save_pretrained)")
    if read_config(path).get("model_type") != "tags":  # not JSON: named by read_config
        raise ValueError(f"{path} is not a TagsModel directory; use --mlm for a plain masked LM")
    model = load_checked(str(path))
    require_heads(TagsBackend(model), heads, "tags generate --model", path)
    try:
        tokenizer = load_tokenizer(tokenizer_path or path)
    except (OSError, ValueError) as err:
        raise ValueError(
            f"no fast tokenizer in {tokenizer_path or path}: save it next to the model or "
            "pass --tokenizer DIR"
        ) from err
    return model.to(device_of(device)), tokenizer


__all__ = ["HEAD_PREFIXES", "TagsBackend", "load_checked", "load_tags_model"]
