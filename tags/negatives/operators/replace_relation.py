"""Replace a relation: a verb by an exclusive or opposite one, a preposition by its opposite.

A verb relation ("sitting on") is replaced by a relation surface of the same tag shape
("VBG IN": "standing on"), attested with the subject and the object: another posture or
locomotion verb, a verb the captions of one image never say together with it, a WordNet
antonym ("pushing" -> "pulling"), or the same verb with an opposite particle. A spatial
preposition changes to its opposite or an exclusive alternative (on/under, in front
of/behind, with/without), attested with the object. Possessive and copular relations are
never edited.

May import: ``proposals``, ``evidence``, ``context``, ``base``, ``registry`` and the evidence
service's helpers (``choices``, ``verbs``, ``syntax``); never another operator module.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from tags.negatives.lexicon import (
    ALIKE_FOR_KIND,
    COMPATIBLE_ACTS,
    EXCLUSIVE_VERBS,
    FIXED_PREDICATES,
    MADE_LIKENESS_WORDS,
    PREPOSITION_OPPOSITES,
    VIEWPOINT_VERBS,
    editable_words,
)
from tags.negatives.operators.base import EditOperator
from tags.negatives.operators.choices import top_choices
from tags.negatives.operators.context import CaptionContext
from tags.negatives.operators.evidence import SceneEvidence
from tags.negatives.operators.proposals import Choice, PlannedUnit, Proposal
from tags.negatives.operators.registry import register_operator
from tags.negatives.operators.syntax import after_determiner, contiguous, shape_like, with_clause
from tags.negatives.operators.verbs import (
    CODESCRIBED_LIFT,
    COLLOQUIAL_VERBS,
    MOVING_VERBS,
    STILL_POSTURES,
    is_state,
)
from tags.negatives.scenes import SceneCounts, normal, relation_shape, verb_lemma, words_of

#: A flipped preposition without an attested triple needs at least this share of the original
#: preposition's count with the object ("in the sand": 'beside the sand' is too rare; "on a
#: plate": 'under a plate' is 7 %), and at least ``min_count`` uses ("under the carpet").
FLIP_MIN_SHARE = 0.1
#: ... and the subject must not shun it: log (seen + 1) / (expected + 1) of the new triple,
#: expected from the original triple's count times the new preposition's share with the
#: object, at least this ("food on a plate" 66 times -> not "food under a plate").
FLIP_MIN_LIFT = -0.5
#: "with X" -> "without X" needs "without X" this often in the counts.
WITHOUT_MIN_COUNT = 2


#: Complex prepositions, longest first: their frame words ("front", "top", "left") are never
#: edited as objects, but a verb before them is ("standing in front of" -> "sitting in front
#: of").
_COMPLEX_PREPOSITIONS = sorted(
    (p for p in PREPOSITION_OPPOSITES if " " in p), key=lambda p: (-len(p), p)
)


#: Acts done on a mount or a board, in a still posture (a surfer stands, a rider sits): that
#: posture (:data:`~.verbs.STILL_POSTURES`) does not exclude them.
GEAR_VERBS = frozenset({"ride", "surf", "ski", "skate", "sled", "snowboard", "skateboard"})
#: ... where the moving verb's particle puts the subject on or in the object ("down the street",
#: "through the snow", "climbing a rock"; not "walking from a wall", "toward a car").
MOVING_PARTICLES = frozenset({"", "down", "along", "across", "through", "on", "in", "up", "over"})
#: ... in a spatial frame (not "standing with a sign").
STILL_PARTICLES = frozenset({"on", "in", "at", "on top of", "inside", "outside"})
#: The still posture's particle must be one the object takes with still postures at least
#: this share as often as its most common one ("on the sidewalk", not "in the sidewalk").
STILL_FRAME_SHARE = 0.5
#: ... and the still posture with that particle must be said of the object at least this
#: share as often as all moving verbs together ("walking down the street" 100s of times,
#: "sitting in the street" rarely: people walk streets; "running through the snow" /
#: "standing in it").
STILL_MIN_SHARE = 0.1
#: Words after the object that keep the subject moving ("... past a site", "... toward").
_STILL_BLOCKERS = frozenset({"past", "toward", "towards", "into", "onto", "away"})


#: A support's postures are smoothed toward its category's: the category's share of each
#: posture counts this many mentions next to the object's own ("a ledge", rarely named, takes
#: its kind's "standing on"; "a bike", often sat on and never stood on, keeps its own).
SUPPORT_PRIOR = 10.0
#: ... and a posture needs at least this smoothed share of the support's still postures.
SUPPORT_MIN_SHARE = 0.15


def _with_particle(counts: Counter, verbs: frozenset[str], particle: str) -> Counter:
    """The predicates of ``counts`` whose verb is one of ``verbs`` and whose particle is
    ``particle`` ("sit on", "stand on" for the still postures and "on")."""
    return Counter(
        {
            p: c
            for p, c in counts.items()
            if p.split()[0] in verbs and " ".join(p.split()[1:]) == particle
        }
    )


def support_postures(
    evidence: SceneEvidence, with_object: Counter, obj: str, particle: str
) -> Counter:
    """The still postures (with ``particle``) an object backed off to its category takes
    that its own counts lack, with smoothed counts: its own count plus
    :data:`SUPPORT_PRIOR` times the posture's share among its category's still postures with
    that particle, kept when at least :data:`SUPPORT_MIN_SHARE` of the object's smoothed still
    postures ("sitting on a ledge" -> "standing on"; "sitting on a bike" -> not "standing on",
    "sitting in a chair" -> not "lying in")."""

    own = _with_particle(with_object, STILL_POSTURES, particle)
    pooled = _with_particle(evidence.object_category_predicates(obj), STILL_POSTURES, particle)
    pooled_total = sum(pooled.values())
    total = sum(own.values()) + SUPPORT_PRIOR
    out: Counter = Counter()
    for posture, count in pooled.items():
        smoothed = own.get(posture, 0) + SUPPORT_PRIOR * count / pooled_total
        if posture not in own and smoothed >= SUPPORT_MIN_SHARE * total:
            out[posture] = max(round(smoothed), evidence.min_count)
    return out


def _still_frames(with_object: Counter) -> frozenset[str]:
    """The particles an object takes with still postures often enough (see
    :data:`STILL_FRAME_SHARE`; "street": "on", "in"; "sidewalk": "on")."""
    counts: Counter = Counter()
    for predicate, n in with_object.items():
        words = predicate.split()
        if words[0] in STILL_POSTURES and " ".join(words[1:]) in STILL_PARTICLES:
            counts[" ".join(words[1:])] += n
    if not counts:
        return frozenset()
    top = max(counts.values())
    return frozenset(p for p, n in counts.items() if n >= STILL_FRAME_SHARE * top)


#: Particles that place a posture next to a landmark: which posture is plausible does not
#: depend on which landmark it is ("sitting in front of a fountain" -> "standing in front
#: of": people stand in front of buildings and statues), so the object backs off to its
#: category for posture verbs with these particles.
LANDMARK_PARTICLES = frozenset({"next to", "in front of", "behind", "near", "beside", "by"})
#: Particles of a support a still posture is taken on or at (see ``_verb_choices``; not
#: "in": "in a chair", "in uniform", "in line", "in a jacket" take postures apart).
SUPPORT_PARTICLES = frozenset({"on", "at", "on top of"})


def editable_verb(surface: str) -> bool:
    """Whether a verb relation's surface may be edited: its words outside a trailing complex
    preposition are editable (:func:`~tags.negatives.lexicon.editable_words`)."""
    for preposition in _COMPLEX_PREPOSITIONS:
        if surface.endswith(" " + preposition):
            return editable_words(surface[: -len(preposition) - 1])
    return editable_words(surface)


def relation_substitutes(context: CaptionContext, relation) -> tuple[Choice, ...]:
    """The substitutes of one relation of the caption (see the module docstring)."""
    graph, evidence = context.graph, context.evidence
    refuse = evidence.refuse
    predicate = relation.predicate
    why = None
    if predicate in FIXED_PREDICATES:
        why = "fixed_predicate"  # be, have, wear, of...
    elif relation.subject == relation.object:
        why = "self_relation"
    elif not contiguous(graph, relation.spans):
        why = "split_around_object"  # "throwing a stick into": the verb's frame
    if why is not None:
        refuse(f"relation:{why}", unit=True)
        return ()
    surface = tuple(normal(graph.caption[s:e]) for s, e in relation.spans)
    joined = " ".join(surface)
    tag_shape = relation_shape(graph, tuple(relation.spans))
    subject = context.names[relation.subject]
    obj = context.names[relation.object]
    if joined in PREPOSITION_OPPOSITES:  # ("in" read as "wear" is a fixed predicate)
        if joined == "with" and (
            with_clause(graph, graph.entities[relation.object])
            or graph.attributes_of(relation.object)  # "without long curly hair"
            or any(  # "with her fingers"; "with blond-hair and glasses" (one "with")
                evidence.wordnet.is_body_part(
                    graph.entities[r.object].name.replace("-", " ").split()[-1]
                )
                for r in graph.relations
                if r.spans == relation.spans
            )
        ):
            refuse("relation:with_clause", unit=True)
            return ()  # "with his arms outspread" -> "without his arms outspread"
        return preposition_choices(evidence, surface, subject, obj, predicate)
    tags = tag_shape.split()
    if not tags or not tags[0].startswith("VB") or not editable_verb(joined):
        refuse("relation:not_a_verb_or_preposition", unit=True)
        return ()
    if made_likeness(graph, relation.subject):
        refuse("relation:made_likeness", unit=True)
        return ()  # "a stuffed animal sitting on the ground" -> not "walking"
    flipped = containment_flip(evidence, surface, subject, obj)
    written = verb_lemma(joined.split()[0])
    # a moving subject may be made still only at a plain noun phrase with nothing after it
    # that keeps it moving ("walking down the street past a site" -> not "sitting in the
    # street past a site"; "running across the beach to get to the water"; "walking up
    # hill" -> not "sitting on hill")
    stillable = _stillable(graph, graph.entities[relation.object])
    choices = _verb_choices(evidence, predicate, tag_shape, subject, obj, written, stillable)
    return choices + tuple(c for c in flipped if c.surface not in {d.surface for d in choices})


#: What attests a containment preposition before a place where people are: a place people
#: are "in" may be gone inside, one they are inside of may be stood outside of ("people
#: outside a restaurant" -> "inside a restaurant", "passengers inside a train" -> "outside";
#: not "doughnuts in a box" -> "outside a box": things are not in a box as people are in it).
ENCLOSURE_EVIDENCE = {"inside": ("in",), "outside": ("inside",)}


def enclosure_count(evidence: SceneEvidence, preposition: str, subject: str, obj: str) -> int:
    """How often the corpus puts ``preposition`` before ``obj``, and, for a person subject
    and "inside" / "outside", how often people are in (inside) it
    (:data:`ENCLOSURE_EVIDENCE`, :meth:`SceneEvidence.people_places`)."""
    count = evidence.scenes.predicate_object.get((preposition, obj), 0)
    if evidence.is_person(subject):
        places = evidence.people_places()
        count += sum(places.get((p, obj), 0) for p in ENCLOSURE_EVIDENCE.get(preposition, ()))
    return count


def containment_flip(
    evidence: SceneEvidence, surface: tuple[str, ...], subject: str, obj: str
) -> tuple[Choice, ...]:
    """A person's verb's "inside" / "outside" flipped ("waiting outside an igloo" ->
    "inside"), when the object takes the other at least ``min_count`` times and
    :data:`FLIP_MIN_SHARE` of the original's count (:func:`enclosure_count`)."""
    words = " ".join(surface).split()
    found = [i for i, w in enumerate(words) if w in ENCLOSURE_EVIDENCE]
    if len(surface) != 1 or len(found) != 1 or found[0] == 0 or not evidence.is_person(subject):
        return ()  # people go in and out ("vehicles parked outside the window": not inside)
    at = found[0]
    other = "inside" if words[at] == "outside" else "outside"
    count = enclosure_count(evidence, other, subject, obj)
    usual = evidence.scenes.predicate_object.get((words[at], obj), 0)
    if count < max(evidence.min_count, FLIP_MIN_SHARE * usual):
        evidence.refuse("relation:flip_unattested")
        return ()
    flipped = " ".join([*words[:at], other, *words[at + 1 :]])
    return (Choice((flipped,), 2.0 * (1.0 + math.log1p(count)), "flip"),)


def _stillable(graph, entity) -> bool:
    """Whether a moving subject may be made still at ``entity`` (see ``relation_substitutes``):
    an article before it, and nothing after it that keeps the subject moving."""
    span = entity.span or entity.head_span
    if span is None or entity.head_span is None:
        return False  # an entity without a phrase of its own
    after = words_of(graph.caption[span[1] :])
    goal = any(
        w == "to" and (i == 0 or after[i - 1] not in ("next", "close")) for i, w in enumerate(after)
    )
    return after_determiner(graph, entity) and not set(after) & _STILL_BLOCKERS and not goal


def group_verb(scenes: SceneCounts, predicate: str, tag_shape: str) -> str:
    """The key of ``predicate``'s verb in the image-group verb counts: the lemma of its most
    frequent written form (:func:`~tags.negatives.scenes.verbs_of` counts written verbs, and
    a parser name may differ: "riding" is relation ``ride`` but verb ``rid``)."""
    memo = scenes.memo("group_verb")
    found = memo.get((predicate, tag_shape))
    if found is None:
        surfaces = scenes.index["relation_surfaces"].get((tag_shape, predicate))
        word = (
            " ".join(min(surfaces.items(), key=lambda kv: (-kv[1], kv[0]))[0]) if surfaces else ""
        )
        found = memo[(predicate, tag_shape)] = verb_lemma(
            word.split()[0] if word else predicate.split()[0]
        )
    return found


@dataclass
class _Verb:
    """A verb relation being replaced, with the corpus's evidence around it: the predicates
    its subject and object take (the object's backed off to its category before a landmark
    or on a support), its WordNet ``opposites`` attested there, the posture ``postures``
    people take with its particle, and the alternatives to weigh (``others``)."""

    predicate: str
    tag_shape: str
    subject: str
    obj: str
    verb: str  # the predicate's first word
    written: str  # its image-group key (:func:`group_verb`)
    particle: str
    made: bool  # an artifact subject ("a truck standing on"): not a posture
    with_subject: Counter
    with_object: Counter
    opposites: set[str]
    postures: frozenset[str]
    others: set[str]
    moving: int  # how often moving verbs take the object
    still_frames: frozenset[str]


def made_likeness(graph, index: int) -> bool:
    """Whether entity ``index`` is a likeness of a living thing, not one: a word of
    :data:`MADE_LIKENESS_WORDS` among its attributes or in its phrase ("a stuffed animal",
    "a toy dog", "a statue of a horse" reads "statue"). Its verbs only place it."""
    entity = graph.entities[index]
    span = entity.span or entity.head_span
    words = {w for a in graph.attributes_of(index) for w in a.value.lower().split()}
    if span:
        words |= set(words_of(graph.caption[span[0] : span[1]]))
        before = [w for w in words_of(graph.caption[: span[0]])[-3:] if w not in ("a", "an", "the")]
        if len(before) >= 2 and before[-1] == "of":
            words.add(before[-2])  # "a statue of a horse"
    return bool(words & MADE_LIKENESS_WORDS)


def _not_a_posture(wordnet, subject: str) -> bool:
    """Whether a posture verb of ``subject`` only places it: an artifact ("a truck standing
    on"), or a thing WordNet knows that is neither a person, an animal nor a group of them
    ("a sign sitting on the sidewalk" = "standing on"; not "people", "a crowd")."""
    if wordnet.is_artifact(subject):
        return True
    known = wordnet.depth(subject) is not None
    group = wordnet.lexname(subject) in ("noun.group", "noun.Tops")  # people, crowd, group
    return known and not group and not wordnet.is_animate(subject)


def _verb(
    evidence: SceneEvidence,
    predicate: str,
    tag_shape: str,
    subject: str,
    obj: str,
    written: str | None,
    stillable: bool,
) -> _Verb:
    """The relation ``(subject, predicate, obj)`` with its evidence (see :class:`_Verb`)."""
    scenes = evidence.scenes
    verb = predicate.split()[0]
    written = written or group_verb(scenes, predicate, tag_shape)  # its image-group key
    index = scenes.index
    made = _not_a_posture(evidence.wordnet, subject)  # "a truck standing on", "a sign sitting"
    with_subject = index["predicates_of_subject"].get(subject, Counter())
    with_object = index["predicates_of_object"].get(obj, Counter())
    particle = " ".join(predicate.split()[1:])
    # the verb's WordNet antonyms with the same particle ("pushing a cart" -> "pulling"),
    # attested with the subject or with the object: two acts that exclude each other
    # (a general alternative to the closed list of exclusive posture verbs)
    # (posture and locomotion verbs keep their own, stricter rule below: "sit" / "stand")
    opposites = {
        other
        for a in evidence.wordnet.verb_antonyms(verb)
        if not (a in EXCLUSIVE_VERBS and verb in EXCLUSIVE_VERBS)
        and not (a in VIEWPOINT_VERBS and verb in VIEWPOINT_VERBS)  # "coming" / "going" down
        and (
            (other := " ".join([a, *predicate.split()[1:]])) in with_subject or other in with_object
        )
    }
    # a person subject backs off to all people for posture verbs ("a person standing
    # next to a table" -> "sitting": people sit next to tables)
    postures = evidence.postures(subject).get(particle, frozenset())
    # ... and so does the object: before a landmark, for any posture or locomotion verb;
    # on or at a support, from one still posture to another ("sitting on a ledge" ->
    # "standing on a ledge": people stand on walls and platforms)
    support = (
        particle in SUPPORT_PARTICLES
        and verb in STILL_POSTURES
        and not evidence.wordnet.is_body_part(obj.split()[-1])  # "sitting on his left leg"
    )
    if verb in EXCLUSIVE_VERBS and particle in LANDMARK_PARTICLES and not made:
        backed = evidence.object_category_predicates(obj)
        with_object = with_object + _with_particle(backed, EXCLUSIVE_VERBS, particle)
    elif support and not made:
        with_object = with_object + support_postures(evidence, with_object, obj, particle)
    # ((with_subject | postures) & with_object) | opposites, without copying the counters
    others = {p for p in with_object if p in with_subject or p in postures} | opposites
    moving = sum(n for p, n in with_object.items() if p.split()[0] in MOVING_VERBS)
    still_frames = _still_frames(with_object) if stillable and verb in MOVING_VERBS else frozenset()
    return _Verb(
        predicate,
        tag_shape,
        subject,
        obj,
        verb,
        written,
        particle,
        made,
        with_subject,
        with_object,
        opposites,
        postures,
        others,
        moving,
        still_frames,
    )


def _alike(evidence: SceneEvidence, noun: str, pair: frozenset[str]) -> bool:
    """Whether ``noun`` (its last word) is of a kind that does the two verbs of ``pair``
    alike (:data:`ALIKE_FOR_KIND`: a bird or a kind of bird sits and stands on a perch, a
    hoofed animal lying down is said to sit and a grazing one walks and stands at once)."""
    head = noun.split()[-1] if noun else ""
    kinds = {head} | evidence.wordnet.hypernym_names(head) if head else set()
    return any(pair in pairs and kind in kinds for kind, pairs in ALIKE_FOR_KIND.items())


def _exclusive(evidence: SceneEvidence, v: _Verb, other: str, grouped: str) -> bool:
    """Whether ``other`` (a different verb, its image-group key ``grouped``) excludes the
    relation's verb: a moving subject made still in a frame the object takes, two posture or
    locomotion verbs the writers of one image do not say of one act, or two acts they never
    say together."""
    scenes, verb, written = evidence.scenes, v.verb, v.written
    pair = frozenset((verb, other.split()[0]))
    if pair in COMPATIBLE_ACTS or _alike(evidence, v.subject, pair):
        # one moment shows both ("riding the wave" / "jumping"), or the subject's kind does
        # them alike ("a bird sitting on a car roof" stands on it)
        return False
    same_frame = other.split()[1:] == v.predicate.split()[1:]  # "standing on" -> "sitting on"
    # posture and locomotion verbs the writers of one image often say of one act
    # ("running" / "jumping", "riding" / "surfing" a wave) are not exclusive after all
    codescribed = max(
        scenes.verb_codescription_lift(written, grouped),
        scenes.verb_codescription_lift(grouped, written),
    )
    # a moving subject made still, in the frame the object takes ("walking down the
    # street" -> "sitting on the street", "climbing a rock" -> "sitting on a rock")
    stilled = (
        not same_frame
        and verb in MOVING_VERBS
        and v.particle in MOVING_PARTICLES
        and other.split()[0] in STILL_POSTURES
        and " ".join(other.split()[1:]) in v.still_frames
        and v.with_object[other] >= STILL_MIN_SHARE * v.moving
        and not v.made
        and codescribed < CODESCRIBED_LIFT
    )
    return stilled or (
        same_frame
        and (
            (
                verb in EXCLUSIVE_VERBS
                and other.split()[0] in EXCLUSIVE_VERBS
                and not v.made
                and codescribed < CODESCRIBED_LIFT
                # the posture a ride is done in ("surfing on a surfboard" -> not
                # "standing on": surfers stand; riders sit)
                and not (verb in GEAR_VERBS and other.split()[0] in STILL_POSTURES)
            )
            # or what the writers of one image never say together ("riding" / "walking"):
            # the input's image groups and the built-in background's (Flickr30K dev), for
            # two acts, not a state ("riding" / "holding" a horse are rarely said of one
            # image, yet one rider does both)
            or (
                scenes.verbs_exclusive(written, grouped)
                and not is_state(evidence, verb)
                and not is_state(evidence, other.split()[0])
            )
        )
    )


def _verb_misfit(
    evidence: SceneEvidence, v: _Verb, other: str, flip: bool, opposite: bool, triple: int
) -> str | None:
    """The first rule an alternative relation ``other`` breaks, or ``None``: a flip needs
    an opposite particle, another verb must exclude the original and be attested with the
    subject and the object."""
    scenes, verb, particle = evidence.scenes, v.verb, v.particle
    if (
        flip
        and not opposite
        and " ".join(other.split()[1:]) not in PREPOSITION_OPPOSITES.get(particle, ())
    ):
        return "particle_not_opposite"  # the same verb only with an opposite particle
    if (
        flip
        and {particle, " ".join(other.split()[1:])} == {"up", "down"}
        and evidence.wordnet.is_level_way(v.obj)
    ):
        return "level_way"  # "walking down the sidewalk" -> not "up": one way or the other
    grouped = group_verb(scenes, other, v.tag_shape)
    if not flip and (grouped == v.written or other.split()[0] in COLLOQUIAL_VERBS):
        # one verb under two parser names ("riding" / "ridding": both ``rid``), or a
        # colloquial form a negative should not introduce ("laying on" for "lying on")
        return "same_or_colloquial_verb"
    exclusive = _exclusive(evidence, v, other, grouped)
    if not (flip or exclusive):
        return "verbs_not_exclusive"  # other verbs are often compatible ("sitting" / "working")
    if not flip and evidence.wordnet.way_of(verb, other.split()[0]):
        return "way_of_the_act"  # "riding on a surfboard" -> not "surfing on": to surf is to ride
    by_subject = v.with_subject[other]
    if not by_subject and other in v.postures:  # backed off to all people: only two
        # verbs the writers of one image do not use for one act ("jumping" / "flying
        # in the air" are); without grouped captions there is no such evidence
        lift = scenes.verb_codescription_lift(v.written, grouped)
        if not scenes.verb_grouped.get("<s>") or lift > 0.0:
            return "verbs_codescribed"
        by_subject = evidence.category_predicates(v.subject)[other]
    if not triple and not opposite and min(by_subject, v.with_object[other]) < 2:
        return "unattested"
    return None


def _verb_choices(
    evidence: SceneEvidence,
    predicate: str,
    tag_shape: str,
    subject: str,
    obj: str,
    written: str | None = None,
    stillable: bool = False,
) -> tuple[Choice, ...]:
    """The relations that may replace a verb relation (see :func:`relation_substitutes`)."""
    scenes, refuse = evidence.scenes, evidence.refuse
    v = _verb(evidence, predicate, tag_shape, subject, obj, written, stillable)
    weights: Counter = Counter()
    operations: dict[tuple[str, ...], str] = {}
    if not v.others - {predicate}:
        refuse("relation:no_attested_alternative")
    for other in sorted(v.others):
        if other == predicate or other in FIXED_PREDICATES:
            continue
        opposite = other in v.opposites
        flip = other.split()[0] == v.verb or opposite
        triple = scenes.triples.get((subject, other, obj), 0)
        why = _verb_misfit(evidence, v, other, flip, opposite, triple)
        if why is not None:
            refuse(f"relation:{why}")
            continue
        surfaces = scenes.index["relation_surfaces"].get((tag_shape, other))
        if not surfaces or (not flip and evidence.wordnet.related(v.verb, other.split()[0], "v")):
            refuse("relation:no_surface_or_synonym")
            continue
        for other_surface, count in sorted(surfaces.items()):
            if count >= evidence.min_count and editable_verb(" ".join(other_surface)):
                weight = (
                    count**evidence.frequency_power
                    * (1.0 + math.log1p(triple))
                    * (2.0 if flip else 1.0)
                )
                weights[other_surface] += weight
                if flip:
                    operations[other_surface] = "flip"
    return top_choices(weights, operations)


#: Prepositions that stack one thing over another: a flip to one of them needs the subject's
#: and the object's categories attested in that order (:meth:`SceneEvidence.category_triple`).
VERTICAL_PREPOSITIONS = frozenset(
    {"on", "under", "above", "below", "over", "on top of", "underneath", "beneath", "onto"}
)


#: Kinds of thing (WordNet hypernyms of the first sense) that hide what is behind them: a
#: wall, a door, a curtain ("a buffet in front of a wall" -> not "behind a wall": a reader
#: sees nothing behind one). A fence or a window does not.
HIDING_KINDS = frozenset({"partition", "movable barrier", "blind"})


def hides(evidence: SceneEvidence, noun: str) -> bool:
    """Whether ``noun`` (its last word) is a kind of :data:`HIDING_KINDS`."""
    head = noun.split()[-1] if noun else ""
    return bool(head) and bool(HIDING_KINDS & evidence.wordnet.hypernym_names(head))


def preposition_choices(
    evidence: SceneEvidence, pieces: tuple[str, ...], subject: str, obj: str, predicate: str = ""
) -> tuple[Choice, ...]:
    """Opposite prepositions attested with the object, written as the corpus writes them
    ("below" where the captions say "below": the counts key prepositions by the parser's
    canonical name, "under"). Unless the corpus attests the new triple itself, the new
    preposition must be common with the object next to the original one: at least
    :data:`FLIP_MIN_SHARE` of its count ("in the sand" -> not "beside the sand", "on a
    stove" -> not "under a stove")."""
    from parsers.lexicon import PREP_NORMAL

    scenes = evidence.scenes
    written = evidence.written_relations()
    weights: Counter = Counter()
    operations: dict[tuple[str, ...], str] = {}
    for rank, other in enumerate(PREPOSITION_OPPOSITES[" ".join(pieces)]):
        shaped = shape_like(other, pieces)
        if shaped is None:
            evidence.refuse("relation:preposition_shape")
            continue
        name = PREP_NORMAL.get(other, other)
        if other != "without" and (name, other) not in written:
            evidence.refuse("relation:preposition_unattested")
            continue  # a spelling the corpus never uses for this relation
        if "behind" in (name, other) and hides(evidence, obj):
            evidence.refuse("relation:hidden_behind")
            continue  # "books in front of a wall" -> not "behind a wall": out of sight
        triple = scenes.triples.get((subject, name, obj), 0)
        with_object = scenes.predicate_object.get((name, obj), 0)
        # ... and where people are in it, "inside" / "outside" it ("people in a restaurant")
        backed = enclosure_count(evidence, name, subject, obj)
        usual = scenes.predicate_object.get((predicate, obj), 0)
        # how often the subject would take the new preposition with the object if the
        # preposition did not depend on the subject ("food on a plate": 66 times; "under"
        # a plate 23 of 316 -> ~5 expected "food under a plate", none seen)
        own = max(scenes.triples.get((subject, predicate, obj), 0) - 1, 0)
        expected = own * with_object / max(usual, 1)
        fits = math.log((triple + 1.0) / (expected + 1.0)) >= FLIP_MIN_LIFT
        if fits and not triple and name in VERTICAL_PREPOSITIONS:
            # one thing over another needs the two kinds attested that way round ("a dish
            # on a tray" -> not "under a tray", "people under an umbrella" -> not "on")
            fits = evidence.category_triple(subject, name, obj) >= evidence.min_count
        if other == "without":
            # "with X" -> "without X" is false for any X, but reads unnatural where writers
            # never say it ("a room without the fireplace", "playing without a kite"):
            # the object must be attested after "without" (:data:`WITHOUT_MIN_COUNT`)
            # (a compound object backs off to its words: "a dog fishing" -> "dog")
            said = max(
                with_object, *(scenes.predicate_object.get((name, w), 0) for w in obj.split())
            )
            attested = said if said >= WITHOUT_MIN_COUNT else 0
            if not attested:
                evidence.refuse("relation:without_unattested")
        elif fits and (triple or backed >= max(evidence.min_count, FLIP_MIN_SHARE * usual)):
            attested = triple + backed
        else:
            attested = 0
            evidence.refuse("relation:flip_unattested")
        if attested:
            weights[shaped] = 2.0 / (1 + rank) * (1.0 + math.log1p(attested))
            operations[shaped] = "flip"
    return top_choices(weights, operations)


@register_operator("replace_relation", rank=30)
class ReplaceRelation(EditOperator):
    """Replace a relation's verb or preposition (operations ``replace``, ``flip``)."""

    edit_types = ("relation",)

    def propose(self, context: CaptionContext) -> list[Proposal]:
        out = []
        for index, relation in enumerate(context.graph.relations):
            if relation.spans:
                choices = relation_substitutes(context, relation)
                unit = PlannedUnit("relation", tuple(relation.spans), choices)
                out.append(Proposal(unit, (2, index)))
        return out


__all__ = [
    "FLIP_MIN_LIFT",
    "GEAR_VERBS",
    "HIDING_KINDS",
    "LANDMARK_PARTICLES",
    "MOVING_PARTICLES",
    "STILL_PARTICLES",
    "SUPPORT_MIN_SHARE",
    "SUPPORT_PARTICLES",
    "SUPPORT_PRIOR",
    "VERTICAL_PREPOSITIONS",
    "WITHOUT_MIN_COUNT",
    "ReplaceRelation",
    "editable_verb",
    "group_verb",
    "hides",
    "made_likeness",
    "preposition_choices",
    "relation_substitutes",
    "support_postures",
]
