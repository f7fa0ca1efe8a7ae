"""Candidate filters, applied in order; each counts what it removes.

1. ``identical``: the candidate equals the positive (no effective edit);
2. ``debris``: a refill that does not form whole words (see :class:`~.refill.PieceDecoder`);
3. ``duplicate``: a candidate text already kept for this caption;
4. ``false_negative`` (TAGS-DC): every replaced word also occurs in one of the image's other
   annotated captions, so the candidate may well describe the image and is dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from tags.negatives.types import Candidate
from tags.negatives.vocabulary import words

FILTER_NAMES = ("identical", "debris", "duplicate", "false_negative")


def is_identical(candidate: Candidate, positive: str) -> bool:
    return not candidate.edits or candidate.text == positive


def replaced_words(candidate: Candidate) -> set[str]:
    """Lower-cased words the candidate's edits bring in."""
    return {w for edit in candidate.edits for w in words(edit.replacement)}


def is_false_negative(candidate: Candidate, other_words: set[str]) -> bool:
    """The paper's rule: all replaced words are contained in the other captions. Swaps
    bring in no new word (they exchange the caption's own), so the rule does not apply."""
    if candidate.edits and all(e.operation == "swap" for e in candidate.edits):
        return False
    new = replaced_words(candidate)
    return bool(new) and new <= other_words


def filter_candidates(
    positive: str,
    candidates: Iterable[Candidate],
    other_captions: Sequence[str],
    removed: Counter | None = None,
) -> list[Candidate]:
    """Apply the four filters; ``removed[name]`` is incremented per dropped candidate."""
    removed = removed if removed is not None else Counter()
    other_words = {w for text in other_captions for w in words(text)}
    seen: set[str] = set()
    kept: list[Candidate] = []
    for candidate in candidates:
        if is_identical(candidate, positive):
            removed["identical"] += 1
        elif candidate.debris:
            removed["debris"] += 1
        elif candidate.text in seen:
            removed["duplicate"] += 1
        elif is_false_negative(candidate, other_words):
            removed["false_negative"] += 1
            seen.add(candidate.text)
        else:
            kept.append(candidate)
            seen.add(candidate.text)
    return kept


__all__ = [
    "FILTER_NAMES",
    "filter_candidates",
    "is_false_negative",
    "is_identical",
    "replaced_words",
]
