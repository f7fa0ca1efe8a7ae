"""Pronoun agreement: a negative that changes a person's gender under a gendered pronoun.

"A little girl smiling with an umbrella behind her" -> "A little boy ... behind her" no
longer agrees: the pronoun still says a girl. When an edit changes which gender its words
name (a gendered person noun or gender adjective, :data:`~.lexicon.GENDERED_NOUNS`,
:data:`~.lexicon.GENDER_ADJECTIVES`: "girl" -> "boy", "child" -> "man", "male" -> "female")
and the caption outside the edit has a gendered pronoun (he/him/his/himself,
she/her/hers/herself) or a gendered "other" ("in front of a group of other males": the
subject is one of them), the candidate is dropped.

Where the pronouns can only name the edited person, they follow it instead
(:func:`follow_pronouns`): "A man cuts vegetables in his kitchen" -> "A woman cuts vegetables
in her kitchen". That needs one gendered person noun or adjective in the whole caption (the
edited one), every gendered pronoun of its gender, and each "her" readable as "his" (a
possessive: "her hand") or "him" (an object: "behind her."); anything else is still
dropped. The rewritten pronouns are edits of their own with operation ``agree``
(:data:`~tags.core.edits.AGREE`): they are part of the text and its word labels but not a
unit, so edit kinds, exports and the balance count only the person edit. The planner
decides when a person may change gender under a pronoun (one person in the caption).

A pure function of the positive and the candidate's edits: deterministic, shard and resume
safe. Imports: :mod:`tags.core.types`, :mod:`tags.negatives.lexicon`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from itertools import pairwise

from tags.core.edits import AGREE, match_case
from tags.core.types import Candidate, Edit
from tags.negatives.lexicon import (
    FEMALE_NOUNS,
    GENDERED_PRONOUNS,
    HE_PRONOUNS,
    MALE_NOUNS,
    PERSON_NOUNS,
)

_WORD = re.compile(r"\w+(?:['’]\w+)*")
#: A gendered pronoun, also inside a contraction ("she's")
_PRONOUN = re.compile(r"\b(?:he|him|his|himself|she|her|hers|herself)\b", re.IGNORECASE)
#: Each pronoun in the other gender; "her" is "his" or "him" (:func:`_her_as`)
_OTHER_GENDER = {
    "he": "she",
    "him": "her",
    "his": "her",
    "himself": "herself",
    "she": "he",
    "hers": "his",
    "herself": "himself",
}
#: Words after which "her" is an object ("behind her and", "picking her up", "gives her a
#: ball"): prepositions, particles, conjunctions, determiners
# fmt: off
_AFTER_OBJECT = frozenset([
    "a", "an", "the", "this", "that", "these", "those", "some", "and", "or", "but", "as",
    "while", "when", "so", "then", "to", "in", "into", "on", "onto", "at", "by", "for",
    "from", "with", "without", "of", "off", "up", "down", "out", "over", "away", "around",
    "again", "near", "under", "behind", "beside", "next",  # not "back": "her back"
])
# fmt: on

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


def _outside(positive: str, edits: Iterable[Edit]) -> str:
    """``positive`` without the spans of ``edits`` (a space for each)."""
    kept, at = [], 0
    for edit in sorted(edits, key=lambda e: e.start):
        kept.append(positive[at : edit.start])
        at = max(at, edit.end)
    kept.append(positive[at:])
    return " ".join(kept)


def outside_pronouns(positive: str, edits: Iterable[Edit]) -> frozenset[str]:
    """The gendered pronouns of ``positive`` outside the spans of ``edits`` ("she's"
    counts), and its gendered "other"s ("other males", "fellow women": they say the
    subject's gender too)."""
    outside = _outside(positive, edits)
    words = _words(outside)
    others = {f"{a} {b}" for a, b in pairwise(words) if a in _OTHER and b in _GENDER_OF}
    pronouns = {m.group().lower() for m in _PRONOUN.finditer(outside)}
    return frozenset(pronouns & GENDERED_PRONOUNS) | others


def _her_as(positive: str, end: int) -> str | None:
    """What "her" ending at ``end`` is in the other gender: "him" (an object: the clause
    ends, or a preposition, particle or determiner follows), "his" (a possessive: another
    word follows), ``None`` when an -ing form may follow ("watching her eating", "her
    wedding"; not "her ring")."""
    rest = positive[end:]
    following = _words(rest)[:1]
    if not following or not rest[:1].isspace() or following[0] in _AFTER_OBJECT:
        return "him"
    if following[0].endswith("ing") and len(following[0]) > 5:
        return None
    return "his"


def pronoun_edits(positive: str, edits: Sequence[Edit]) -> list[Edit] | None:
    """The edits (operation ``agree``) that make the pronouns outside ``edits`` follow
    their one gender change ("man" -> "woman": "his" -> "her"); ``[]`` when no edit changes
    a gender or no pronoun is outside; ``None`` when the pronouns cannot follow: more than
    one gender change, another gendered word or person noun outside the edits, a pronoun
    of the other gender, or a "her" of unclear role."""
    changing = [e for e in edits if changes_gender(e)]
    if not changing or not outside_pronouns(positive, edits):
        return []
    before, after = (genders_named(changing[0].original), genders_named(changing[0].replacement))
    if len(changing) > 1 or len(before) != 1 or len(after) != 1:
        return None
    outside = _outside(positive, edits)
    if genders_named(outside) or set(_words(outside)) & PERSON_NOUNS:
        return None  # "a man and his son", "a man and a baby ... his": whose is unclear
    male = "m" in before
    spans = [(e.start, e.end) for e in edits]
    out = []
    for match in _PRONOUN.finditer(positive):
        if any(start < match.end() and match.start() < end for start, end in spans):
            continue
        word = match.group().lower()
        if (word in HE_PRONOUNS) != male:
            return None  # "a man ... her": she is someone else
        other = _her_as(positive, match.end()) if word == "her" else _OTHER_GENDER[word]
        if other is None:
            return None
        replacement = match_case(match.group(), other, positive)
        out.append(Edit(changing[0].type, match.group(), replacement, *match.span(), AGREE))
    return out


def follow_pronouns(positive: str, edits: Sequence[Edit]) -> list[Edit]:
    """``edits`` and the pronoun edits that follow their gender change
    (:func:`pronoun_edits`); ``edits`` alone when the pronouns cannot follow (the
    ``pronoun_agreement`` filter then drops the candidate)."""
    extra = pronoun_edits(positive, edits)
    if not extra:
        return list(edits)
    return sorted([*edits, *extra], key=lambda e: (e.start, e.end))


def breaks_pronoun_agreement(positive: str, candidate: Candidate) -> bool:
    """Whether ``candidate`` changes a gender that a pronoun of ``positive`` still names:
    one of its edits changes the genders named (:func:`changes_gender`) and a gendered
    pronoun stays outside the edits."""
    edits = candidate.edits
    return any(changes_gender(e) for e in edits) and bool(outside_pronouns(positive, edits))


__all__ = [
    "breaks_pronoun_agreement",
    "changes_gender",
    "follow_pronouns",
    "genders_named",
    "outside_pronouns",
    "pronoun_edits",
]
