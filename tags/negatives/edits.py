"""Turning refills into character edits of the positive caption."""

from __future__ import annotations

import re
from collections.abc import Sequence

from tags.negatives.types import Edit

_ARTICLE_BEFORE = re.compile(r"(?:^|(?<=\s))(an?|An?|AN?)(\s+)$")
_CONSONANT_SOUND = ("one", "once", "uni", "use", "usu", "uti", "eu", "ur", "ewe")
_VOWEL_SOUND = ("hour", "honest", "honor", "honour", "heir")


def match_case(original: str, replacement: str, caption: str | None = None) -> str:
    """Carry the case of ``original`` over to an (uncased) ``replacement``: in an all-caps
    caption all caps stay all caps ("ELEPHANT" -> "HORSE"; an acronym like "SUV" in a normal
    caption does not make its substitute upper-case), a capital first letter stays capital."""
    letters = [c for c in (original if caption is None else caption) if c.isalpha()]
    if len(letters) > 1 and sum(c.isupper() for c in letters) >= 0.8 * len(letters):
        return replacement.upper()
    if len(original) > 1 and original.isupper():  # an acronym in a normal caption
        return replacement
    if original[:1].isupper() and replacement[:1].islower():
        return replacement[:1].upper() + replacement[1:]
    return replacement


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


__all__ = ["fix_articles", "make_edit", "match_case", "wants_an"]
