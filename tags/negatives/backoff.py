"""Graded, smoothed slot evidence: a noun's own counts backed off to its WordNet siblings.

The planner asks yes/no questions of the corpus: is substitute ``X`` ever the object of "on",
ever "red", ever "holding" a person? A small corpus shows little, so most substitutes are
refused for want of one mention, while near kinds of ``X`` fill the slot many times ("a man
pushing a wagon", never "a cart"; "a boy on a scooter", never "on a skateboard" in a tiny
corpus). :class:`SiblingBackoff` grades the evidence instead of counting ``X`` alone::

    evidence(X, slot) = sum over nouns S the slot attests of  sim(X, S) ** sharpness * n(S)

``n(S)`` is the slot's count of ``S`` and ``sim`` the Wu-Palmer similarity of the first noun
senses (1 for ``X`` itself), only over siblings ``S`` in ``X``'s substitution category. At
the default sharpness 8 one mention of ``X`` counts 1, of a close kind (sim 0.9) 0.43, of a
loose one (0.8) 0.17, of a far one (0.7) 0.06; a slot is attested when the evidence reaches
the threshold (1: worth one mention of ``X`` itself). So two wagons admit a cart, ten
animals of one family admit a third kind, and a category's far members (a canoe and a
skillet are both "containers") need far more than a corpus has.

:class:`RolePools` gives the slots of relations: the nouns that enter ``(X, predicate, O)``
(or ``(O, predicate, X)``) with ``O`` in a category, with their counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

#: Weight exponent of a sibling's similarity (higher: only very close kinds count).
DEFAULT_SHARPNESS = 8.0
#: Evidence a slot needs (1.0: as much as one mention of the noun itself).
DEFAULT_THRESHOLD = 1.0
#: Siblings less similar than this are not weighed at all (their weight is negligible).
MIN_SIMILARITY = 0.6


def wordnet_similarity(wordnet: Any) -> Callable[[str, str], float]:
    """Wu-Palmer similarity of two nouns' first senses under the project's WordNet (0 when
    either has none, or without WordNet data); cached."""
    reader = getattr(wordnet, "reader", None)

    @lru_cache(maxsize=1 << 16)
    def first_sense(noun: str) -> Any:
        if reader is None:
            return None
        for form in (noun.replace(" ", "_"), noun.replace(" ", ""), noun.split()[-1]):
            try:
                senses = reader.synsets(form, "n")
            except Exception:
                senses = []
            if senses:
                return senses[0]
        return None

    @lru_cache(maxsize=1 << 18)
    def similarity(a: str, b: str) -> float:
        if a == b:
            return 1.0
        first, second = first_sense(a), first_sense(b)
        if first is None or second is None:
            return 0.0
        return float(first.wup_similarity(second) or 0.0)

    return similarity


class SiblingBackoff:
    """Whether a noun fills a slot, by its own and its near kinds' counts (module doc).

    Args:
        similarity: ``(noun, other) -> [0, 1]`` (:func:`wordnet_similarity`).
        category: a noun's substitution category; only siblings of the same one count
            (``None`` for a noun without one: its own count only).
        sharpness: exponent of the similarity weight.
        threshold: evidence a slot needs.
    """

    def __init__(
        self,
        similarity: Callable[[str, str], float],
        category: Callable[[str], str | None],
        *,
        sharpness: float = DEFAULT_SHARPNESS,
        threshold: float = DEFAULT_THRESHOLD,
    ):
        self.similarity = similarity
        self.category = category
        self.sharpness = sharpness
        self.threshold = threshold
        # id(pool) -> (pool, {category: [(noun, count), ...]}); the pool is kept so its id
        # is not reused while cached
        self._grouped: dict[int, tuple[Mapping[str, int], dict[Any, list[tuple[str, int]]]]] = {}

    def _members(self, pool: Mapping[str, int], category: Any) -> list[tuple[str, int]]:
        cached = self._grouped.get(id(pool))
        if cached is None or cached[0] is not pool:
            grouped: dict[Any, list[tuple[str, int]]] = {}
            for noun, count in pool.items():
                if count > 0:
                    grouped.setdefault(self.category(noun), []).append((noun, count))
            cached = self._grouped[id(pool)] = (pool, grouped)
        return cached[1].get(category, [])

    def evidence(self, noun: str, pool: Mapping[str, int]) -> float:
        """``noun``'s own count in ``pool`` plus its category siblings' counts, each weighted
        by ``similarity ** sharpness`` (siblings below :data:`MIN_SIMILARITY` left out)."""
        own = float(pool.get(noun, 0))
        category = self.category(noun)
        if category is None:
            return own
        total = own
        for other, count in self._members(pool, category):
            if other == noun:
                continue
            similarity = self.similarity(noun, other)
            if similarity >= MIN_SIMILARITY:
                total += count * similarity**self.sharpness
        return total

    def attested(self, noun: str, pool: Mapping[str, int]) -> bool:
        """Whether ``pool`` attests ``noun`` itself, or its near kinds enough
        (:meth:`evidence` >= ``threshold``)."""
        return pool.get(noun, 0) > 0 or self.evidence(noun, pool) >= self.threshold


class RolePools:
    """The nouns in one role of a relation whose other argument is of a given category.

    ``pool("subject", predicate, category)``: subjects of ``(S, predicate, O)`` with ``O``
    of ``category``, with counts; ``pool("object", predicate, category)``: objects of
    ``(O, predicate, S)``. Built once from the corpus's triples.

    Args:
        triples: ``(subject, predicate, object) -> count`` (``SceneCounts.triples``).
        category: a noun's substitution category.
    """

    def __init__(self, triples: Mapping[tuple[str, str, str], int], category: Callable):
        self._pools: dict[tuple[str, str, Any], Counter] = {}
        for (subject, predicate, obj), count in triples.items():
            if count <= 0:
                continue
            self._pools.setdefault(("subject", predicate, category(obj)), Counter())[subject] += (
                count
            )
            self._pools.setdefault(("object", predicate, category(subject)), Counter())[obj] += (
                count
            )

    def pool(self, role: str, predicate: str, category: Any) -> Counter:
        """The pool of ``role`` in ``predicate`` next to an argument of ``category`` (empty
        when none)."""
        return self._pools.get((role, predicate, category), Counter())


__all__ = [
    "DEFAULT_SHARPNESS",
    "DEFAULT_THRESHOLD",
    "MIN_SIMILARITY",
    "RolePools",
    "SiblingBackoff",
    "wordnet_similarity",
]
