"""Retrieved negatives for TAGS-DC's L_ITM (UNITER style).

For every anchor pair, a random pool of ``pool_size`` captions of other images (i2t) and of
other images (t2i) is drawn from the whole training set with a generator seeded by
``(seed, step, dataset index)``, scored under ``no_grad``, and the top ``num_negatives``
kept: ``mode="pool"`` scores with the ITM head (cross-encoder, the paper's 399 -> 31),
``mode="dual"`` with the dual-encoder cosine (``encode_text``/``encode_image``; cheaper).
"""

from __future__ import annotations

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


@torch.no_grad()
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
    device = batch["input_ids"].device
    b, k = batch["input_ids"].shape[0], config.num_negatives
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
    try:
        with autocast():
            cap_scores = _score(backend, dataset, batch, cap_pools, "text", config)
            img_scores = _score(backend, dataset, batch, img_pools, "image", config)
    finally:
        backend.model.train(was_training)
    caps, cap_valid = _top(cap_pools, cap_scores, k)
    imgs, img_valid = _top(img_pools, img_scores, k)
    return caps.to(device), cap_valid.to(device), imgs.to(device), img_valid.to(device)


def _top(pools: list[torch.Tensor], scores: list[torch.Tensor], k: int):
    out = torch.zeros(len(pools), k, dtype=torch.long)
    valid = torch.zeros(len(pools), k, dtype=torch.bool)
    for row, (pool, s) in enumerate(zip(pools, scores)):
        n = min(k, pool.numel())
        if n:
            top = torch.topk(s.float().cpu(), n).indices
            out[row, :n] = pool[top]
            valid[row, :n] = True
    return out, valid


def _score(
    backend: Any,
    dataset: ImageTextDataset,
    batch: dict[str, Any],
    pools: list[torch.Tensor],
    kind: str,
    config: Any,
) -> list[torch.Tensor]:
    """Scores of each anchor against its pool (``kind``: the pool holds texts or images);
    cross mode: the backend's matching probability, dual: the embedding cosine."""
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
                flat.append((emb * image_emb[anchors]).sum(-1).float().cpu())
            else:
                emb = backend.encode_image(image_batch(images))
                flat.append((emb * text_emb[anchors]).sum(-1).float().cpu())
            continue
        images = [
            tuple(t.to(device) for t in item) if isinstance(item, tuple) else item.to(device)
            for item in images
        ]
        logits = backend.score_pairs(text_batch(texts), image_batch(images))
        flat.append(backend.pair_probability(logits).float().cpu())
    scores = torch.cat(flat) if flat else torch.zeros(0)
    return list(scores.split([p.numel() for p in pools]))


__all__ = ["draw_pool", "retrieve_negatives"]
