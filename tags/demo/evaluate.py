"""Test-split evaluation of a demo model: R@1/5/10, RSum and minimal-pair accuracy.

``cross`` models are scored by the ITM logit (retrieval and minimal pairs alike: fp32
sigmoid scores saturate into ties), ``dual`` models by the cosine of ``encode_image`` and
``encode_text``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

FAMILIES = ("cross", "dual")


class CrossPairScoreFn:
    """``score_fn(image_ids, captions)`` for :func:`minimal_pair_accuracy`: ITM logits."""

    def __init__(self, model: Any, tokenizer: Any, features: Path, max_length: int):
        from tags.negatives import TagsPairScorer, open_regions

        self.scorer = TagsPairScorer(
            model, tokenizer, "cpu", max_length=max_length, use_logits=True
        )
        self.regions = open_regions(features)

    def __call__(self, image_ids: Sequence[Any], captions: Sequence[str]) -> list[float]:
        scores = [0.0] * len(captions)
        by_image: dict[Any, list[int]] = {}
        for i, image_id in enumerate(image_ids):
            by_image.setdefault(image_id, []).append(i)
        groups = [
            ([captions[i] for i in rows], self.regions.get(image_id))
            for image_id, rows in by_image.items()
        ]
        for rows, values in zip(by_image.values(), self.scorer.score_many(groups)):
            for i, value in zip(rows, values):
                scores[i] = value
        return scores


class DualPairScoreFn:
    """``score_fn(image_ids, captions)``: cosine of the dual-mode embeddings."""

    def __init__(self, model: Any, tokenizer: Any, features: Path, max_length: int):
        from tags.negatives import open_regions

        self.model = model.eval()
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.regions = open_regions(features)
        self._images: dict[Any, torch.Tensor] = {}

    @torch.no_grad()
    def _image(self, image_id: Any) -> torch.Tensor:
        if image_id not in self._images:
            r = self.regions.get(image_id)
            feats = torch.from_numpy(r.features).float()[None]
            boxes = torch.from_numpy(r.boxes).float()[None]
            self._images[image_id] = self.model.encode_image(feats, boxes)[0]
        return self._images[image_id]

    @torch.no_grad()
    def __call__(self, image_ids: Sequence[Any], captions: Sequence[str]) -> list[float]:
        enc = self.tokenizer(
            list(captions),
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        )
        text = self.model.encode_text(enc["input_ids"], enc["attention_mask"])
        image = torch.stack([self._image(i) for i in image_ids])
        return (text * image).sum(-1).tolist()


def split_pairs(data: Any, split: str) -> list[Any]:
    """The minimal pairs of ``split``: the builder's file for ``test``, else drawn from the
    stored scenes with the benchmark's seed and pair sampler
    (:func:`tags.benchmark.split_minimal_pairs`)."""
    from tags.benchmark import read_pairs, split_minimal_pairs
    from tags.benchmark.build import pair_sampler_of, read_manifest

    if split == "test":
        return read_pairs(data.pairs)
    manifest = read_manifest(Path(data.manifest).parent)
    seed = manifest["config"]["seed"]
    return split_minimal_pairs(data.scenes, split, seed, sampler=pair_sampler_of(manifest))


def evaluate(
    model: Any, tokenizer: Any, data: Any, max_length: int, family: str, split: str = "test"
) -> dict[str, Any]:
    """R@1/5/10 + RSum (full ranking of ``split``) and minimal-pair accuracy."""
    from tags.benchmark import minimal_pair_accuracy
    from tags.evaluation import evaluate_retrieval, load_retrieval_split

    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    model = model.cpu().eval()
    images, texts, _ = load_retrieval_split(
        data.captions, data.features, tokenizer, split=split, max_length=max_length
    )
    retrieval = evaluate_retrieval(model, images, texts, "full", mode=family, batch_size=512)
    pairs = split_pairs(data, split)
    score_cls = CrossPairScoreFn if family == "cross" else DualPairScoreFn
    accuracy = minimal_pair_accuracy(score_cls(model, tokenizer, data.features, max_length), pairs)
    return {
        "retrieval": retrieval.metrics,
        "minimal_pairs": accuracy,
        "n_test_images": len(images),
        "n_test_texts": len(texts),
        "n_pairs": len(pairs),
    }


__all__ = ["FAMILIES", "CrossPairScoreFn", "DualPairScoreFn", "evaluate", "split_pairs"]
