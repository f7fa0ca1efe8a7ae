"""Edit planning: which scene-graph units may change, and into what.

:class:`EditPlanner` turns a parsed caption into :class:`PlannedUnit` s, each a unit's spans
with the substitutes (:class:`Choice`) that keep the caption grammatical and the scene
plausible while making it false. Every refill source draws from these choices only: the
weight-free refiller by their corpus weight, an MLM by its (image-conditioned) scores. The
checks, per unit type:

- **object**: the head (with its compound words) of an entity that is not a pronoun, a
  number, a time, direction or measure word; substitutes are other objects of the same
  grammatical number and WordNet category (animal for animal, person for person) that are
  not synonyms, hypernyms or hyponyms of the original, and every combination the
  substitute enters is attested in the corpus: ``(attribute, object)`` for its attributes,
  ``(object, predicate)`` where it is a subject, ``(predicate, object)`` where it is an
  object.
- **attribute**: colours, sizes, ages, materials, patterns and states are replaced inside
  their class by values the corpus attests with the object; WordNet antonyms are preferred
  and are the only substitutes of other adjectives; plural quantities (two, 3) change to
  another plural quantity written the same way.
- **relation**: a verb relation ("sitting on") is replaced by a relation surface of the same
  tag shape ("VBG IN": "standing on"), attested with the subject and the object; a spatial
  preposition by its opposite or an exclusive alternative (on/under, in front of/behind,
  with/without). Possessive and copular relations are never edited.

Swaps (:func:`swap_candidates`) exchange the attributes of two objects, or the subject and
object of a relation, under the same attestation checks.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from parsers import SceneGraph
from tags.negatives.edits import fix_articles, make_edit
from tags.negatives.lexical import (
    AGED_NOUNS,
    CHILD_GROUP_NOUNS,
    EXCLUSIVE_VERBS,
    FEMALE_MARKERS,
    FEMALE_NOUNS,
    GENERIC_NOUNS,
    MALE_MARKERS,
    MALE_NOUNS,
    NEGATORS,
    NEVER_EDIT,
    NUMBER_VALUES,
    PERSON_AGES,
    PERSON_NOUNS,
    PLURALIA_TANTUM,
    PREPOSITION_OPPOSITES,
    STATE_OPPOSITES,
    YOUTH_WORDS,
    attribute_class,
    garment_slot,
    near_synonyms,
    persons_exclusive,
    same_colour,
    symmetric,
    wordnet,
)
from tags.negatives.scenes import (
    SceneCounts,
    is_bare,
    is_plural,
    normal,
    relation_shape,
    verb_lemma,
    verbs_of,
    words_of,
)
from tags.negatives.types import Candidate, apply_edits

CharSpan = tuple[int, int]

#: Predicates never edited: copulas, possession and clothing read from "in"/"with".
FIXED_PREDICATES = frozenset({"be", "have", "wear", "of", "contain", "include", "show"})

#: Pronouns that fix a person's gender elsewhere in the caption.
_HE = frozenset(["he", "him", "his", "himself"])
_SHE = frozenset(["she", "her", "hers", "herself"])
_GENDERED = _HE | _SHE
_GENDERED_NOUNS = MALE_NOUNS | FEMALE_NOUNS

#: Adjectives that say a gender (WordNet antonyms of each other), fixed like person nouns.
GENDER_ADJECTIVES = frozenset({"male", "female", "masculine", "feminine"})

#: The prior of a swap candidate, next to a substitute's share of its unit's weight.
SWAP_WEIGHT = 0.25

#: Substitutes kept per unit (the most plausible first).
MAX_CHOICES = 24

#: The prior of a count unit ("two" -> "three") next to other units: count edits are
#: exact but few captions of a benchmark differ only by a number, so they stay a minority.
COUNT_PRIOR = 0.15
#: Substitutes of a count (the nearest): two teach the count; six ("six" -> three, four,
#: five, seven, eight, nine) made count edits the bulk of a number caption's negatives.
COUNT_CHOICES = 2

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
#: A subject substitute that its predicate's frame never attests is kept when the corpus
#: names it with the predicate's verb in at least this many captions (graded backoff from
#: the frame "dance inside" to the verb "dance"; see :meth:`EditPlanner._attests`).
VERB_BACKOFF_MIN = 3
#: The substitution category of colour words used as nouns ("dressed in blue").
COLOUR_CATEGORY = "<colour>"
#: Substitutes weighted below this share of their unit's best substitute are dropped: the
#: tail of a broad category that nothing in the caption supports ("hit a ball on a tee" ->
#: "a computer keyboard", "the reins of a brown horse" -> "of a brown sheep"; "a pink dog").
#: Person nouns are exempt: every one fits where one does (their weights follow frequency).
MIN_CHOICE_SHARE = 0.1
#: An object substitute must follow the caption's predicate in at least this share of its
#: uses, relative to the original's share ("sleeping on a couch" -> not "in a couch").
FRAME_MIN_RATIO = 0.2
#: ... when it was seen as an object at least this often (else too little evidence).
FRAME_MIN_USES = 5
#: A flipped preposition without an attested triple needs at least this share of the original
#: preposition's count with the object ("in the sand": 'beside the sand' is too rare; "on a
#: plate": 'under a plate' is 7 %), and at least ``min_count`` uses ("under the carpet").
FLIP_MIN_SHARE = 0.1
#: ... and the subject must not shun it: log (seen + 1) / (expected + 1) of the new triple,
#: expected from the original triple's count times the new preposition's share with the
#: object, at least this ("food on a plate" 66 times -> not "food under a plate").
FLIP_MIN_LIFT = -0.5


@dataclass(frozen=True)
class Choice:
    """One substitute of a unit: a surface per span, its weight, and the operation."""

    surface: tuple[str, ...]
    weight: float
    operation: str = "replace"


@dataclass
class Trace:
    """Why a caption's units got no substitute, counted where each refusal happens (see
    :attr:`EditPlanner.trace`): ``units`` counts units refused as a whole ("object:pronoun"),
    ``candidates`` substitutes refused one by one ("object:unattested")."""

    units: Counter = field(default_factory=Counter)
    candidates: Counter = field(default_factory=Counter)

    def reason(self) -> str | None:
        """The skip reason these counts give: ``all_candidates_refused:<rule>`` when some
        unit had substitutes to weigh (the rule that refused most), else
        ``no_editable_unit:<rule>``; ``None`` when nothing was refused."""
        for counts, prefix in (
            (self.candidates, "all_candidates_refused"),
            (self.units, "no_editable_unit"),
        ):
            if counts:
                rule = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]
                return f"{prefix}:{rule}"
        return None


@dataclass(frozen=True)
class PlannedUnit:
    """An editable unit: ``(type, spans, choices)`` (unpacks like ``SceneGraph.units()``)."""

    type: str
    spans: tuple[CharSpan, ...]
    choices: tuple[Choice, ...]
    #: The unit's share of a caption's negatives next to other units (1: an equal share).
    prior: float = 1.0

    def __iter__(self):  # (type, spans) as the maskers read units
        return iter((self.type, self.spans))


def _top(
    weights: Counter, operation: dict[tuple[str, ...], str] | None = None
) -> tuple[Choice, ...]:
    best = sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_CHOICES]
    operation = operation or {}
    return tuple(Choice(s, float(w), operation.get(s, "replace")) for s, w in best)


def _words_ok(text: str) -> bool:
    words = text.split()
    return bool(words) and not any(w in NEVER_EDIT for w in words)


class EditPlanner:
    """Plans minimal, grammatical, plausible edits from a corpus's :class:`SceneCounts`.

    Args:
        scenes: counts of the corpus the captions come from (built in a first pass).
        min_count: an object, attribute or relation surface seen fewer times is never a
            substitute (parse noise).
        frequency_power: substitutes are weighted by ``count ** frequency_power`` (times
            their support in the caption's contexts): higher values favour common words.
        fluency: strength of the corpus-bigram reweighting (0: off); see :meth:`_fluent`.
        min_fluency: object substitutes whose bigram log-probability change is below this
            are dropped.
        noun_classes: ``{class: [noun, ...]}``: nouns substituted for each other as one
            category, in place of their WordNet category (whose first sense may be another
            thing: "star" a celestial body, "diamond" a gem), e.g. the drawn shapes of a
            benchmark; they are never too general to be substitutes.
    """

    def __init__(
        self,
        scenes: SceneCounts,
        *,
        min_count: int = 2,
        frequency_power: float = 0.5,
        fluency: float = 1.0,
        min_fluency: float = -6.0,
        noun_classes: Mapping[str, Iterable[str]] | None = None,
    ):
        self.min_fluency = min_fluency
        self.scenes = scenes
        self.min_count = min_count
        self.frequency_power = frequency_power
        self.fluency = fluency
        self.wordnet = wordnet()
        self.noun_classes = {
            noun.lower(): f"class:{name}"
            for name, nouns in (noun_classes or {}).items()
            for noun in nouns
        }
        self._by_category: dict[tuple[str | None, bool], dict[str, float]] = {}
        self._written: frozenset[tuple[str, str]] | None = None
        self._frames: dict[str, Counter] = {}
        self._partner_index: dict[tuple[str, str, str], tuple[str, ...]] | None = None
        self._partner_cache: dict[tuple[str, str, str], frozenset[str | None]] = {}
        self._surfaces: dict[tuple[str, bool], str | None] = {}
        self._category_counts: dict[str | None, Counter] = {}
        self._category_postures: dict[str | None, dict[str, frozenset[str]]] = {}
        #: When set, every refusal is counted in it (:meth:`explain`); ``None``: not counted.
        self.trace: Trace | None = None
        self._planned: tuple[SceneGraph | None, dict[int, tuple[Choice, ...]]] = (None, {})

    def _refuse(self, rule: str, unit: bool = False) -> None:
        """Count one refusal in :attr:`trace` (a unit as a whole, or one substitute)."""
        if self.trace is not None:
            (self.trace.units if unit else self.trace.candidates)[rule] += 1

    def explain(self, graph: SceneGraph) -> Trace:
        """Plan ``graph`` again with every refusal counted: why its units have no substitute
        (for captions left without a negative; the planned units are the same)."""
        self.trace = Trace()
        self._planned = (None, {})  # plan again: refusals are counted where they happen
        try:
            self.plan(graph)
            return self.trace
        finally:
            self.trace = None

    def prepare(self) -> None:
        """Build the lookup tables now (before worker processes fork, so they share them)."""
        _ = self.scenes.index
        self._usable_objects(None, False)
        self._written_relations()
        self._object_frames()
        self._partners()
        self.wordnet.related("dog", "cat")

    # ------------------------------------------------------------------ units
    def plan(self, graph: SceneGraph) -> list[PlannedUnit]:
        """Every editable unit of ``graph`` with its substitutes (units without any are left
        out)."""
        units: list[PlannedUnit] = []
        seen: set[tuple[CharSpan, ...]] = set()
        for kind, spans, choices, prior in self._units(graph):
            if choices and spans not in seen:
                seen.add(spans)
                floor = self.min_fluency if kind == "object" else -math.inf
                choices = self._fluent(graph.caption, spans, choices, floor)
                if choices and not (kind == "object" and self._is_person(choices[0].surface[-1])):
                    least = MIN_CHOICE_SHARE * max(c.weight for c in choices)
                    choices = tuple(c for c in choices if c.weight >= least)
                if choices:
                    units.append(PlannedUnit(kind, spans, choices, prior))
        return units

    def _fluent(
        self, text: str, spans: tuple, choices: tuple[Choice, ...], floor: float = -math.inf
    ) -> tuple[Choice, ...]:
        """Reweight by how well each substitute fits its neighbours under the corpus's bigram
        model, relative to the original: ``weight * exp(fluency * delta)`` (delta clipped to
        [-10, 2]), so a negative reads as naturally as its positive."""
        if not self.fluency or not self.scenes.bigrams:
            return choices
        out = []
        for choice in choices:
            # score the text as it will read: "a orange" is written "an orange"
            edits = [
                e
                for (start, end), surface in zip(spans, choice.surface)
                if (e := make_edit("unit", text, start, end, surface)) is not None
            ]
            edits = fix_articles(text, edits)
            delta = self.scenes.fluency_delta(
                text, tuple((e.start, e.end) for e in edits), tuple(e.replacement for e in edits)
            )
            if delta < floor:
                self._refuse("object:bigram_fluency")
                continue  # far less natural than the original ("into the lime")
            factor = math.exp(self.fluency * min(max(delta, -10.0), 2.0))
            out.append(Choice(choice.surface, choice.weight * factor, choice.operation))
        return tuple(sorted(out, key=lambda c: (-c.weight, c.surface)))

    def _units(
        self, graph: SceneGraph
    ) -> Iterable[tuple[str, tuple[CharSpan, ...], tuple[Choice, ...], float]]:
        for index, entity in enumerate(graph.entities):
            if entity.head_span is not None:
                yield "object", (entity.head_span,), self.object_choices_of(graph, index), 1.0
            if entity.quantity_span is not None and _counted(graph.caption):
                self._refuse("attribute:count_pinned", unit=True)
            elif entity.quantity_span is not None and self.wordnet.is_body_part(entity.name):
                self._refuse("attribute:body_part_count", unit=True)  # "his two thumbs up"
            elif entity.quantity_span is not None:
                text = graph.caption[slice(*entity.quantity_span)]
                choices = self.number_choices(text)
                yield "attribute", (entity.quantity_span,), choices, COUNT_PRIOR
        for attribute in graph.attributes:
            if attribute.span is not None:
                choices = self.attribute_choices(graph, attribute)
                prior = COUNT_PRIOR if attribute_class(attribute.value) == "number" else 1.0
                yield "attribute", (attribute.span,), choices, prior
        for relation in graph.relations:
            if relation.spans:
                choices = self.relation_choices(graph, relation)
                yield "relation", tuple(relation.spans), choices, 1.0

    # ---------------------------------------------------------------- objects
    def _usable_objects(self, category: str | None, plural: bool) -> dict[str, float]:
        """Objects of one category and number that may be substitutes at all, with their
        corpus counts (computed once per category and number). Colour words used as nouns
        are also grouped under :data:`COLOUR_CATEGORY`."""
        key = (category, plural)
        found = self._by_category.get(key)
        if found is None:
            if not self._by_category:  # first call: sort every object name once
                for number in (False, True):
                    for other, count in self.scenes.index["objects_by_number"][number].items():
                        if count < self.min_count or not self._substitute_ok(other):
                            continue
                        group = (self.category(other), number)
                        self._by_category.setdefault(group, {})[other] = count
                        if attribute_class(other) == "colour":
                            colours = self._by_category.setdefault((COLOUR_CATEGORY, number), {})
                            colours[other] = count
            found = self._by_category.setdefault(key, {})
        return found

    def _attests(self, pool: Counter, verb: str | None, other: str) -> bool:
        """Whether ``other`` may fill a pool's slot: the pool attests it, or (a subject pool,
        ``verb`` its predicate's lemma) the corpus names ``other`` with that verb in at least
        :data:`VERB_BACKOFF_MIN` captions: a frame backs off to its verb ("a girl dancing inside" ->
        "a boy": boys dance, if never "inside" in the corpus; never "a man breastfeeding")."""
        if other in pool:
            return True
        return verb is not None and self.scenes.verb_object.get((verb, other), 0) >= max(
            self.min_count, VERB_BACKOFF_MIN
        )

    def _substitute_surface(self, name: str, plural: bool) -> str | None:
        """The written form of a usable object in the given number, or ``None`` when it is
        never a substitute whatever the caption (an act, a verb-like word, no clean surface);
        cached per object and number."""
        key = (name, plural)
        if key not in self._surfaces:
            surface = self.scenes.surface(name, plural)
            by_number = self.scenes.index["objects_by_number"]
            ok = (
                surface is not None
                and surface.isascii()
                and not (  # "a short", "a pant": the singular of a plurale tantum is
                    # rarely one thing, unless the corpus writes it so ("a glass")
                    not plural
                    and name + "s" in PLURALIA_TANTUM
                    and by_number[False].get(name, 0) * 5
                    < sum(by_number[n].get(name + "s", 0) for n in (False, True))
                )
                and len(surface.split()) == len(name.split())
                and not self.wordnet.is_activity(name.split()[-1])
                and not self.scenes.verb_like(name)
            )
            self._surfaces[key] = surface if ok else None
        return self._surfaces[key]

    def category(self, noun: str) -> str | None:
        """The substitution category of a noun: its ``noun_classes`` class, else WordNet's."""
        return self.noun_classes.get(noun) or self.wordnet.category(noun)

    def _substitute_ok(self, name: str) -> bool:
        if not _words_ok(name) or name in GENERIC_NOUNS or not name.replace(" ", "").isalpha():
            return False
        if name in self.noun_classes:
            return True
        if self.wordnet.is_name(name):
            return False  # "in this city" -> not "in this brazil"
        depth = self.wordnet.depth(name)
        return depth is None or depth > 7  # too general to be false ("instrument", "device")

    def _object_refusal(self, graph: SceneGraph, entity, name: str, written: str) -> str | None:
        """Why an object is not editable at all, or ``None``."""
        if not _nouns_only(graph, entity.head_span):
            return "not_a_common_noun"  # no proper names ("Nike shirt"), no pronouns
        if len(graph.tags_in(entity.head_span)) > 3:
            return "long_compound"
        if not _words_ok(written):
            return "never_edited_word"  # pronouns, measure, time and frame words
        if name in GENERIC_NOUNS:
            return "generic_noun"
        if not name.replace(" ", "").isalpha():
            return "not_a_word"
        if self.scenes.object_count(name) < 1:
            return "unseen_object"
        if self.wordnet.is_activity(written.split()[-1]):
            return "activity"  # "dancing and singing"
        if self.scenes.verb_like(written):
            return "verb_like"  # "a helmet walks": a verb tagged as a noun
        if _mentioned_again(graph.caption, entity.head_span, written):
            return "mentioned_again"  # "a woman and man ..., the man"
        if _modifies_noun(graph, entity.head_span):
            return "compound_modifier"  # "the boy band"
        return None

    def object_choices_of(self, graph: SceneGraph, index: int) -> tuple[Choice, ...]:
        """:meth:`object_choices`, reusing what the last :meth:`plan` of ``graph`` found."""
        graph_, found = self._planned
        if graph_ is not graph:
            self._planned = (graph, found := {})
        if index not in found:
            found[index] = self.object_choices(graph, index)
        return found[index]

    def object_choices(self, graph: SceneGraph, index: int) -> tuple[Choice, ...]:
        entity = graph.entities[index]
        name = entity.name.lower()
        written = normal(graph.caption[slice(*entity.head_span)])
        why = self._object_refusal(graph, entity, name, written)
        if why is not None:
            self._refuse(f"object:{why}", unit=True)
            return ()
        plural = is_plural(graph, entity.head_span)
        bare = not plural and is_bare(graph, entity)
        possessive = graph.caption[entity.head_span[1] :].lstrip().startswith(("'s", "’s"))
        index_ = self.scenes.index
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
            backoff.append(None)
        for relation in graph.relations:
            if relation.subject == index and relation.object != index:
                pools.append(index_["subjects_of"].get(relation.predicate, Counter()))
                backoff.append(verb_lemma(relation.predicate.split()[0]))
                other_name = graph.entities[relation.object].name.lower()
                roles.append(("subject", relation.predicate, other_name))
            elif relation.object == index and relation.subject != index:
                pools.append(index_["objects_of"].get(relation.predicate, Counter()))
                backoff.append(None)
                frames.append(relation.predicate)
                other_name = graph.entities[relation.subject].name.lower()
                roles.append(("object", relation.predicate, other_name))
        # "one orange one blue", "dressed in blue": a colour named without a determiner is
        # a colour, whatever WordNet's first sense ("orange" the fruit, "white" a person)
        colour = attribute_class(written) == "colour" and not _after_determiner(graph, entity)
        category = COLOUR_CATEGORY if colour else self.category(name)
        if category is None and not pools:
            self._refuse("object:no_category", unit=True)
            return ()
        person = category == self.category("man")
        if person and written not in PERSON_NOUNS:
            self._refuse("object:role_noun", unit=True)
            return ()  # a role may be any gender or age
        # a gendered pronoun may name the person: only a person noun of its gender changes,
        # to another of that gender (a closed class): "a man holding his hat" -> "a boy"
        pronouns = _GENDERED.intersection(graph.caption.lower().split())
        pronoun_gender = (MALE_NOUNS if pronouns & _HE else frozenset()) | (
            FEMALE_NOUNS if pronouns & _SHE else frozenset()
        )
        if (
            person
            and pronouns
            and (pronoun_gender == _GENDERED_NOUNS or written not in pronoun_gender)
        ):
            self._refuse("object:gendered_pronoun", unit=True)
            return ()  # "her mouth" fixes the gender; "his ... her": who is who is unknown
        tantum = written.split()[-1] in PLURALIA_TANTUM  # "swimming trunks"
        slot = garment_slot(written) or garment_slot(name)
        present = {e.name.lower() for e in graph.entities}  # "a boy and a girl": not "a girl"
        context = sorted(present - {name})
        verbs = verbs_of(graph)
        words = set(graph.caption.lower().split())
        excluded = (MALE_NOUNS if words & FEMALE_MARKERS else frozenset()) | (
            FEMALE_NOUNS if words & MALE_MARKERS else frozenset()
        )  # "woman in a bikini" -> not "man"
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
        women, men = bool(words & FEMALE_NOUNS), bool(words & MALE_NOUNS)
        one_gender = (
            MALE_MARKERS if women and not men else FEMALE_MARKERS if men and not women else ()
        )
        kinds = {_person_kind(w) for w in words & PERSON_NOUNS if w != written.lower()}
        weights: Counter = Counter()
        usable = self._usable_objects(category, plural)
        strict = [pool for pool, verb in zip(pools, backoff) if verb is None]
        if strict:  # only objects every pool attests: walk the smallest pool
            smallest = min(strict, key=len)
            candidates = [(o, usable[o]) for o in smallest if o in usable]
        else:  # backed-off pools only: the objects they admit
            candidates = [
                (o, c)
                for o, c in usable.items()
                if all(self._attests(pool, verb, o) for pool, verb in zip(pools, backoff))
            ]
        if not candidates:
            self._refuse("object:no_attested_substitute")
        refuse = self._refuse
        for other, count in candidates:
            if other in present:
                continue
            if not all(self._attests(pool, verb, other) for pool, verb in zip(pools, backoff)):
                refuse("object:unattested_combination")
                continue
            surface = self._substitute_surface(other, plural)
            if surface is None:
                refuse("object:no_clean_surface")
                continue
            if person and (
                surface not in PERSON_NOUNS
                or surface in excluded
                or not persons_exclusive(written, surface)  # "boy" -> not "toddler"
                # a kind (gender, age) another person of the caption already has: "a man
                # and a woman" -> not "a lady and a woman" (two names of one kind)
                or _person_kind(surface) in kinds
                # nobody becomes a baby: what people do in a caption babies rarely do ("a
                # baby preparing food"; 6 of 8 such edits failed blind reads 201-214)
                or (PERSON_AGES.get(surface) == 0 and PERSON_AGES.get(written) != 0)
            ):
                refuse("object:person_rule")
                continue
            if surface in one_gender:
                refuse("object:gender_marker")
                continue
            if possessive and surface.endswith("s"):
                refuse("object:possessive")
                continue  # "a men 's game" -> not "a boys 's game"
            if plural and tantum != (surface.split()[-1] in PLURALIA_TANTUM):
                refuse("object:plurale_tantum")
                continue  # "pants" -> "jackets" would dress one person in several
            if set(other.split()) & set(name.split()) or _contains_word(other, name):
                refuse("object:shares_a_word")
                continue  # "suit" -> "bathing suit", "shirt" -> "sweatshirt" may still be true
            if bare and self.scenes.bare.get(other, 0) < self.min_count:
                refuse("object:not_used_bare")
                continue  # "buying fish" -> "buying bat" needs an article
            if frames and not self._frame_fits(other, name, frames):
                refuse("object:preposition_frame")
                continue  # "playing on a field" -> not "on a park"
            if not person and not colour and not self._roles_fit(other, roles):
                refuse("object:unattested_role")
                continue  # "raising the anchors on a boat" -> not "on a cart"
            if surface == written or self.wordnet.related(name, other):
                refuse("object:synonym_or_hypernym")
                continue
            if colour and (same_colour(surface, written) or other in words):
                refuse("object:same_colour")
                continue  # "in blue" -> not "in navy"; "one orange one blue" -> not "blue"
            if near_synonyms(written, surface):
                refuse("object:near_synonym")
                continue  # "hat" -> "cap": the same thing to a caption writer
            if (
                self.scenes.codescription_lift(name, other) >= MAX_CODESCRIPTION
                and attribute_class(name) != "colour"  # "in blue": others wear red
            ):
                refuse("object:codescribed")
                continue  # "street" -> "alley": other writers call the same place so
            if slot is not None and garment_slot(surface) != slot:
                refuse("object:garment_slot")
                continue  # "in a sweater" -> not "in a cap": she may wear both
            support = sum(math.log1p(pool[other]) for pool in pools) if pools else 1.0
            weight = count**self.frequency_power * (1.0 + support)
            if CONTEXT_WEIGHT and (context or verbs):  # "throwing a parachute down a lane"
                # the scene's objects and its actions each have a veto: "the mound" fits a
                # pitcher's scene, not "throwing the mound"
                scene = self.scenes.context_delta(name, other, context)
                acts = self.scenes.verb_delta(name, other, verbs)
                if scene < MIN_CONTEXT:
                    refuse("object:context")
                    continue
                if acts < MIN_VERB_FIT:
                    refuse("object:verb_fit")
                    continue
                if not person and not self.scenes.shares_scene(name, other, context, verbs):
                    refuse("object:scene_cue")
                    continue  # "reading an article on the computer at a desk" -> not "bow"
                weight *= math.exp(CONTEXT_WEIGHT * min(scene + acts, 2.0))
            weights[(surface,)] = max(weight, weights.get((surface,), 0.0))
        return _top(weights)

    # ------------------------------------------------------------- attributes
    def number_choices(self, text: str) -> tuple[Choice, ...]:
        word = text.lower()
        value = int(word) if word.isdigit() else NUMBER_VALUES.get(word)
        if value is None or value < 2:
            self._refuse("attribute:not_a_plural_count", unit=True)
            return ()
        others = [v for v in range(2, 13) if v != value and abs(v - value) <= 3]
        names = {v: k for k, v in NUMBER_VALUES.items()}
        # near numbers first, small (common) numbers before large ones
        weights = Counter(
            {
                ((str(v) if word.isdigit() else names[v]),): 1.0 / (abs(v - value) * v)
                for v in others
            }
        )
        return _top(weights)[:COUNT_CHOICES]

    def attribute_choices(self, graph: SceneGraph, attribute) -> tuple[Choice, ...]:
        value = attribute.value
        written = normal(graph.caption[slice(*attribute.span)])
        tags = graph.tags_in(attribute.span)
        why = None
        kind = attribute_class(value)
        name = graph.entities[attribute.entity].name.lower()
        if not tags or not all(t in {"JJ", "JJR", "NN", "NNP", "VBN", "CD"} for t in tags):
            why = "not_an_adjective"
        elif not _words_ok(written):
            why = "never_edited_word"
        elif kind == "number" and (len(written.split()) != 1 or self.wordnet.is_body_part(name)):
            why = "body_part_count"  # "jogging with his two thumbs up" -> not "four thumbs"
        elif kind == "number":
            return self.number_choices(written)
        elif kind == "age" and name in AGED_NOUNS:
            why = "aged_noun"  # "young children" -> "old children"
        elif value in GENDER_ADJECTIVES and _GENDERED.intersection(words_of(graph.caption)):
            why = "gendered_pronoun"  # "a male player holding his racket"
        elif kind == "colour" and self._is_person(name):
            why = "person_colour"  # "a white female" reads as skin colour
        if why is not None:
            self._refuse(f"attribute:{why}", unit=True)
            return ()
        attested = self.scenes.index["attributes_of_object"].get(name, Counter())
        others = {a.value for a in graph.attributes_of(attribute.entity)}  # "sunny, dry day"
        # ... nor a value another mention of the same noun has ("a white coat, red coat, ..."
        # -> "a red coat, red coat": the list reads as a slip)
        others |= {
            a.value
            for a in graph.attributes
            if a.entity != attribute.entity and graph.entities[a.entity].name.lower() == name
        }
        antonyms = (
            set(self.wordnet.antonyms(value)) if " " not in value and tags == ["JJ"] else set()
        )
        weights: Counter = Counter()
        operations: dict[tuple[str, ...], str] = {}
        refuse = self._refuse
        if kind is None and not antonyms:
            refuse("attribute:no_class_no_antonym")  # only antonyms replace other adjectives
        elif not attested:
            refuse("attribute:no_attested_value")
        for other, count in attested.items():
            is_antonym = other in antonyms
            if other == value or (
                not is_antonym and (kind is None or attribute_class(other) != kind)
            ):
                continue  # another class: not a substitute at all
            if count < self.min_count:
                refuse("attribute:rare_value")
                continue  # "a green dog": one odd parse is no evidence
            if other in others or not _words_ok(other) or set(other.split()) & set(value.split()):
                refuse("attribute:value_in_caption")
                continue  # "red" -> "bright red" may still be true
            if kind == "state" and not is_antonym and other not in STATE_OPPOSITES.get(value, ()):
                refuse("attribute:state_not_opposite")
                continue  # "a wet street" may well be busy
            if not is_antonym and self.wordnet.related(value, other, "a"):
                refuse("attribute:synonym")
                continue
            if kind == "colour" and same_colour(other, value, name):
                refuse("attribute:same_colour")
                continue  # "brown" -> "tan" may still be true
            surface = (self.scenes.attribute_surface(other),)
            if surface[0] == written:
                continue
            weight = count**self.frequency_power * (4.0 if is_antonym else 1.0)
            weights[surface] = max(weight, weights.get(surface, 0.0))
            if is_antonym:
                operations[surface] = "antonym"
        return _top(weights, operations)

    def _frame_fits(self, substitute: str, original: str, predicates: list[str]) -> bool:
        """Whether ``substitute`` follows each of ``predicates``' prepositions about as
        readily as the original does: that frame's share of the substitute's uses as an
        object is at least :data:`FRAME_MIN_RATIO` of the original's share ("in a park" is
        usual, "on a park" rare; "standing on" counts as "on"). Objects seen fewer than
        :data:`FRAME_MIN_USES` times pass (too little evidence)."""
        frames = self._object_frames()
        new, old = frames.get(substitute), frames.get(original)
        if not new or not old:
            return True
        new_total, old_total = sum(new.values()), sum(old.values())
        if new_total < FRAME_MIN_USES:
            return True
        return all(
            new[_frame(p)] / new_total >= FRAME_MIN_RATIO * old[_frame(p)] / old_total
            for p in predicates
        )

    def _roles_fit(self, substitute: str, roles: list[tuple[str, str, str]]) -> bool:
        """Whether ``substitute`` enters every ``(role, predicate, other)`` relation of the
        original with ``other`` itself or with an object of ``other``'s category: as the
        subject of ``(X, predicate, other)`` or the object of ``(other, predicate, X)``. The
        category backs the triple off where a corpus is sparse ("a woman holding a fan" ->
        "a frisbee": some person holds one), and keeps scenes no writer would make ("a
        child in a bottle", "the anchors on a cart"). An ``other`` without a category needs
        the triple itself."""
        for role, predicate, other in roles:
            if role == "subject":
                triple = (substitute, predicate, other)
                key = ("object", substitute, predicate)
            else:
                triple = (other, predicate, substitute)
                key = ("subject", predicate, substitute)
            if self.scenes.triples.get(triple):
                continue
            category = self.category(other)
            if category is None or category not in self._partner_categories(key):
                return False
        return True

    def _partner_categories(self, key: tuple[str, str, str]) -> frozenset[str | None]:
        """The categories of the arguments the corpus puts in relation ``key``: ``("subject",
        predicate, object)`` -> the subjects' categories, ``("object", subject, predicate)``
        -> the objects' (cached per key)."""
        found = self._partner_cache.get(key)
        if found is None:
            names = self._partners().get(key, ())
            found = self._partner_cache[key] = frozenset(self.category(n) for n in names)
        return found

    def _partners(self) -> dict[tuple[str, str, str], tuple[str, ...]]:
        """``("subject", predicate, object)`` -> the subjects the corpus puts in that
        relation with the object, ``("object", subject, predicate)`` -> the objects
        (computed once)."""
        if self._partner_index is None:
            found: dict[tuple[str, str, str], set[str]] = {}
            for subject, predicate, obj in self.scenes.triples:
                found.setdefault(("subject", predicate, obj), set()).add(subject)
                found.setdefault(("object", subject, predicate), set()).add(obj)
            self._partner_index = {key: tuple(sorted(v)) for key, v in found.items()}
        return self._partner_index

    def _object_frames(self) -> dict[str, Counter]:
        """Per object, how often it follows each frame (computed once)."""
        if not self._frames:
            for obj, predicates in self.scenes.index["predicates_of_object"].items():
                frame = self._frames.setdefault(obj, Counter())
                for predicate, count in predicates.items():
                    frame[_frame(predicate)] += count
        return self._frames

    def similar_attributes(self, a: str, b: str) -> bool:
        """Whether two attribute values mean about the same ("small", "little")."""
        return " " not in a and " " not in b and self.wordnet.related(a, b, "a")

    def _is_person(self, name: str) -> bool:
        """People of any kind ("man", "skier", "person", "people", "female")."""
        return name in _PEOPLE or self.category(name) == self.category("man")

    # -------------------------------------------------------------- relations
    def relation_choices(self, graph: SceneGraph, relation) -> tuple[Choice, ...]:
        predicate = relation.predicate
        why = None
        if predicate in FIXED_PREDICATES:
            why = "fixed_predicate"  # be, have, wear, of...
        elif relation.subject == relation.object:
            why = "self_relation"
        elif not _contiguous(graph, relation.spans):
            why = "split_around_object"  # "throwing a stick into": the verb's frame
        if why is not None:
            self._refuse(f"relation:{why}", unit=True)
            return ()
        surface = tuple(normal(graph.caption[s:e]) for s, e in relation.spans)
        joined = " ".join(surface)
        tag_shape = relation_shape(graph, tuple(relation.spans))
        subject = graph.entities[relation.subject].name.lower()
        obj = graph.entities[relation.object].name.lower()
        if joined in PREPOSITION_OPPOSITES:  # ("in" read as "wear" is a fixed predicate)
            if joined == "with" and (
                _with_clause(graph, graph.entities[relation.object])
                or graph.attributes_of(relation.object)  # "without long curly hair"
                or any(  # "with her fingers"; "with blond-hair and glasses" (one "with")
                    self.wordnet.is_body_part(
                        graph.entities[r.object].name.replace("-", " ").split()[-1]
                    )
                    for r in graph.relations
                    if r.spans == relation.spans
                )
            ):
                self._refuse("relation:with_clause", unit=True)
                return ()  # "with his arms outspread" -> "without his arms outspread"
            return self._preposition_choices(surface, subject, obj, predicate)
        tags = tag_shape.split()
        if not tags or not tags[0].startswith("VB") or not _words_ok(joined):
            self._refuse("relation:not_a_verb_or_preposition", unit=True)
            return ()
        verb = predicate.split()[0]
        index = self.scenes.index
        made = self.wordnet.is_artifact(subject)  # "a truck standing on": not a posture
        with_subject = index["predicates_of_subject"].get(subject, Counter())
        with_object = index["predicates_of_object"].get(obj, Counter())
        weights: Counter = Counter()
        operations: dict[tuple[str, ...], str] = {}
        particle = " ".join(predicate.split()[1:])
        refuse = self._refuse
        # the verb's WordNet antonyms with the same particle ("pushing a cart" -> "pulling"),
        # attested with the subject or with the object: two acts that exclude each other
        # (a general alternative to the closed list of exclusive posture verbs)
        # (posture and locomotion verbs keep their own, stricter rule below: "sit" / "stand")
        opposites = {
            other
            for a in self.wordnet.verb_antonyms(verb)
            if not (a in EXCLUSIVE_VERBS and verb in EXCLUSIVE_VERBS)
            and (
                (other := " ".join([a, *predicate.split()[1:]])) in with_subject
                or other in with_object
            )
        }
        # a person subject backs off to all people for posture verbs ("a person standing
        # next to a table" -> "sitting": people sit next to tables)
        postures = self._postures(subject).get(particle, frozenset())
        others = ((set(with_subject) | postures) & set(with_object)) | opposites
        if not others - {predicate}:
            refuse("relation:no_attested_alternative")
        for other in sorted(others):
            if other == predicate or other in FIXED_PREDICATES:
                continue
            opposite = other in opposites
            flip = other.split()[0] == verb or opposite
            if (
                flip
                and not opposite
                and " ".join(other.split()[1:]) not in PREPOSITION_OPPOSITES.get(particle, ())
            ):
                refuse("relation:particle_not_opposite")
                continue  # the same verb only with an opposite particle ("sit on" -> "sit under")
            triple = self.scenes.triples.get((subject, other, obj), 0)
            same_frame = other.split()[1:] == predicate.split()[1:]  # "standing on" -> "sitting on"
            exclusive = same_frame and (
                (verb in EXCLUSIVE_VERBS and other.split()[0] in EXCLUSIVE_VERBS and not made)
                # or what the writers of one image never say together ("riding" / "walking")
                or self.scenes.verbs_exclusive(verb, other.split()[0])
            )
            if not (flip or exclusive):
                refuse("relation:verbs_not_exclusive")
                continue  # other verbs are often compatible ("sitting" / "working")
            by_subject = with_subject[other]
            if not by_subject and other in postures:  # backed off to all people: only two
                # verbs the writers of one image do not use for one act ("jumping" / "flying
                # in the air" are); without grouped captions there is no such evidence
                lift = self.scenes.verb_codescription_lift(verb, other.split()[0])
                if not self.scenes.verb_grouped or lift > 0.0:
                    refuse("relation:verbs_codescribed")
                    continue
                by_subject = self._category_predicates(subject)[other]
            if not triple and not opposite and min(by_subject, with_object[other]) < 2:
                refuse("relation:unattested")
                continue
            surfaces = index["relation_surfaces"].get((tag_shape, other))
            if not surfaces or (not flip and self.wordnet.related(verb, other.split()[0], "v")):
                refuse("relation:no_surface_or_synonym")
                continue
            for other_surface, count in sorted(surfaces.items()):
                if count >= self.min_count and _words_ok(" ".join(other_surface)):
                    weight = (
                        count**self.frequency_power
                        * (1.0 + math.log1p(triple))
                        * (2.0 if flip else 1.0)
                    )
                    weights[other_surface] += weight
                    if flip:
                        operations[other_surface] = "flip"
        return _top(weights, operations)

    def _category_predicates(self, subject: str) -> Counter:
        """How often people take each predicate when ``subject`` is a person (WordNet
        category), else nothing (cached)."""
        if not self._is_person(subject):
            return Counter()  # only people: any of them may sit, stand, walk...
        category = self.category("man")
        found = self._category_counts.get(category)
        if found is None:
            found = Counter()
            if category is not None:
                for name, predicates in self.scenes.index["predicates_of_subject"].items():
                    if self._is_person(name):
                        found.update(predicates)
            self._category_counts[category] = found
        return found

    def _postures(self, subject: str) -> dict[str, frozenset[str]]:
        """The posture and locomotion predicates of :meth:`_category_predicates` by their
        particle ("on" -> {"sit on", "stand on", ...}; cached)."""
        category = self.category("man") if self._is_person(subject) else None
        found = self._category_postures.get(category)
        if found is None:
            by_particle: dict[str, set[str]] = {}
            for p in self._category_predicates(subject):
                if p.split()[0] in EXCLUSIVE_VERBS:
                    by_particle.setdefault(" ".join(p.split()[1:]), set()).add(p)
            found = {k: frozenset(v) for k, v in by_particle.items()}
            self._category_postures[category] = found
        return found

    def _preposition_choices(
        self, pieces: tuple[str, ...], subject: str, obj: str, predicate: str = ""
    ) -> tuple[Choice, ...]:
        """Opposite prepositions attested with the object, written as the corpus writes them
        ("below" where the captions say "below": the counts key prepositions by the parser's
        canonical name, "under"). Unless the corpus attests the new triple itself, the new
        preposition must be common with the object next to the original one: at least
        :data:`FLIP_MIN_SHARE` of its count ("in the sand" -> not "beside the sand", "on a
        stove" -> not "under a stove")."""
        from parsers.lexicon import PREP_NORMAL

        written = self._written_relations()
        weights: Counter = Counter()
        operations: dict[tuple[str, ...], str] = {}
        for rank, other in enumerate(PREPOSITION_OPPOSITES[" ".join(pieces)]):
            shaped = _shape_like(other, pieces)
            if shaped is None:
                self._refuse("relation:preposition_shape")
                continue
            name = PREP_NORMAL.get(other, other)
            if other != "without" and (name, other) not in written:
                self._refuse("relation:preposition_unattested")
                continue  # a spelling the corpus never uses for this relation
            triple = self.scenes.triples.get((subject, name, obj), 0)
            with_object = self.scenes.predicate_object.get((name, obj), 0)
            usual = self.scenes.predicate_object.get((predicate, obj), 0)
            # how often the subject would take the new preposition with the object if the
            # preposition did not depend on the subject ("food on a plate": 66 times; "under"
            # a plate 23 of 316 -> ~5 expected "food under a plate", none seen)
            own = max(self.scenes.triples.get((subject, predicate, obj), 0) - 1, 0)
            expected = own * with_object / max(usual, 1)
            fits = math.log((triple + 1.0) / (expected + 1.0)) >= FLIP_MIN_LIFT
            if other == "without":
                attested = 1 + triple + with_object  # "with X" -> "without X" holds for any X
            elif fits and (triple or with_object >= max(self.min_count, FLIP_MIN_SHARE * usual)):
                attested = triple + with_object
            else:
                attested = 0
                self._refuse("relation:flip_unattested")
            if attested:
                weights[shaped] = 2.0 / (1 + rank) * (1.0 + math.log1p(attested))
                operations[shaped] = "flip"
        return _top(weights, operations)

    def _written_relations(self) -> frozenset[tuple[str, str]]:
        """``(predicate, surface)`` of every relation the corpus writes (computed once)."""
        if self._written is None:
            self._written = frozenset(
                (predicate, " ".join(surface)) for predicate, surface, _ in self.scenes.relations
            )
        return self._written


#: Phrases that pin a count elsewhere in the caption ("one ... the other": two).
_COUNT_ANCHORS = ("the other", "each other", "one another", "both", "head-to-head", "pair")


def _counted(caption: str) -> bool:
    text = " ".join(caption.lower().replace(",", " , ").split())
    if text.count("one ") >= 2 or "one of them" in text:  # "two clowns, one young and one ..."
        return True
    if ":" in text:  # an enumeration fixes the count ("three shapes: a circle, a star and ...")
        return True
    text = f" {text} "
    return any(f" {anchor} " in text for anchor in _COUNT_ANCHORS)


#: Person words WordNet files elsewhere ("person" is a top category, "female" an animal).
_PEOPLE = frozenset({"person", "persons", "people", "female", "male", "females", "males"})


def _frame(predicate: str) -> str:
    """The frame an object takes after ``predicate``: its last word ("stand on" -> "on",
    "ride" -> "ride")."""
    return predicate.rsplit(" ", 1)[-1]


_DETERMINERS = frozenset({"DT", "PRP$", "POS", "PDT", "WP$"})


def _tokens_before(graph: SceneGraph, entity) -> list[tuple[int, int, str]]:
    """The caption's tokens that end before the entity's head."""
    return [token for token in graph.tokens if token[1] <= entity.head_span[0]]


def _after_determiner(graph: SceneGraph, entity) -> bool:
    """Whether a determiner or possessive comes before the entity's head, inside its phrase
    or right before it ("an orange", "a ripe orange": the fruit; "one orange", "in orange":
    the colour)."""
    before = _tokens_before(graph, entity)
    start = (entity.span or entity.head_span)[0]
    return any(t in _DETERMINERS for s, _, t in before if s >= start) or bool(
        before and before[-1][2] in _DETERMINERS
    )


def _modifies_noun(graph: SceneGraph, span: CharSpan) -> bool:
    """Whether a noun follows the object's head at once ("boy band", "tennis court"): the
    word is a compound's modifier, and its edit would leave the real head in place."""
    following = [tag for s, _, tag in graph.tokens if s >= span[1]]
    return bool(following) and following[0] in ("NN", "NNS")


def _person_kind(noun: str) -> tuple[str | None, int | None]:
    """(gender, age class) of a person noun ("lady" and "women": female adults)."""
    gender = "m" if noun in MALE_NOUNS else "f" if noun in FEMALE_NOUNS else None
    return gender, PERSON_AGES.get(noun)


def _mentioned_again(caption: str, span: CharSpan, written: str) -> bool:
    """Whether the object's word comes up again outside its span ("a woman and man ..., the
    man is on the drums"): changing one mention would contradict the other."""
    target = written.split()
    rest = [*words_of(caption[: span[0]]), "|", *words_of(caption[span[1] :])]
    return any(rest[i : i + len(target)] == target for i in range(len(rest)))


#: Tags after a "with" object that make it a clause ("with his arms outspread", "with white
#: on", "with hands raised"), where "without" reads wrong.
_CLAUSE_TAGS = frozenset({"JJ", "VBN", "VBG", "RP", "RB", "IN"})


def _with_clause(graph: SceneGraph, entity) -> bool:
    """Whether the object of "with" is followed by a predicate of its own ("with his arms
    outspread": a plural noun inside the head), or is not a concrete noun (a colour, a name)."""
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
    after = [t for s, e, t in graph.tokens if s >= entity.head_span[1]]
    return bool(after) and after[0] in _CLAUSE_TAGS


def _described(graph: SceneGraph, entity: int, relation) -> bool:
    """Whether an entity has an attribute or a relation other than ``relation``: a swap
    then moves what describes it ("the woman in the red dress dancing with the man")."""
    return bool(graph.attributes_of(entity)) or _in_other_relation(graph, entity, relation)


def _in_other_relation(graph: SceneGraph, entity: int, relation) -> bool:
    """Whether an entity takes part in a relation other than ``relation``."""
    return any(r is not relation and entity in (r.subject, r.object) for r in graph.relations)


def _nouns_only(graph: SceneGraph, span: CharSpan) -> bool:
    """Whether every token of ``span`` is tagged a common noun (not a pronoun the parser
    resolved to an entity: "next to *him*", nor a proper name)."""
    tags = graph.tags_in(span)
    return bool(tags) and all(t in ("NN", "NNS") for t in tags)


def _contains_word(a: str, b: str) -> bool:
    """Whether one name ends with the other's head word ("sweatshirt", "shirt")."""
    a_head, b_head = a.split()[-1], b.split()[-1]
    return len(a_head) > 3 < len(b_head) and (a_head.endswith(b_head) or b_head.endswith(a_head))


def _contiguous(graph: SceneGraph, spans) -> bool:
    """Whether a relation's pieces are separated by articles at most ("to the left of")."""
    for (_, end), (start, _) in itertools.pairwise(spans):
        if graph.caption[end:start].strip().lower() not in ("", "the", "a", "an"):
            return False
    return True


def _shape_like(text: str, pieces: tuple[str, ...]) -> tuple[str, ...] | None:
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


# ---------------------------------------------------------------------- swaps
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
    person = category("man") if category is not None else None
    values: dict[int, set[str]] = {}
    for attribute in graph.attributes:
        values.setdefault(attribute.entity, set()).add(attribute.value)
    text = graph.caption
    out: list[Candidate] = []
    names = [e.name.lower() for e in graph.entities]
    attrs = [a for a in graph.attributes if a.span is not None]
    for i, a in enumerate(attrs if swaps else ()):
        for b in attrs[i + 1 :]:
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
                out.append(candidate)
    for relation in graph.relations if swaps or roles else ():
        s, o = relation.subject, relation.object
        subject, obj = graph.entities[s], graph.entities[o]
        if (
            s == o
            or relation.predicate in FIXED_PREDICATES
            or not relation.spans
            or subject.head_span is None
            or obj.head_span is None
            or not _words_ok(names[s])
            or not _words_ok(names[o])
            or not _nouns_only(graph, subject.head_span)  # "near a woman next to him"
            or not _nouns_only(graph, obj.head_span)
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
            candidate = _role_swap(graph, relation)
            if candidate is not None:
                out.append(candidate)
        if (
            not swaps
            or names[s] == names[o]
            or (
                symmetric(p)
                and not _described(graph, s, relation)
                and not _described(graph, o, relation)
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
            out.append(candidate)
    return out


def _capitalised_word(word: str) -> bool:
    """ "A", "The", "Two": sentence case, not a name in capitals ("TV") nor "I"."""
    return word[:1].isupper() and (word[1:].islower() or (len(word) == 1 and word != "I"))


def _role_swap(graph: SceneGraph, relation) -> Candidate | None:
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
        if _in_other_relation(graph, entity, relation):
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
            t[:1].lower() + t[1:] if start == 0 and _capitalised_word(t.split()[0]) else t
            for t, start in ((s_text, s_start), (o_text, o_start))
        )
    return _replace(text, "relation", [(spans[0], o_text), (spans[1], s_text)], "swap")


__all__ = ["FIXED_PREDICATES", "Choice", "EditPlanner", "PlannedUnit", "swap_candidates"]
