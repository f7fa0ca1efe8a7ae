"""Turning refills into character edits of the positive caption."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from tags.core.types import Edit

_ARTICLE_BEFORE = re.compile(r"(?:^|(?<=\s))(an?|An?|AN?)(\s+)$")
_CONSONANT_SOUND = ("one", "once", "uni", "use", "usu", "uti", "eu", "ura", "uri", "uro", "ewe")
_VOWEL_SOUND = ("hour", "honest", "honor", "honour", "heir")


def match_case(original: str, replacement: str, caption: str | None = None) -> str:
    """Carry the case of ``original`` over to an (uncased) ``replacement``: in an all-caps
    caption all caps stay all caps ("ELEPHANT" -> "HORSE"; an acronym like "SUV" in a normal
    caption does not make its substitute upper-case), a capital first letter stays capital."""
    if _mostly_upper(original if caption is None else caption):
        return replacement.upper()
    if len(original) > 1 and original.isupper():  # an acronym in a normal caption
        return replacement
    if original[:1].isupper() and replacement[:1].islower():
        return replacement[:1].upper() + replacement[1:]
    return replacement


@lru_cache(maxsize=1 << 12)
def _mostly_upper(text: str) -> bool:
    """Whether at least 80 % of a text's letters (two or more) are capitals."""
    letters = [c for c in text if c.isalpha()]
    return len(letters) > 1 and sum(c.isupper() for c in letters) >= 0.8 * len(letters)


def make_edit(unit_type: str, caption: str, start: int, end: int, replacement: str) -> Edit | None:
    """The edit replacing ``caption[start:end]``; ``None`` when nothing changes (ignoring case)."""
    original = caption[start:end]
    replacement = match_case(original, replacement.strip(), caption)
    if not replacement or replacement.lower() == original.lower():
        return None
    return Edit(unit_type, original, replacement, start, end)


def wants_an(word: str) -> bool:
    """Whether ``word`` takes "an" (vowel sound), by spelling with common exceptions."""
    w = word.lower()
    if w.startswith(_VOWEL_SOUND):
        return True
    return w[:1] in "aeiou" and w[:1] != "" and not w.startswith(_CONSONANT_SOUND)


def fix_articles(caption: str, edits: Sequence[Edit]) -> list[Edit]:
    """Widen edits that follow "a"/"an" so the article agrees with the replacement.

    ``"a dog" -> "an elephant"`` becomes one edit whose ``original`` is ``"a dog"``.
    """
    out: list[Edit] = []
    for edit in sorted(edits, key=lambda e: e.start):
        match = _ARTICLE_BEFORE.search(caption, 0, edit.start)
        previous_end = out[-1].end if out else 0
        if match and match.start(1) >= previous_end:
            article = match.group(1)
            want = "an" if wants_an(edit.replacement) else "a"
            if article.lower() != want:
                if article.isupper() and (len(article) > 1 or edit.replacement.isupper()):
                    want = want.upper()
                elif article[0].isupper():
                    want = want.capitalize()
                start = match.start(1)
                edit = Edit(
                    edit.type,
                    caption[start : edit.end],
                    want + match.group(2) + edit.replacement,
                    start,
                    edit.end,
                    edit.operation,
                )
        out.append(edit)
    return out


#: The operation of an edit that only follows another ("his" -> "her" after "man" ->
#: "woman"): part of the negative's text, not a unit of its own.
AGREE = "agree"


def unit_edits(edits: Iterable[Any]) -> list[Any]:
    """The edits (:class:`Edit` or their dicts) that change a unit, without those that only
    agree with one (operation :data:`AGREE`)."""
    return [e for e in edits if _operation(e) != AGREE]


def _operation(edit: Any) -> Any:
    return edit.get("operation") if isinstance(edit, dict) else getattr(edit, "operation", None)


__all__ = [
    "AGREE",
    "edits_problem",
    "fix_articles",
    "make_edit",
    "match_case",
    "unit_edits",
    "wants_an",
]


_WORD = re.compile(r"\w+|[^\w\s]")


def diff_edits(positive: str, negative: str) -> tuple[Edit, ...]:
    """Word-level edits turning ``positive`` into ``negative`` (type ``word``) for negatives
    made elsewhere (NegCLIP, SugarCrepe): changed runs of words, widened by one neighbouring
    word where words were only inserted or deleted, so every edit covers whole words.
    Falls back to one edit over the differing middle when the words do not line up exactly
    (different spacing); empty when the captions are equal."""
    import difflib

    if positive == negative:
        return ()
    pos = [(m.start(), m.end()) for m in _WORD.finditer(positive)]
    neg = [(m.start(), m.end()) for m in _WORD.finditer(negative)]
    words_p = [positive[s:e] for s, e in pos]
    words_n = [negative[s:e] for s, e in neg]
    edits: list[Edit] = []
    matcher = difflib.SequenceMatcher(a=words_p, b=words_n, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i1 == i2 or j1 == j2:  # insertion / deletion: take a neighbouring word along
            if i1 > 0 and j1 > 0:
                i1, j1 = i1 - 1, j1 - 1
            elif i2 < len(pos) and j2 < len(neg):
                i2, j2 = i2 + 1, j2 + 1
        if i1 == i2 or j1 == j2:
            edits = []
            break
        start, end = pos[i1][0], pos[i2 - 1][1]
        repl = negative[neg[j1][0] : neg[j2 - 1][1]]
        if edits and start < edits[-1].end:
            edits = []
            break
        edits.append(Edit("word", positive[start:end], repl, start, end))
    from tags.core.types import apply_edits

    if edits and apply_edits(positive, edits) == negative:
        return tuple(edits)
    head = len(_common_prefix(positive, negative))
    tail = len(_common_prefix(positive[head:][::-1], negative[head:][::-1]))
    start, end = _widen(positive, head, len(positive) - tail)
    n_start, n_end = start, len(negative) - (len(positive) - end)
    return (Edit("word", positive[start:end], negative[n_start:n_end], start, end),)


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _widen(text: str, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` widened to whole words (alphanumeric runs are never cut)."""
    while start > 0 and text[start - 1].isalnum():
        start -= 1
    while end < len(text) and text[end].isalnum():
        end += 1
    return start, max(start, end)


_EDIT_KEYS = ("type", "original", "replacement", "start", "end")


def edits_problem(positive: str, edits: object, complete: bool = True) -> str | None:
    """Why the ``edits`` of a ``tags generate`` record (its JSON list) do not fit its
    ``positive`` caption, or ``None``: every edit is an object whose offsets lie inside the
    caption (``0 <= start <= end <= len(positive)``) and mark its ``original`` there.
    ``complete``: every edit must hold ``type``, ``original``, ``replacement``, ``start``
    and ``end`` (what WoD/WoC labels are made from); else only the fields present are
    checked."""
    if not isinstance(edits, list):
        return f"'edits' is a {type(edits).__name__}, not a list"
    for number, edit in enumerate(edits):
        if not isinstance(edit, dict) or (complete and not all(k in edit for k in _EDIT_KEYS)):
            return f"edit {number} is not an object with {', '.join(_EDIT_KEYS)}"
        if "start" not in edit or "end" not in edit:
            continue
        start, end = edit["start"], edit["end"]
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in (start, end)):
            return f"edit {number}: start and end must be integers, got {start!r}, {end!r}"
        if not 0 <= start <= end <= len(positive):
            return (
                f"edit {number}: offsets {start}..{end} lie outside the positive caption "
                f"({len(positive)} characters)"
            )
        if "original" in edit and positive[start:end] != edit["original"]:
            return (
                f"edit {number}: the positive holds {positive[start:end]!r} at {start}..{end}, "
                f"not the edit's original {edit['original']!r}"
            )
    return None
