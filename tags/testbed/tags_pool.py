"""Weight-free ``tags generate`` negatives served to the testbed by caption (``tags``).

The testbed's training captions are known in advance
(:func:`~tags.testbed.world.training_captions`), so ``tags generate`` turns them into
negatives **without seeing any scene** (from the corpus counts of those captions only) and
:class:`TagsPool` serves them back by caption text. Such a negative may be true of its scene
(nothing checked it): :meth:`TagsPool.draw` counts those.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tags.benchmark.captions import Claim
from tags.benchmark.scenes import Scene
from tags.benchmark.truth import caption_truth
from tags.core.edits import unit_edits

#: the pool's kinds, from a record's edits: one unit replaced (attribute, object), a
#: relation replaced or flipped ("left of" -> "right of", the same fact as the role swap),
#: two units exchanged (a binding swap: "red X ... yellow Y" -> "yellow X ... red Y")
POOL_KINDS: tuple[str, ...] = ("attribute", "object", "relation", "swap")


def record_kind(edits: Sequence[dict]) -> str | None:
    """The pool kind of a ``tags generate`` record's ``edits`` (``None``: another kind)."""
    edits = unit_edits(edits)
    if not edits:
        return None
    if len(edits) == 2 and all(e.get("operation") == "swap" for e in edits):
        return "swap"
    if len(edits) == 1 and edits[0].get("type") in ("attribute", "object", "relation"):
        return edits[0]["type"]
    return None


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
            raise ValueError(f"{path}: no tags generate records of the kinds {POOL_KINDS}")
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
    """The trained text-only check (:func:`~tags.testbed.shortcut.pair_shortcut`) of one
    negative per caption drawn as :meth:`TagsPool.draw` draws them (a kind uniformly, then a
    negative): what a model trained on this method's negatives could learn from the words
    alone; overall and per kind."""
    from tags.testbed.shortcut import pair_shortcut

    rng = np.random.default_rng(seed)
    drawn = []
    for text in captions:
        kinds = pool.by_caption.get(text)
        if kinds:
            kind = sorted(kinds)[int(rng.integers(len(kinds)))]
            negatives = kinds[kind]
            drawn.append((text, negatives[int(rng.integers(len(negatives)))], kind))
    return pair_shortcut(drawn)
