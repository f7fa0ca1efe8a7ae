"""Replace an object: an entity's head noun by another object of its category and number.

Substitutes are other objects of the same grammatical number and substitution category
(animal for animal, person for person) that are not synonyms, hypernyms or hyponyms of the
original, and every combination the substitute enters is attested in the corpus:
``(attribute, object)`` for its attributes, ``(object, predicate)`` where it is a subject,
``(predicate, object)`` where it is an object. Person nouns change only among the nouns that
say nothing but gender or age, under the caption's pronouns and gender markers; the
substitute must fit the caption's other objects and verbs (:meth:`SceneCounts.context_delta`,
:meth:`SceneCounts.verb_delta`) and its scene cue. A part of the original or the whole it
belongs to (WordNet meronyms: "computer" / "keyboard") is not a substitute, nor a kind of a
noun joined to the original ("bicycles and vehicles" -> not "motorcycles").
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable

from tags.negatives.lexicon import (
    AGE_COUNTERPARTS,
    CHILD_GROUP_NOUNS,
    FEMALE_NOUNS,
    FIXED_PREDICATES,
    GENDER_COUNTERPARTS,
    GENDERED_NOUNS,
    GENERIC_NOUNS,
    MALE_NOUNS,
    PEOPLE_WORDS,
    PERSON_AGES,
    PERSON_NOUNS,
    PLURALIA_TANTUM,
    YOUTH_WORDS,
    ages_overlap,
    attribute_class,
    editable_words,
    garment_slot,
    near_synonyms,
    person_kind,
    persons_exclusive,
    same_colour,
)
from tags.negatives.operators.base import Choice, EditOperator, PlannedUnit, Proposal
from tags.negatives.operators.context import CaptionContext
from tags.negatives.operators.evidence import COLOUR_CATEGORY, is_act
from tags.negatives.operators.registry import register_operator
from tags.negatives.operators.syntax import (
    after_determiner,
    contains_word,
    mentioned_again,
    modifies_noun,
    nouns_only,
    possessive,
)
from tags.negatives.scenes import is_bare, normal, verb_lemma, words_of

#: Substitutes kept per unit (the most plausible first).
MAX_CHOICES = 24
#: How strongly a substitute object's co-occurrence with the caption's other objects
#: reweights it (0: off); see :meth:`SceneCounts.context_delta`.
CONTEXT_WEIGHT = 1.0
#: Object substitutes that fit the caption's other objects this much worse (nats) than the
#: original are dropped ("a horse in a volleyball" next to a cowboy).
MIN_CONTEXT = -4.0
#: ... or that go with one of the caption's verbs this much worse (log lift, see
#: :meth:`SceneCounts.verb_delta`): the original is attested with the verb far above chance,
#: the substitute is not ("throwing the ball" -> not "the computer keyboard").
MIN_VERB_FIT = -1.5
#: Object substitutes that the corpus's other captions of the same image use for what the
#: original names this much more often than chance (log lift, see
#: :meth:`SceneCounts.codescription_lift`; only corpora with several captions per image)
#: are dropped: they may still be true ("a street" -> "an alley", "the water" -> "the
#: ocean"). log 2.5: one sibling mention of a rare word is not enough.
MAX_CODESCRIPTION = math.log(2.5)


def top_choices(
    weights: Counter,
    operation: dict[tuple[str, ...], str] | None = None,
    refusal: Callable[[tuple[str, ...]], str | None] | None = None,
) -> tuple[Choice, ...]:
    """The :data:`MAX_CHOICES` heaviest substitutes (ties by surface), as choices; with
    ``refusal``, heaviest first, those it gives no reason against (its checks cost too
    much to run on every candidate)."""
    ranked = sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))
    if refusal is not None:
        ranked = list(
            itertools.islice(((s, w) for s, w in ranked if refusal(s) is None), MAX_CHOICES)
        )
    operation = operation or {}
    return tuple(Choice(s, float(w), operation.get(s, "replace")) for s, w in ranked[:MAX_CHOICES])


def after_other(graph, entity) -> bool:
    """Whether "other" or "another" comes right before the noun's phrase or inside it ("next
    to other vehicles", "another player"): the noun names the kind of something else in the
    caption, which a substitute would contradict ("a motorcycle next to other buses")."""
    if entity.head_span is None:
        return False
    start = (entity.span or entity.head_span)[0]
    before = words_of(graph.caption[:start])[-2:]
    inside = words_of(graph.caption[start : entity.head_span[0]])
    return bool({"other", "another"} & {*before, *inside})


def object_refusal(context: CaptionContext, entity, name: str, written: str) -> str | None:
    """Why an object is not editable at all, or ``None``."""
    graph, scenes, wordnet = context.graph, context.evidence.scenes, context.evidence.wordnet
    if not nouns_only(graph, entity.head_span):
        return "not_a_common_noun"  # no proper names ("Nike shirt"), no pronouns
    if len(graph.tags_in(entity.head_span)) > 3:
        return "long_compound"
    if not editable_words(written):
        return "never_edited_word"  # pronouns, measure, time and frame words
    if name in GENERIC_NOUNS and written not in FREE_PERSON_NOUNS:  # "guy": "person"
        return "generic_noun"
    if not name.replace(" ", "").isalpha():
        return "not_a_word"
    if scenes.object_count(name) < 1:
        return "unseen_object"
    if wordnet.is_activity(written.split()[-1]):
        return "activity"  # "dancing and singing"
    if scenes.verb_like(written):
        return "verb_like"  # "a helmet walks": a verb tagged as a noun
    if mentioned_again(graph.caption, entity.head_span, written):
        return "mentioned_again"  # "a woman and man ..., the man"
    if after_other(graph, entity):
        return "after_other"  # "a motorcycle next to other vehicles": the subject's kind
    if modifies_noun(graph, entity.head_span):
        return "compound_modifier"  # "the boy band"
    if only_placed(context, graph.entities.index(entity), name):
        return "only_placed"  # "the car is on the road" -> "the bus": may be there too
    if only_listed(context, graph.entities.index(entity), name):
        return "only_listed"  # "a living room with a couch and chair" -> "bed": may be there
    return None


#: Predicates that list what a place holds ("a room with a couch", "a bathroom has a toilet").
LISTING_PREDICATES = frozenset({"with", "have", "contain", "include"})


def only_listed(context: CaptionContext, index: int, name: str) -> bool:
    """Whether the caption only lists a thing among what a place holds: an inanimate object
    with no attribute that is only ever the object of "with", "have", "contain" or "include"
    from a place or a room (WordNet; "a living room with a couch and chair", "a bathroom has
    a toilet"). Another thing listed there ("a bed") may well be in the room too: blind
    readers read such replacements as not false. What a person, an animal or a thing has
    ("a man with a dog" -> "a cat", "a desk with a computer") stays editable."""
    graph, wordnet = context.graph, context.evidence.wordnet
    if graph.attributes_of(index) or wordnet.is_animate(name.split()[-1]):
        return False
    relations = [r for r in graph.relations if index in (r.subject, r.object)]
    return bool(relations) and all(
        r.object == index != r.subject
        and r.predicate in LISTING_PREDICATES
        and wordnet.is_place(context.names[r.subject])
        for r in relations
    )


def only_placed(context: CaptionContext, index: int, name: str) -> bool:
    """Whether the caption only places a thing somewhere: an inanimate object with no
    attribute, the subject of every relation it is in, and in at least one ("the car is on
    the road", "beds in the room", "cars parked on the street"). A
    place holds many things, so another thing named there ("the bus is on the road") may
    well be in the photo too: blind readers read such replacements as not false. People and
    animals are what a caption is about ("a cat on a bed" -> "a dog"), and a described or
    acted-on thing is tied to its description ("a red car", "a man washing a car"), a whole
    to its parts ("the wheels of the train"), a held thing to the hand ("a shovel in hand")."""
    graph = context.graph
    if graph.attributes_of(index) or context.evidence.wordnet.is_animate(name.split()[-1]):
        return False
    relations = [r for r in graph.relations if index in (r.subject, r.object)]
    wordnet = context.evidence.wordnet
    return bool(relations) and all(
        r.subject == index != r.object
        and r.predicate not in FIXED_PREDICATES  # "the wheels of the train": a whole
        and not wordnet.is_body_part(context.names[r.object].split()[-1])  # "in hand"
        for r in relations
    )


#: Written person nouns whose counterparts need no verb evidence (see :func:`free_counterparts`).
FREE_PERSON_NOUNS = frozenset(GENDER_COUNTERPARTS) | frozenset(AGE_COUNTERPARTS)
#: Nouns of children: a child the caption names beside them may be one of a group it counts.
_CHILD_NOUNS = CHILD_GROUP_NOUNS | {n for n, age in PERSON_AGES.items() if age <= 1}
#: Parents and adults: a child named beside them is set against them ("a mother and child",
#: "two adults and two children": not "two adults and two men").
_PARENT_NOUNS = frozenset(
    {"mother", "mothers", "father", "fathers", "mom", "dad", "parent", "parents", "mommy"}
    | {"daddy", "adult", "adults", "grownup", "grownups"}
)
#: A verb whose corpus subjects would include the other kind of person this many times by
#: chance, and never do, keeps the caption's kind (P(none) = exp(-3) < 0.05).
GENDERED_VERB_EXPECTED = 3.0


def free_counterparts(
    context: CaptionContext,
    index: int,
    written: str,
    strict: list[Counter],
    verbs: list[str | None],
) -> dict[str, str]:
    """The person nouns (lemmas) that replace ``written`` without evidence for the caption's
    verbs, each with why: ``"gender"`` (the other gender, same age: "a man" -> "a woman",
    :data:`GENDER_COUNTERPARTS`; no scene check either) or ``"age"`` (an adult for a noun that
    names only a child: "a child" -> "a man" or "a woman", :data:`AGE_COUNTERPARTS`; the scene
    and verb-fit checks still apply). Each must be attested with the caption's attributes
    (``strict`` pools) and not be kept out by a verb said only of ``name``'s kind
    (:func:`gendered_verb`). No adult for a child named beside other children or a parent
    ("two children, a boy and a girl", "a mother and child"), described by age or size ("a
    young child" -> not "a young man"), referred to as "its", or possessing ("a child 's
    puzzle": a puzzle for children)."""
    found: dict[str, str] = {}
    name = context.names[index]
    if written in GENDER_COUNTERPARTS:
        found[GENDER_COUNTERPARTS[written]] = "gender"
    elif written in AGE_COUNTERPARTS and not _child_is_fixed(context, index, written):
        found.update(dict.fromkeys(AGE_COUNTERPARTS[written], "age"))
    scenes, refuse = context.evidence.scenes, context.evidence.refuse
    out: dict[str, str] = {}
    for other, why in found.items():
        if not all(other in pool for pool in strict):
            continue  # "a bald man" -> not "a bald woman"
        if gendered_verb(scenes, name, other, verbs):
            refuse("object:gendered_verb")
            continue
        out[other] = why
    return out


def _child_is_fixed(context: CaptionContext, index: int, written: str) -> bool:
    """Whether the caption ties a child to its age (see :func:`free_counterparts`)."""
    graph = context.graph
    if (context.words & (_CHILD_NOUNS | _PARENT_NOUNS)) - {written} or "its" in context.words:
        return True
    if any(attribute_class(a.value) in ("age", "size") for a in graph.attributes_of(index)):
        return True
    head = graph.entities[index].head_span
    return head is not None and possessive(graph, head, bare_apostrophe=True)


def gendered_verb(scenes, name: str, counterpart: str, verbs: list[str | None]) -> bool:
    """Whether one of the caption's ``verbs`` (lemmas; ``None`` entries skipped) is said of
    ``name``'s kind so often, and never of ``counterpart``'s, that it is that kind's ("a woman
    nursing a baby": never a man): the counterpart's expected count under independence of verb
    and noun, scaled by the two nouns' corpus counts, is at least
    :data:`GENDERED_VERB_EXPECTED` (the caption's own mention left out)."""
    ratio = scenes.object_count(counterpart) / max(scenes.object_count(name), 1)
    for verb in verbs:
        if verb is None or scenes.verb_object.get((verb, counterpart), 0):
            continue
        if max(scenes.verb_object.get((verb, name), 0) - 1, 0) * ratio >= GENDERED_VERB_EXPECTED:
            return True
    return False


#: A singular noun the corpus writes without an article at least this share of the time
#: (and ``MASS_MIN_MENTIONS`` times or more) is a mass noun or a sport: no "a" before it.
MASS_SHARE = 0.8
MASS_MIN_MENTIONS = 5


def _mostly_bare(scenes, name: str) -> bool:
    """Whether the corpus writes singular ``name`` bare (no article) most of the time
    ("tennis", "soccer", "water"; not "baseball", often "a baseball")."""
    singular = scenes.index["objects_by_number"][False].get(name, 0)
    return singular >= MASS_MIN_MENTIONS and scenes.bare.get(name, 0) >= MASS_SHARE * singular


def shared_by_several(context: CaptionContext, index: int) -> bool:
    """Whether several things are in one relation with entity ``index``: two subjects or
    more, or one joined to another by "and", "or" or a comma ("a man and a dog sitting on a
    bench"), or a plural or group subject ("three people are sitting on a bench", "a family
    on a couch")."""
    graph, wordnet = context.graph, context.evidence.wordnet
    subjects = {r.subject for r in graph.relations if r.object == index != r.subject}
    subjects |= {j for s in subjects for j in _joined(graph, s) if j != index}  # "a man and"
    return len(subjects) > 1 or any(
        context.is_plural(s) or wordnet.lexname(context.names[s]) == "noun.group" for s in subjects
    )


def coordinated_nouns(context: CaptionContext, index: int) -> set[str]:
    """The specific nouns (WordNet depth > 7: not "object", "game") of the caption's other
    entities that fill the same slot as entity ``index``: joined to it by "and", "or" or a
    comma ("bicycles and vehicles are parked"), or in the same role of a relation with the
    same predicate and other argument. A substitute of their kind may be among them."""
    graph, wordnet = context.graph, context.evidence.wordnet
    slots = {
        (r.predicate, r.object if r.subject == index else r.subject, r.subject == index)
        for r in graph.relations
        if index in (r.subject, r.object) and r.subject != r.object
    }
    same_slot = _joined(graph, index)
    for r in graph.relations:
        for entity, other, as_subject in (
            (r.subject, r.object, True),
            (r.object, r.subject, False),
        ):
            if entity != index and (r.predicate, other, as_subject) in slots:
                same_slot.add(entity)
    found: set[str] = set()
    for entity in same_slot:
        name = context.names[entity]
        depth = wordnet.depth(name)
        if depth is not None and depth > 7:
            found.add(name)
    return found


def _joined(graph, index: int) -> set[int]:
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


def object_substitutes(context: CaptionContext, index: int) -> tuple[Choice, ...]:
    """The substitutes of entity ``index``'s head (before fluency reweighting), computed
    once per caption: the add operator coordinates the same objects."""
    key = ("object", index)
    if key not in context.memo:
        context.memo[key] = _substitutes(context, index)
    return context.memo[key]


def _substitutes(context: CaptionContext, index: int) -> tuple[Choice, ...]:
    graph, evidence = context.graph, context.evidence
    scenes, refuse = evidence.scenes, evidence.refuse
    entity = graph.entities[index]
    name = entity.name.lower()
    written = normal(graph.caption[slice(*entity.head_span)])
    why = object_refusal(context, entity, name, written)
    if why is not None:
        refuse(f"object:{why}", unit=True)
        return ()
    plural = context.is_plural(index)
    bare = not plural and is_bare(graph, entity)
    first_word = words_of(graph.caption[slice(*(entity.span or entity.head_span))])[:1]
    counted_one = not plural and first_word in (["a"], ["an"])  # "a water sport"
    owner = possessive(graph, entity.head_span)
    index_ = scenes.index
    pools: list[Counter] = []
    # the verb lemma of each subject pool's predicate (``None``: no backoff), see below
    backoff: list[str | None] = []
    frames: list[str] = []  # predicates the object follows ("on" in "on a field")
    # (role, predicate, other argument) of each relation: the substitute must enter it
    # with the other argument or something of its category ("a child in a box" -> not
    # "in a bottle": no person is ever "in" a bottle)
    roles: list[tuple[str, str, str]] = []
    for attribute in graph.attributes_of(index):
        pools.append(index_["objects_with_attribute"].get(attribute.value, Counter()))
        # a bare act backs off to its verb as a subject's predicate does ("dogs playing" ->
        # "cats playing": cats play)
        backoff.append(verb_lemma(attribute.value) if is_act(attribute.value) else None)
    for relation in graph.relations:
        if relation.subject == index and relation.object != index:
            pools.append(index_["subjects_of"].get(relation.predicate, Counter()))
            backoff.append(verb_lemma(relation.predicate.split()[0]))
            roles.append(("subject", relation.predicate, context.names[relation.object]))
        elif relation.object == index and relation.subject != index:
            pools.append(index_["objects_of"].get(relation.predicate, Counter()))
            backoff.append(None)
            frames.append(relation.predicate)
            roles.append(("object", relation.predicate, context.names[relation.subject]))
    # "one orange one blue", "dressed in blue": a colour named without a determiner is
    # a colour, whatever WordNet's first sense ("orange" the fruit, "white" a person)
    colour = attribute_class(written) == "colour" and not after_determiner(graph, entity)
    category = COLOUR_CATEGORY if colour else evidence.category(name)
    if category is None and not pools:
        refuse("object:no_category", unit=True)
        return ()
    # people of any kind, also those WordNet files elsewhere ("male", "female": animals)
    person = category == evidence.category("man") or name in PEOPLE_WORDS
    if person and written not in PERSON_NOUNS and written not in FREE_PERSON_NOUNS:
        refuse("object:role_noun", unit=True)
        return ()  # a role may be any gender or age
    # a gendered pronoun may name the person: only a person noun of its gender changes,
    # to another of that gender (a closed class): "a man holding his hat" -> "a boy"
    pronouns, pronoun_gender = context.pronouns, context.pronoun_gender
    if (
        person
        and pronouns
        and (
            pronoun_gender == GENDERED_NOUNS
            or (written not in pronoun_gender and written not in AGE_COUNTERPARTS)
        )
    ):
        refuse("object:gendered_pronoun", unit=True)
        return ()  # "her mouth" fixes the gender; "his ... her": who is who is unknown
    tantum = written.split()[-1] in PLURALIA_TANTUM  # "swimming trunks"
    slot = garment_slot(written) or garment_slot(name)
    present = set(context.names)  # "a boy and a girl": not "a girl"
    scene_objects = sorted(present - {name})
    verbs = context.verbs
    words = context.tokens
    excluded = context.marker_excluded  # "woman in a bikini" -> not "man"
    if pronouns:
        excluded |= (MALE_NOUNS | FEMALE_NOUNS | frozenset(PERSON_AGES)) - pronoun_gender
    if person and YOUTH_WORDS & {a.value.lower() for a in graph.attributes_of(index)}:
        for gender in (MALE_NOUNS, FEMALE_NOUNS):  # "a young girl" -> not "a young lady"
            if written in gender:
                excluded |= gender
    if person and words & CHILD_GROUP_NOUNS:  # a child named in a group stays one, and
        # no one becomes a child who may be one of the group ("two children, a boy and a
        # girl" -> not "a boy and a man"; "a woman and children" -> not "a toddler and")
        child = PERSON_AGES.get(written, 3) <= 1
        excluded |= {noun for noun, age in PERSON_AGES.items() if (age <= 1) != child}
    # only women in the caption: no beard ("the girl with the beard"); only men: no dress
    one_gender = context.one_gender_markers
    kinds = {person_kind(w) for w in words & (PERSON_NOUNS | GENDERED_NOUNS) if w != written}
    coordinated = set() if person else coordinated_nouns(context, index)
    shared = not plural and shared_by_several(context, index)
    lemmas: dict[tuple[str, ...], str] = {}  # each substitute's surface -> its lemma
    weights: Counter = Counter()
    usable = evidence.usable_objects(category, plural)
    attests = evidence.attests
    strict = [pool for pool, verb in zip(pools, backoff) if verb is None]
    # the person of the other gender, or an adult for a child, needs no evidence for the
    # caption's verbs, only the attributes': "a man sharpening a knife" -> "a woman"
    free = free_counterparts(context, index, written, strict, backoff) if person else {}
    if strict:  # only objects every pool attests: walk the smallest pool
        smallest = min(strict, key=len)
        candidates = [(o, usable[o]) for o in smallest if o in usable]
    else:  # backed-off pools only: the objects they admit
        admitted = evidence.admitted(pools, backoff) if pools else set(usable)
        candidates = [(o, c) for o, c in usable.items() if o in admitted]
    for counterpart in sorted(set(free) - set(dict(candidates))):
        # ("guy" is parsed as "person": the counterpart's own category)
        found = evidence.usable_objects(evidence.category(counterpart), plural).get(counterpart)
        if found:
            candidates.append((counterpart, found))
    if not candidates:
        refuse("object:no_attested_substitute")
    for other, count in candidates:
        if other in present:
            continue
        if (
            strict
            and other not in free
            and not all(attests(pool, verb, other) for pool, verb in zip(pools, backoff))
        ):
            refuse("object:unattested_combination")  # (the backed-off walk checked them all)
            continue
        surface = evidence.substitute_surface(other, plural)
        if surface is None:
            refuse("object:no_clean_surface")
            continue
        if person and (
            surface not in PERSON_NOUNS
            or surface in excluded
            or (other not in free and not persons_exclusive(written, surface))  # "boy" ->
            # not "toddler"; "guy" (no age class) -> only "woman"
            or ages_overlap(written, surface)  # "a man" -> not "a boy": may be a young man
            # a kind (gender, age) another person of the caption already has: "a man
            # and a woman" -> not "a lady and a woman" (two names of one kind)
            or person_kind(surface) in kinds
            # nobody becomes a baby: what people do in a caption babies rarely do ("a
            # baby preparing food"; 6 of 8 such edits failed blind reads 201-214)
            or (PERSON_AGES.get(surface) == 0 and PERSON_AGES.get(written) != 0)
        ):
            refuse("object:person_rule")
            continue
        if surface in one_gender:
            refuse("object:gender_marker")
            continue
        if owner and surface.endswith("s"):
            refuse("object:possessive")
            continue  # "a men 's game" -> not "a boys 's game"
        if plural and tantum != (surface.split()[-1] in PLURALIA_TANTUM):
            refuse("object:plurale_tantum")
            continue  # "pants" -> "jackets" would dress one person in several
        if shared and evidence.wordnet.for_one(other):
            refuse("object:for_one")
            continue  # "a man and a dog sit on a bench" -> not "on a chair": a seat for one
        if set(other.split()) & set(name.split()) or contains_word(other, name):
            refuse("object:shares_a_word")
            continue  # "suit" -> "bathing suit", "shirt" -> "sweatshirt" may still be true
        if bare and scenes.bare.get(other, 0) < evidence.min_count:
            refuse("object:not_used_bare")
            continue  # "buying fish" -> "buying bat" needs an article
        if counted_one and _mostly_bare(scenes, other):
            refuse("object:mass_noun")
            continue  # "playing a water sport" -> not "a tennis": tennis takes no "a"
        if frames and not evidence.frame_fits(other, name, frames):
            refuse("object:preposition_frame")
            continue  # "playing on a field" -> not "on a park"
        if (
            (not person or free.get(other) == "age")  # "a child in a stroller" -> not "a man"
            and not colour
            and not evidence.roles_fit(other, roles, name)
        ):
            refuse("object:unattested_role")
            continue  # "raising the anchors on a boat" -> not "on a cart"
        if surface == written or (other not in free and evidence.wordnet.related(name, other)):
            refuse("object:synonym_or_hypernym")
            continue
        if colour and (same_colour(surface, written) or other in words):
            refuse("object:same_colour")
            continue  # "in blue" -> not "in navy"; "one orange one blue" -> not "blue"
        if near_synonyms(written, surface):
            refuse("object:near_synonym")
            continue  # "hat" -> "cap": the same thing to a caption writer
        if (
            scenes.codescription_lift(name, other) >= MAX_CODESCRIPTION
            and attribute_class(name) != "colour"  # "in blue": others wear red
        ):
            refuse("object:codescribed")
            continue  # "street" -> "alley": other writers call the same place so
        if slot is not None and garment_slot(surface) != slot:
            refuse("object:garment_slot")
            continue  # "in a sweater" -> not "in a cap": she may wear both
        support = sum(math.log1p(pool[other]) for pool in pools) if pools else 1.0
        weight = count**evidence.frequency_power * (1.0 + support)
        if (
            CONTEXT_WEIGHT and (scene_objects or verbs) and free.get(other) != "gender"
        ):  # "throwing a parachute down a lane"
            # the scene's objects and its actions each have a veto: "the mound" fits a
            # pitcher's scene, not "throwing the mound"
            scene = scenes.context_delta(name, other, scene_objects)
            acts = scenes.verb_delta(name, other, verbs)
            if scene < MIN_CONTEXT:
                refuse("object:context")
                continue
            if acts < MIN_VERB_FIT:
                refuse("object:verb_fit")
                continue
            if not person and not scenes.shares_scene(name, other, scene_objects, verbs):
                refuse("object:scene_cue")
                continue  # "reading an article on the computer at a desk" -> not "bow"
            weight *= math.exp(CONTEXT_WEIGHT * min(scene + acts, 2.0))
        weights[(surface,)] = max(weight, weights.get((surface,), 0.0))
        lemmas[(surface,)] = other
    wordnet = evidence.wordnet

    def refusal(surface: tuple[str, ...]) -> str | None:
        other = lemmas[surface]
        if person:
            return None
        if wordnet.part_related(name, other):
            why = "object:part_or_whole"  # "typing on the computer" -> not "the keyboard"
        elif any(wordnet.is_kind_of(other, n) for n in coordinated):
            why = "object:kind_of_another"  # "bicycles and vehicles" -> not "motorcycles"
        else:
            return None
        refuse(why)
        return why

    return top_choices(weights, refusal=refusal)


@register_operator("replace_object", rank=10)
class ReplaceObject(EditOperator):
    """Replace an entity's head noun (operation ``replace``); one unit per entity."""

    edit_types = ("object",)

    def propose(self, context: CaptionContext) -> list[Proposal]:
        out = []
        for index, entity in enumerate(context.graph.entities):
            if entity.head_span is not None:
                unit = PlannedUnit(
                    "object", (entity.head_span,), object_substitutes(context, index)
                )
                out.append(Proposal(unit, (0, index, 0)))
        return out


__all__ = ["CONTEXT_WEIGHT", "ReplaceObject", "object_substitutes", "top_choices"]
