"""Weight-free tags negatives for the headroom driver (``--negatives tags``).

The driver draws fresh scenes every step, so its training captions are known in advance:
:func:`training_captions` lists them (per seed, every step up to ``--steps``), ``tags
generate`` turns that file into negatives **without seeing any scene** (the corpus counts of
those captions only), and :class:`TagsPool` serves them back by caption text. A negative of
this method may be true of its scene (nothing checked it): :meth:`TagsPool.draw` says so, and
the driver counts those false negatives.

    python scripts/research/headroom.py --write-captions caps.jsonl --steps 500 --seeds 0 1 2
    tags generate --captions caps.jsonl --out tags.jsonl --seed 0 [--balance]
    python scripts/research/headroom.py --negatives tags --tags-negatives tags.jsonl ...
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tags.benchmark.captions import Claim, sample_claims
from tags.benchmark.scenes import Scene, generate_scene
from tags.benchmark.truth import caption_truth

#: the pool's kinds, from a record's edits: one unit replaced (attribute, object), a
#: relation replaced or flipped ("left of" -> "right of", the same fact as the role swap),
#: two units exchanged (a binding swap: "red X ... yellow Y" -> "yellow X ... red Y")
POOL_KINDS: tuple[str, ...] = ("attribute", "object", "relation", "swap")


def record_kind(edits: Sequence[dict]) -> str | None:
    """The pool kind of a ``tags generate`` record's ``edits`` (``None``: another kind)."""
    if not edits:
        return None
    if len(edits) == 2 and all(e.get("operation") == "swap" for e in edits):
        return "swap"
    if len(edits) == 1 and edits[0].get("type") in ("attribute", "object", "relation"):
        return edits[0]["type"]
    return None


def step_scenes(
    step: int, generator_seed: int, batch_size: int, max_objects: int
) -> list[tuple[Scene, Claim]]:
    """The headroom driver's fresh scenes of one training step and one true caption each."""
    drawn = []
    for k in range(batch_size):
        image_id = step * batch_size + k
        scene = generate_scene(image_id, generator_seed, 192, 2, max_objects)
        rng = np.random.default_rng([generator_seed, image_id, 1])
        drawn.append((scene, sample_claims(scene, rng, 1)[0]))
    return drawn


def training_claims(
    seed: int, steps: int, batch_size: int, curriculum: int, seed_base: int
) -> Iterable[tuple[Scene, Claim]]:
    """The driver's training scenes and true captions of steps ``1..steps`` for ``seed``."""
    for step in range(1, steps + 1):
        max_objects = 2 if step <= curriculum else 4
        yield from step_scenes(step, seed_base + seed, batch_size, max_objects)


def training_captions(
    seeds: Sequence[int], steps: int, batch_size: int, curriculum: int, seed_base: int
) -> list[str]:
    """The distinct training captions of ``seeds`` (first-seen order), for ``tags generate``
    (each its own image: the driver's scenes have one caption each)."""
    texts: dict[str, None] = {}
    for seed in seeds:
        for _, claim in training_claims(seed, steps, batch_size, curriculum, seed_base):
            texts.setdefault(claim.text)
    return list(texts)


@dataclass
class TagsPool:
    """``tags generate`` negatives by caption, drawn per caption: a kind uniformly among those
    the caption has (as the oracle draws its kinds), then one of its negatives of that kind."""

    by_caption: dict[str, dict[str, list[str]]]
    drawn: dict[str, int] = field(default_factory=dict)
    true_of_scene: dict[str, int] = field(default_factory=dict)
    missing: int = 0

    @classmethod
    def load(cls, path: str | Path) -> TagsPool:
        by_caption: dict[str, dict[str, list[str]]] = {}
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                record = json.loads(line)
                kind = record_kind(record.get("edits", []))
                if kind is not None:
                    kinds = by_caption.setdefault(record["positive"], {})
                    kinds.setdefault(kind, []).append(record["negative"])
        if not by_caption:
            raise SystemExit(f"{path}: no tags generate records of the kinds {POOL_KINDS}")
        return cls(by_caption)

    def draw(self, claim: Claim, scene: Scene, rng: np.random.Generator) -> tuple[str, str] | None:
        """``(kind, negative text)`` for ``claim``'s caption, or ``None`` (no negative). A drawn
        negative that is true of ``scene`` is counted in :attr:`true_of_scene`, not dropped:
        the method has no access to the scene."""
        kinds = self.by_caption.get(claim.text)
        if not kinds:
            self.missing += 1
            return None
        kind = sorted(kinds)[int(rng.integers(len(kinds)))]
        texts = kinds[kind]
        text = texts[int(rng.integers(len(texts)))]
        self.drawn[kind] = self.drawn.get(kind, 0) + 1
        if caption_truth(text, scene) == "true":
            self.true_of_scene[kind] = self.true_of_scene.get(kind, 0) + 1
        return kind, text

    def stats(self) -> dict:
        """Drawn negatives per kind, the share of them true of their scene, captions without."""
        return {
            "drawn": dict(self.drawn),
            "true_of_scene": {
                k: round(self.true_of_scene.get(k, 0) / n, 4) for k, n in self.drawn.items()
            },
            "captions_without": self.missing,
        }


def drawn_shortcut(pool: TagsPool, captions: Sequence[str], seed: int = 0) -> dict:
    """The trained text-only check (1-4-gram logistic regression fitted on half the captions'
    pairs, scored on the other half, 3 splits) of one negative per caption drawn as
    :meth:`TagsPool.draw` draws them (a kind uniformly, then a negative): what a model trained
    on this method's negatives could learn from the words alone; overall and per kind."""
    import statistics

    from tags.evaluation.text_prior import held_out_pair_accuracy

    rng = np.random.default_rng(seed)
    drawn = []
    for text in captions:
        kinds = pool.by_caption.get(text)
        if kinds:
            kind = sorted(kinds)[int(rng.integers(len(kinds)))]
            negatives = kinds[kind]
            drawn.append((text, negatives[int(rng.integers(len(negatives)))], kind))

    def accuracy(rows: list[tuple[str, str, str]]) -> float:
        pairs = [(p, n) for p, n, _ in rows]
        return statistics.fmean(held_out_pair_accuracy(pairs, [p for p, _ in pairs]))

    found = {"pairs": len(drawn), "overall": accuracy(drawn)}
    for kind in POOL_KINDS:
        rows = [r for r in drawn if r[2] == kind]
        if len(rows) >= 100:
            found[kind] = accuracy(rows)
    return found
