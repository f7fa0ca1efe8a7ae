"""Graded, smoothed slot evidence: a noun's own counts backed off to its WordNet siblings.

The planner asks yes/no questions of the corpus: is substitute ``X`` ever the object of "on",
ever "red", ever "holding" a person? A small corpus shows little, so many substitutes are
refused for want of one mention while near kinds of ``X`` fill the slot often ("a man
pushing a wagon", never "a cart"). :class:`SiblingBackoff` estimates the *share* of ``X``'s
mentions that fill the slot from ``X``'s own counts and its siblings'::

    rate(X) = (n(X) + sum_S w(X, S) n(S)) / (N(X) + sum_S w(X, S) N(S)),  w = sim(X, S) ** 8

``n`` counts a noun in the slot, ``N`` all its mentions, ``S`` runs over the nouns of ``X``'s
substitution category and ``sim`` is the Wu-Palmer similarity of first noun senses. ``X``'s
own mentions count fully, so a frequent ``X`` never seen in the slot keeps a low rate
(evidence of absence); a rare ``X`` takes its near kinds' rate (a close kind, sim 0.9,
weighs 0.43 of a mention; a loose one, 0.8, 0.17; 0.7: 0.06). A substitute fills a slot when
its near kinds fill it at least once (weighted) and its rate is at least a quarter of the
original's (:meth:`SiblingBackoff.fits`): "a crowd in
a room" -> not "in a drawer" (drawers and their kinds are almost never places people are
in), "a man pushing a cart" <- "a wagon".

:class:`RolePools` gives the slots of relations: the nouns that enter ``(X, predicate, O)``
(or ``(O, predicate, X)``) with ``O`` in a category, with their counts.

Used by the evidence service (:mod:`tags.negatives.operators.evidence`, with
``sibling_backoff``). May import: the standard library only (WordNet comes in as a
similarity function).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

#: Weight exponent of a sibling's similarity (higher: only very close kinds count).
DEFAULT_SHARPNESS = 8.0
#: A substitute fills a slot when its rate is at least this share of the original's ...
DEFAULT_MIN_RATIO = 0.25
#: ... and its siblings' weighted count in the slot is at least this (one mention's worth).
DEFAULT_MIN_EVIDENCE = 1.0
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
    """How often a noun fills a slot, from its own and its near kinds' counts (module doc).

    Args:
        similarity: ``(noun, other) -> [0, 1]`` (:func:`wordnet_similarity`).
        category: a noun's substitution category; only siblings of the same one count
            (``None`` for a noun without one: its own counts only).
        mentions: every noun's mention count (``N``).
        sharpness: exponent of the similarity weight.
        min_ratio: the share of the original's rate a substitute needs (:meth:`fits`).
        min_evidence: the weighted count in the slot a substitute needs (:meth:`fits`).
    """

    def __init__(
        self,
        similarity: Callable[[str, str], float],
        category: Callable[[str], str | None],
        mentions: Mapping[str, int],
        *,
        sharpness: float = DEFAULT_SHARPNESS,
        min_ratio: float = DEFAULT_MIN_RATIO,
        min_evidence: float = DEFAULT_MIN_EVIDENCE,
    ):
        self.similarity = similarity
        self.category = category
        self.mentions = mentions
        self.sharpness = sharpness
        self.min_ratio = min_ratio
        self.min_evidence = min_evidence
        self._siblings: dict[str, tuple[tuple[str, float], ...]] = {}
        self._by_category: dict[Any, list[str]] | None = None

    def siblings(self, noun: str) -> tuple[tuple[str, float], ...]:
        """``(sibling, weight)`` of the nouns of ``noun``'s category at least
        :data:`MIN_SIMILARITY` similar (cached)."""
        found = self._siblings.get(noun)
        if found is None:
            if self._by_category is None:
                self._by_category = {}
                for other, count in self.mentions.items():
                    if count > 0:
                        self._by_category.setdefault(self.category(other), []).append(other)
            category = self.category(noun)
            members = self._by_category.get(category, []) if category is not None else []
            weighted = []
            for other in members:
                if other != noun:
                    similarity = self.similarity(noun, other)
                    if similarity >= MIN_SIMILARITY:
                        weighted.append((other, similarity**self.sharpness))
            found = self._siblings[noun] = tuple(weighted)
        return found

    def counts(
        self, noun: str, pool: Mapping[str, int], leave_out: str | None = None
    ) -> tuple[float, float]:
        """(weighted count in the slot, weighted mentions) of ``noun`` and its siblings,
        ``leave_out`` not counted among the siblings."""
        filled = float(pool.get(noun, 0))
        total = float(max(self.mentions.get(noun, 0), filled))
        for other, weight in self.siblings(noun):
            if other == leave_out:
                continue
            filled += weight * pool.get(other, 0)
            total += weight * self.mentions.get(other, 0)
        return filled, total

    def rate(self, noun: str, pool: Mapping[str, int]) -> float:
        """The smoothed share of ``noun``'s mentions that fill the slot ``pool`` counts."""
        filled, total = self.counts(noun, pool)
        return filled / total if total > 0 else 0.0

    def fits(self, substitute: str, original: str, pool: Mapping[str, int]) -> bool:
        """Whether ``substitute`` fills the slot: the pool attests it, or its near kinds
        fill it at least ``min_evidence`` times (weighted) and its smoothed rate is at least
        ``min_ratio`` of ``original``'s (a kind rarely in the slot stays out, however many
        of its kinds the corpus names). The original is not one of the near kinds here."""
        if pool.get(substitute, 0) > 0:
            return True
        # the original fills the slot by definition: its own counts are no evidence for
        # the substitute ("a crowd in a room" does not put crowds in drawers, a kind of room)
        filled, total = self.counts(substitute, pool, leave_out=original)
        if filled < self.min_evidence or total <= 0:
            return False
        return filled / total >= self.min_ratio * self.rate(original, pool)


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
    "DEFAULT_MIN_EVIDENCE",
    "DEFAULT_MIN_RATIO",
    "DEFAULT_SHARPNESS",
    "MIN_SIMILARITY",
    "RolePools",
    "SiblingBackoff",
    "wordnet_similarity",
]
