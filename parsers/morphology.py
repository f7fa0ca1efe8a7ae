"""English number inflection and the lemmatizer interface: the bottom of the word layer.

:func:`plural` is the one plural rule the project's hand lists derive their plurals from
(:mod:`parsers.lexicon`, :mod:`tags.negatives.lexicon`: a list names a noun's lemma once).
:class:`Lemmatizer` is the interface both lemmatizers satisfy: the spaCy tables of
:class:`parsers.nlp.Lemmatizer` (the parser's) and WordNet's morphology
(:class:`tags.negatives.wordnet.WordNet`, the edit planner's).

Imports: the standard library only (nothing of ``parsers``, ``tags`` or ``heads``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

#: Plurals not formed by a suffix rule.
IRREGULAR_PLURALS: dict[str, str] = {
    "man": "men", "woman": "women", "gentleman": "gentlemen", "child": "children",
    "person": "people", "foot": "feet", "tooth": "teeth", "mouse": "mice", "goose": "geese",
}  # fmt: skip

#: Nouns whose plural is the singular ("a herd of sheep"), a closed class.
ZERO_PLURALS = frozenset(
    {"sheep", "deer", "fish", "moose", "bison", "buffalo", "cattle", "elk", "swine",
     "aircraft", "offspring", "livestock", "salmon", "trout", "reindeer"}
)  # fmt: skip


def plural(noun: str) -> str:
    """The plural of a singular noun ("dress" -> "dresses", "lady" -> "ladies", "man" ->
    "men", "sheep" -> "sheep")."""
    if noun in IRREGULAR_PLURALS:
        return IRREGULAR_PLURALS[noun]
    if noun in ZERO_PLURALS:
        return noun
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u"):
        return noun[:-1] + "ies"
    return noun + "s"


def with_plurals(lemmas: Iterable[str]) -> frozenset[str]:
    """The lemmas and their plurals (:func:`plural`)."""
    lemmas = tuple(lemmas)
    return frozenset(lemmas) | frozenset(plural(w) for w in lemmas)


@runtime_checkable
class Lemmatizer(Protocol):
    """Anything that gives a word's lemma for a coarse part of speech (``"noun"``,
    ``"verb"``, ``"adj"``, ``"adv"``; others: the lower-cased word)."""

    def lemma(self, word: str, pos: str) -> str:
        """The lemma of ``word`` read as ``pos`` (lower-cased)."""
        ...


__all__ = ["IRREGULAR_PLURALS", "ZERO_PLURALS", "Lemmatizer", "plural", "with_plurals"]
