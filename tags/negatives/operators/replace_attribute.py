"""Replace an attribute: a value by another of its class, an antonym, or another count.

Colours, sizes, ages, materials, patterns and states are replaced inside their class by
values the corpus attests with the object (a state only by its opposite; a colour also by
one the object's category attests, counts smoothed toward the category's colours:
:meth:`SceneEvidence.colour_fits`); WordNet antonyms
are preferred and are the only substitutes of other adjectives (an antonym the object is never
given, when other nouns of its category take it: :meth:`SceneEvidence.antonym_fits`); plural quantities (two, 3)
change to another plural quantity written the same way, near and small ones first
(:func:`~.choices.number_choices`).

May import: ``proposals``, ``context``, ``base``, ``registry`` and the evidence service's
helpers (``choices``, ``syntax``); never another operator module.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from tags.negatives.lexicon import (
    AGED_NOUNS,
    EMPTY_WORDS,
    GENDER_ADJECTIVE_COUNTERPARTS,
    GENDER_ADJECTIVES,
    GENDERED_PRONOUNS,
    LOOKALIKE_MATERIALS,
    PICTURE_NOUNS,
    SCALE_SIDES,
    SHADE_WORDS,
    SIGNAL_COLOURS,
    STATE_OPPOSITES,
    attribute_class,
    colour_family,
    editable_words,
    neighbour_hues,
    same_colour,
    signal_colours_only,
)
from tags.negatives.operators.base import EditOperator
from tags.negatives.operators.choices import COUNT_PRIOR, number_choices, top_choices
from tags.negatives.operators.context import CaptionContext
from tags.negatives.operators.proposals import Choice, PlannedUnit, Proposal
from tags.negatives.operators.registry import register_operator
from tags.negatives.operators.syntax import LISTING_PREDICATES, age_stated
from tags.negatives.scenes import normal, words_of

#: Tags an attribute's words may have.
_ATTRIBUTE_TAGS = frozenset({"JJ", "JJR", "NN", "NNP", "VBN", "CD"})


#: Words that make a value hold in part, so that its opposite holds in part too.
HEDGES = frozenset({"partly", "partially", "half", "semi", "somewhat", "slightly", "mostly"})


def _unit_refusal(
    context: CaptionContext, attribute, written: str, tags: list[str], kind: str | None
) -> str | None:
    """Why an attribute is not editable at all, or ``None`` (a count: see
    :func:`~.choices.number_choices`)."""
    graph, evidence = context.graph, context.evidence
    value, name = attribute.value, context.names[attribute.entity]
    if not tags or not all(t in _ATTRIBUTE_TAGS for t in tags):
        return "not_an_adjective"
    if not editable_words(written):
        return "never_edited_word"
    if kind == "number":
        if len(written.split()) != 1 or evidence.wordnet.is_body_part(name):
            return "body_part_count"  # "jogging with his two thumbs up" -> not "four thumbs"
        return None
    if kind == "age" and name in AGED_NOUNS:
        return "aged_noun"  # "young children" -> "old children"
    if kind == "age" and age_stated(graph.caption):
        return "age_stated"  # "an older man ... in his sixty 's" -> not "a young man"
    if value in GENDER_ADJECTIVES and GENDERED_PRONOUNS.intersection(context.words):
        return "gendered_pronoun"  # "a male player holding his racket"
    if kind == "colour" and evidence.is_person(name):
        return "person_colour"  # "a white female" reads as skin colour
    if HEDGES & set(words_of(graph.caption[: attribute.span[0]])[-1:]):
        return "hedged"  # "a partly cloudy sky" is partly sunny too
    if kind == "colour" and any(
        attribute_class(a.value) == "pattern" for a in graph.attributes_of(attribute.entity)
    ):
        return "patterned"  # "a striped blue shirt": its stripes may be white too
    if _said_again(graph, attribute, written):
        return "said_again"  # "a brown and a gray elephant ... the gray elephant"
    if kind == "colour" and _shade_of_a_noun(graph, attribute.span):
        return "compound_shade"  # "army green" -> not "army white"
    if kind == "colour" and evidence.wordnet.lexname(name) == "noun.time":
        return "time_colour"  # "a dreary gray day" is its weather -> not "a green day"
    if kind == "colour" and name in PICTURE_NOUNS:
        return "picture_colour"  # "a black and white image" is a style -> not "pink and white"
    return None


def _said_again(graph, attribute, written: str) -> bool:
    """Whether the caption names a thing by the value twice, once referring back ("a brown
    and a gray elephant ... the brown elephant is walking behind the gray elephant"): the
    value and the noun come up again, and "the" + value + noun is one of the mentions.
    Changing either mention contradicts the other. Things that only share the value stay
    editable ("a black coat ..., and black coat", "a brown bear with its paw on another
    brown bear": two things)."""
    head_span = graph.entities[attribute.entity].head_span
    if head_span is None:
        return False
    caption = graph.caption.lower()
    value = re.escape(written.lower())
    if len(re.findall(rf"\b{value}\b", caption)) < 2:
        return False
    head = re.escape(caption[slice(*head_span)].split()[-1].rstrip("s"))
    if len(re.findall(rf"\b{head}", caption)) < 2:
        return False  # "the young man kissing the young woman": two nouns, two people
    return re.search(rf"\bthe\s+{value}\s+{head}", caption) is not None


def _shade_of_a_noun(graph, span: tuple[int, int]) -> bool:
    """Whether the colour at ``span`` follows a word that makes it a named shade ("army
    green", "lime green", "sky blue": :data:`~.lexicon.SHADE_WORDS`), right before it."""
    before = [t for t in graph.tokens if t[1] <= span[0]]
    if not before or span[0] - before[-1][1] > 1:
        return False
    return graph.caption[before[-1][0] : before[-1][1]].lower() in SHADE_WORDS


@dataclass
class _Target:
    """An attribute being replaced, as the substitute rules read it."""

    value: str
    kind: str | None
    name: str  # the noun it describes
    #: Values the caption already gives the noun or another mention of it ("sunny, dry
    #: day"; "a white coat, red coat" -> not "a red coat, red coat").
    others: set[str]
    #: Values of the thing's own parts or of the whole it is part of ("a black cat with
    #: white patches" -> not "a white cat with white patches").
    part_colours: set[str]
    #: The colour words of the noun phrase, whatever the parse made of them ("a blue
    #: yellow and white train": "white" is the train's even where the parse gave it
    #: elsewhere).
    phrase_colours: set[str]


def _caption_values(context: CaptionContext, attribute) -> tuple[set, set, set]:
    """``(others, part_colours, phrase_colours)`` of :class:`_Target`."""
    graph, value = context.graph, attribute.value
    name = context.names[attribute.entity]
    others = {a.value for a in graph.attributes_of(attribute.entity)}  # "sunny, dry day"
    # ... nor a value another mention of the same noun has ("a white coat, red coat, ..."
    # -> "a red coat, red coat": the list reads as a slip)
    others |= {
        a.value
        for a in graph.attributes
        if a.entity != attribute.entity and context.names[a.entity] == name
    }
    linked = {
        r.object if r.subject == attribute.entity else r.subject
        for r in graph.relations
        if r.predicate in ("with", "have") and attribute.entity in (r.subject, r.object)
    }
    part_colours = {a.value for a in graph.attributes if a.entity in linked}
    # the colour words of the noun phrase, whatever the parse made of them ("a blue yellow
    # and white train": "white" is the train's even where the parse gave it elsewhere)
    entity = graph.entities[attribute.entity]
    phrase = graph.caption[(entity.span or entity.head_span)[0] : entity.head_span[1]]
    phrase_colours = {
        w for w in words_of(phrase) if attribute_class(w) == "colour" and w not in value.split()
    }
    return others, part_colours, phrase_colours


def _attested(
    context: CaptionContext, attribute, kind: str | None, tags: list[str]
) -> tuple[dict, set[str], str | None, dict[str, int]]:
    """``(attested, antonyms, counterpart, backed)``: the values the corpus gives the noun
    (with counts), grown by a person's other gender, antonyms backed off to the noun's kind
    and (a colour) its category's colours; the WordNet antonyms of the value."""
    evidence, value = context.evidence, attribute.value
    name = context.names[attribute.entity]
    refuse = evidence.refuse
    attested = evidence.scenes.index["attributes_of_object"].get(name, Counter())
    antonyms = (
        set(evidence.wordnet.antonyms(value)) if " " not in value and tags == ["JJ"] else set()
    )
    counterpart = GENDER_ADJECTIVE_COUNTERPARTS.get(value)
    if counterpart is not None and evidence.is_person(name):
        # a person's other gender needs no corpus evidence for the noun ("a male volleyball
        # player" -> "female"), only no word of the caption fixing it ("in a bikini")
        # ... nor another person of that gender ("two female members ... two other female
        # members" -> not "two male members": the other mention says they are alike)
        if value[0] in context.marked_genders or context.caption.lower().split().count(value) > 1:
            refuse("attribute:gender_marker")
            attested = {v: n for v, n in attested.items() if v != counterpart}
        else:
            attested = {**attested, counterpart: max(attested.get(counterpart, 0), 1)}
            antonyms.add(counterpart)
    # an antonym the noun is never given, backed off to its kind: a lexical opposite other
    # nouns of its category take ("a full plate" -> "an empty plate", "shallow water" ->
    # "deep water"); not of people, whose opposites read as judgements ("a strong man")
    backed = {
        other: fits
        for other in sorted(antonyms - {counterpart})
        if attested.get(other, 0) < evidence.min_count
        and not evidence.is_person(name)
        and kind != "colour"  # colours back off by their own evidence (colour_fits)
        and (fits := evidence.antonym_fits(value, other, name))
    }
    attested = {**attested, **backed}
    if kind == "colour":  # a closed class: colours the noun's category has may fit it
        unseen = evidence.category_colours(name) - set(attested)
        attested = {**attested, **dict.fromkeys(sorted(unseen), 0)}
    if kind is None and not antonyms:
        refuse("attribute:no_class_no_antonym")  # only antonyms replace other adjectives
    elif not attested:
        refuse("attribute:no_attested_value")
    return attested, antonyms, counterpart, backed


def _value_misfit(
    context: CaptionContext, attribute, target: _Target, other: str, is_antonym: bool
) -> str | None:
    """The first rule a value of the right class and count breaks, or ``None``."""
    evidence, value, kind = context.evidence, target.value, target.kind
    if (
        other in target.others
        or not editable_words(other)
        or set(other.split()) & set(value.split())
        # the colour of the thing's own part, or of the whole it is part of ("a black
        # cat with white patches" -> not "a white cat with white patches")
        or (kind == "colour" and other in target.part_colours)
    ):
        return "value_in_caption"  # "red" -> "bright red" may still be true
    if other in EMPTY_WORDS and holds_something(context, attribute.entity):
        return "holds_something"  # "a crowd on a busy street" -> not "on an empty street"
    if kind == "state" and not is_antonym and other not in STATE_OPPOSITES.get(value, ()):
        return "state_not_opposite"  # "a wet street" may well be busy
    if not is_antonym and evidence.wordnet.related(value, other, "a"):
        return "synonym"
    if SCALE_SIDES.get(value, 0) * SCALE_SIDES.get(other, 0) > 0:
        return "same_side"  # "giant" -> "huge", "old" -> "elderly": the same to a reader
    if any(SCALE_SIDES.get(o, 0) * SCALE_SIDES.get(other, 0) > 0 for o in target.others):
        return "value_in_caption"  # "two large elephants over a small elephant" -> not "a
        # huge elephant": the other mention is on that side of the scale already
    if kind == "material" and evidence.wordnet.related(value, other, "n"):
        return "material_kind"  # "marble" -> "stone", "steel" -> "metal": one is a kind
    if kind == "material" and frozenset((value, other)) in LOOKALIKE_MATERIALS:
        return "material_lookalike"  # "a brick wall" -> "a stone wall" may be the same wall
    if kind == "colour" and neighbour_hues(other, value, target.name):
        return "same_colour"  # "brown" -> "tan", "orange" -> "red" may still be true
    if (
        kind == "colour"
        and signal_colours_only(value, target.name)
        and colour_family(other) not in SIGNAL_COLOURS
    ):
        return "signal_colour"  # "a red stop light" -> "a green", not "a white stop light"
    if kind == "colour" and any(same_colour(other, w, target.name) for w in target.phrase_colours):
        return "value_in_caption"  # "gray and white rocks" -> not "gray and grey rocks"
    return None


def _one_per_colour(weights: Counter, name: str) -> None:
    """Keep the heaviest of each colour family ("grey" and "gray", "blue" and "navy")."""
    kept: list[tuple[str, ...]] = []
    for surface, _ in sorted(weights.items(), key=lambda kv: (-kv[1], kv[0])):
        if any(same_colour(surface[0], k[0], name) for k in kept):
            del weights[surface]
        else:
            kept.append(surface)


def attribute_substitutes(context: CaptionContext, attribute) -> tuple[Choice, ...]:
    """The substitutes of one attribute of the caption (see the module docstring)."""
    graph, evidence = context.graph, context.evidence
    value = attribute.value
    written = normal(graph.caption[slice(*attribute.span)])
    tags = graph.tags_in(attribute.span)
    kind = attribute_class(value)
    name = context.names[attribute.entity]
    why = _unit_refusal(context, attribute, written, tags, kind)
    if why is None and kind == "number":
        return number_choices(evidence, written)
    if why is not None:
        evidence.refuse(f"attribute:{why}", unit=True)
        return ()
    others, part_colours, phrase_colours = _caption_values(context, attribute)
    attested, antonyms, counterpart, backed = _attested(context, attribute, kind, tags)
    target = _Target(value, kind, name, others, part_colours, phrase_colours)
    weights: Counter = Counter()
    operations: dict[tuple[str, ...], str] = {}
    refuse = evidence.refuse
    for other, count in attested.items():
        is_antonym = other in antonyms
        if other == value or (not is_antonym and (kind is None or attribute_class(other) != kind)):
            continue  # another class: not a substitute at all
        if kind == "colour" and count < evidence.min_count:
            # backed off to the category's colours ("a white toilet" -> "a black toilet")
            if not evidence.colour_fits(other, name):
                refuse("attribute:rare_value")
                continue  # "a green dog": one odd parse is no evidence
            count = evidence.colour_count(other, name)
        elif count < evidence.min_count and other != counterpart and other not in backed:
            refuse("attribute:rare_value")
            continue  # "a green dog": one odd parse is no evidence
        why = _value_misfit(context, attribute, target, other, is_antonym)
        if why is not None:
            refuse(f"attribute:{why}")
            continue
        surface = (evidence.scenes.attribute_surface(other),)
        if surface[0] == written:
            continue
        weight = count**evidence.frequency_power * (4.0 if is_antonym else 1.0)
        weights[surface] = max(weight, weights.get(surface, 0.0))
        if is_antonym:
            operations[surface] = "antonym"
    if kind == "colour":  # one negative per colour: "grey" and "gray", "blue" and "navy"
        _one_per_colour(weights, name)
    return top_choices(weights, operations)


#: Predicates by which a thing holds what follows ("a street with cars", "a box full of").
HOLDING_PREDICATES = LISTING_PREDICATES | {"hold", "fill", "fill with"}


def holds_something(context: CaptionContext, index: int) -> bool:
    """Whether the caption fills entity ``index``: several things or a group are in, on or
    at it (:meth:`CaptionContext.shared_by_several`: "a crowd on a street", "people
    walking down a street"; one man on an empty street is no contradiction), or it holds
    something ("a street with cars", "filled with people")."""
    return context.shared_by_several(index) or any(
        r.subject == index != r.object and r.predicate in HOLDING_PREDICATES
        for r in context.graph.relations
    )


@register_operator("replace_attribute", rank=20)
class ReplaceAttribute(EditOperator):
    """Replace an attribute value or an entity's count (operations ``replace``,
    ``antonym``); counts weigh :data:`COUNT_PRIOR` next to other units."""

    edit_types = ("attribute",)

    def propose(self, context: CaptionContext) -> list[Proposal]:
        graph, evidence = context.graph, self.evidence
        out = []
        for index, entity in enumerate(graph.entities):
            span = entity.quantity_span
            if span is None:
                continue
            if context.count_pinned:
                evidence.refuse("attribute:count_pinned", unit=True)
            elif evidence.wordnet.is_body_part(entity.name):
                evidence.refuse("attribute:body_part_count", unit=True)  # "his two thumbs up"
            else:
                choices = number_choices(evidence, graph.caption[slice(*span)])
                out.append(
                    Proposal(PlannedUnit("attribute", (span,), choices, COUNT_PRIOR), (0, index, 1))
                )
        for index, attribute in enumerate(graph.attributes):
            if attribute.span is not None:
                choices = attribute_substitutes(context, attribute)
                prior = COUNT_PRIOR if attribute_class(attribute.value) == "number" else 1.0
                unit = PlannedUnit("attribute", (attribute.span,), choices, prior)
                out.append(Proposal(unit, (1, index)))
        return out


__all__ = ["HEDGES", "HOLDING_PREDICATES", "ReplaceAttribute", "attribute_substitutes"]
