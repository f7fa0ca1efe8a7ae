"""Retrieval evaluation during training (``tags.evaluation``): R@K / RSum at phase ends and
every ``eval.every`` steps, logged as ``eval/<metric>``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import nn


@dataclass
class EvalSets:
    images: Any  # tags.evaluation.RetrievalImages
    texts: Any  # tags.evaluation.RetrievalTexts


def build_eval_sets(
    config: Any,
    tokenizer: Any,
    max_text_len: int,
    backend: Any = None,
    allow_outside_root: bool = False,
    confine_to_root: bool = False,
) -> EvalSets:
    """The held-out images and captions of ``config`` (an ``EvalConfig``): region features
    (``features``), or raw images (``images``) preprocessed by ``backend``'s processor (file
    names outside ``images`` refused unless ``allow_outside_root``; with ``confine_to_root``
    files a symlink takes out of it too)."""
    if config.images:
        from tags.core.errors import ConfigError
        from tags.evaluation.images import load_image_retrieval_split

        if backend is None or backend.image_kind != "pixels":
            raise ConfigError("eval.images needs a pixel model (model.source: backend)")
        fmt = None if config.format == "auto" else config.format
        images, texts, _ = load_image_retrieval_split(
            config.captions,
            config.images,
            backend,
            fmt=fmt,
            split=config.split or "test",
            max_length=max_text_len,
            limit_images=config.limit_images,
            allow_outside_root=allow_outside_root,
            confine_to_root=confine_to_root,
        )
        return EvalSets(images, texts)
    from tags.core.regions import open_regions
    from tags.data import load_image_groups
    from tags.evaluation import RetrievalImages, RetrievalTexts

    fmt = None if config.format == "auto" else config.format
    groups = load_image_groups(config.captions, fmt, config.split, config.limit_images)
    store = open_regions(config.features)
    regions = [store.get(g.image_id, g.filename) for g in groups]
    images = RetrievalImages.from_regions(
        [r.features for r in regions], [r.boxes for r in regions], [g.image_id for g in groups]
    )
    captions = [c.text for g in groups for c in g.captions]
    txt2img = [i for i, g in enumerate(groups) for _ in g.captions]
    texts = RetrievalTexts.from_captions(tokenizer, captions, txt2img, max_length=max_text_len)
    return EvalSets(images, texts)


def evaluate(model: nn.Module, sets: EvalSets, config: Any, accelerator: Any) -> dict[str, float]:
    """Metrics of the (unwrapped) TagsModel on ``sets``; call on every process."""
    from tags.evaluation import evaluate_retrieval

    result = evaluate_retrieval(
        model,
        sets.images,
        sets.texts,
        protocol=config.protocol,
        mode=config.mode,
        topk=config.topk,
        batch_size=config.batch_size,
        accelerator=accelerator,
    )
    return {f"eval/{k}": float(v) for k, v in result.metrics.items()}


__all__ = ["EvalSets", "build_eval_sets", "evaluate"]
