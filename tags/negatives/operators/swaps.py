"""Swaps: two units of the caption exchanged, when every combination they create is attested.

- **attribute swap**: two attributes of one class (colour, size, material...) of two objects,
  whatever the objects' categories ("a red car and a blue bike" -> "a blue car and a red
  bike", "a brown dog by a white fence" -> "a white dog by a brown fence"); not alike values, one colour family, the colour of
  a person, a value the other object already has, or a colour qualified by a word that
  would stay behind ("a neon green vest"). Each value must be attested with its
  new noun, or (colour, material, pattern) be plausible for it by the graded, category-
  smoothed value shares the add operator uses (:class:`~.values.ValueShares`: "a
  yellow hat and a blue crane" -> "a blue hat and a yellow crane");
- **object swap**: the head nouns around a relation ("a dog chasing a cat" -> "a cat chasing
  a dog"), both objects in one category, when the corpus attests the swapped triple, or
  (with :class:`SceneEvidence`) each noun in its new role with the predicate and a partner
  of the other's category (:func:`swap_attested`); whatever else describes each place
  (attributes, other relations) must fit its new noun; people of two genders only without
  gendered pronouns or garments in the caption, and never a possessed noun ("his daughter");
- **role swap**: the whole noun phrases of an asymmetric relation's subject and object
  exchanged, typed ``relation``, on the same evidence; only when each phrase carries all of
  its entity's attributes and the entity takes part in no other relation.

A swap is one operation (``swap``) with two edit spans.

May import: ``proposals``, ``evidence``, ``context``, ``base``, ``registry`` and the evidence
service's helpers (``values``, ``syntax``); never another operator module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from parsers import SceneGraph
from tags.core.edits import fix_articles, make_edit
from tags.core.types import Candidate, apply_edits
from tags.negatives.lexicon import (
    FEMALE_MARKERS,
    FEMALE_NOUNS,
    FIXED_PREDICATES,
    GENDERED_PRONOUNS,
    MALE_MARKERS,
    MALE_NOUNS,
    PERSON_AGES,
    attribute_class,
    editable_words,
    garment_slot,
    near_synonyms,
    persons_exclusive,
    same_colour,
    symmetric,
)
from tags.negatives.operators.base import EditOperator
from tags.negatives.operators.context import CaptionContext
from tags.negatives.operators.evidence import SceneEvidence
from tags.negatives.operators.proposals import CharSpan, Proposal
from tags.negatives.operators.registry import register_operator
from tags.negatives.operators.syntax import (
    capitalised_word,
    described,
    in_other_relation,
    nouns_only,
)
from tags.negatives.operators.values import ValueShares
from tags.negatives.scenes import SceneCounts, is_plural

#: The prior of a swap candidate, next to a substitute's share of its unit's weight.
SWAP_WEIGHT = 0.25

#: Verbs whose relation usually holds both ways between two agents ("a man talks to a
#: woman": she talks to him too), so swapping their arguments may still be true (the
#: always-symmetric ones are :func:`~tags.negatives.lexicon.symmetric`).
RECIPROCAL_VERBS = frozenset(
    {"talk", "speak", "chat", "converse", "argue", "fight", "wrestle", "play", "compete", "race"}
)
#: Predicates whose objects are never exchanged between owners (copulas, parts, what a
#: picture shows): wearing and having are ("a man wearing a hat and a woman wearing a scarf").
_OWNER_FIXED = FIXED_PREDICATES - {"wear", "have"}
#: Attribute classes whose swapped values may be backed off to the noun's category (the
#: add operator's smoothed shares); sizes, ages and states need the pair itself.
BACKOFF_CLASSES = ("colour", "material", "pattern")
#: A backed-off value needs at least this smoothed share of its class for its new noun (a
#: usual value of it: "a green stop sign", 0.03 of a corpus's stop sign colours, is not).
MIN_SWAP_SHARE = 0.05

Keyed = tuple[tuple[int, ...], Candidate]
#: ``(noun, attribute class) -> {value: smoothed share}`` (see :data:`BACKOFF_CLASSES`).
Shares = Callable[[str, str], dict[str, float]]


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
    shares: Shares | None = None,
    related: Callable[[str, str], bool] | None = None,
) -> Iterator[Keyed]:
    """Attribute swaps between two objects, keyed ``(0, i, j)`` by the attributes' order.
    Objects whose nouns ``related`` calls kin ("dog", "puppy": the white puppy may be the
    white dog) are not swapped.
    Each value must be attested with its new noun, or (``shares`` given, a class of
    :data:`BACKOFF_CLASSES`) have a smoothed share of at least :data:`MIN_SWAP_SHARE` for it."""
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
                or (related is not None and related(names[a.entity], names[b.entity]))
                or (
                    kind == "colour"
                    and person is not None
                    and person in (category(names[a.entity]), category(names[b.entity]))
                )
            ):
                continue
            if not (
                _value_fits(scenes, shares, b.value, names[a.entity], kind)
                and _value_fits(scenes, shares, a.value, names[b.entity], kind)
            ):
                continue
            if kind == "colour" and (_shade_before(graph, a) or _shade_before(graph, b)):
                continue  # "a neon green vest" -> not "a neon white vest"
            a_text, b_text = text[slice(*a.span)], text[slice(*b.span)]
            candidate = _replace(text, "attribute", [(a.span, b_text), (b.span, a_text)], "swap")
            if candidate is not None:
                yield (0, i, j), candidate


def _recase(slot: str, moved: str) -> str:
    """``moved`` written in the case of the ``slot`` it goes to: a sentence-case capital
    stays at the start of the caption ("Man with brown hair and a woman" -> "Woman with
    brown hair and a man"); names and acronyms keep theirs."""
    if slot[:1].isupper() and moved[:1].islower():
        return moved[:1].upper() + moved[1:]
    if slot[:1].islower() and capitalised_word(moved.split()[0]) and not slot.isupper():
        return moved[:1].lower() + moved[1:]
    return moved


def kin(evidence: SceneEvidence, a: str, b: str) -> bool:
    """Whether two specific nouns are WordNet kin (one sense shared, or one a kind of the
    other: "dog" / "puppy", "shirt" / "t-shirt"), so their two mentions may name one thing;
    a noun too general to tell things apart (depth <= 7: "object", "toy") is no one's kin."""
    depths = [evidence.wordnet.depth(n) for n in (a, b)]
    if any(d is not None and d <= 7 for d in depths):
        return False
    return evidence.wordnet.related(a, b)


def _shade_before(graph: SceneGraph, attribute) -> bool:
    """Whether the word just before an attribute is an adjective or noun that is no
    attribute itself ("*neon* green", "*hot* pink"): it qualifies the colour and would stay
    behind when the colour moves."""
    before = [t for t in graph.tokens if t[1] <= attribute.span[0] and t[1] > t[0]]
    if not before:
        return False
    start, end, tag = before[-1]
    if tag not in ("JJ", "NN") or graph.caption[end : attribute.span[0]].strip():
        return False
    return not any(
        a.span is not None and a.span[0] <= start and end <= a.span[1] for a in graph.attributes
    )


def _value_fits(
    scenes: SceneCounts, shares: Shares | None, value: str, noun: str, kind: str
) -> bool:
    """Whether ``value`` may describe ``noun``: attested together, or plausible by the
    noun's smoothed value shares (classes of :data:`BACKOFF_CLASSES`)."""
    if scenes.attribute_object.get((value, noun)):
        return True
    return (
        shares is not None
        and kind in BACKOFF_CLASSES
        and shares(noun, kind).get(value, 0.0) >= MIN_SWAP_SHARE
    )


def swap_attested(evidence: SceneEvidence, subject: str, predicate: str, obj: str) -> bool:
    """Whether the swapped relation ``(obj, predicate, subject)`` is attested: as a triple;
    or each noun in its new role with the predicate and a partner of the other's category
    (:meth:`SceneEvidence.partner_categories`: a dog chases some animal, some animal chases
    a cat -> "a dog chasing a cat"; no baby holds a person in the corpus -> not "a baby
    holding a man"); or two people who differ by gender only exchange places (what a man
    does to a woman, a woman may do to a man: "a girl holds a boy" -> "a boy holds a girl")."""
    if evidence.scenes.triples.get((obj, predicate, subject)):
        return True
    if exchangeable_people(subject, obj):
        return True
    subjects = evidence.partner_categories(("subject", predicate, subject))
    objects = evidence.partner_categories(("object", obj, predicate))
    return evidence.category(subject) in objects and evidence.category(obj) in subjects


def exchangeable_people(a: str, b: str) -> bool:
    """Two person nouns that say nothing but gender and age (:data:`PERSON_AGES`), of one
    age class and two genders ("man" / "woman", "boy" / "girl")."""
    return (
        a in PERSON_AGES
        and b in PERSON_AGES
        and PERSON_AGES[a] == PERSON_AGES[b]
        and _gender(a) is not None
        and _gender(b) is not None
        and _gender(a) != _gender(b)
    )


def _ages_differ(evidence: SceneEvidence, graph: SceneGraph, s: int, o: int) -> bool:
    """Whether two people carry different words of age or size (anything but a colour,
    material or pattern: "teenage", "little", "old"): a role swap moves them with their
    nouns ("a teenage girl holds a little boy" -> not "a little boy holds a teenage girl").
    Other objects keep their sizes ("a small red diamond below a purple hexagon")."""
    names = [graph.entities[e].name.lower() for e in (s, o)]
    if not all(evidence.is_person(n) for n in names):
        return False
    ages = [
        {a.value for a in graph.attributes_of(e) if attribute_class(a.value) not in BACKOFF_CLASSES}
        for e in (s, o)
    ]
    return ages[0] != ages[1]


def _gender(name: str) -> str | None:
    return "male" if name in MALE_NOUNS else "female" if name in FEMALE_NOUNS else None


def _possessed(graph: SceneGraph, entity) -> bool:
    """Whether a possessive determiner names the entity ("his daughter": a relational
    noun whose owner a swap would change)."""
    if entity.span is None or entity.head_span is None:
        return False
    return "PRP$" in graph.tags_in((entity.span[0], entity.head_span[0])) or "POS" in (
        graph.tags_in((entity.span[0], entity.head_span[0]))
    )


def _places_fit(
    evidence: SceneEvidence, graph: SceneGraph, entity: int, noun: str, relation
) -> bool:
    """Whether ``noun`` fits every other relation that entity ``entity`` takes part in (a
    head-noun swap leaves them at its place: "a man in a hat photographs a woman" -> "a
    woman in a hat ...")."""
    names = [e.name.lower() for e in graph.entities]
    roles = [
        ("subject", r.predicate, names[r.object])
        if r.subject == entity
        else ("object", r.predicate, names[r.subject])
        for r in graph.relations
        if r is not relation and entity in (r.subject, r.object) and r.subject != r.object
    ]
    return evidence.roles_fit(noun, roles)


def _swappable(
    graph: SceneGraph,
    scenes: SceneCounts,
    category: Callable[[str], str | None] | None,
    evidence: SceneEvidence | None,
    relation,
) -> bool:
    """Whether the subject and object of ``relation`` may exchange places at all (see
    :func:`relation_swaps`): two distinct editable common nouns of one number, the swapped
    relation attested, no gendered word handed between genders, one category, two people
    who cannot be one person, neither possessed."""
    names = [e.name.lower() for e in graph.entities]
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
        return False
    p = relation.predicate
    if evidence is None:
        if not scenes.triples.get((names[o], p, names[s])):
            return False  # only swaps the corpus has seen the other way round ("a karate in a man")
    elif evidence.category(names[s]) is None or not swap_attested(evidence, names[s], p, names[o]):
        return False  # "a man holds a baby" -> not "a baby holds a man": no baby holds anyone
    words = set(graph.caption.lower().split())
    genders = {_gender(names[s]), _gender(names[o])}
    if evidence is None and genders != {None} and words & (FEMALE_MARKERS | MALE_MARKERS):
        return False  # "a woman in a bikini serving a man" -> not "a man in a bikini"
    if len(genders) > 1 and words & (FEMALE_MARKERS | MALE_MARKERS | GENDERED_PRONOUNS):
        return False  # ... nor "a man in a bikini", "a girl holds his hand"
    if category is not None and category(names[s]) != category(names[o]):
        return False  # a dog chasing a cat, not a man in a karate
    if (
        evidence is not None
        and evidence.is_person(names[s])
        and evidence.is_person(names[o])
        and not persons_exclusive(names[s], names[o])
    ):
        return False  # "a lady holding a woman": maybe one person in either place
    # "a man holds his daughter" -> not "a daughter holds his man"
    return evidence is None or not (_possessed(graph, subject) or _possessed(graph, obj))


def relation_swaps(
    graph: SceneGraph,
    scenes: SceneCounts,
    category: Callable[[str], str | None] | None = None,
    *,
    objects: bool = True,
    roles: bool = False,
    evidence: SceneEvidence | None = None,
) -> Iterator[Keyed]:
    """Object swaps (``objects``) and role swaps (``roles``) around each relation, keyed
    ``(1, relation index, 0)`` for a role swap and ``(1, relation index, 1)`` for an object
    swap. Without ``evidence`` the swapped triple itself must be attested; with it, the
    graded evidence of :func:`swap_attested`, a category of both nouns (not ``None``), and
    an object swap's nouns must fit the other relations of their new places."""
    text = graph.caption
    names = [e.name.lower() for e in graph.entities]
    for k, relation in enumerate(graph.relations if objects or roles else ()):
        if not _swappable(graph, scenes, category, evidence, relation):
            continue
        s, o, p = relation.subject, relation.object, relation.predicate
        subject, obj = graph.entities[s], graph.entities[o]
        # a relation that holds both ways ("next to", "kiss"; with evidence also "talk to":
        # she talks to him too) is no negative unless something else describes either one
        mutual = symmetric(p) or (evidence is not None and p.split()[0] in RECIPROCAL_VERBS)
        if (
            roles
            and not mutual
            and not (evidence is not None and _ages_differ(evidence, graph, s, o))
        ):
            candidate = role_swap(graph, relation)
            if candidate is not None:
                yield (1, k, 0), candidate
        if (
            not objects
            or names[s] == names[o]
            or (mutual and not described(graph, s, relation) and not described(graph, o, relation))
        ):
            continue  # "a child walks next to a woman" -> "a woman walks next to a child"
        if any(
            not scenes.attribute_object.get((a.value, names[o])) for a in graph.attributes_of(s)
        ) or any(
            not scenes.attribute_object.get((a.value, names[s])) for a in graph.attributes_of(o)
        ):
            continue
        if (
            evidence is not None
            and not scenes.triples.get((names[o], p, names[s]))
            and not (
                _places_fit(evidence, graph, s, names[o], relation)
                and _places_fit(evidence, graph, o, names[s], relation)
            )
        ):
            continue  # "a man in a tie photographs a dog" -> not "a dog in a tie"
        s_text, o_text = text[slice(*subject.head_span)], text[slice(*obj.head_span)]
        candidate = _replace(
            text,
            "object",
            [
                (subject.head_span, _recase(s_text, o_text)),
                (obj.head_span, _recase(o_text, s_text)),
            ],
            "swap",
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


def _whole_phrase(graph: SceneGraph, entity: int, relation) -> CharSpan | None:
    """The entity's noun phrase when it carries all of its attributes and the entity is in
    no relation but ``relation`` (moving it moves everything said of it), else ``None``."""
    span = graph.entities[entity].span
    if span is None or any(
        a.span is None or not (span[0] <= a.span[0] and a.span[1] <= span[1])
        for a in graph.attributes_of(entity)
    ):
        return None
    if in_other_relation(graph, entity, relation):
        return None
    return span


def _slot_taken(graph: SceneGraph, names: list[str], owner: int, old: int, garment: str) -> bool:
    """Whether ``owner`` keeps another garment in the slot ``garment`` would take (its other
    relations' objects but ``old``)."""
    slot = garment_slot(garment)
    return slot is not None and any(
        garment_slot(names[r.object]) == slot
        for r in graph.relations
        if r.subject == owner and r.object != old
    )


def owner_swaps(graph: SceneGraph, evidence: SceneEvidence) -> Iterator[Keyed]:
    """Object swaps between two owners, keyed ``(2, i, j)`` by the relations' order: the
    objects of two relations with different subjects exchanged, each with its whole noun
    phrase ("a man in a black jacket and a woman in a white shirt" -> "a man in a white
    shirt and a woman in a black jacket"; "a boy holding a cup and a girl holding a plate").

    Both objects in one category (not ``None``) with different nouns, each in no other
    relation and carrying all of its attributes; each must fit its new relation
    (:meth:`SceneEvidence.roles_fit` and :meth:`SceneEvidence.frame_fits`: not "a man on a
    car and a woman in a bike"); never a gendered garment or pronoun handed between people
    who may differ in gender ("a man in a suit and a woman in a dress"), nor two people who
    may be the same person."""
    text = graph.caption
    names = [e.name.lower() for e in graph.entities]
    relations = [
        r
        for r in graph.relations
        if r.spans and r.subject != r.object and r.predicate not in _OWNER_FIXED
    ]
    for i, r1 in enumerate(relations):
        for r2 in relations[i + 1 :]:
            a, b, x, y = r1.subject, r2.subject, r1.object, r2.object
            if len({a, b, x, y}) < 4 or names[a] == names[b] or names[x] == names[y]:
                continue  # one owner, one object, or two alike owners: nothing changes
            kind = evidence.category(names[x])
            if kind is None or kind != evidence.category(names[y]):
                continue
            if (
                evidence.is_person(names[x])
                and evidence.is_person(names[y])
                and not persons_exclusive(names[x], names[y])
            ):
                continue  # "holding a lady ... holding a woman": maybe one person
            if near_synonyms(names[x], names[y]) or evidence.wordnet.related(names[x], names[y]):
                continue  # "a man in a hat and a woman in a cap": hardly false
            if any(evidence.wordnet.is_body_part(names[e].split()[-1]) for e in (x, y)):
                continue  # "a girl with a dirty face": parts stay with their owner
            heads = [graph.entities[e].head_span for e in (a, b, x, y)]
            if None in heads or any(
                is_plural(graph, heads[i]) != is_plural(graph, heads[i + 1]) for i in (0, 2)
            ):
                continue  # "two men in uniform ... a woman in a sweater": one number each
            if _slot_taken(graph, names, a, x, names[y]) or _slot_taken(
                graph, names, b, y, names[x]
            ):
                continue  # "a woman in a white shirt and blue shorts": not "... and red shirts"
            x_span, y_span = _whole_phrase(graph, x, r1), _whole_phrase(graph, y, r2)
            if x_span is None or y_span is None:
                continue
            if x_span[1] > y_span[0] and y_span[1] > x_span[0]:
                continue
            x_text, y_text = text[slice(*x_span)], text[slice(*y_span)]
            if x_text.lower() == y_text.lower():
                continue
            moved = set((x_text + " " + y_text).lower().split())
            if (_gender(names[a]) != _gender(names[b]) or _gender(names[a]) is None) and moved & (
                FEMALE_MARKERS | MALE_MARKERS | GENDERED_PRONOUNS
            ):
                continue  # "a man in a suit and a woman in a dress": not "a man in a dress"
            if not all(
                evidence.roles_fit(new, [("object", r.predicate, names[owner])])
                and evidence.frame_fits(new, old, [r.predicate])
                for new, old, r, owner in ((names[y], names[x], r1, a), (names[x], names[y], r2, b))
            ):
                continue
            candidate = _replace(text, "object", [(x_span, y_text), (y_span, x_text)], "swap")
            if candidate is not None:
                yield (2, graph.relations.index(r1), graph.relations.index(r2)), candidate


def swap_allowed(graph: SceneGraph, category: Callable[[str], str | None]) -> bool:
    """Whether a caption's structure allows a swap, whatever the corpus attests (the
    denominator of "swaps where the captions allow them"): two attributes of one class
    (not counts) on two objects named by different nouns; an asymmetric relation (not
    fixed, symmetric or reciprocal) between two entities of one ``category`` (not
    ``None``) and one number, named by different nouns or described; or two objects of one
    category, different nouns, in relations of two owners of different nouns."""
    names = [e.name.lower() for e in graph.entities]
    attrs = [a for a in graph.attributes if a.span is not None]
    for i, a in enumerate(attrs):
        kind = attribute_class(a.value)
        if kind is None or kind == "number":
            continue
        for b in attrs[i + 1 :]:
            if (
                names[a.entity] != names[b.entity]
                and a.value != b.value
                and attribute_class(b.value) == kind
            ):
                return True
    for relation in graph.relations:
        s, o, p = relation.subject, relation.object, relation.predicate
        subject, obj = graph.entities[s], graph.entities[o]
        if (
            s == o
            or p in FIXED_PREDICATES
            or symmetric(p)
            or p.split()[0] in RECIPROCAL_VERBS
            or subject.head_span is None
            or obj.head_span is None
            or category(names[s]) is None
            or category(names[s]) != category(names[o])
            or is_plural(graph, subject.head_span) != is_plural(graph, obj.head_span)
        ):
            continue
        if names[s] != names[o] or graph.attributes_of(s) or graph.attributes_of(o):
            return True
    owned = [r for r in graph.relations if r.predicate not in _OWNER_FIXED]
    for i, r1 in enumerate(owned):
        for r2 in owned[i + 1 :]:
            a, b, x, y = r1.subject, r2.subject, r1.object, r2.object
            if (
                len({a, b, x, y}) == 4
                and names[a] != names[b]
                and names[x] != names[y]
                and category(names[x]) is not None
                and category(names[x]) == category(names[y])
            ):
                return True
    return False


def swap_candidates(
    graph: SceneGraph,
    scenes: SceneCounts,
    category: Callable[[str], str | None] | None = None,
    similar: Callable[[str, str], bool] | None = None,
    *,
    swaps: bool = True,
    roles: bool = False,
    evidence: SceneEvidence | None = None,
    shares: Shares | None = None,
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
    entity takes part in no other relation (nothing that describes it stays behind).

    ``evidence`` and ``shares``: graded evidence in place of exact attestation (as the
    operators use it: :func:`swap_attested`, :meth:`ValueShares.shares
    <tags.negatives.operators.values.ValueShares.shares>`; no
    attribute swap between WordNet kin such as "dog" and "puppy")."""
    related = (lambda x, y: kin(evidence, x, y)) if evidence is not None else None
    found = (
        list(attribute_swaps(graph, scenes, category, similar, shares, related)) if swaps else []
    )
    found += relation_swaps(graph, scenes, category, objects=swaps, roles=roles, evidence=evidence)
    return [candidate for _, candidate in found]


@register_operator("swap_attribute", rank=40)
class SwapAttribute(EditOperator):
    """Exchange the attributes of two objects (on with ``swaps``)."""

    edit_types = ("attribute",)
    kind = "candidate"
    switch = "swaps"

    def __init__(self, evidence: SceneEvidence):
        super().__init__(evidence)
        self._values = ValueShares(evidence)  # graded, category-smoothed value shares

    def prepare(self) -> None:
        self._values.prepare()

    def propose(self, context: CaptionContext) -> list[Proposal]:
        evidence = self.evidence
        found = attribute_swaps(
            context.graph,
            evidence.scenes,
            evidence.category,
            evidence.similar_attributes,
            self._values.shares,
            lambda a, b: kin(evidence, a, b),
        )
        return [Proposal(candidate, key) for key, candidate in found]


@register_operator("swap_object", rank=50)
class SwapObject(EditOperator):
    """Exchange the head nouns of a relation's subject and object, or the objects of two
    owners (:func:`owner_swaps`) (on with ``swaps``)."""

    edit_types = ("object",)
    kind = "candidate"
    switch = "swaps"

    def propose(self, context: CaptionContext) -> list[Proposal]:
        evidence = self.evidence
        graph = context.graph
        found = list(relation_swaps(graph, evidence.scenes, evidence.category, evidence=evidence))
        found += owner_swaps(graph, evidence)
        return [Proposal(candidate, key) for key, candidate in found]


@register_operator("swap_role", rank=60)
class SwapRole(EditOperator):
    """Exchange the whole noun phrases around an asymmetric relation (on with
    ``role_swaps``)."""

    edit_types = ("relation",)
    kind = "candidate"
    switch = "role_swaps"

    def propose(self, context: CaptionContext) -> list[Proposal]:
        evidence = self.evidence
        found = relation_swaps(
            context.graph,
            evidence.scenes,
            evidence.category,
            objects=False,
            roles=True,
            evidence=evidence,
        )
        return [Proposal(candidate, key) for key, candidate in found]


__all__ = [
    "BACKOFF_CLASSES",
    "MIN_SWAP_SHARE",
    "RECIPROCAL_VERBS",
    "SWAP_WEIGHT",
    "SwapAttribute",
    "SwapObject",
    "SwapRole",
    "attribute_swaps",
    "exchangeable_people",
    "kin",
    "owner_swaps",
    "relation_swaps",
    "role_swap",
    "swap_allowed",
    "swap_attested",
    "swap_candidates",
]
