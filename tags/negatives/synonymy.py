"""Near-synonyms: substitutes a caption writer may use for the same thing.

"a pink shirt" -> "a pink blouse" is probably still true. The object operator already drops
WordNet synonyms, hypernyms and hyponyms of the original
(:meth:`~.wordnet.WordNet.related`, which compares *senses*: the first three of each word,
and first senses up the hierarchy) and the hand groups of :data:`~.lexicon.NEAR_SYNONYMS`
("hat" / "cap", "shirt" / "blouse"). :func:`near_synonymous` adds the hierarchy read by
*words*: a substitute is a near-synonym when the first sense of one of the two has a
hypernym that the other word names in any of its senses ("field" -> "tennis court": an
athletic field; "field" -> "pasture"), since a caption writer means the word, not its
first sense.

Following the lexicon groups through WordNet ("blouse" is a kind of "top", grouped with
"shirt") was tried and not used: it makes "sandals" and "sneakers" one (a sandal is a kind
of "shoe", grouped with "sneaker"), so the groups name such pairs themselves.

Sharing an immediate hypernym with a high similarity was measured and not used: it holds
for "zebra" / "horse", "sheep" / "goat", "bus" / "train", "bench" / "chair" (Wu-Palmer
0.89-0.94, the same parent), good negatives, as much as for near-synonyms.

Imports: :mod:`tags.negatives.lexicon`, :mod:`tags.negatives.wordnet` (the shared service).
"""

from __future__ import annotations

from tags.negatives.lexicon import near_synonyms
from tags.negatives.wordnet import WordNetService


def kind_of_word(wordnet: WordNetService, kind: str, general: str) -> bool:
    """Whether ``kind``'s first sense has a hypernym that ``general`` names in any sense
    ("tennis court" under "field"; "pasture" under "field")."""
    return general in wordnet.hypernym_names(kind)


def near_synonymous(wordnet: WordNetService, a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` (object names, lemmas) may name the same thing: grouped in
    the lexicon, or one a kind of a word the other is (see the module)."""
    if near_synonyms(a, b):
        return True
    return kind_of_word(wordnet, b, a) or kind_of_word(wordnet, a, b)


__all__ = ["kind_of_word", "near_synonymous"]
