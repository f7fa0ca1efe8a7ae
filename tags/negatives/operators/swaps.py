"""Swaps: two units of the caption exchanged, when every combination they create is attested.

- **attribute swap**: the attributes of two objects of one class ("a red car and a blue
  bike" -> "a blue car and a red bike"); not alike values, one colour family, the colour of
  a person, or a value the other object already has;
- **object swap**: the head nouns around a relation ("a dog chasing a cat" -> "a cat chasing
  a dog"), when the corpus attests the swapped triple and both objects are in one category;
- **role swap** (off by default): the whole noun phrases of an asymmetric relation's
  subject and object exchanged, typed ``relation``; only when each phrase carries all of its
  entity's attributes and the entity takes part in no other relation.

A swap is one operation (``swap``) with two edit spans.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from parsers import SceneGraph
from tags.negatives.edits import fix_articles, make_edit
from tags.negatives.lexicon import (
    FEMALE_MARKERS,
    FEMALE_NOUNS,
    FIXED_PREDICATES,
    MALE_MARKERS,
    MALE_NOUNS,
    attribute_class,
    editable_words,
    same_colour,
    symmetric,
)
from tags.negatives.operators.base import CharSpan, EditOperator, Proposal
from tags.negatives.operators.context import CaptionContext
from tags.negatives.operators.registry import register_operator
from tags.negatives.operators.syntax import (
    capitalised_word,
    described,
    in_other_relation,
    nouns_only,
)
from tags.negatives.scenes import SceneCounts, is_plural
from tags.negatives.types import Candidate, apply_edits

#: The prior of a swap candidate, next to a substitute's share of its unit's weight.
SWAP_WEIGHT = 0.25

Keyed = tuple[tuple[int, ...], Candidate]


def _replace(
    text: str, kind: str, pairs: list[tuple[CharSpan, str]], operation: str
) -> Candidate | None:
    edits = []
    for (start, end), replacement in pairs:
        edit = make_edit(kind, text, start, end, replacement)
        if edit is None:
            return None
        edits.append(edit)
    edits = [e.with_operation(operation) for e in fix_articles(text, edits)]
    return Candidate(apply_edits(text, edits), tuple(edits), weight=SWAP_WEIGHT)


def attribute_swaps(
    graph: SceneGraph,
    scenes: SceneCounts,
    category: Callable[[str], str | None] | None = None,
    similar: Callable[[str, str], bool] | None = None,
) -> Iterator[Keyed]:
    """Attribute swaps between two objects, keyed ``(0, i, j)`` by the attributes' order."""
    person = category("man") if category is not None else None
    values: dict[int, set[str]] = {}
    for attribute in graph.attributes:
        values.setdefault(attribute.entity, set()).add(attribute.value)
    text = graph.caption
    names = [e.name.lower() for e in graph.entities]
    attrs = [a for a in graph.attributes if a.span is not None]
    for i, a in enumerate(attrs):
        for j, b in enumerate(attrs[i + 1 :], i + 1):
            kind = attribute_class(a.value)
            if (
                a.entity == b.entity
                or a.value == b.value
                or kind is None
                or kind == "number"
                or attribute_class(b.value) != kind
                or names[a.entity] == names[b.entity]
                or (kind == "colour" and same_colour(a.value, b.value))
                or a.value in values[b.entity]  # "a green and white jacket, white pants"
                or b.value in values[a.entity]
                or (similar is not None and similar(a.value, b.value))
                or (
                    kind == "colour"
                    and person is not None
                    and person in (category(names[a.entity]), category(names[b.entity]))
                )
            ):
                continue
            if not (
                scenes.attribute_object.get((b.value, names[a.entity]))
                and scenes.attribute_object.get((a.value, names[b.entity]))
            ):
                continue
            a_text, b_text = text[slice(*a.span)], text[slice(*b.span)]
            candidate = _replace(text, "attribute", [(a.span, b_text), (b.span, a_text)], "swap")
            if candidate is not None:
                yield (0, i, j), candidate


def relation_swaps(
    graph: SceneGraph,
    scenes: SceneCounts,
    category: Callable[[str], str | None] | None = None,
    *,
    objects: bool = True,
    roles: bool = False,
) -> Iterator[Keyed]:
    """Object swaps (``objects``) and role swaps (``roles``) around each relation, keyed
    ``(1, relation index, 0)`` for a role swap and ``(1, relation index, 1)`` for an object
    swap."""
    text = graph.caption
    names = [e.name.lower() for e in graph.entities]
    for k, relation in enumerate(graph.relations if objects or roles else ()):
        s, o = relation.subject, relation.object
        subject, obj = graph.entities[s], graph.entities[o]
        if (
            s == o
            or relation.predicate in FIXED_PREDICATES
            or not relation.spans
            or subject.head_span is None
            or obj.head_span is None
            or not editable_words(names[s])
            or not editable_words(names[o])
            or not nouns_only(graph, subject.head_span)  # "near a woman next to him"
            or not nouns_only(graph, obj.head_span)
            or is_plural(graph, subject.head_span) != is_plural(graph, obj.head_span)
        ):
            continue
        p = relation.predicate
        if not scenes.triples.get((names[o], p, names[s])):
            continue  # only swaps the corpus has seen the other way round ("a karate in a man")
        if {names[s], names[o]} & (MALE_NOUNS | FEMALE_NOUNS) and set(text.lower().split()) & (
            FEMALE_MARKERS | MALE_MARKERS
        ):
            continue  # "a woman in a bikini serving a man" -> not "a man in a bikini"
        if category is not None and category(names[s]) != category(names[o]):
            continue  # a dog chasing a cat, not a man in a karate
        if roles and not symmetric(p):
            candidate = role_swap(graph, relation)
            if candidate is not None:
                yield (1, k, 0), candidate
        if (
            not objects
            or names[s] == names[o]
            or (
                symmetric(p)
                and not described(graph, s, relation)
                and not described(graph, o, relation)
            )
        ):
            continue  # "a child walks next to a woman" -> "a woman walks next to a child"
        if any(
            not scenes.attribute_object.get((a.value, names[o])) for a in graph.attributes_of(s)
        ) or any(
            not scenes.attribute_object.get((a.value, names[s])) for a in graph.attributes_of(o)
        ):
            continue
        s_text, o_text = text[slice(*subject.head_span)], text[slice(*obj.head_span)]
        candidate = _replace(
            text, "object", [(subject.head_span, o_text), (obj.head_span, s_text)], "swap"
        )
        if candidate is not None:
            yield (1, k, 1), candidate


def role_swap(graph: SceneGraph, relation) -> Candidate | None:
    """The caption with the relation's subject and object noun phrases exchanged, or
    ``None`` when a phrase would leave part of its description behind."""
    text = graph.caption
    spans = []
    for entity in (relation.subject, relation.object):
        span = graph.entities[entity].span
        if span is None or any(
            a.span is None or not (span[0] <= a.span[0] and a.span[1] <= span[1])
            for a in graph.attributes_of(entity)
        ):
            return None  # "a dog that is black" would leave "black" with the other noun
        if in_other_relation(graph, entity, relation):
            return None  # "a man holding a cup left of a woman" would hand her the cup
        spans.append(span)
    (s_start, s_end), (o_start, o_end) = spans
    if s_end > o_start and o_end > s_start:
        return None  # nested or overlapping phrases ("the dog's owner")
    s_text, o_text = text[s_start:s_end], text[o_start:o_end]
    if s_text.lower() == o_text.lower():
        return None
    s, o = relation.subject, relation.object
    if graph.entities[s].name.lower() == graph.entities[o].name.lower() and not (
        graph.attributes_of(s) or graph.attributes_of(o)
    ):
        return None  # "a boy jumps on another boy": only the determiners would move
    if not text.isupper():  # sentence case stays at the start ("A dog ..." -> "... a dog")
        s_text, o_text = (
            t[:1].lower() + t[1:] if start == 0 and capitalised_word(t.split()[0]) else t
            for t, start in ((s_text, s_start), (o_text, o_start))
        )
    return _replace(text, "relation", [(spans[0], o_text), (spans[1], s_text)], "swap")


def swap_candidates(
    graph: SceneGraph,
    scenes: SceneCounts,
    category: Callable[[str], str | None] | None = None,
    similar: Callable[[str, str], bool] | None = None,
    *,
    swaps: bool = True,
    roles: bool = False,
) -> list[Candidate]:
    """Swaps of two units of the caption, when every combination they create is attested.

    ``swaps``: attribute swaps between two objects and head-noun swaps around a relation
    ("a red circle left of a blue square" -> "a red square left of a blue circle", typed
    ``object``): a swapped relation must be attested as such, between objects of one
    ``category`` (e.g. :meth:`WordNet.category`) when given. Two attributes that ``similar``
    calls alike ("small", "little") or of one colour family are not swapped, nor the colour
    of a person (with ``category``).

    ``roles``: role swaps, the whole noun phrases of an asymmetric relation's subject and
    object exchanged ("... -> a blue square left of a red circle", typed ``relation``): the
    same objects with the same descriptions, so only the image's layout tells the two
    captions apart. Only when each phrase carries all of its entity's attributes and the
    entity takes part in no other relation (nothing that describes it stays behind)."""
    found = list(attribute_swaps(graph, scenes, category, similar)) if swaps else []
    found += relation_swaps(graph, scenes, category, objects=swaps, roles=roles)
    return [candidate for _, candidate in found]


@register_operator("swap_attribute", rank=40)
class SwapAttribute(EditOperator):
    """Exchange the attributes of two objects (on with ``swaps``)."""

    edit_types = ("attribute",)
    kind = "candidate"
    switch = "swaps"

    def propose(self, context: CaptionContext) -> list[Proposal]:
        evidence = self.evidence
        found = attribute_swaps(
            context.graph, evidence.scenes, evidence.category, evidence.similar_attributes
        )
        return [Proposal(candidate, key) for key, candidate in found]


@register_operator("swap_object", rank=50)
class SwapObject(EditOperator):
    """Exchange the head nouns of a relation's subject and object (on with ``swaps``)."""

    edit_types = ("object",)
    kind = "candidate"
    switch = "swaps"

    def propose(self, context: CaptionContext) -> list[Proposal]:
        found = relation_swaps(context.graph, self.evidence.scenes, self.evidence.category)
        return [Proposal(candidate, key) for key, candidate in found]


@register_operator("swap_role", rank=60)
class SwapRole(EditOperator):
    """Exchange the whole noun phrases around an asymmetric relation (on with
    ``role_swaps``)."""

    edit_types = ("relation",)
    kind = "candidate"
    switch = "role_swaps"

    def propose(self, context: CaptionContext) -> list[Proposal]:
        found = relation_swaps(
            context.graph, self.evidence.scenes, self.evidence.category, objects=False, roles=True
        )
        return [Proposal(candidate, key) for key, candidate in found]


__all__ = [
    "SWAP_WEIGHT",
    "SwapAttribute",
    "SwapObject",
    "SwapRole",
    "attribute_swaps",
    "relation_swaps",
    "role_swap",
    "swap_candidates",
]
