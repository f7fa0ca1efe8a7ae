"""Benchmark protocols: Flickr30K 1K, COCO 1K (5-fold mean) and COCO 5K.

A protocol only fixes how the images are split into folds (and how many images a standard
test split has). Each fold is scored on its own, which for cross-encoders costs 1/folds of
the full matrix and for two-stage retrieval keeps the top-k inside the fold's gallery; for
cross and dual scoring the result equals :func:`~tags.evaluation.kfold_metrics` of the full
matrix.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field
from typing import Any

from tags.evaluation.data import RetrievalImages, RetrievalTexts, image_subset
from tags.evaluation.metrics import (
    fold_bounds,
    i2t_ranks,
    mean_metrics,
    retrieval_metrics,
    t2i_ranks,
)
from tags.evaluation.scoring import compute_scores


@dataclass(frozen=True)
class Protocol:
    name: str
    folds: int
    expected_images: int | None
    description: str


PROTOCOLS: dict[str, Protocol] = {
    p.name: p
    for p in (
        Protocol("full", 1, None, "the whole split at once"),
        Protocol("f30k-1k", 1, 1000, "Flickr30K test: 1000 images at once"),
        Protocol("coco-1k", 5, 5000, "COCO: mean over 5 folds of 1000 images"),
        Protocol("coco-5k", 1, 5000, "COCO: all 5000 test images at once"),
    )
}


@dataclass
class RetrievalResult:
    """Metrics of one evaluation; ``per_fold`` holds one dict per fold (one for 1-fold)."""

    metrics: dict[str, float]
    per_fold: list[dict[str, float]]
    protocol: str
    mode: str
    n_images: int
    n_texts: int
    topk: int | None = None
    notes: list[str] = field(default_factory=list)
    fusion: float | None = None
    #: 0-based rank of every query, folds concatenated: ``{"i2t": [per image], "t2i": [per
    #: text]}`` (paired bootstrap intervals; left out of :meth:`to_dict`)
    ranks: dict[str, list[int]] | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("ranks")
        return out


def evaluate_retrieval(
    model: Any,
    images: RetrievalImages,
    texts: RetrievalTexts,
    protocol: str = "full",
    mode: str = "cross",
    *,
    topk: int = 128,
    batch_size: int = 256,
    accelerator: Any = None,
    use_logits: bool = True,
    fusion: float | None = None,
) -> RetrievalResult:
    """Score and measure ``model`` on ``images``/``texts`` under ``protocol``.

    Args:
        protocol: a key of :data:`PROTOCOLS`; a split whose size differs from the standard
            one is evaluated anyway, with a warning (also stored in ``notes``).
        mode: ``"cross"``, ``"dual"`` or ``"two-stage"`` (dual top-``topk`` + cross rerank).
        fusion: two-stage only: rerank by ``dual + fusion * cross``
            (:func:`~tags.evaluation.scoring.rerank_topk`).
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose from {sorted(PROTOCOLS)}")
    spec = PROTOCOLS[protocol]
    notes = []
    if spec.expected_images is not None and len(images) != spec.expected_images:
        notes.append(
            f"{protocol} expects {spec.expected_images} images, got {len(images)}: "
            "numbers are not comparable with published ones"
        )
        warnings.warn(notes[-1], stacklevel=2)
    per_fold = []
    ranks: dict[str, list[int]] = {"i2t": [], "t2i": []}
    for start, stop in fold_bounds(len(images), spec.folds):
        fold_images, fold_texts = image_subset(images, texts, slice(start, stop))
        i2t, t2i = compute_scores(
            model,
            fold_images,
            fold_texts,
            mode,
            topk=topk,
            batch_size=batch_size,
            accelerator=accelerator,
            use_logits=use_logits,
            fusion=fusion,
        )
        per_fold.append(retrieval_metrics(i2t, fold_texts.txt2img, t2i_sims=t2i))
        ranks["i2t"] += i2t_ranks(i2t, fold_texts.txt2img).tolist()
        ranks["t2i"] += t2i_ranks(t2i, fold_texts.txt2img).tolist()
    return RetrievalResult(
        metrics=mean_metrics(per_fold),
        per_fold=per_fold,
        protocol=protocol,
        mode=mode,
        n_images=len(images),
        n_texts=len(texts),
        topk=topk if mode == "two-stage" else None,
        notes=notes,
        fusion=fusion if mode == "two-stage" else None,
        ranks=ranks,
    )


def format_table(metrics: dict[str, float]) -> str:
    """A small text table: one row per direction, then RSum."""
    lines = [f"{'':6}{'R@1':>8}{'R@5':>8}{'R@10':>8}{'medr':>8}{'meanr':>9}"]
    for d in ("i2t", "t2i"):
        values = [metrics[f"{d}_r{k}"] for k in (1, 5, 10)]
        lines.append(
            f"{d:6}"
            + "".join(f"{v:8.2f}" for v in values)
            + f"{metrics[f'{d}_medr']:8.1f}{metrics[f'{d}_meanr']:9.2f}"
        )
    lines.append(f"{'RSum':6}{metrics['rsum']:8.2f}")
    return "\n".join(lines)


__all__ = ["PROTOCOLS", "Protocol", "RetrievalResult", "evaluate_retrieval", "format_table"]
