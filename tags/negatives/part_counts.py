"""Known part counts: a number edit on a part whose count its owner fixes.

"The zebra has four legs" -> "two legs", "a bike with two wheels" -> "three wheels": the
count of a leg, wheel, eye, ear, wing... (:data:`~.lexicon.FIXED_COUNT_PARTS`) is fixed by
what it belongs to, so the negative is absurd rather than false of the image. A candidate
whose edit replaces a number (a cardinal or digits) counting such a part is dropped: the
part is the first noun of the words after the number, read up to a word that closes the
noun phrase ("of", "and", "with", a comma...), at most :data:`MAX_NOUN_GAP` words on
("four long legs", "two front wheels").

A pure function of the positive and the candidate's edits. Imports:
:mod:`tags.core.types`, :mod:`tags.negatives.lexicon`, :mod:`parsers.lexicon`.
"""

from __future__ import annotations

import re

from parsers.lexicon import CARDINALS
from tags.core.types import Candidate, Edit
from tags.negatives.lexicon import FIXED_COUNT_PARTS

#: How many words after the number the counted part may be ("two big brown eyes").
MAX_NOUN_GAP = 3

_WORD = re.compile(r"[\w'’-]+|[^\w\s]")
#: Words that end the number's noun phrase before its head could follow.
_PHRASE_ENDS = frozenset(
    {"of", "and", "or", "with", "in", "on", "at", "by", "to", "from", "for", "near", "while"}
    | {"is", "are", "was", "were", "that", "which", "who"}
)


def _is_number(text: str) -> bool:
    word = text.strip().lower()
    return word in CARDINALS or word.isdigit()


def counted_part(positive: str, edit: Edit) -> str | None:
    """The fixed-count part the number ``edit`` replaces counts, else ``None`` (not a
    number, or not counting a listed part)."""
    if edit.operation == "add" or not _is_number(edit.original):
        return None
    for word in _WORD.findall(positive[edit.end :].lower())[:MAX_NOUN_GAP]:
        if word in FIXED_COUNT_PARTS:
            return word
        if word in _PHRASE_ENDS or not word[0].isalnum():
            return None
    return None


def edits_fixed_count(positive: str, candidate: Candidate) -> bool:
    """Whether one of ``candidate``'s edits changes the count of a part its owner fixes."""
    return any(counted_part(positive, e) is not None for e in candidate.edits)


__all__ = ["MAX_NOUN_GAP", "counted_part", "edits_fixed_count"]
