"""Training on a Hugging Face backend (``model.source: backend``): BLIP, CLIP, SigLIP.

:func:`build_backend_parts` replaces the TagsModel / region-feature set-up of the loop: the
backend from ``model.path`` (its ``config.json`` picks the family), a
:class:`~tags.data.images.PixelTextDataset` over ``data.captions`` + ``data.images`` and its
collator. The final model (and every phase's) is written with the backend's
``save_pretrained``: plain transformers loads it (``CLIPModel.from_pretrained``,
``BlipForImageTextRetrieval.from_pretrained``, ``AutoProcessor.from_pretrained``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import nn


@dataclass
class BackendParts:
    backend: Any
    tokenizer: Any
    dataset: Any
    model: nn.Module
    collate: Any

    def save_processor(self, path: str | Path, recipe: Any = None) -> None:
        """The processor (image processor + tokenizer) and the recipe's extra heads beside
        the saved model."""
        if self.backend.processor is not None:
            self.backend.processor.save_pretrained(path)
        save_extras = getattr(recipe, "save_extras", None)
        if save_extras is not None:
            save_extras(path)


def uses_backend(config: Any) -> bool:
    return config.model.source == "backend"


def build_backend_parts(config: Any, log: Any = print) -> BackendParts:
    from tags.backends import load_backend
    from tags.core.errors import ConfigError, check_config_json, reading
    from tags.data.images import PixelPairCollator, build_pixel_dataset
    from tags.training.factory import MODEL_HINT

    if not config.model.path:
        raise ConfigError("model.source: backend needs model.path (a BLIP/CLIP/SigLIP directory)")
    if not config.data.images:
        raise ConfigError("model.source: backend trains on raw images: set data.images")
    with reading(f"model.path {config.model.path}", MODEL_HINT, ConfigError):
        check_config_json(config.model.path)
        backend = load_backend(config.model.path)
    if backend.image_kind != "pixels":
        raise ConfigError(
            f"model.path holds a {backend.name} model (region features): use model.source: tags"
        )
    dataset = build_pixel_dataset(config.data, backend, config.data.on_bad_image, log)
    pad = getattr(backend.tokenizer, "pad_token_id", None) or 0
    return BackendParts(backend, backend.tokenizer, dataset, backend.model, PixelPairCollator(pad))


__all__ = ["BackendParts", "build_backend_parts", "uses_backend"]
