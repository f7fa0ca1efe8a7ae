"""Retrieved negatives for TAGS-DC's L_ITM (UNITER style).

For every anchor pair, a random pool of ``pool_size`` captions of other images (i2t) and of
other images (t2i) is drawn from the whole training set with a generator seeded by
``(seed, step, dataset index)``, scored under ``no_grad``, and the top ``num_negatives``
kept: ``mode="pool"`` scores with the ITM head (cross-encoder, the paper's 399 -> 31),
``mode="dual"`` with the dual-encoder similarity (``encode_text``/``encode_image`` and the
backend's ``pair_similarity``; cheaper).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from tags.data import ImageTextDataset, pad_text


def draw_pool(
    size: int, count: int, exclude: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    """``count`` distinct indices in ``[0, size)`` whose ``exclude`` flag is False."""
    perm = torch.randperm(size, generator=generator)
    return perm[~exclude[perm]][:count]


def _chunks(n: int, size: int):
    for start in range(0, n, size):
        yield start, min(start + size, n)


@torch.no_grad()
def encode_dataset(
    model: nn.Module, dataset: ImageTextDataset, device: Any = "cpu", chunk: int = 64
) -> tuple[torch.Tensor, torch.Tensor]:
    """Dual-mode embeddings of every image and every caption of ``dataset`` (dataset order),
    as float32 ``([N_img, H], [N_cap, H])``; call it under the wanted autocast."""
    from tags.backends import as_backend

    backend = as_backend(model)  # a TagsModel, an HF model, or a backend already
    images, captions = [], []
    for start, stop in _chunks(dataset.num_images, chunk):
        batch = backend.collate_images([dataset.image(i) for i in range(start, stop)])
        images.append(backend.encode_image({k: v.to(device) for k, v in batch.items()}).float())
    pad_id = getattr(dataset.tokenizer, "pad_token_id", None) or 0
    for start, stop in _chunks(len(dataset), chunk):
        ids, mask = pad_text([dataset.tokens(i) for i in range(start, stop)], pad_id)
        text = {"input_ids": ids.to(device), "attention_mask": mask.to(device)}
        captions.append(backend.encode_text(text).float())
    return torch.cat(images), torch.cat(captions)


@dataclass
class RetrievalPools:
    """Scored pools of a batch, padded to ``[B, P]`` (``mask`` False on padding).

    ``captions``: dataset pair indices of each anchor image's caption pool (i2t);
    ``images``: dense image indices of each anchor caption's image pool (t2i); scores are the
    no_grad retrieval scores (cross mode: matching probability, dual: cosine); ``positive``:
    each anchor pair's own score under the same model and mode (when asked for)."""

    captions: torch.Tensor
    caption_scores: torch.Tensor
    caption_mask: torch.Tensor
    images: torch.Tensor
    image_scores: torch.Tensor
    image_mask: torch.Tensor
    positive: torch.Tensor | None = None


def _pad(pools: list[torch.Tensor], scores: list[torch.Tensor]):
    width = max([p.numel() for p in pools] + [1])
    index = torch.zeros(len(pools), width, dtype=torch.long)
    value = torch.zeros(len(pools), width)
    mask = torch.zeros(len(pools), width, dtype=torch.bool)
    for row, (pool, s) in enumerate(zip(pools, scores)):
        index[row, : pool.numel()] = pool
        value[row, : pool.numel()] = s.float().cpu()
        mask[row, : pool.numel()] = True
    return index, value, mask


@torch.no_grad()
def score_pools(
    model: nn.Module,
    dataset: ImageTextDataset,
    batch: dict[str, Any],
    generators: list[torch.Generator],
    config: Any,
    autocast: Any,
    positives: bool = False,
) -> RetrievalPools:
    """Draw and score each anchor's caption and image pools (eval mode, no_grad); with
    ``positives`` also each anchor pair itself (FNE's statistics). Tensors on the batch's
    device."""
    device = batch["input_ids"].device
    b = batch["input_ids"].shape[0]
    cap_pools, img_pools = [], []
    for row in range(b):
        image = int(batch["image_ids"][row])
        g = generators[row]
        cap_pools.append(draw_pool(len(dataset), config.pool_size, dataset.image_of == image, g))
        img_exclude = torch.zeros(dataset.num_images, dtype=torch.bool)
        img_exclude[image] = True
        img_pools.append(draw_pool(dataset.num_images, config.pool_size, img_exclude, g))
    from tags.backends import as_backend

    backend = as_backend(model)  # a TagsModel, or any backend
    was_training = backend.model.training
    backend.model.eval()
    # the positive pair rides along with the caption pool (its own caption, same tokens as
    # the batch's): one more row per anchor in the same scoring calls
    own = batch["index"].reshape(-1, 1).cpu() if positives else torch.zeros(b, 0, dtype=torch.long)
    try:
        with autocast():
            scored = [torch.cat([pool, own[row]]) for row, pool in enumerate(cap_pools)]
            cap_scores = _score(backend, dataset, batch, scored, "text", config)
            img_scores = _score(backend, dataset, batch, img_pools, "image", config)
    finally:
        backend.model.train(was_training)
    pos = torch.stack([s[-1] for s in cap_scores]).to(device) if positives else None
    cap_scores = [s[: pool.numel()] for s, pool in zip(cap_scores, cap_pools)]
    caps = [t.to(device) for t in _pad(cap_pools, cap_scores)]
    imgs = [t.to(device) for t in _pad(img_pools, img_scores)]
    return RetrievalPools(*caps, *imgs, pos)


def top_negatives(
    pools: torch.Tensor, scores: torch.Tensor, mask: torch.Tensor, k: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` best-scored valid pool entries per row: ``(indices [B, k], valid [B, k])``
    (``valid`` False pads rows whose pool was smaller than ``k``)."""
    from tags.mining.fne_pool import top_m

    return take(pools, top_m(scores, mask, k), k)


def take(pools: torch.Tensor, columns: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Pool entries at ``columns`` ``[B, m]`` (``-1`` = none), padded to ``k`` per row."""
    out = torch.zeros(pools.shape[0], k, dtype=torch.long, device=pools.device)
    valid = torch.zeros(pools.shape[0], k, dtype=torch.bool, device=pools.device)
    m = min(k, columns.shape[1])
    ok = columns[:, :m] >= 0
    out[:, :m] = torch.where(ok, pools.gather(1, columns[:, :m].clamp(min=0)), 0)
    valid[:, :m] = ok
    return out, valid


def retrieve_negatives(
    model: nn.Module,
    dataset: ImageTextDataset,
    batch: dict[str, Any],
    generators: list[torch.Generator],
    config: Any,
    autocast: Any,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Top-k negatives per anchor: ``(captions [B, k], caption_valid, images [B, k],
    image_valid)`` as dataset pair indices / dense image indices (``valid`` False pads
    anchors whose pool was smaller than ``k``)."""
    pools = score_pools(model, dataset, batch, generators, config, autocast)
    k = config.num_negatives
    caps = top_negatives(pools.captions, pools.caption_scores, pools.caption_mask, k)
    imgs = top_negatives(pools.images, pools.image_scores, pools.image_mask, k)
    return (*caps, *imgs)


def _fp32_similarity(backend: Any, image_emb: torch.Tensor, text_emb: torch.Tensor) -> torch.Tensor:
    """The backend's row-aligned similarity in fp32, outside autocast (a bf16 product of
    unit vectors has a spacing of 0.004 near 1: the top-k would pick among ties)."""
    with torch.autocast(image_emb.device.type, enabled=False):
        return backend.pair_similarity(image_emb.float(), text_emb.float()).float()


def _score(
    backend: Any,
    dataset: ImageTextDataset,
    batch: dict[str, Any],
    pools: list[torch.Tensor],
    kind: str,
    config: Any,
) -> list[torch.Tensor]:
    """Scores of each anchor against its pool (``kind``: the pool holds texts or images);
    cross mode: the backend's matching probability, dual: the embedding cosine (both fp32)."""
    device = batch["input_ids"].device
    rows = [(a, int(c)) for a, pool in enumerate(pools) for c in pool.tolist()]
    flat: list[torch.Tensor] = []
    anchor_text = [
        ids[: int(m.sum())] for ids, m in zip(batch["input_ids"], batch["attention_mask"])
    ]
    anchor_images = backend.image_items(batch)

    def text_batch(texts: list[torch.Tensor]) -> dict[str, torch.Tensor]:
        ids, att = pad_text(texts)
        return {"input_ids": ids.to(device), "attention_mask": att.to(device)}

    def image_batch(items: list[Any]) -> dict[str, torch.Tensor]:
        return {k: v.to(device) for k, v in backend.collate_images(items).items()}

    if config.mode == "dual":
        text_emb = backend.encode_text(text_batch(anchor_text))
        image_emb = backend.encode_image(image_batch(anchor_images))
    for start, stop in _chunks(len(rows), config.score_batch_size):
        chunk = rows[start:stop]
        if kind == "text":
            texts = [torch.tensor(dataset.tokens(c)) for _, c in chunk]
            images = [anchor_images[a] for a, _ in chunk]
        else:
            texts = [anchor_text[a].cpu() for a, _ in chunk]
            images = [dataset.image(c) for _, c in chunk]
        if config.mode == "dual":
            anchors = torch.tensor([a for a, _ in chunk], device=device)
            if kind == "text":
                emb = backend.encode_text(text_batch(texts))
                flat.append(_fp32_similarity(backend, image_emb[anchors], emb).cpu())
            else:
                emb = backend.encode_image(image_batch(images))
                flat.append(_fp32_similarity(backend, emb, text_emb[anchors]).cpu())
            continue
        images = [
            tuple(t.to(device) for t in item) if isinstance(item, tuple) else item.to(device)
            for item in images
        ]
        logits = backend.score_pairs(text_batch(texts), image_batch(images))
        flat.append(backend.pair_probability(logits).float().cpu())
    scores = torch.cat(flat) if flat else torch.zeros(0)
    return list(scores.split([p.numel() for p in pools]))


__all__ = [
    "RetrievalPools",
    "draw_pool",
    "retrieve_negatives",
    "score_pools",
    "take",
    "top_negatives",
]
