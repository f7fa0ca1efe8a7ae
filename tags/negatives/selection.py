"""Selection of the kept negatives: top-m by ITM score, or a seeded sample of m."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from tags.core.regions import Regions
from tags.core.types import Candidate


@runtime_checkable
class PairScorer(Protocol):
    """Scores captions against one image (higher = better match, e.g. ITM in [0, 1])."""

    def score(self, texts: Sequence[str], image: Regions) -> list[float]: ...


def score_groups(
    scorer: PairScorer, groups: Sequence[tuple[Sequence[str], Regions]]
) -> list[list[float]]:
    """Scores of several ``(texts, image)`` groups: one batched call when the scorer has
    ``score_many`` (e.g. :class:`~tags.backends.masked_lm.TagsPairScorer`), else one
    :meth:`PairScorer.score` call per group."""
    many = getattr(scorer, "score_many", None)
    if many is not None:
        return [list(scores) for scores in many(groups)]
    return [list(scorer.score(texts, image)) for texts, image in groups]


#: Edit types in the order :func:`edit_kind` names a candidate by (its rarest type first).
_KINDS = ("relation", "object", "attribute")


def edit_kind(candidate: Candidate) -> str:
    """The kind a candidate counts as for type-stratified selection: ``relation`` when any
    of its edits is a relation edit, else ``object``, else ``attribute`` (or ``other``)."""
    types = {e.type for e in candidate.edits}
    return next((kind for kind in _KINDS if kind in types), "other")


def select_top_m(
    candidates: Sequence[Candidate],
    scores: Sequence[float],
    m: int,
    stratify_types: bool = False,
) -> list[tuple[Candidate, float]]:
    """The ``m`` best-scored candidates, best first (ties keep generation order). With
    ``stratify_types`` the kinds of :func:`edit_kind` take turns: the best of each kind,
    then the second best of each, and so on (kinds ordered by their best score), so the
    one relation negative of a caption is kept next to its many attribute ones."""
    if len(scores) != len(candidates):
        raise ValueError(f"{len(scores)} scores for {len(candidates)} candidates")
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
    if stratify_types:
        queues: dict[str, list[int]] = {}
        for i in order:  # kinds in order of their best candidate
            queues.setdefault(edit_kind(candidates[i]), []).append(i)
        order = [q[rank] for rank in range(len(order)) for q in queues.values() if rank < len(q)]
    return [(candidates[i], float(scores[i])) for i in order[:m]]


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
    stratify_types: bool = False,
) -> list[tuple[Candidate, float | None]]:
    """Top-m by ``scores`` when given (e.g. from :func:`score_groups`), or by ``scorer``
    with ``image`` when both are given, else a seeded sample. ``stratify_types``: see
    :func:`select_top_m` (scored selection only).

    Candidates must be unique already (the duplicate filter runs first), so every text is
    scored once.
    """
    if not candidates:
        return []
    if scores is None and scorer is not None and image is not None:
        scores = scorer.score([c.text for c in candidates], image)
    if scores is not None:
        return select_top_m(candidates, scores, m, stratify_types)
    return [(c, None) for c in select_random(candidates, m, rng)]


__all__ = ["PairScorer", "edit_kind", "score_groups", "select", "select_random", "select_top_m"]
