"""The testbed's held-out set and its measures: minimal-pair accuracy per kind, retrieval.

The held-out scenes (2-4 objects) come from generator seed ``EVAL_SEED_BASE + seed``, never a
training seed; their pairs are drawn as the benchmark draws its test pairs (``balanced``
sampler, plus every role swap false of its scene). A pair is right when the true caption gets
the higher ITM logit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tags.benchmark.captions import sample_claims
from tags.benchmark.minimal_pairs import MinimalPair, role_swap_pairs, sample_minimal_pairs
from tags.benchmark.scenes import Scene, generate_scene
from tags.testbed.inputs import autocast, itm_logits
from tags.testbed.vocab import tokenize
from tags.testbed.world import IMAGE_SIZE, Batch, stack_scenes

#: the kinds of held-out pairs
KINDS: tuple[str, ...] = ("attribute", "object", "relation", "role")
#: generator seed of the held-out scenes (training uses ``TRAIN_SEED_BASE + seed``)
EVAL_SEED_BASE = 900_000


@dataclass
class EvalSet:
    """Held-out scenes (2-4 objects) and their minimal and role pairs."""

    scenes: dict[int, Scene]
    pairs: list[MinimalPair]
    #: per scene, its captions (the retrieval split: retrieval)
    captions: dict[int, list[str]] = field(default_factory=dict)
    #: pixel perception: the pixel features of scenes (see :func:`stack_scenes`)
    featurize: Callable | None = None
    _stacked: tuple | None = None

    def stacked(self) -> tuple[list[int], np.ndarray, np.ndarray, np.ndarray]:
        """The scene ids in order and their stacked inputs (computed once)."""
        if self._stacked is None:
            ids = sorted(self.scenes)
            self._stacked = (ids, *stack_scenes([self.scenes[i] for i in ids], self.featurize))
        return self._stacked

    def counts(self) -> dict[str, int]:
        return dict(Counter(p.type for p in self.pairs))


def eval_set(seed: int = 0, num_scenes: int = 200, captions: int = 5) -> EvalSet:
    """The fixed held-out set: scenes of generator seed ``EVAL_SEED_BASE + seed`` (never a
    training seed), 5 captions each as the builder samples them, the ``balanced`` minimal
    pairs of the split and every false role swap."""
    gen_seed = EVAL_SEED_BASE + seed
    items = []
    for image_id in range(num_scenes):
        scene = generate_scene(image_id, gen_seed, IMAGE_SIZE, 2, 4)
        items.append(
            (scene, sample_claims(scene, np.random.default_rng([gen_seed, image_id, 1]), captions))
        )
    pairs = sample_minimal_pairs(items, gen_seed, 1, "balanced")
    for scene, claims in items:
        pairs += role_swap_pairs(scene, claims)
    return EvalSet(
        {s.image_id: s for s, _ in items},
        pairs,
        {s.image_id: [c.text for c in claims] for s, claims in items},
    )


# ---------------------------------------------------------------------------- model


def evaluate(
    model, data: EvalSet, device, bf16: bool, chunk: int | None = None
) -> dict[str, float]:
    """Per kind (and ``overall``), the share of pairs whose caption scores above its negative.
    Each distinct (scene, caption) row is scored once (a true caption serves several pairs),
    ``chunk`` rows a forward (default :func:`~tags.testbed.inputs.inference_rows`), rows of
    about one length together (:func:`~tags.testbed.inputs.itm_logits`)."""
    import torch

    ids, labels, boxes, mask = data.stacked()
    pos = {i: k for k, i in enumerate(ids)}
    texts = [p.caption for p in data.pairs] + [p.negative for p in data.pairs]
    index = [pos[p.image_id] for p in data.pairs] * 2
    distinct: dict[tuple[int, str], int] = {}
    for scene, text in zip(index, texts, strict=True):
        distinct.setdefault((scene, text), len(distinct))
    rows = list(distinct)
    batch = Batch(labels, boxes, mask, [], [], [], [])
    was_training = model.training
    model.eval()
    with torch.inference_mode(), autocast(device, bf16):
        logits = itm_logits(
            model, [tokenize(t) for _, t in rows], [s for s, _ in rows], batch, device, chunk
        )
    model.train(was_training)
    row_of = [distinct[key] for key in zip(index, texts, strict=True)]
    scores = logits.numpy()[row_of]
    wins = scores[: len(data.pairs)] > scores[len(data.pairs) :]
    types = np.array([p.type for p in data.pairs])
    result = {"overall": float(wins.mean())}
    for kind in KINDS:
        if (types == kind).any():
            result[kind] = float(wins[types == kind].mean())
    return result


def retrieval(
    model, data: EvalSet, device, bf16: bool, chunk: int | None = None
) -> dict[str, float]:
    """Image-text retrieval over the held-out scenes and their captions (every scene against
    every caption, by the ITM logit): i2t / t2i R@1/5/10 and RSum
    (:func:`tags.evaluation.metrics.retrieval_metrics`). A caption counts for its own scene
    only, also where it happens to be true of another."""
    import torch

    from tags.evaluation.metrics import retrieval_metrics

    ids, labels, boxes, mask = data.stacked()
    texts = [t for i in ids for t in data.captions[i]]
    txt2img = [k for k, i in enumerate(ids) for _ in data.captions[i]]
    rows = [(s, t) for s in range(len(ids)) for t in range(len(texts))]
    batch = Batch(labels, boxes, mask, [], [], [], [])
    tokens = [tokenize(t) for t in texts]
    was_training = model.training
    model.eval()
    with torch.inference_mode(), autocast(device, bf16):
        logits = itm_logits(
            model, [tokens[t] for _, t in rows], [s for s, _ in rows], batch, device, chunk
        )
    model.train(was_training)
    sims = logits.reshape(len(ids), len(texts))
    metrics = retrieval_metrics(sims, torch.as_tensor(txt2img))
    return {k: round(v, 2) for k, v in metrics.items() if k == "rsum" or "_r" in k}
