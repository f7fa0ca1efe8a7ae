"""What a caption's parse says around a span: the grammar checks operators share.

Each function reads a :class:`~parsers.SceneGraph` (its caption, tokens and tags) and
answers one question about a span or an entity: is it a common noun, a compound's modifier,
followed by a clause, mentioned again; is a count or an age pinned elsewhere in the caption.
Not an operator: every operator and the evidence service's helpers may import it.

May import: ``proposals``, ``lexicon``, ``scenes`` (word helpers only).
"""

from __future__ import annotations

import itertools
import re

from parsers import SceneGraph
from tags.negatives.lexicon import COUNT_ANCHORS, NEGATORS, NUMBER_VALUES
from tags.negatives.operators.proposals import CharSpan
from tags.negatives.scenes import words_of

_DETERMINERS = frozenset({"DT", "PRP$", "POS", "PDT", "WP$"})
#: Tags after a "with" object that make it a clause ("with his arms outspread", "with white
#: on", "with hands raised"), where "without" reads wrong.
_CLAUSE_TAGS = frozenset({"JJ", "VBN", "VBG", "RP", "RB", "IN"})
#: Words that join a "with" object to a list: "without" would scope over the whole list
#: ("a room with a sofa and a lamp" -> "without a sofa and a lamp" reads as if only one
#: were missing).
_COORDINATORS = frozenset({"and", "or", "&", ",", "as", "plus"})
#: Ordinals count a group's members ("four people ..., two girls, one man and the third
#: person"): the group's count is fixed by them.
ORDINALS = frozenset(
    {"second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"}
)
#: Captions with this many counts enumerate parts of a group ("four people, two girls, one
#: man ..."): changing one count contradicts the others.
ENUMERATION_COUNTS = 3
_NOUN_TAGS = frozenset({"NN", "NNS"})
#: Predicates that list what a place holds ("a room with a couch", "a bathroom has a toilet").
LISTING_PREDICATES = frozenset({"with", "have", "contain", "include"})


def counted(caption: str) -> bool:
    """Whether the caption pins a count elsewhere ("one ... the other", "both", an
    enumeration after a colon, an ordinal, :data:`ENUMERATION_COUNTS` or more counts): its
    quantities are not edited."""
    text = " ".join(caption.lower().replace(",", " , ").split())
    if text.count("one ") >= 2 or "one of them" in text:  # "two clowns, one young and one ..."
        return True
    if ":" in text:  # an enumeration fixes the count ("three shapes: a circle, a star and ...")
        return True
    words = text.replace(".", " ").split()
    if ORDINALS.intersection(words):  # "... and the third person"
        return True
    if sum(w.isdigit() or w in NUMBER_VALUES for w in words) >= ENUMERATION_COUNTS:
        return True  # a total and its parts: "four people, two girls, one bald man"
    text = f" {text} "
    return any(f" {anchor} " in text for anchor in COUNT_ANCHORS)


#: An age said in years or decades ("a 6-year-old", "five years old", "in his sixties", "in
#: her 60s", "in his sixty 's").
_DECADES = "twent|thirt|fort|fift|sixt|sevent|eight|ninet"
_STATED_AGE = re.compile(
    r"\b(?:\d+|[a-z]+)[- ]?(?:year|yr)s?[- ]?olds?\b"
    rf"|\b(?:{_DECADES})(?:ies|y ?'? ?s)\b"
    r"|\b[1-9]0 ?'? ?s\b"
)


def age_stated(caption: str) -> bool:
    """Whether the caption states an age in years or decades: "a young man" is not made
    "an old man" where he "appears to be in his sixties"."""
    return bool(_STATED_AGE.search(caption.lower()))


def tokens_before(graph: SceneGraph, entity) -> list[tuple[int, int, str]]:
    """The caption's tokens that end before the entity's head."""
    return [token for token in graph.tokens if token[1] <= entity.head_span[0]]


def after_determiner(graph: SceneGraph, entity) -> bool:
    """Whether a determiner or possessive comes before the entity's head, inside its phrase
    or right before it ("an orange", "a ripe orange": the fruit; "one orange", "in orange":
    the colour)."""
    before = tokens_before(graph, entity)
    start = (entity.span or entity.head_span)[0]
    return any(t in _DETERMINERS for s, _, t in before if s >= start) or bool(
        before and before[-1][2] in _DETERMINERS
    )


def modifies_noun(graph: SceneGraph, span: CharSpan) -> bool:
    """Whether a noun follows the object's head at once ("boy band", "tennis court"): the
    word is a compound's modifier, and its edit would leave the real head in place."""
    following = [tag for s, _, tag in graph.tokens if s >= span[1]]
    # ... also across adjectives ("a baby brown bear": "baby" describes the bear)
    while following and following[0] == "JJ":
        following = following[1:]
        if following and following[0] in ("NN", "NNS"):
            return True
    return bool(following) and following[0] in ("NN", "NNS")


#: Singular and plural endings that are not "-s" apart (the ending of a longer noun too:
#: "fireman" / "firemen").
_IRREGULAR_NUMBER = (
    ("man", "men"),
    ("child", "children"),
    ("person", "people"),
    ("foot", "feet"),
    ("tooth", "teeth"),
    ("mouse", "mice"),
    ("goose", "geese"),
)


def possessive(graph: SceneGraph, span: CharSpan, bare_apostrophe: bool = False) -> bool:
    """Whether "'s" follows the noun at ``span`` ("a child 's puzzle"); with
    ``bare_apostrophe``, a lone apostrophe too ("the kids' toys")."""
    marks = ("'s", "’s", "'") if bare_apostrophe else ("'s", "’s")
    return graph.caption[span[1] :].lstrip().startswith(marks)


_POSSESSIVE = re.compile(r"(?<=\w)['’]s?$")


def mentioned_again(caption: str, span: CharSpan, written: str) -> bool:
    """Whether the object's word comes up again outside its span, in either number ("a woman
    and man ..., the man is on the drums"; "a baby cow ..., two other cows"): changing one
    mention would contradict the other."""
    target = [w.lower() for w in written.split()]
    rest = [*words_of(caption[: span[0]]), "|", *words_of(caption[span[1] :])]
    rest = [_POSSESSIVE.sub("", w.lower()) for w in rest]  # "one of the sheep's heads"
    last = target[-1]
    forms = {last, last + "s", last + "es", last[:-1] if last.endswith("s") else last}
    if last.endswith("y"):
        forms.add(last[:-1] + "ies")
    if last.endswith("ies"):
        forms.add(last[:-3] + "y")
    for one, many in _IRREGULAR_NUMBER:  # "a man ..., several other men"
        if last.endswith(one):
            forms.add(last[: len(last) - len(one)] + many)
        elif last.endswith(many):
            forms.add(last[: len(last) - len(many)] + one)
    n = len(target)
    return any(
        rest[i : i + n - 1] == target[:-1] and rest[i + n - 1] in forms
        for i in range(len(rest) - n + 1)
    )


def with_clause(graph: SceneGraph, entity) -> bool:
    """Whether the object of "with" is followed by a predicate of its own ("with his arms
    outspread": a plural noun inside the head), is one item of a list ("with a sofa and a
    lamp": "without" would scope over the list), or is not a concrete noun (a colour, a
    name)."""
    tags = graph.tags_in(entity.head_span) if entity.head_span is not None else []
    if not tags or not all(t in ("NN", "NNS") for t in tags) or "NNS" in tags[:-1]:
        return True
    if entity.quantity_span is not None:
        return True  # "a man with one leg" -> "without one leg" says something else
    before = words_of(graph.caption[: entity.span[0]])[-2:] if entity.span else []
    if before and before[-1] == "of":
        return True  # "with lots of pipe" -> "without lots of pipe"
    own = words_of(graph.caption[entity.span[0] : entity.head_span[0]]) if entity.span else []
    if NEGATORS.intersection(own + before[-1:]):
        return True  # "with no shirt" -> not "without no shirt": already a negation
    after = [
        (graph.caption[s:e].lower(), t) for s, e, t in graph.tokens if s >= entity.head_span[1]
    ]
    if after and after[0][0] in _COORDINATORS:
        return True  # "with a sofa and a lamp", "with a sofa, a lamp"
    if before and before[-1] in _COORDINATORS:
        return True  # the list's later items: "with a sofa and a lamp"
    return bool(after) and after[0][1] in _CLAUSE_TAGS


def described(graph: SceneGraph, entity: int, relation) -> bool:
    """Whether an entity has an attribute or a relation other than ``relation``: a swap
    then moves what describes it ("the woman in the red dress dancing with the man")."""
    return bool(graph.attributes_of(entity)) or in_other_relation(graph, entity, relation)


def in_other_relation(graph: SceneGraph, entity: int, relation) -> bool:
    """Whether an entity takes part in a relation other than ``relation``."""
    return any(r is not relation and entity in (r.subject, r.object) for r in graph.relations)


def nouns_only(graph: SceneGraph, span: CharSpan) -> bool:
    """Whether every token of ``span`` is tagged a common noun (not a pronoun the parser
    resolved to an entity: "next to *him*", nor a proper name)."""
    tags = graph.tags_in(span)
    return bool(tags) and all(t in ("NN", "NNS") for t in tags)


def contains_word(a: str, b: str) -> bool:
    """Whether one name ends with the other's head word ("sweatshirt", "shirt")."""
    a_head, b_head = a.split()[-1], b.split()[-1]
    return len(a_head) > 3 < len(b_head) and (a_head.endswith(b_head) or b_head.endswith(a_head))


def contiguous(graph: SceneGraph, spans) -> bool:
    """Whether a relation's pieces are separated by articles at most ("to the left of")."""
    for (_, end), (start, _) in itertools.pairwise(spans):
        if graph.caption[end:start].strip().lower() not in ("", "the", "a", "an"):
            return False
    return True


def shape_like(text: str, pieces: tuple[str, ...]) -> tuple[str, ...] | None:
    """``text`` cut into pieces of the same word counts as ``pieces`` (``None``: no fit)."""
    words = text.split()
    sizes = [len(p.split()) for p in pieces]
    if len(pieces) == 1:
        return (text,)
    if len(words) != sum(sizes):
        return None
    out, start = [], 0
    for size in sizes:
        out.append(" ".join(words[start : start + size]))
        start += size
    return tuple(out)


def joined(graph: SceneGraph, index: int) -> set[int]:
    """The entities whose phrase is joined to entity ``index``'s by "and", "or" or a comma
    alone ("bicycles and vehicles")."""
    spans = sorted(
        (e.span or e.head_span, i)
        for i, e in enumerate(graph.entities)
        if (e.span or e.head_span) is not None
    )
    out: set[int] = set()
    for (a, i), (b, j) in itertools.pairwise(spans):
        if index in (i, j) and graph.caption[a[1] : b[0]].strip() in ("and", "or", ","):
            out.add(j if i == index else i)
    return out


def capitalised_word(word: str) -> bool:
    """ "A", "The", "Two": sentence case, not a name in capitals ("TV") nor "I"."""
    return word[:1].isupper() and (word[1:].islower() or (len(word) == 1 and word != "I"))


def noun_start(graph: SceneGraph, head_start: int) -> int:
    """The start of the run of nouns that ends in the head ("bathroom mirror")."""
    start = head_start
    for s, e, tag in reversed(graph.tokens):
        if e <= start and tag in _NOUN_TAGS and graph.caption[e:start].strip() == "":
            start = s
        elif e <= start:
            break
    return start


__all__ = [
    "LISTING_PREDICATES",
    "after_determiner",
    "capitalised_word",
    "contains_word",
    "contiguous",
    "counted",
    "described",
    "in_other_relation",
    "joined",
    "mentioned_again",
    "modifies_noun",
    "noun_start",
    "nouns_only",
    "shape_like",
    "tokens_before",
    "with_clause",
]
