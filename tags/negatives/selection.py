"""Selection of the kept negatives: top-m by ITM score, or a seeded sample of m."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from tags.negatives.features import Regions
from tags.negatives.types import Candidate


@runtime_checkable
class PairScorer(Protocol):
    """Scores captions against one image (higher = better match, e.g. ITM in [0, 1])."""

    def score(self, texts: Sequence[str], image: Regions) -> list[float]: ...


def score_groups(
    scorer: PairScorer, groups: Sequence[tuple[Sequence[str], Regions]]
) -> list[list[float]]:
    """Scores of several ``(texts, image)`` groups: one batched call when the scorer has
    ``score_many`` (e.g. :class:`~tags.negatives.models.TagsPairScorer`), else one
    :meth:`PairScorer.score` call per group."""
    many = getattr(scorer, "score_many", None)
    if many is not None:
        return [list(scores) for scores in many(groups)]
    return [list(scorer.score(texts, image)) for texts, image in groups]


def select_top_m(
    candidates: Sequence[Candidate], scores: Sequence[float], m: int
) -> list[tuple[Candidate, float]]:
    """The ``m`` best-scored candidates, best first (ties keep generation order)."""
    if len(scores) != len(candidates):
        raise ValueError(f"{len(scores)} scores for {len(candidates)} candidates")
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))[:m]
    return [(candidates[i], float(scores[i])) for i in order]


def select_random(candidates: Sequence[Candidate], m: int, rng: random.Random) -> list[Candidate]:
    """A seeded sample of ``m`` candidates (all of them when fewer). Planned candidates
    (with a ``weight``) are drawn without replacement in proportion to it and come most
    plausible first; unplanned ones are a uniform sample, in generation order."""
    if any(c.weight is not None for c in candidates):
        from tags.negatives.refill import weighted_order

        weights = [1.0 if c.weight is None else c.weight for c in candidates]
        return [candidates[i] for i in weighted_order(weights, m, rng)]
    if len(candidates) <= m:
        return list(candidates)
    keep = sorted(rng.sample(range(len(candidates)), m))
    return [candidates[i] for i in keep]


def select(
    candidates: Sequence[Candidate],
    m: int,
    rng: random.Random,
    scorer: PairScorer | None = None,
    image: Regions | None = None,
    scores: Sequence[float] | None = None,
) -> list[tuple[Candidate, float | None]]:
    """Top-m by ``scores`` when given (e.g. from :func:`score_groups`), or by ``scorer``
    with ``image`` when both are given, else a seeded sample.

    Candidates must be unique already (the duplicate filter runs first), so every text is
    scored once.
    """
    if not candidates:
        return []
    if scores is not None:
        return select_top_m(candidates, scores, m)
    if scorer is not None and image is not None:
        scores = scorer.score([c.text for c in candidates], image)
        return select_top_m(candidates, scores, m)
    return [(c, None) for c in select_random(candidates, m, rng)]


__all__ = ["PairScorer", "score_groups", "select", "select_random", "select_top_m"]
