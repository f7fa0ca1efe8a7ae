"""Pronoun agreement: a negative that changes a person's gender under a gendered pronoun.

"A little girl smiling with an umbrella behind her" -> "A little boy ... behind her" no
longer agrees: the pronoun still says a girl. When an edit changes which gender its words
name (a gendered person noun or gender adjective, :data:`~.lexicon.GENDERED_NOUNS`,
:data:`~.lexicon.GENDER_ADJECTIVES`: "girl" -> "boy", "child" -> "man", "male" -> "female")
and the caption outside the edit has a gendered pronoun (he/him/his/himself,
she/her/hers/herself) or a gendered "other" ("in front of a group of other males": the
subject is one of them), the candidate is dropped.

Dropping, not rewriting the pronoun: "her" is an object ("behind her" -> "him") or a
possessive ("her bag" -> "his bag") and which person it names is a guess as soon as the
caption has two people or pronouns of both genders; a rewrite would also make a negative of
two or more edits, where the rest of the pipeline (edit types, WoD/WoC labels, the one-unit
contract of a hard negative) counts one. The planner keeps the edits that stay within the
pronoun's gender ("a girl ... her" -> "a woman"), so little coverage is lost.

A pure function of the positive and the candidate's edits: deterministic, shard and resume
safe. Imports: :mod:`tags.core.types`, :mod:`tags.negatives.lexicon`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import pairwise

from tags.core.types import Candidate, Edit
from tags.negatives.lexicon import (
    FEMALE_NOUNS,
    GENDERED_PRONOUNS,
    MALE_NOUNS,
)

_WORD = re.compile(r"\w+(?:['’]\w+)*")

#: Words that name a gender, each with it ("m" / "f").
_GENDER_OF: dict[str, str] = {
    **dict.fromkeys(MALE_NOUNS | {"male", "males", "masculine"}, "m"),
    **dict.fromkeys(FEMALE_NOUNS | {"female", "females", "feminine"}, "f"),
}


#: "other males", "fellow women": the subject is one of them, so it has their gender
_OTHER = frozenset({"other", "fellow"})


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def genders_named(text: str) -> frozenset[str]:
    """The genders (``"m"``, ``"f"``) the words of ``text`` name ("a little girl": f)."""
    return frozenset(_GENDER_OF[w] for w in _words(text) if w in _GENDER_OF)


def changes_gender(edit: Edit) -> bool:
    """Whether ``edit`` changes the genders its words name ("girl" -> "boy", "child" ->
    "woman"; not "girl" -> "woman", nor a swap, which moves the caption's own words)."""
    if edit.operation == "swap":
        return False
    return genders_named(edit.original) != genders_named(edit.replacement)


def outside_pronouns(positive: str, edits: Iterable[Edit]) -> frozenset[str]:
    """The gendered pronouns of ``positive`` outside the spans of ``edits``, and its
    gendered "other"s ("other males", "fellow women": they say the subject's gender too)."""
    kept, at = [], 0
    for edit in sorted(edits, key=lambda e: e.start):
        kept.append(positive[at : edit.start])
        at = max(at, edit.end)
    kept.append(positive[at:])
    words = _words(" ".join(kept))
    others = {f"{a} {b}" for a, b in pairwise(words) if a in _OTHER and b in _GENDER_OF}
    return GENDERED_PRONOUNS.intersection(words) | others


def breaks_pronoun_agreement(positive: str, candidate: Candidate) -> bool:
    """Whether ``candidate`` changes a gender that a pronoun of ``positive`` still names:
    one of its edits changes the genders named (:func:`changes_gender`) and a gendered
    pronoun stays outside the edits."""
    edits = candidate.edits
    return any(changes_gender(e) for e in edits) and bool(outside_pronouns(positive, edits))


__all__ = [
    "breaks_pronoun_agreement",
    "changes_gender",
    "genders_named",
    "outside_pronouns",
]
