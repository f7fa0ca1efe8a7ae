"""Colour lists: a colour edit inside a list of three or more colours is no clear negative.

"colorful with blue yellow and red" -> "blue silver and red", "four dogs in blue, green, red
and black jerseys" -> "blue, white, red and black": a reader cannot tell which colour a list
of several misses, and a many-coloured thing may well have the new one too (blind read 1201).
Two colours stay editable: "a pink and white flower" -> "a pink and yellow flower" is a
clear negative.

The list is read from the positive's words around the edit: colour words (``attribute_class``
"colour") joined by "and", "or" or commas, the edited word included.
"""

from __future__ import annotations

import re

from tags.core.types import Candidate
from tags.negatives.lexicon import attribute_class

#: A colour edit is dropped when its list has at least this many colours.
MIN_LIST_COLOURS = 3

_JOINERS = frozenset({"and", "or", ","})
_TOKENS = re.compile(r"[a-z]+|,")


def _colour(word: str) -> bool:
    return attribute_class(word) == "colour"


def _run(tokens: list[str]) -> int:
    """How many colour words follow one another from the start of ``tokens`` (joiners
    skipped)."""
    n = 0
    for token in tokens:
        if token in _JOINERS:
            continue
        if not _colour(token):
            break
        n += 1
    return n


def list_colours(positive: str, start: int, end: int) -> int:
    """The number of colours in the list the span ``start:end`` of ``positive`` belongs to
    (0 when the span's last word is no colour)."""
    span = _TOKENS.findall(positive[start:end].lower())
    if not span or not _colour(span[-1]):
        return 0
    before = _TOKENS.findall(positive[:start].lower())
    after = _TOKENS.findall(positive[end:].lower())
    return 1 + _run(before[::-1]) + _run(after)


def edits_colour_list(positive: str, candidate: Candidate) -> bool:
    """A replaced colour (a colour by a colour) in a list of :data:`MIN_LIST_COLOURS`."""
    for edit in candidate.edits:
        if edit.operation == "swap":
            continue
        new = _TOKENS.findall(edit.replacement.lower())
        if not new or not _colour(new[-1]):
            continue
        if list_colours(positive, edit.start, edit.end) >= MIN_LIST_COLOURS:
            return True
    return False


__all__ = ["MIN_LIST_COLOURS", "edits_colour_list", "list_colours"]
