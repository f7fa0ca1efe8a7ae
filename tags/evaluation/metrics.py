"""Retrieval metrics from a similarity matrix (VSE++ / VSE-infinity / UNITER protocol).

``sims[i, j]`` scores image ``i`` against text ``j``; ``txt2img[j]`` is the image of text ``j``
(any number of captions per image; never "5 per image" arithmetic).

- i2t: for each image, the 0-based rank of its best-ranked ground-truth caption among all
  captions; t2i: for each caption, the rank of its image among all images.
- R@K = percent of queries with rank < K; medr = floor(median rank) + 1; meanr = mean rank + 1;
  RSum = sum of the six recalls.
- Ties: a query's candidates are ordered as a *stable* ``numpy.argsort(-scores)`` orders
  them, so among equal scores the candidate with the lower index ranks first:
  ``rank = #(strictly higher scores) + #(equal scores at a lower index)`` (computed by
  counting, O(n_images * n_texts), without sorting). VSE++'s ``argsort(scores)[::-1]``
  breaks exact ties the other way; untied matrices give identical results.

NumPy only: torch tensors are accepted and converted without importing torch here.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np

METRIC_KEYS = (
    "i2t_r1",
    "i2t_r5",
    "i2t_r10",
    "t2i_r1",
    "t2i_r5",
    "t2i_r10",
    "rsum",
    "i2t_medr",
    "i2t_meanr",
    "t2i_medr",
    "t2i_meanr",
)
RECALL_AT = (1, 5, 10)
# Elements of the [rows, candidates] comparison buffers built at once (bounds memory).
_CHUNK_ELEMENTS = 1 << 24


def as_numpy(x: Any) -> np.ndarray:
    """A torch tensor (any device/dtype) or array-like as a NumPy array."""
    if hasattr(x, "detach"):  # torch.Tensor without importing torch
        x = x.detach().cpu()
        if str(x.dtype) in ("torch.bfloat16", "torch.float16"):
            x = x.float()
        x = x.numpy()
    return np.asarray(x)


def _check(sims: Any, txt2img: Any) -> tuple[np.ndarray, np.ndarray]:
    sims = as_numpy(sims)
    txt2img = as_numpy(txt2img).astype(np.int64).reshape(-1)
    if sims.ndim != 2:
        raise ValueError(f"sims must be [n_images, n_texts], got shape {sims.shape}")
    n_images, n_texts = sims.shape
    if txt2img.shape[0] != n_texts:
        raise ValueError(f"txt2img has {txt2img.shape[0]} entries for {n_texts} texts (columns)")
    if n_texts and (txt2img.min() < 0 or txt2img.max() >= n_images):
        raise ValueError(f"txt2img values must lie in [0, {n_images}) (one per image row)")
    if np.isnan(sims).any():
        raise ValueError("sims contains NaN")
    missing = np.setdiff1d(np.arange(n_images), txt2img)
    if missing.size:
        raise ValueError(
            f"{missing.size} image(s) have no caption (first: row {missing[0]}); "
            "i2t rank is undefined for them"
        )
    return sims, txt2img


def _row_step(n_cols: int) -> int:
    return max(1, _CHUNK_ELEMENTS // max(1, n_cols))


def i2t_ranks(sims: Any, txt2img: Any) -> np.ndarray:
    """0-based rank of each image's best-ranked ground-truth caption, ``[n_images]``.

    The best-ranked caption is the highest-scoring one (lowest index among equals), so its
    rank is ``#(higher scores) + #(equal scores at a lower index)`` in the image's row.
    """
    sims, txt2img = _check(sims, txt2img)
    n_images, n_texts = sims.shape
    ranks = np.empty(n_images, dtype=np.int64)
    columns = np.arange(n_texts)
    step = _row_step(n_texts)
    for start in range(0, n_images, step):
        block = sims[start : start + step]
        is_gt = txt2img[None, :] == np.arange(start, start + block.shape[0])[:, None]
        best = np.where(is_gt, block, -np.inf).max(axis=1, keepdims=True)
        first = np.argmax(is_gt & (block == best), axis=1)[:, None]
        tied_before = (block == best) & (columns[None, :] < first)
        ranks[start : start + block.shape[0]] = (block > best).sum(1) + tied_before.sum(1)
    return ranks


def t2i_ranks(sims: Any, txt2img: Any) -> np.ndarray:
    """0-based rank of each caption's image among all images, ``[n_texts]``:
    ``#(higher scores) + #(equal scores at a lower image index)`` in the caption's column."""
    sims, txt2img = _check(sims, txt2img)
    n_images, n_texts = sims.shape
    ranks = np.empty(n_texts, dtype=np.int64)
    rows = np.arange(n_images)[:, None]
    step = _row_step(n_images)
    for start in range(0, n_texts, step):
        block = sims[:, start : start + step]
        gt = txt2img[start : start + block.shape[1]]
        score = block[gt, np.arange(block.shape[1])][None, :]
        tied_before = (block == score) & (rows < gt[None, :])
        ranks[start : start + block.shape[1]] = (block > score).sum(0) + tied_before.sum(0)
    return ranks


def rank_metrics(ranks: np.ndarray, prefix: str) -> dict[str, float]:
    """R@1/5/10 (percent), medr and meanr (1-based) of 0-based ``ranks``."""
    ranks = np.asarray(ranks)
    out = {f"{prefix}_r{k}": float(100.0 * np.mean(ranks < k)) for k in RECALL_AT}
    out[f"{prefix}_medr"] = float(np.floor(np.median(ranks)) + 1)
    out[f"{prefix}_meanr"] = float(ranks.mean() + 1)
    return out


def retrieval_metrics(sims: Any, txt2img: Any, *, t2i_sims: Any = None) -> dict[str, float]:
    """i2t / t2i R@1/5/10, RSum, medr and meanr of one image-text score matrix.

    Args:
        sims: ``[n_images, n_texts]`` scores (torch tensor or array); higher = more similar.
        txt2img: ``[n_texts]`` image row of each text.
        t2i_sims: optional separate matrix for the t2i direction (two-stage retrieval
            reranks rows and columns differently); defaults to ``sims``.

    Returns:
        A dict with the keys of :data:`METRIC_KEYS`; recalls are percentages.
    """
    i2t = rank_metrics(i2t_ranks(sims, txt2img), "i2t")
    t2i = rank_metrics(t2i_ranks(sims if t2i_sims is None else t2i_sims, txt2img), "t2i")
    merged = i2t | t2i
    merged["rsum"] = sum(merged[f"{d}_r{k}"] for d in ("i2t", "t2i") for k in RECALL_AT)
    return {key: merged[key] for key in METRIC_KEYS}


def fold_bounds(n_images: int, folds: int) -> list[tuple[int, int]]:
    """Contiguous ``[start, stop)`` image ranges; sizes differ by at most one
    (``numpy.array_split``), so 5000 images in 5 folds give 1000 each."""
    if not 1 <= folds <= n_images:
        raise ValueError(f"folds must be in [1, {n_images}], got {folds}")
    edges = np.cumsum([0] + [len(p) for p in np.array_split(np.arange(n_images), folds)])
    return [(int(a), int(b)) for a, b in pairwise(edges)]


def fold_texts(txt2img: Any, start: int, stop: int) -> np.ndarray:
    """Indices (in order) of the texts whose image lies in ``[start, stop)``."""
    txt2img = as_numpy(txt2img).reshape(-1)
    return np.flatnonzero((txt2img >= start) & (txt2img < stop))


def mean_metrics(per_fold: list[dict[str, float]]) -> dict[str, float]:
    """Average every metric over folds."""
    return {key: float(np.mean([m[key] for m in per_fold])) for key in per_fold[0]}


def kfold_metrics(
    sims: Any, txt2img: Any, folds: int = 5, *, t2i_sims: Any = None
) -> dict[str, float]:
    """COCO-1K style: every metric averaged over ``folds`` contiguous folds of images.

    Fold ``f`` holds images ``fold_bounds(n_images, folds)[f]`` and exactly the texts that
    ``txt2img`` assigns to them (captions per image may vary).
    """
    sims, txt2img = _check(sims, txt2img)
    t2i_sims = sims if t2i_sims is None else as_numpy(t2i_sims)
    if t2i_sims.shape != sims.shape:
        raise ValueError(f"t2i_sims shape {t2i_sims.shape} != sims shape {sims.shape}")
    per_fold = []
    for start, stop in fold_bounds(sims.shape[0], folds):
        texts = fold_texts(txt2img, start, stop)
        per_fold.append(
            retrieval_metrics(
                sims[start:stop][:, texts],
                txt2img[texts] - start,
                t2i_sims=t2i_sims[start:stop][:, texts],
            )
        )
    return mean_metrics(per_fold)


__all__ = [
    "METRIC_KEYS",
    "as_numpy",
    "fold_bounds",
    "fold_texts",
    "i2t_ranks",
    "kfold_metrics",
    "mean_metrics",
    "rank_metrics",
    "retrieval_metrics",
    "t2i_ranks",
]
