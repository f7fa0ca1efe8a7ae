"""Candidate filters, applied in order; each counts what it removes.

1. ``identical``: the candidate equals the positive (no effective edit);
2. ``debris``: a refill that does not form whole words (see :class:`~.refill.PieceDecoder`);
3. ``duplicate``: a candidate text already kept for this caption;
4. ``false_negative`` (TAGS-DC): every replaced word also occurs in one of the image's other
   annotated captions, so the candidate may well describe the image and is dropped;
5. ``pronoun_agreement``: an edit changes a person's gender that a pronoun of the caption
   still names ("a girl ... behind her" -> "a boy ... behind her";
   :mod:`~.agreement`);
6. ``part_count``: a number edit on a part whose count its owner fixes ("the zebra has four
   legs" -> "two legs"; :mod:`~.part_counts`);
7. ``colour_list``: a colour replaced inside a list of three or more colours ("blue yellow
   and red" -> "blue silver and red": not clearly false; :mod:`~.colour_lists`);
8. ``other_kind``: with ``kinds`` (``tags generate --kinds``), a candidate with an edit of
   another kind (:mod:`~.edit_kinds`: "a man" -> "a woman" is a person edit).

The false-negative rule follows the paper: "a candidate whose replaced tokens are all
contained in the image's other annotated captions is treated as relevant". Replaced words are
the words an edit changes, not every word of its span: "sitting on" -> "sitting under" replaces
"under" only (the words of the original span and its refill are aligned with ``difflib``).
The positive itself is not one of the *other* captions: a refill that only repeats a word of
the positive ("a man and a dog" -> "a man and a man") is kept. A candidate whose text equals
one of the other captions (case and punctuation aside) is dropped whatever its edits, swaps
included.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from difflib import SequenceMatcher

from tags.core.types import Candidate
from tags.negatives.agreement import breaks_pronoun_agreement
from tags.negatives.colour_lists import edits_colour_list
from tags.negatives.edit_kinds import kinds_of
from tags.negatives.part_counts import edits_fixed_count
from tags.negatives.vocabulary import words

FILTER_NAMES = (
    "identical",
    "debris",
    "duplicate",
    "false_negative",
    "pronoun_agreement",
    "part_count",
    "colour_list",
    "other_kind",
)


def is_identical(candidate: Candidate, positive: str) -> bool:
    return not candidate.edits or candidate.text == positive


def changed_words(original: str, replacement: str) -> list[str]:
    """Lower-cased words of ``replacement`` that differ from ``original`` (word alignment:
    words kept in place, e.g. "sitting" in "sitting on" -> "sitting under", are not changed)."""
    old, new = words(original), words(replacement)
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    return [w for tag, _, _, j1, j2 in matcher.get_opcodes() if tag != "equal" for w in new[j1:j2]]


def replaced_words(candidate: Candidate) -> set[str]:
    """Lower-cased words the candidate's edits bring in (only the changed ones)."""
    return {w for edit in candidate.edits for w in changed_words(edit.original, edit.replacement)}


def is_false_negative(
    candidate: Candidate, other_words: set[str], other_texts: set[tuple[str, ...]] = frozenset()
) -> bool:
    """The paper's rule: all replaced words are contained in the other captions (their word
    set ``other_words``). Swaps bring in no new word (they exchange the caption's own), so the
    rule does not apply to them; a candidate equal to another caption (its words, in order, in
    ``other_texts``) is a false negative whatever its edits."""
    if tuple(words(candidate.text)) in other_texts:
        return True
    if candidate.edits and all(e.operation == "swap" for e in candidate.edits):
        return False
    new = replaced_words(candidate)
    return bool(new) and new <= other_words


def filter_candidates(
    positive: str,
    candidates: Iterable[Candidate],
    other_captions: Sequence[str],
    removed: Counter | None = None,
    kinds: Iterable[str] | None = None,
) -> list[Candidate]:
    """Apply the filters in order; ``removed[name]`` is incremented per dropped candidate;
    ``kinds``: the edit kinds kept (``None``: all)."""
    allowed = None if kinds is None else frozenset(kinds)
    removed = removed if removed is not None else Counter()
    other_words = {w for text in other_captions for w in words(text)}
    other_texts = {tuple(words(text)) for text in other_captions}
    seen: set[str] = set()
    kept: list[Candidate] = []
    for candidate in candidates:
        if is_identical(candidate, positive):
            removed["identical"] += 1
        elif candidate.debris:
            removed["debris"] += 1
        elif candidate.text in seen:
            removed["duplicate"] += 1
        elif is_false_negative(candidate, other_words, other_texts):
            removed["false_negative"] += 1
            seen.add(candidate.text)
        elif breaks_pronoun_agreement(positive, candidate):
            removed["pronoun_agreement"] += 1
            seen.add(candidate.text)
        elif edits_fixed_count(positive, candidate):
            removed["part_count"] += 1
            seen.add(candidate.text)
        elif edits_colour_list(positive, candidate):
            removed["colour_list"] += 1
            seen.add(candidate.text)
        elif allowed is not None and not kinds_of(candidate.edits) <= allowed:
            removed["other_kind"] += 1
            seen.add(candidate.text)
        else:
            kept.append(candidate)
            seen.add(candidate.text)
    return kept


__all__ = [
    "FILTER_NAMES",
    "changed_words",
    "filter_candidates",
    "is_false_negative",
    "is_identical",
    "replaced_words",
]
