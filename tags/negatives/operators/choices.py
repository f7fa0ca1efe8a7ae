"""The evidence service's choice helpers: ranking substitutes, and the substitutes of a count.

Every unit operator ends by ranking its weighted substitutes (:func:`top_choices`: the
:data:`MAX_CHOICES` heaviest); a count's substitutes (:func:`number_choices`) are shared by
the attribute operator and the planner. Not an operator: operators and the planner import
it.

May import: ``proposals``, ``evidence``, ``lexicon``.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable

from tags.negatives.lexicon import NUMBER_VALUES
from tags.negatives.operators.evidence import SceneEvidence
from tags.negatives.operators.proposals import Choice

#: Substitutes kept per unit (the most plausible first).
MAX_CHOICES = 24
#: The prior of a count unit ("two" -> "three") next to other units: count edits are
#: exact but few captions of a benchmark differ only by a number, so they stay a minority.
COUNT_PRIOR = 0.15
#: Substitutes of a count (the nearest): two teach the count; six ("six" -> three, four,
#: five, seven, eight, nine) made count edits the bulk of a number caption's negatives.
COUNT_CHOICES = 2


def top_choices(
    weights: Counter,
    operation: dict[tuple[str, ...], str] | None = None,
    refusal: Callable[[tuple[str, ...]], str | None] | None = None,
) -> tuple[Choice, ...]:
    """The :data:`MAX_CHOICES` heaviest substitutes (ties by surface), as choices; with
    ``refusal``, heaviest first, those it gives no reason against (its checks cost too
    much to run on every candidate)."""
    ranked = sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))
    if refusal is not None:
        ranked = list(
            itertools.islice(((s, w) for s, w in ranked if refusal(s) is None), MAX_CHOICES)
        )
    operation = operation or {}
    return tuple(Choice(s, float(w), operation.get(s, "replace")) for s, w in ranked[:MAX_CHOICES])


def number_choices(evidence: SceneEvidence, text: str) -> tuple[Choice, ...]:
    """Other plural counts written like ``text`` (a digit or a word), the nearest and
    smallest first; none for a count below two."""
    word = text.lower()
    value = int(word) if word.isdigit() else NUMBER_VALUES.get(word)
    if value is None or value < 2:
        evidence.refuse("attribute:not_a_plural_count", unit=True)
        return ()
    others = [v for v in range(2, 13) if v != value and abs(v - value) <= 3]
    names = {v: k for k, v in NUMBER_VALUES.items()}
    # near numbers first, small (common) numbers before large ones
    weights = Counter(
        {((str(v) if word.isdigit() else names[v]),): 1.0 / (abs(v - value) * v) for v in others}
    )
    return top_choices(weights)[:COUNT_CHOICES]


__all__ = [
    "COUNT_CHOICES",
    "COUNT_PRIOR",
    "MAX_CHOICES",
    "number_choices",
    "top_choices",
]
