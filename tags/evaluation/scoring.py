"""Image-text score matrices: full cross-encoder, dual encoder, and two-stage rerank.

Every function returns ``[n_images, n_texts]`` float32 CPU tensors, identical on every
process. With an ``accelerator`` the query rows are sharded the Accelerate way: a
``DataLoader`` over row indices goes through ``accelerator.prepare_data_loader`` (each
process gets its batches), each process scores its rows, and ``accelerator.gather_for_metrics``
collects them (dropping the duplicates ``even_batches`` adds at the end). Rows are placed by
their gathered indices, so the result does not depend on the number of processes.

Cross-encoder memory stays bounded: a forward sees at most ``batch_size`` (image, text) pairs,
and a step at most :data:`MAX_ROWS_PER_STEP` rows of the output matrix.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.utils.data import DataLoader

from tags.evaluation.data import RetrievalImages, RetrievalTexts

MODES = ("cross", "dual", "two-stage")
MAX_ROWS_PER_STEP = 64


def _unwrap(model: Any, accelerator: Any) -> Any:
    return accelerator.unwrap_model(model) if accelerator is not None else model


def _device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


@contextlib.contextmanager
def _inference(model: torch.nn.Module, accelerator: Any) -> Iterator[None]:
    """``eval()`` + ``no_grad`` (+ the accelerator's autocast); restores the training flag."""
    was_training = model.training
    model.eval()
    autocast = accelerator.autocast() if accelerator is not None else contextlib.nullcontext()
    try:
        with torch.no_grad(), autocast:
            yield
    finally:
        model.train(was_training)


def map_rows(
    fn: Callable[[torch.Tensor], torch.Tensor],
    n: int,
    rows_per_step: int,
    accelerator: Any = None,
    desc: str | None = None,
    unit: str = " rows",
) -> torch.Tensor:
    """``torch.cat([fn(i) for i in index batches])`` in row order, sharded over processes.

    ``fn`` takes a CPU ``LongTensor`` of row indices and returns ``[len(index), ...]``.
    ``desc``: a progress bar of the gathered rows (:func:`tags.core.progress.stage`: drawn only
    inside a command's :func:`tags.core.progress.bars` block).
    """
    from tags.core.progress import progress, stage

    loader: Any = DataLoader(range(n), batch_size=max(1, rows_per_step))
    if accelerator is not None:
        loader = accelerator.prepare_data_loader(loader)
    out: torch.Tensor | None = None
    seen = torch.zeros(n, dtype=torch.bool)
    bar = stage(n, desc, unit) if desc else progress(disable=True)
    with bar:
        for index in loader:
            rows = fn(index.cpu())
            if accelerator is not None:
                index, rows = accelerator.gather_for_metrics((index.to(rows.device), rows))
            index, rows = index.cpu(), rows.cpu()
            if out is None:
                out = torch.empty(n, *rows.shape[1:], dtype=rows.dtype)
            out[index] = rows
            seen[index] = True
            bar.update(len(index))
    if out is None or not bool(seen.all()):
        raise RuntimeError(f"row gathering lost rows: {int((~seen).sum())} of {n} missing")
    return out


def _backend(model: Any, accelerator: Any) -> Any:
    """The :class:`~tags.backends.VLBackend` of ``model`` (unwrapped from Accelerate)."""
    from tags.backends import VLBackend, as_backend

    if isinstance(model, VLBackend):
        if accelerator is None:
            return model
        backend = copy.copy(model)
        backend.model = accelerator.unwrap_model(model.model)
        return backend
    return as_backend(_unwrap(model, accelerator))


def _score_chunk(
    backend: Any,
    images: RetrievalImages,
    texts: RetrievalTexts,
    image_index: torch.Tensor,
    text_index: torch.Tensor,
    use_logits: bool,
) -> torch.Tensor:
    """ITM scores (or logits) of the row-aligned pairs ``(image_index[b], text_index[b])``."""
    device = backend.device
    if bool((image_index == image_index[0]).all()):  # one image broadcast against the texts
        image_index = image_index[:1]
    if bool((text_index == text_index[0]).all()):
        text_index = text_index[:1]
    logits = backend.score_pairs(texts.batch(text_index, device), images.batch(image_index, device))
    return (logits if use_logits else backend.pair_probability(logits)).float()


def _cross_rows(
    model: Any,
    images: RetrievalImages,
    texts: RetrievalTexts,
    batch_size: int,
    accelerator: Any,
    use_logits: bool,
    pair_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Cross-encoder scores of every pair (or the pairs in ``pair_mask``; NaN elsewhere)."""
    backend = _backend(model, accelerator)
    net = backend.model
    n_images, n_texts = len(images), len(texts)
    # texts sorted by length, so a chunk carries little padding
    text_order = torch.argsort(texts.attention_mask.sum(dim=1), stable=True)
    per_row = n_texts if pair_mask is None else float(pair_mask.sum()) / max(1, n_images)
    rows_per_step = min(MAX_ROWS_PER_STEP, max(1, int(batch_size // max(1.0, per_row))))

    def score_rows(index: torch.Tensor) -> torch.Tensor:
        columns = [
            text_order if pair_mask is None else text_order[pair_mask[i, text_order]]
            for i in index.tolist()
        ]
        row_of_pair = torch.cat([torch.full_like(c, r) for r, c in enumerate(columns)])
        text_of_pair = torch.cat(columns)
        out = torch.full((len(index), n_texts), float("nan"))
        for start in range(0, row_of_pair.numel(), batch_size):
            rows = row_of_pair[start : start + batch_size]
            cols = text_of_pair[start : start + batch_size]
            out[rows, cols] = _score_chunk(
                backend, images, texts, index[rows], cols, use_logits
            ).cpu()
        return out.to(_device(net))

    desc = "cross-encoder" if pair_mask is None else "rerank top-k"
    with _inference(net, accelerator):
        return map_rows(score_rows, n_images, rows_per_step, accelerator, desc, " images")


def score_matrix_cross(
    model: Any,
    images: RetrievalImages,
    texts: RetrievalTexts,
    batch_size: int = 256,
    accelerator: Any = None,
    *,
    use_logits: bool = True,
) -> torch.Tensor:
    """Full cross-encoder matrix ``[n_images, n_texts]`` from ``model.score_pairs``.

    Each process scores a shard of the images against all texts, ``batch_size`` pairs per
    forward; the rows are gathered with ``gather_for_metrics``.

    Args:
        use_logits: rank by the ITM logit (default) instead of the sigmoid score. The order
            is the same, except that sigmoid saturates into exact ties (fp32 beyond |logit|
            ~17, bf16 much earlier).
    """
    return _cross_rows(model, images, texts, batch_size, accelerator, use_logits)


def encode_images(
    model: Any, images: RetrievalImages, batch_size: int = 256, accelerator: Any = None
) -> torch.Tensor:
    """``[n_images, hidden]`` L2-normalised image embeddings (the backend's ``encode_image``)."""
    backend = _backend(model, accelerator)

    def encode(index: torch.Tensor) -> torch.Tensor:
        return backend.encode_image(images.batch(index, backend.device)).float()

    with _inference(backend.model, accelerator):
        return map_rows(encode, len(images), batch_size, accelerator, "encode images", " images")


def encode_texts(
    model: Any, texts: RetrievalTexts, batch_size: int = 256, accelerator: Any = None
) -> torch.Tensor:
    """``[n_texts, hidden]`` L2-normalised text embeddings (the backend's ``encode_text``)."""
    backend = _backend(model, accelerator)

    def encode(index: torch.Tensor) -> torch.Tensor:
        return backend.encode_text(texts.batch(index, backend.device)).float()

    with _inference(backend.model, accelerator):
        return map_rows(encode, len(texts), batch_size, accelerator, "encode texts", " texts")


def score_matrix_dual(
    model: Any,
    images: RetrievalImages,
    texts: RetrievalTexts,
    batch_size: int = 256,
    accelerator: Any = None,
) -> torch.Tensor:
    """Dual-encoder cosine matrix ``[n_images, n_texts]`` (``encode_image`` x ``encode_text``).

    Each process encodes a shard of the images and of the texts; the product is computed on
    every process from the gathered embeddings.
    """
    image_emb = encode_images(model, images, batch_size, accelerator)
    text_emb = encode_texts(model, texts, batch_size, accelerator)
    return _backend(model, accelerator).similarity(image_emb, text_emb)


def topk_masks(dual_sims: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Boolean ``[n_images, n_texts]`` masks of each row's and each column's top-``k``.

    Ties are cut like the metrics break them (stable sort: lower index first).
    """
    n_images, n_texts = dual_sims.shape
    rows = torch.zeros(dual_sims.shape, dtype=torch.bool)
    cols = torch.zeros(dual_sims.shape, dtype=torch.bool)
    rows.scatter_(1, torch.argsort(-dual_sims, dim=1, stable=True)[:, : min(k, n_texts)], True)
    cols.scatter_(0, torch.argsort(-dual_sims, dim=0, stable=True)[: min(k, n_images)], True)
    return rows, cols


def rerank_topk(
    model: Any,
    images: RetrievalImages,
    texts: RetrievalTexts,
    dual_sims: torch.Tensor,
    k: int = 128,
    batch_size: int = 256,
    accelerator: Any = None,
    *,
    use_logits: bool = True,
    fusion: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Two-stage retrieval: rerank each query's dual top-``k`` with the cross-encoder.

    i2t: for every image its top-``k`` texts by ``dual_sims`` get cross-encoder scores; t2i:
    for every text its top-``k`` images. A pair in both sets is scored once. Everything
    outside a query's top-``k`` keeps its dual order but is shifted below every reranked
    score (``dual - max(dual) + min(reranked) - 1``). ``fusion`` ``w``: the top-``k`` are
    reranked by ``dual + w * cross`` instead of the cross score alone (``0``: the dual
    order; pick ``w`` on data other than the test split).

    Returns:
        ``(i2t_sims, t2i_sims)``, both ``[n_images, n_texts]``: rank rows of the first and
        columns of the second (``retrieval_metrics(i2t_sims, txt2img, t2i_sims=t2i_sims)``).
        With ``k >= max(n_images, n_texts)`` both equal the full cross-encoder matrix.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    dual = dual_sims.detach().float().cpu()
    if dual.shape != (len(images), len(texts)):
        raise ValueError(f"dual_sims {tuple(dual.shape)} != ({len(images)}, {len(texts)})")
    rows, cols = topk_masks(dual, k)
    pairs = rows | cols
    cross = _cross_rows(model, images, texts, batch_size, accelerator, use_logits, pairs)
    if fusion is not None:
        cross = dual + fusion * cross
    below = dual - dual.max() + cross[pairs].min() - 1.0
    return torch.where(rows, cross, below), torch.where(cols, cross, below)


def compute_scores(
    model: Any,
    images: RetrievalImages,
    texts: RetrievalTexts,
    mode: str = "cross",
    *,
    topk: int = 128,
    batch_size: int = 256,
    accelerator: Any = None,
    use_logits: bool = True,
    fusion: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(i2t_sims, t2i_sims)`` for ``mode`` in :data:`MODES` (the same matrix twice except
    for two-stage; ``fusion``: see :func:`rerank_topk`)."""
    if mode == "cross":
        sims = score_matrix_cross(
            model, images, texts, batch_size, accelerator, use_logits=use_logits
        )
        return sims, sims
    if mode == "dual":
        sims = score_matrix_dual(model, images, texts, batch_size, accelerator)
        return sims, sims
    if mode == "two-stage":
        dual = score_matrix_dual(model, images, texts, batch_size, accelerator)
        return rerank_topk(
            model, images, texts, dual, topk, batch_size, accelerator, use_logits=use_logits,
            fusion=fusion,
        )  # fmt: skip
    raise ValueError(f"unknown mode {mode!r}; choose from {MODES}")


__all__ = [
    "MODES",
    "compute_scores",
    "encode_images",
    "encode_texts",
    "map_rows",
    "rerank_topk",
    "score_matrix_cross",
    "score_matrix_dual",
    "topk_masks",
]
