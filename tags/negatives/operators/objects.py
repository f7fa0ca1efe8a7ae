"""The evidence service's object substitutes: which objects may replace an entity's head noun.

Shared by the ``replace_object`` operator (which writes them) and ``add_object`` (which
coordinates them: "a dog and a cat"), computed once per caption
(:func:`object_substitutes`, memoised in the :class:`~.context.CaptionContext`). Not an
operator.

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

May import: ``proposals``, ``evidence``, ``choices``, ``context``, ``syntax``, ``lexicon``,
``synonymy``, ``scenes``, ``word_vectors`` (never an operator module).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from tags.negatives.lexicon import (
    AGE_COUNTERPARTS,
    CHILD_GROUP_NOUNS,
    FEMALE_NOUNS,
    FIXED_PREDICATES,
    GENDER_COUNTERPARTS,
    GENDERED_NOUNS,
    GENDERED_PRONOUNS,
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
    neighbour_hues,
    person_kind,
    persons_exclusive,
)
from tags.negatives.operators.choices import top_choices
from tags.negatives.operators.context import CaptionContext
from tags.negatives.operators.evidence import (
    COLOUR_CATEGORY,
    MIN_VERB_FIT,
    SceneEvidence,
    is_act,
)
from tags.negatives.operators.proposals import Choice
from tags.negatives.operators.syntax import (
    LISTING_PREDICATES,
    after_determiner,
    contains_word,
    joined,
    mentioned_again,
    modifies_noun,
    nouns_only,
    possessive,
)
from tags.negatives.scenes import is_bare, normal, verb_lemma, words_of
from tags.negatives.synonymy import near_synonymous
from tags.negatives.word_vectors import ContextFit, word_vectors

#: How strongly a substitute object's co-occurrence with the caption's other objects
#: reweights it (0: off); see :meth:`SceneCounts.context_delta`.
CONTEXT_WEIGHT = 1.0
#: Object substitutes that fit the caption's other objects this much worse (nats) than the
#: original are dropped ("a horse in a volleyball" next to a cowboy).
MIN_CONTEXT = -4.0
#: Object substitutes that the corpus's other captions of the same image use for what the
#: original names this much more often than chance (log lift, see
#: :meth:`SceneCounts.codescription_lift`; only corpora with several captions per image)
#: are dropped: they may still be true ("a street" -> "an alley", "the water" -> "the
#: ocean"). log 2.5: one sibling mention of a rare word is not enough.
MAX_CODESCRIPTION = math.log(2.5)
#: Whether object substitutes must fit the caption's other words about as well as the
#: original by word vectors (:func:`~tags.negatives.word_vectors.context_misfit`).
WORD_CONTEXT = True
#: Whether a thing whose own category gives no substitute but itself takes the other
#: categories under the same WordNet parent node, where the corpus puts them in its slots
#: ("a man leaning against the wall": the wall is the one partition the counts lean people
#: against -> "against the fence"; :func:`_parent_candidates`). Off: two blind readers
#: judged 34 of 50 of its negatives on unseen Visual Genome regions good (68 %: "a picture on
#: the window", "a couch by the wall" for "by the window", "the train has a big door").
CATEGORY_BACKOFF = False
#: ... and a substitute so found must be this near the original by the shipped word vectors
#: (a thing of its kind: "wall" / "fence" 0.55, "plate" / "tray" 0.45; not "skis" /
#: "pockets" 0.30) but not this near (one thing under two names: "tricks" / "stunts" 0.75).
PARENT_MIN_SIMILARITY = 0.35
PARENT_MAX_SIMILARITY = 0.6


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
    if anchored_compound(graph.caption, entity.head_span, written):
        return "anchored_compound"  # "on a tennis court playing a tennis match"
    if after_other(graph, entity):
        return "after_other"  # "a motorcycle next to other vehicles": the subject's kind
    if modifies_noun(graph, entity.head_span):
        return "compound_modifier"  # "the boy band"
    if only_placed(context, graph.entities.index(entity), name):
        return "only_placed"  # "the car is on the road" -> "the bus": may be there too
    if only_listed(context, graph.entities.index(entity), name):
        return "only_listed"  # "a living room with a couch and chair" -> "bed": may be there
    if unplaced(context, graph.entities.index(entity), name):
        return "unplaced"  # "a bench some bushes trees and a dirt path" -> not "roses"
    return None


#: Kinds of premises (WordNet hypernyms) that hold things as a room does: "an apartment with
#: a dining table and a couple of couches" lists what it holds as "a living room with ..." does.
PREMISES = frozenset({"housing", "building", "establishment"})


def holds_things(wordnet, noun: str) -> bool:
    """Whether ``noun`` (first sense) is a place or a room, or premises (:data:`PREMISES`:
    an apartment, a house, a restaurant) whose listed things another may join."""
    return wordnet.is_place(noun) or bool(PREMISES & wordnet.hypernym_names(noun.split()[-1]))


def only_listed(context: CaptionContext, index: int, name: str) -> bool:
    """Whether the caption only lists a thing among what a place holds: an inanimate object
    with no attribute that is only ever the object of "with", "have", "contain" or "include"
    from a place, a room or premises (WordNet, :func:`holds_things`; "a living room with a
    couch and chair", "a bathroom has a toilet", "an apartment with a dining table and
    couches"), or in no relation at all in a caption that lists what a place holds (an item
    the parser left unattached: "a bedroom with large windows a ceiling fan and an unmade
    bed"). Another thing listed there ("a bed") may well be in the room too: blind
    readers read such replacements as not false. What a person, an animal or a thing has
    ("a man with a dog" -> "a cat", "a desk with a computer") stays editable."""
    graph, wordnet = context.graph, context.evidence.wordnet
    if graph.attributes_of(index) or wordnet.is_animate(name.split()[-1]):
        return False

    def lists(r) -> bool:  # a place or premises listing what it holds
        return r.predicate in LISTING_PREDICATES and holds_things(wordnet, context.names[r.subject])

    relations = [r for r in graph.relations if index in (r.subject, r.object)]
    if not relations:  # a list item the parser left unattached ("a room with a couch,
        # table set with ..."): the caption lists what a place holds
        return any(lists(r) and r.subject != index for r in graph.relations)
    return all(r.object == index != r.subject and lists(r) for r in relations)


def unplaced(context: CaptionContext, index: int, name: str) -> bool:
    """Whether a thing after the caption's first noun is an item of a list: in no relation
    at all, in a caption without a verb ("a bench some bushes trees and a dirt path", "a
    stack of old trunks and luggage against a wall", "view of kitchen sink, stainless
    refrigerator and breakfast room"). Nothing in the caption says where it is or what is
    done with it, so no slot checks its substitute, and another thing may be there too: 6
    of 6 such edits failed blind reads of fresh COCO and Visual Genome captions. People and
    animals are what a caption is about and stay editable; so do the caption's first noun,
    a colour named as a noun ("one orange one blue") and a thing a verb may act on (the
    parser leaves some objects unattached: "a man getting ready to serve a tennis ball";
    5 of 8 such edits read good)."""
    if index == 0 or context.verbs or attribute_class(name) == "colour":
        return False
    if context.evidence.wordnet.is_animate(name.split()[-1]):
        return False
    return not any(index in (r.subject, r.object) for r in context.graph.relations)


def anchored_compound(caption: str, span: tuple[int, int], written: str) -> bool:
    """Whether a compound's modifier comes up again outside it ("four men on a tennis court
    playing a doubles tennis match", "a tennis player hitting a tennis ball"): the rest of
    the caption ties the thing to it, so a substitute without it ("a baseball field")
    contradicts the caption, and one with it shares a word with the original."""
    words = written.lower().split()
    if len(words) < 2:
        return False
    rest = {*words_of(caption[: span[0]]), *words_of(caption[span[1] :])}
    return words[0] in {w.lower() for w in rest}


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


#: A one-word noun the corpus writes after "a" / "an" at most this share as often as after
#: "the" (with ``ARTICLE_MIN_USES`` uses after either or more) is a mass noun: no "a" before
#: it ("a luggage", "a water", "a sand": 0.00-0.14 in the background counts; "a bag", "a
#: bench", "a dog", "a paper" 1.4-3.4, "a pizza" 0.74, "a hair" 0.8).
MASS_ARTICLE_RATIO = 0.25
ARTICLE_MIN_USES = 10


def _uncountable(scenes, name: str) -> bool:
    """Whether the corpus hardly ever writes one-word ``name`` after "a" / "an" next to "the"
    (:data:`MASS_ARTICLE_RATIO`): "a man has a red water bottle" -> not "a red luggage". Names
    of several words are not judged (their first word is often a mass noun: "a water
    bottle")."""
    if " " in name:
        return False
    counted = scenes.bigrams.get(f"a {name}", 0) + scenes.bigrams.get(f"an {name}", 0)
    definite = scenes.bigrams.get(f"the {name}", 0)
    return counted + definite >= ARTICLE_MIN_USES and counted <= MASS_ARTICLE_RATIO * definite


def _mostly_bare(scenes, name: str) -> bool:
    """Whether the corpus writes singular ``name`` bare (no article) most of the time
    ("tennis", "soccer", "water"; not "baseball", often "a baseball")."""
    singular = scenes.index["objects_by_number"][False].get(name, 0)
    return singular >= MASS_MIN_MENTIONS and scenes.bare.get(name, 0) >= MASS_SHARE * singular


#: What "play a/an X" takes: a musical instrument ("playing a guitar") or a game that is not
#: a sport ("playing a video game"); a sport is played bare ("playing baseball"), a toy is
#: played with ("playing a frisbee" reads wrong). Hypernym names of the first sense.
PLAYED_KINDS = {"musical instrument": "instrument", "game": "game"}
PLAYED_BARE = frozenset({"athletic game", "athletics", "sport"})


def played_kind(wordnet, noun: str) -> str | None:
    """``instrument`` / ``game`` for a noun "play a/an" takes (:data:`PLAYED_KINDS`), else
    ``None`` (a sport, a toy, a machine...)."""
    names = wordnet.hypernym_names(noun)
    if names & PLAYED_BARE:
        return None
    return next((kind for name, kind in PLAYED_KINDS.items() if name in names), None)


def _played(slots: _Slots) -> bool:
    """Whether the object is what a verb "play" takes directly ("playing a guitar"; not
    "playing with a frisbee")."""
    return any(
        role == "object" and len(predicate.split()) == 1 and verb_lemma(predicate) == "play"
        for role, predicate, _ in slots.roles
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
    same_slot = joined(graph, index)
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


def object_substitutes(context: CaptionContext, index: int) -> tuple[Choice, ...]:
    """The substitutes of entity ``index``'s head (before fluency reweighting), computed
    once per caption: the add operator coordinates the same objects."""
    key = ("object", index)
    if key not in context.memo:
        context.memo[key] = _substitutes(context, index)
    return context.memo[key]


@dataclass
class _Slots:
    """The slots of the caption an object substitute must fill: a pool of attested objects
    per attribute and relation, the verb lemma each subject pool backs off to (``None``: no
    backoff; ``strict``: the pools without one), the predicates the object follows ("on" in
    "on a field"), and ``(role, predicate, other argument)`` of each relation: the
    substitute must enter it with the other argument or something of its category ("a
    child in a box" -> not "in a bottle": no person is ever "in" a bottle)."""

    pools: list[Counter] = field(default_factory=list)
    backoff: list[str | None] = field(default_factory=list)
    frames: list[str] = field(default_factory=list)
    roles: list[tuple[str, str, str]] = field(default_factory=list)
    strict: list[Counter] = field(default_factory=list)


def _slots(context: CaptionContext, index: int) -> _Slots:
    """The slots entity ``index`` fills in the caption (see :class:`_Slots`)."""
    graph, index_ = context.graph, context.evidence.scenes.index
    slots = _Slots()
    for attribute in graph.attributes_of(index):
        slots.pools.append(index_["objects_with_attribute"].get(attribute.value, Counter()))
        # a bare act backs off to its verb as a subject's predicate does ("dogs playing" ->
        # "cats playing": cats play)
        slots.backoff.append(verb_lemma(attribute.value) if is_act(attribute.value) else None)
    for relation in graph.relations:
        if relation.subject == index and relation.object != index:
            slots.pools.append(index_["subjects_of"].get(relation.predicate, Counter()))
            slots.backoff.append(verb_lemma(relation.predicate.split()[0]))
            slots.roles.append(("subject", relation.predicate, context.names[relation.object]))
        elif relation.object == index and relation.subject != index:
            slots.pools.append(index_["objects_of"].get(relation.predicate, Counter()))
            slots.backoff.append(None)
            slots.frames.append(relation.predicate)
            slots.roles.append(("object", relation.predicate, context.names[relation.subject]))
    slots.strict = [pool for pool, verb in zip(slots.pools, slots.backoff) if verb is None]
    return slots


@dataclass
class _Original:
    """The head noun being replaced, as the substitute rules read it."""

    name: str  # the entity's name (lemma), lower-cased
    written: str  # the head as written
    plural: bool
    bare: bool  # singular without an article ("buying fish")
    counted_one: bool  # after "a" / "an" ("a water sport")
    owner: bool  # possessive ("a men 's game")
    slots: _Slots
    colour: bool  # a colour named as a noun ("dressed in blue")
    category: str | None
    person: bool
    played: bool  # what "play a/an" takes ("playing a guitar")


def _original(context: CaptionContext, index: int) -> _Original | None:
    """Entity ``index``'s head as the substitute rules read it, or ``None`` (the refusal
    counted) when it is not editable at all."""
    graph, evidence = context.graph, context.evidence
    refuse = evidence.refuse
    entity = graph.entities[index]
    name = entity.name.lower()
    written = normal(graph.caption[slice(*entity.head_span)])
    why = object_refusal(context, entity, name, written)
    if why is not None:
        refuse(f"object:{why}", unit=True)
        return None
    plural = context.is_plural(index)
    bare = not plural and is_bare(graph, entity)
    first_word = words_of(graph.caption[slice(*(entity.span or entity.head_span))])[:1]
    counted_one = not plural and first_word in (["a"], ["an"])  # "a water sport"
    owner = possessive(graph, entity.head_span)
    slots = _slots(context, index)
    # "one orange one blue", "dressed in blue": a colour named without a determiner is
    # a colour, whatever WordNet's first sense ("orange" the fruit, "white" a person)
    colour = attribute_class(written) == "colour" and not after_determiner(graph, entity)
    category = COLOUR_CATEGORY if colour else evidence.category(name)
    if category is None and not slots.pools:
        refuse("object:no_category", unit=True)
        return None
    # people of any kind, also those WordNet files elsewhere ("male", "female": animals)
    person = category == evidence.category("man") or name in PEOPLE_WORDS
    if person and written not in PERSON_NOUNS and written not in FREE_PERSON_NOUNS:
        refuse("object:role_noun", unit=True)
        return None  # a role may be any gender or age
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
        return None  # "her mouth" fixes the gender; "his ... her": who is who is unknown
    played = counted_one and _played(slots)
    return _Original(
        name, written, plural, bare, counted_one, owner, slots, colour, category, person, played
    )


@dataclass
class _Limits:
    """What the rest of the caption rules out for a substitute of one object."""

    tantum: bool  # a plurale tantum ("swimming trunks")
    slot: str | None  # the garment slot
    present: set[str]  # the objects the caption names ("a boy and a girl": not "a girl")
    scene_objects: list[str]  # ... but the original
    verbs: tuple[str, ...]
    words: frozenset[str]
    excluded: frozenset[str]  # person nouns ruled out
    one_gender: frozenset[str]  # markers of the gender nobody in the caption has
    kinds: set  # the person kinds (gender, age) others of the caption have
    coordinated: set[str]  # nouns filling the same slot (:func:`coordinated_nouns`)
    shared: bool  # several things in one relation with it (a seat for one is none)
    described: tuple[str, ...]  # the object's own attribute values ("small", "white")


def _pronouns_follow(context: CaptionContext, index: int, original: _Original) -> bool:
    """Whether the caption's gendered pronouns may follow a gender change of person
    ``index``: it is one person, of the pronouns' one gender, and no other entity of the
    caption is one person ("a man and a child ... his": whose is unclear)."""
    if (
        not original.person
        or original.plural
        or context.pronoun_gender not in (MALE_NOUNS, FEMALE_NOUNS)
        or original.written not in context.pronoun_gender
    ):
        return False
    evidence = context.evidence
    person = evidence.category("man")
    entities = context.graph.entities
    return not any(
        i != index
        and entities[i].text.lower() not in GENDERED_PRONOUNS  # "she" (parsed as "woman")
        and (evidence.category(name) == person or name in PEOPLE_WORDS)
        and not context.is_plural(i)
        for i, name in enumerate(context.names)
    )


def _limits(context: CaptionContext, index: int, original: _Original) -> _Limits:
    """What the caption rules out for a substitute of entity ``index`` (see :class:`_Limits`)."""
    graph, person = context.graph, original.person
    name, written = original.name, original.written
    tantum = written.split()[-1] in PLURALIA_TANTUM  # "swimming trunks"
    slot = garment_slot(written) or garment_slot(name)
    present = set(context.names)  # "a boy and a girl": not "a girl"
    scene_objects = sorted(present - {name})
    verbs = context.verbs
    words = context.tokens
    excluded = context.marker_excluded  # "woman in a bikini" -> not "man"
    if context.pronouns and _pronouns_follow(context, index, original):
        # "a man cuts vegetables in his kitchen" -> "a woman ... her kitchen": the pronouns
        # follow (:func:`~tags.negatives.agreement.follow_pronouns`); no one ungendered
        excluded |= frozenset(PERSON_AGES) - MALE_NOUNS - FEMALE_NOUNS
    elif context.pronouns:
        excluded |= (MALE_NOUNS | FEMALE_NOUNS | frozenset(PERSON_AGES)) - context.pronoun_gender
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
    shared = not original.plural and context.shared_by_several(index)
    described = tuple(a.value.lower() for a in graph.attributes_of(index))
    return _Limits(
        tantum,
        slot,
        present,
        scene_objects,
        verbs,
        words,
        excluded,
        one_gender,
        kinds,
        coordinated,
        shared,
        described,
    )


def _candidates(
    evidence: SceneEvidence, original: _Original, free: dict[str, str]
) -> list[tuple[str, float]]:
    """The usable objects of the original's category and number that its slots admit, with
    their counts, and its ``free`` counterparts."""
    slots, plural = original.slots, original.plural
    usable = evidence.usable_objects(original.category, plural)
    if slots.strict:  # only objects every pool attests: walk the smallest pool
        smallest = min(slots.strict, key=len)
        candidates = [(o, usable[o]) for o in smallest if o in usable]
    else:  # backed-off pools only: the objects they admit
        candidates = evidence.admitted(original.category, plural, slots.pools, slots.backoff)
    for counterpart in sorted(set(free) - set(dict(candidates))):
        # ("guy" is parsed as "person": the counterpart's own category)
        found = evidence.usable_objects(evidence.category(counterpart), plural).get(counterpart)
        if found:
            candidates.append((counterpart, found))
    return candidates


def _parent_candidates(
    evidence: SceneEvidence, original: _Original, limits: _Limits
) -> list[tuple[str, float]]:
    """For an inanimate thing whose category gives no substitute but the caption's own
    nouns: the objects of its number in the slot the corpus fills least (every slot is
    checked later, as for any substitute) that are of another category under the same
    WordNet parent node ("wall", a partition, -> "fence", an obstruction: both structures;
    "water" -> "sand"), with their counts. Not for people, animals, colours, places, or a
    thing without an attested slot; never an animate or place substitute ("a tree" -> not
    "an elephant", "the window" -> not "the living room"), nor one level way for another
    ("the sidewalk" -> not "the street"), and only a substitute near the original by the
    word vectors but not too near (:data:`PARENT_MIN_SIMILARITY`)."""
    slots, wordnet = original.slots, evidence.wordnet
    name = original.name
    if (
        original.person
        or original.colour
        or not slots.strict
        or original.category is None
        or wordnet.is_animate(name.split()[-1])
    ):
        return []
    parent = wordnet.category_parent(original.category)
    vectors = word_vectors()
    if parent is None or vectors is None or wordnet.is_place(name):
        return []
    level = wordnet.is_level_way(name.split()[-1])
    found = []
    for other in sorted(min(slots.strict, key=len)):
        category = evidence.category(other)
        if other in limits.present or category == original.category or category is None:
            continue
        if wordnet.category_parent(category) != parent:
            continue
        count = evidence.usable_objects(category, original.plural).get(other)
        similarity = vectors.similarity(name, other) if count else None
        if similarity is None or not PARENT_MIN_SIMILARITY <= similarity < PARENT_MAX_SIMILARITY:
            continue  # "skis" -> not "pockets" (0.30); "tricks" -> not "stunts" (0.75)
        last = other.split()[-1]
        if wordnet.is_animate(last) or wordnet.is_place(other):
            continue  # "a tree" -> not "an elephant"; "the window" -> not "the living room"
        if level and wordnet.is_level_way(last):
            continue  # "the sidewalk" -> not "the street": one way beside the other
        found.append((other, count))
    return found


def _person_misfit(
    original: _Original, limits: _Limits, free: dict, other: str, surface: str
) -> bool:
    """Whether a person substitute breaks a person rule (see :func:`_misfit`)."""
    written = original.written
    return (
        surface not in PERSON_NOUNS
        or surface in limits.excluded
        or (other not in free and not persons_exclusive(written, surface))  # "boy" ->
        # not "toddler"; "guy" (no age class) -> only "woman"
        or ages_overlap(written, surface)  # "a man" -> not "a boy": may be a young man
        # a kind (gender, age) another person of the caption already has: "a man
        # and a woman" -> not "a lady and a woman" (two names of one kind)
        or person_kind(surface) in limits.kinds
        # nobody becomes a baby: what people do in a caption babies rarely do ("a
        # baby preparing food"; 6 of 8 such edits failed blind reads 201-214)
        or (PERSON_AGES.get(surface) == 0 and PERSON_AGES.get(written) != 0)
    )


def _misfit(
    evidence: SceneEvidence, original: _Original, limits: _Limits, free: dict, other: str
) -> tuple[str | None, str | None]:
    """``(surface, None)`` for a substitute that passes the caption's rules, else ``(None,
    rule)``: the first rule it breaks."""
    scenes, slots = evidence.scenes, original.slots
    name, written = original.name, original.written
    person, plural = original.person, original.plural
    if (
        slots.strict
        and other not in free
        and not all(evidence.attests(p, v, other) for p, v in zip(slots.pools, slots.backoff))
    ):
        return None, "unattested_combination"  # (the backed-off walk checked them all)
    surface = evidence.substitute_surface(other, plural)
    if surface is None:
        return None, "no_clean_surface"
    if person and _person_misfit(original, limits, free, other, surface):
        return None, "person_rule"
    if surface in limits.one_gender:
        return None, "gender_marker"
    if original.owner and surface.endswith("s"):
        return None, "possessive"  # "a men 's game" -> not "a boys 's game"
    if plural and limits.tantum != (surface.split()[-1] in PLURALIA_TANTUM):
        return None, "plurale_tantum"  # "pants" -> "jackets" would dress one in several
    if limits.shared and evidence.wordnet.for_one(other):
        return None, "for_one"  # "a man and a dog sit on a bench" -> not "on a chair"
    if set(other.split()) & set(name.split()) or contains_word(other, name):
        return None, "shares_a_word"  # "suit" -> "bathing suit" may still be true
    if original.bare and scenes.bare.get(other, 0) < evidence.min_count:
        return None, "not_used_bare"  # "buying fish" -> "buying bat" needs an article
    if original.counted_one and (_mostly_bare(scenes, other) or _uncountable(scenes, other)):
        return None, "mass_noun"  # "playing a water sport" -> not "a tennis"
    if original.played:
        kind = played_kind(evidence.wordnet, other)
        if kind is None or kind != (played_kind(evidence.wordnet, name) or kind):
            return None, "played_thing"  # "playing a guitar" -> not "a frisbee", "a baseball"
    if slots.frames and not evidence.frame_fits(other, name, slots.frames):
        return None, "preposition_frame"  # "playing on a field" -> not "on a park"
    if free.get(other) == "age" and any(
        evidence.wordnet.for_children(thing) and not evidence.wordnet.is_place(thing)
        for _, _, thing in slots.roles
    ):
        return None, "made_for_children"  # "two children in a stroller" -> not "two men"
    if (
        (not person or free.get(other) == "age")  # "a child in a stroller" -> not "a man"
        and not original.colour
        and not evidence.roles_fit(other, slots.roles, name)
    ):
        return None, "unattested_role"  # "raising the anchors on a boat" -> not "on a cart"
    if surface == written or (other not in free and evidence.wordnet.related(name, other)):
        return None, "synonym_or_hypernym"
    if not person and any(evidence.wordnet.is_kind_of(o, other) for o in limits.scene_objects):
        return None, "names_another"  # "a motor bike and a small red airplane" -> not
        # "a motor bike and a small red motorcycle": another thing of the caption named
        # again, by a synonym or a more general word (a kind of it stays: "a game of
        # tennis" -> "a game of baseball")
    if original.colour and (neighbour_hues(surface, written) or other in limits.words):
        return None, "same_colour"  # "in blue" -> not "in navy"; "one orange one blue"
    if near_synonyms(written, surface) or (
        other not in free and near_synonymous(evidence.wordnet, name, other)
    ):
        return None, "near_synonym"  # "hat" -> "cap", "shirt" -> "blouse": one thing to a writer
    if (
        scenes.codescription_lift(name, other) >= MAX_CODESCRIPTION
        and attribute_class(name) != "colour"  # "in blue": others wear red
    ):
        return None, "codescribed"  # "street" -> "alley": other writers call it so
    if limits.slot is not None and garment_slot(surface) != limits.slot:
        return None, "garment_slot"  # "in a sweater" -> not "in a cap": she may wear both
    return surface, None


def _weight(
    evidence: SceneEvidence,
    original: _Original,
    limits: _Limits,
    free: dict,
    other: str,
    count: float,
) -> tuple[float, str | None]:
    """A fitting substitute's weight: its frequency times its support in the slots, times
    how well it fits the caption's other objects and verbs; or the rule that drops it."""
    scenes, pools = evidence.scenes, original.slots.pools
    support = sum(math.log1p(pool[other]) for pool in pools) if pools else 1.0
    weight = count**evidence.frequency_power * (1.0 + support)
    if (
        CONTEXT_WEIGHT and (limits.scene_objects or limits.verbs) and free.get(other) != "gender"
    ):  # "throwing a parachute down a lane"
        # the scene's objects and its actions each have a veto: "the mound" fits a
        # pitcher's scene, not "throwing the mound"
        scene = scenes.context_delta(original.name, other, limits.scene_objects)
        acts = scenes.verb_delta(original.name, other, limits.verbs)
        if scene < MIN_CONTEXT:
            return weight, "context"
        if acts < MIN_VERB_FIT:
            return weight, "verb_fit"
        if not original.person and not scenes.shares_scene(
            original.name, other, limits.scene_objects, limits.verbs
        ):
            return weight, "scene_cue"  # "reading an article on the computer" -> not "bow"
        weight *= math.exp(CONTEXT_WEIGHT * min(scene + acts, 2.0))
    return weight, None


def _costly_refusal(
    evidence: SceneEvidence, original: _Original, limits: _Limits, lemmas: dict
) -> Callable[[tuple[str, ...]], str | None]:
    """The checks run on the heaviest substitutes only (see :func:`~.choices.top_choices`):
    a part or whole of the original, a kind of a noun joined to it, a noun that fits the
    caption's other words clearly worse than the original (word vectors:
    :class:`~tags.negatives.word_vectors.ContextFit`; "brushing her teeth with a
    toothbrush" -> not "a tennis racquet")."""
    wordnet, refuse = evidence.wordnet, evidence.refuse
    fit = ContextFit(
        word_vectors() if WORD_CONTEXT else None,
        original.name,
        (*limits.scene_objects, *limits.verbs, *limits.described),
    )

    def refusal(surface: tuple[str, ...]) -> str | None:
        other = lemmas[surface]
        if original.person:
            return None
        if wordnet.part_related(original.name, other):
            why = "object:part_or_whole"  # "typing on the computer" -> not "the keyboard"
        elif any(wordnet.is_kind_of(other, n) for n in limits.coordinated):
            why = "object:kind_of_another"  # "bicycles and vehicles" -> not "motorcycles"
        elif (
            not original.colour  # "in blue" -> "in red": a colour fits any scene
            and fit.misfit(other)
        ):
            why = "object:word_context"  # "a bird on the feeder" -> not "a giraffe"
        else:
            return None
        refuse(why)
        return why

    return refusal


def _substitutes(context: CaptionContext, index: int) -> tuple[Choice, ...]:
    original = _original(context, index)
    if original is None:
        return ()
    evidence = context.evidence
    limits = _limits(context, index, original)
    # the person of the other gender, or an adult for a child, needs no evidence for the
    # caption's verbs, only the attributes': "a man sharpening a knife" -> "a woman"
    free = (
        free_counterparts(
            context, index, original.written, original.slots.strict, original.slots.backoff
        )
        if original.person
        else {}
    )
    candidates = _candidates(evidence, original, free)
    if all(other in limits.present for other, _ in candidates):
        # nothing of its category but the caption's own nouns fills its slots
        backed = _parent_candidates(evidence, original, limits) if CATEGORY_BACKOFF else []
        if backed:
            candidates = backed
        else:
            evidence.refuse("object:only_itself" if candidates else "object:no_attested_substitute")
    lemmas: dict[tuple[str, ...], str] = {}  # each substitute's surface -> its lemma
    weights: Counter = Counter()
    for other, count in candidates:
        if other in limits.present:
            continue
        surface, why = _misfit(evidence, original, limits, free, other)
        if why is None:
            weight, why = _weight(evidence, original, limits, free, other, count)
        if why is not None:
            evidence.refuse(f"object:{why}")
            continue
        weights[(surface,)] = max(weight, weights.get((surface,), 0.0))
        lemmas[(surface,)] = other
    return top_choices(weights, refusal=_costly_refusal(evidence, original, limits, lemmas))


__all__ = [
    "CONTEXT_WEIGHT",
    "FREE_PERSON_NOUNS",
    "GENDERED_VERB_EXPECTED",
    "MAX_CODESCRIPTION",
    "MIN_CONTEXT",
    "PREMISES",
    "WORD_CONTEXT",
    "anchored_compound",
    "coordinated_nouns",
    "free_counterparts",
    "gendered_verb",
    "holds_things",
    "object_refusal",
    "object_substitutes",
    "only_listed",
    "only_placed",
    "unplaced",
]
