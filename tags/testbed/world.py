"""The testbed's world: fresh scenes every step, their captions, negatives and batches.

Every training step draws new procedural scenes (the benchmark's generator), one true caption
each (its captioner), and per caption the negatives of the method: another scene's caption
checked false of this one (every method), plus a scene-checked single edit (``oracle``,
:class:`NegativeSampler`), a ``tags generate`` negative (``tags``,
:class:`~tags.testbed.tags_pool.TagsPool`) or the candidates a miner ranks (``mined``).
Everything is deterministic in ``(seed, step)``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from tags.benchmark.captions import Claim, holds, sample_claims
from tags.benchmark.minimal_pairs import false_edits
from tags.benchmark.scenes import Scene, generate_scene
from tags.testbed.vocab import MAX_REGIONS, WORD_ID

#: generator seed of the training scenes: ``TRAIN_SEED_BASE + seed``
TRAIN_SEED_BASE = 100
#: side of a rendered scene, in pixels
IMAGE_SIZE = 192


def step_scenes(
    step: int, generator_seed: int, batch_size: int, max_objects: int
) -> list[tuple[Scene, Claim]]:
    """The fresh scenes of one training step and one true caption each."""
    drawn = []
    for k in range(batch_size):
        image_id = step * batch_size + k
        scene = generate_scene(image_id, generator_seed, IMAGE_SIZE, 2, max_objects)
        rng = np.random.default_rng([generator_seed, image_id, 1])
        drawn.append((scene, sample_claims(scene, rng, 1)[0]))
    return drawn


def training_claims(
    seed: int, steps: int, batch_size: int, curriculum: int = 0,
    seed_base: int = TRAIN_SEED_BASE,
) -> Iterable[tuple[Scene, Claim]]:  # fmt: skip
    """The training scenes and true captions of steps ``1..steps`` for ``seed``."""
    for step in range(1, steps + 1):
        max_objects = 2 if step <= curriculum else 4
        yield from step_scenes(step, seed_base + seed, batch_size, max_objects)


def training_captions(
    seeds: Sequence[int], steps: int, batch_size: int, curriculum: int = 0,
    seed_base: int = TRAIN_SEED_BASE,
) -> list[str]:  # fmt: skip
    """The distinct training captions of ``seeds`` (first-seen order), for ``tags generate``
    (each its own image: a scene has one training caption)."""
    texts: dict[str, None] = {}
    for seed in seeds:
        for _, claim in training_claims(seed, steps, batch_size, curriculum, seed_base):
            texts.setdefault(claim.text)
    return list(texts)


class NegativeSource(Protocol):
    """Draws one negative of a caption: ``(kind, text or edited Claim)`` or ``None``."""

    def draw(
        self, claim: Claim, scene: Scene, rng: np.random.Generator
    ) -> tuple[str, str | Claim] | None: ...


def scene_tensors(scene: Scene) -> tuple[np.ndarray, np.ndarray]:
    """Per object: the word ids of its shape, colour, size ``[R, 3]`` and its box
    ``(x1, y1, x2, y2)`` divided by the image side ``[R, 4]``."""
    labels = np.array(
        [[WORD_ID[o.shape], WORD_ID[o.color], WORD_ID[o.size]] for o in scene.objects]
    )
    boxes = np.array([o.box for o in scene.objects], np.float32) / np.float32(scene.width)
    return labels, np.clip(boxes, 0.0, 1.0)


def role_swap(claim: Claim) -> Claim | None:
    """The claim with its two mentions exchanged (``role_swap_pairs``'s edit), or ``None``."""
    if claim.relation is None or len(claim.mentions) != 2:
        return None
    return replace(claim, mentions=claim.mentions[::-1])


def edit_options(claim: Claim, scene: Scene, kinds: Sequence[str]) -> dict[str, list]:
    """Per kind, the false single edits ``(original, replacement, claim)`` of ``claim``."""
    options = {k: v for k, v in false_edits(claim, scene).items() if k in kinds and v}
    swapped = role_swap(claim)
    if (
        "role" in kinds
        and swapped is not None
        and swapped.text != claim.text
        and not holds(swapped, scene)
    ):
        a, b = claim.mentions
        options["role"] = [(a.text, b.text, swapped)]
    return options


@dataclass
class NegativeSampler:
    """Scene-checked single-edit negatives; within a kind, directions are balanced online
    (an edit ``a -> b`` is preferred while ``b -> a`` has been used more often)."""

    kinds: Sequence[str]
    debt: dict[str, Counter] = field(default_factory=dict)

    def draw(
        self, claim: Claim, scene: Scene, rng: np.random.Generator
    ) -> tuple[str, Claim] | None:
        options = edit_options(claim, scene, self.kinds)
        if not options:
            return None
        kind = sorted(options)[int(rng.integers(len(options)))]
        debt = self.debt.setdefault(kind, Counter())
        edits = options[kind]
        owed = [k for k, (old, new, _) in enumerate(edits) if debt[(old, new)] > 0]
        pool = owed or list(range(len(edits)))
        old, new, edited = edits[pool[int(rng.integers(len(pool)))]]
        debt[(old, new)] -= 1
        debt[(new, old)] += 1
        return kind, edited


@dataclass
class Batch:
    """Rows of (caption, scene index, target); ``kinds`` names each row's origin."""

    #: per region, the word ids of its shape, colour and size ``[S, 4, 3]``; with
    #: pixel perception its crop ``[S, 4, c, c, 3]`` (uint8) as built, then its frozen
    #: CNN features ``[S, 4, dim]`` (float, on the device) once the training loop has them
    labels: np.ndarray
    boxes: np.ndarray  # [S, 4, 4]
    region_mask: np.ndarray  # [S, 4]
    texts: list[str]
    scene_index: list[int]
    targets: list[float]
    kinds: list[str]
    scenes: list[Scene] = field(default_factory=list)
    #: ``mined``: per scene, the other scenes' captions (false of it) the miner chooses from
    candidates: list[list[str]] = field(default_factory=list)


def stack_scenes(
    scenes: Sequence[Scene], featurize: Callable | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per scene, its regions' labels (or ``featurize``'s crops or features), boxes, mask."""
    labels = np.zeros((len(scenes), MAX_REGIONS, 3), np.int64)
    boxes = np.zeros((len(scenes), MAX_REGIONS, 4), np.float32)
    mask = np.zeros((len(scenes), MAX_REGIONS), np.int64)
    for i, scene in enumerate(scenes):
        lab, box = scene_tensors(scene)
        labels[i, : len(lab)], boxes[i, : len(box)], mask[i, : len(lab)] = lab, box, 1
    if featurize is not None:
        labels = featurize(scenes)
    return labels, boxes, mask


def make_batch(
    step: int, seed: int, scenes_per_step: int, negatives: str, max_objects: int,
    sampler: NegativeSource, featurize: Callable | None = None,
) -> Batch:  # fmt: skip
    """Step ``step``'s fresh scenes (one true caption each), their negatives and targets;
    deterministic in ``(seed, step)`` (and the sampler's running balance). ``negatives``:
    ``plain``, ``oracle`` (``sampler`` a :class:`NegativeSampler`) or ``tags`` (a
    :class:`~tags.testbed.tags_pool.TagsPool`), or ``mined`` (the candidates a miner
    chooses from)."""
    rng = np.random.default_rng([TRAIN_SEED_BASE + seed, step, 7])
    drawn = step_scenes(step, TRAIN_SEED_BASE + seed, scenes_per_step, max_objects)
    scenes, claims = [s for s, _ in drawn], [c for _, c in drawn]
    texts = [c.text for c in claims]
    index, targets, kinds = (
        list(range(len(scenes))),
        [1.0] * len(scenes),
        ["positive"] * len(scenes),
    )
    shift = int(rng.integers(1, len(scenes))) if len(scenes) > 1 else 0
    if negatives == "mined":
        labels, boxes, mask = stack_scenes(scenes, featurize)
        candidates = [mining_candidates(i, claims, scenes, rng) for i in range(len(scenes))]
        return Batch(labels, boxes, mask, texts, index, targets, kinds, scenes, candidates)
    for i, scene in enumerate(scenes):
        for tries in range(len(scenes) - 1):  # another scene's caption, false of this one
            other = claims[(i + shift + tries) % len(scenes)]
            if (i + shift + tries) % len(scenes) != i and not holds(other, scene):
                texts.append(other.text)
                index.append(i), targets.append(0.0), kinds.append("random")
                break
        if negatives in ("oracle", "tags"):
            drawn = sampler.draw(claims[i], scene, rng)
            if drawn is not None:
                kind, negative = drawn
                texts.append(negative if isinstance(negative, str) else negative.text)
                index.append(i), targets.append(0.0), kinds.append(kind)
    labels, boxes, mask = stack_scenes(scenes, featurize)
    return Batch(labels, boxes, mask, texts, index, targets, kinds, scenes)


#: ``mined``: candidates per scene the miner chooses from (other scenes' captions)
MINING_CANDIDATES = 8


def mining_candidates(
    i: int, claims: Sequence[Claim], scenes: Sequence[Scene], rng: np.random.Generator
) -> list[str]:
    """Up to :data:`MINING_CANDIDATES` captions of other scenes of the batch, false of scene
    ``i``, drawn at random (what a retrieval miner would rank)."""
    others = [j for j in rng.permutation(len(scenes)) if j != i]
    picked = [claims[j].text for j in others if not holds(claims[j], scenes[i])]
    return picked[:MINING_CANDIDATES]
