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

from tags.data import ImageTextDataset, pad_regions, pad_text


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
    was_training = model.training
    model.eval()
    try:
        with autocast():
            cap_scores = _score(model, dataset, batch, cap_pools, "text", config)
            img_scores = _score(model, dataset, batch, img_pools, "image", config)
    finally:
        model.train(was_training)
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
    model: nn.Module,
    dataset: ImageTextDataset,
    batch: dict[str, Any],
    pools: list[torch.Tensor],
    kind: str,
    config: Any,
) -> list[torch.Tensor]:
    """Scores of each anchor against its pool (``kind``: the pool holds texts or images)."""
    device = batch["input_ids"].device
    rows = [(a, int(c)) for a, pool in enumerate(pools) for c in pool.tolist()]
    flat: list[torch.Tensor] = []
    anchor_text = [
        ids[: int(m.sum())] for ids, m in zip(batch["input_ids"], batch["attention_mask"])
    ]
    anchor_regions = [
        (f[: int(m.sum())], bx[: int(m.sum())])
        for f, bx, m in zip(batch["region_features"], batch["region_boxes"], batch["region_mask"])
    ]
    if config.mode == "dual":
        text_emb = model.encode_text(*[t.to(device) for t in pad_text(anchor_text)])
        feats, boxes, mask = pad_regions(
            [r[0] for r in anchor_regions], [r[1] for r in anchor_regions]
        )
        image_emb = model.encode_image(feats.to(device), boxes.to(device), mask.to(device))
    for start, stop in _chunks(len(rows), config.score_batch_size):
        chunk = rows[start:stop]
        if kind == "text":
            texts = [torch.tensor(dataset.tokens(c)) for _, c in chunk]
            regions = [anchor_regions[a] for a, _ in chunk]
        else:
            texts = [anchor_text[a].cpu() for a, _ in chunk]
            regions = [dataset.image(c) for _, c in chunk]
        if config.mode == "dual":
            anchors = torch.tensor([a for a, _ in chunk], device=device)
            if kind == "text":
                ids, att = pad_text(texts)
                emb = model.encode_text(ids.to(device), att.to(device))
                flat.append((emb * image_emb[anchors]).sum(-1).float().cpu())
            else:
                f, bx, m = pad_regions([r[0] for r in regions], [r[1] for r in regions])
                emb = model.encode_image(f.to(device), bx.to(device), m.to(device))
                flat.append((emb * text_emb[anchors]).sum(-1).float().cpu())
            continue
        ids, att = pad_text(texts)
        f, bx, m = pad_regions(
            [r[0].to(device) for r in regions], [r[1].to(device) for r in regions]
        )
        out = model.score_pairs(ids.to(device), att.to(device), f, bx, m)
        flat.append(out.scores.float().cpu())
    scores = torch.cat(flat) if flat else torch.zeros(0)
    return list(scores.split([p.numel() for p in pools]))


__all__ = ["draw_pool", "retrieve_negatives"]
