"""Retrieved hard negatives on the testbed (``mined``): a :mod:`tags.mining` miner ranks
other scenes' captions by the model being trained.

:func:`mine` adds the chosen candidate as one more ITM row (``bce``);
:func:`mined_triplet_loss` is the miner's own hinge over every candidate (``triplet``: VSE++
``hardest``, SelHN, FNE); :func:`fne_observe` feeds FNE's statistics.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import torch

from tags.testbed.inputs import autocast, to_device
from tags.testbed.world import Batch


def mine(model, batch: Batch, miner, device, bf16: bool) -> Batch:
    """``batch`` with one negative per scene chosen by ``miner`` (a :mod:`tags.mining` miner
    that returns an ``index``) from the model's current ITM scores of its candidates: the
    cross-encoder's retrieved hard negative, trained with the same binary ITM loss."""
    rows, width = candidate_rows(batch)
    if not rows or width == 0:
        return batch
    scored = replace(batch, texts=[t for t, _ in rows], scene_index=[i for _, i in rows])
    positives = range(len(batch.scenes))
    was_training = model.training
    model.eval()
    with torch.no_grad(), autocast(device, bf16):
        cand = model(**to_device(scored, None, device)).float().cpu()
        pos = model(**to_device(batch, positives, device)).float().cpu()
    model.train(was_training)
    scores, valid = candidate_matrix(batch, cand, width)
    index = miner(scores, pos, valid).index
    texts, scene_index = list(batch.texts), list(batch.scene_index)
    targets, kinds = list(batch.targets), list(batch.kinds)
    for i, j in enumerate(index.tolist()):
        if j >= 0:
            texts.append(batch.candidates[i][j])
            scene_index.append(i), targets.append(0.0), kinds.append("mined")
    return replace(batch, texts=texts, scene_index=scene_index, targets=targets, kinds=kinds)


def candidate_rows(batch: Batch) -> tuple[list[tuple[str, int]], int]:
    """``mined``: the candidates as ``(text, scene)`` rows and the widest scene's count."""
    rows = [(text, i) for i, texts in enumerate(batch.candidates) for text in texts]
    return rows, max((len(t) for t in batch.candidates), default=0)


def candidate_matrix(batch: Batch, flat, width: int):
    """The candidates' flat scores as ``[scenes, width]`` (0 where a scene has fewer; keeps
    the gradient) and the mask of real entries."""
    index = torch.tensor(
        [i * width + j for i, texts in enumerate(batch.candidates) for j in range(len(texts))],
        device=flat.device,
    )
    scores = torch.zeros(len(batch.scenes) * width, dtype=flat.dtype, device=flat.device)
    scores = scores.index_put((index,), flat).reshape(len(batch.scenes), width)
    valid = torch.zeros(len(batch.scenes) * width, dtype=torch.bool, device=flat.device)
    valid[index] = True
    return scores, valid.reshape(len(batch.scenes), width)


def mined_triplet_loss(
    model, batch: Batch, positive_logits, miner, device, bf16: bool, branches: Counter | None = None
):
    """The miner's own per-anchor loss (margin 0.2) over the ITM
    scores (sigmoid of the logit, in [0, 1]) of each scene's candidates against its caption,
    with gradients: the image-to-text direction of the VSE++ / SelHN objective."""
    rows, width = candidate_rows(batch)
    if not rows:
        return positive_logits.sum() * 0.0
    scored = replace(batch, texts=[t for t, _ in rows], scene_index=[i for _, i in rows])
    with autocast(device, bf16):
        cand = torch.sigmoid(model(**to_device(scored, None, device)).float())
    scores, valid = candidate_matrix(batch, cand, width)
    positive = torch.sigmoid(positive_logits[: len(batch.scenes)].float())
    out = miner(scores, positive, valid)
    if branches is not None and out.branch is not None:  # SelHN / FNE: which rule applied
        branches.update(out.branch.tolist())
    return out.loss.mean()


#: FNE: scenes of the square in-batch matrix its statistics are read from
FNE_SQUARE = 16
#: FNE: steps between resets of its statistics (the official code resets them
#: every epoch; fresh scenes have no epochs)
FNE_WINDOW = 100


def fne_observe(model, batch: Batch, miner, step: int, device, bf16: bool) -> None:
    """FNE: feed FNE's Gaussians the right anchors of the ITM scores (sigmoid) of
    the first :data:`FNE_SQUARE` scenes against their captions, as its official code does
    with the in-batch matrix; reset every :data:`FNE_WINDOW` steps."""
    if (step - 1) % FNE_WINDOW == 0:
        miner.start_epoch()
    n = min(FNE_SQUARE, len(batch.scenes))
    texts = [batch.texts[j] for _ in range(n) for j in range(n)]
    scenes = [i for i in range(n) for _ in range(n)]
    square = replace(batch, texts=texts, scene_index=scenes)
    was_training = model.training
    model.eval()
    with torch.no_grad(), autocast(device, bf16):
        sims = torch.sigmoid(model(**to_device(square, None, device)).float()).reshape(n, n)
    model.train(was_training)
    miner.observe(sims.cpu(), list(range(n)))
