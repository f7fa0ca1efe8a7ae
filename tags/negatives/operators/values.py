"""The evidence service's attribute value shares: how plausible a value is for a noun.

:class:`ValueShares` gives, per noun and attribute class (colour, material, pattern), each
value's share of the noun's mentions of that class, smoothed toward its substitution
category's (graded evidence through categories: a sibling's values count for it). The add
operator inserts values by these shares and the attribute swap backs values off to them. Not
an operator: ``add`` and ``swaps`` import it.

May import: ``evidence``, ``lexicon``.
"""

from __future__ import annotations

from collections import Counter

from tags.negatives.lexicon import attribute_class
from tags.negatives.operators.evidence import SceneEvidence

#: Attribute classes whose values are shared out: visible properties where one value
#: excludes the others (sizes, ages and states are relative or may hold unsaid).
VALUE_CLASSES = ("colour", "material", "pattern")
#: Pseudo-counts of the category's distribution in a noun's smoothed value shares.
CATEGORY_PRIOR = 5.0
#: A noun takes a class only when at least this smoothed share of its mentions give it a
#: value of the class ("a wooden table": often; "a glass kitchen": a kitchen is not described
#: by its material).
MIN_CLASS_RATE = 0.05


class ValueShares:
    """Smoothed value shares of a corpus's nouns (see the module docstring); one instance
    serves a whole corpus and caches per noun and class.

    Args:
        evidence: the shared evidence service (counts and substitution categories).
    """

    def __init__(self, evidence: SceneEvidence):
        self.evidence = evidence
        self._by_category: dict[tuple[str | None, str], Counter] | None = None
        self._mentions: Counter = Counter()
        self._shares: dict[tuple[str, str], dict[str, float]] = {}

    def prepare(self) -> None:
        """Build the category table now (before worker processes fork, so they share it)."""
        self._category_values()

    def _category_values(self) -> dict[tuple[str | None, str], Counter]:
        """``(category, class) -> Counter(value)``: attribute values attested for any noun
        of a category (computed once)."""
        if self._by_category is None:
            found: dict[tuple[str | None, str], Counter] = {}
            scenes, category = self.evidence.scenes, self.evidence.category
            for number in (False, True):
                for name, count in scenes.index["objects_by_number"][number].items():
                    self._mentions[category(name)] += count
            for (value, name), count in scenes.attribute_object.items():
                kind = attribute_class(value)
                if kind in VALUE_CLASSES and " " not in value:
                    found.setdefault((category(name), kind), Counter())[value] += count
            self._by_category = found
        return self._by_category

    def shares(self, name: str, kind: str) -> dict[str, float]:
        """Smoothed share of each value of class ``kind`` for noun ``name``: ``(count(value,
        name) + CATEGORY_PRIOR * share in the category) / (count(name) + CATEGORY_PRIOR)``.
        A noun the corpus never describes falls back on its category alone (graded evidence
        through categories: a sibling's values count for it). Cached per noun."""
        found = self._shares.get((name, kind))
        if found is None:
            found = self._shares[(name, kind)] = self._value_shares(name, kind)
        return found

    def _value_shares(self, name: str, kind: str) -> dict[str, float]:
        scenes = self.evidence.scenes
        own = Counter(
            {
                v: c
                for v, c in scenes.index["attributes_of_object"].get(name, {}).items()
                if " " not in v and attribute_class(v) == kind
            }
        )
        group = self.evidence.category(name)
        category = self._category_values().get((group, kind), Counter())
        total_category = sum(category.values())
        total_own = sum(own.values())
        if not total_category and not total_own:
            return {}
        # does the noun take the class at all? its own rate, smoothed toward its category's
        rate = (total_own + CATEGORY_PRIOR * total_category / max(self._mentions[group], 1)) / (
            scenes.object_count(name) + CATEGORY_PRIOR
        )
        if rate < MIN_CLASS_RATE:
            return {}
        prior = CATEGORY_PRIOR if total_category else 0.0
        out = {}
        for value in set(own) | set(category):
            share = category[value] / total_category if total_category else 0.0
            out[value] = (own[value] + prior * share) / (total_own + prior)
        return out


__all__ = ["CATEGORY_PRIOR", "MIN_CLASS_RATE", "VALUE_CLASSES", "ValueShares"]
