"""The evidence service of the edit operators: what the corpus's counts and WordNet attest.

:class:`SceneEvidence` wraps a corpus's :class:`~tags.negatives.scenes.SceneCounts` (the raw
counts) and WordNet, and answers the questions operators share: a noun's substitution
category, which objects may be substitutes at all, whether a substitute enters the
original's frames and relations, which predicates people take, how naturally a substitute
reads (the corpus bigram model). Corpus-wide tables are built once
(:meth:`SceneEvidence.prepare`) and cached; refusals are counted in
:attr:`SceneEvidence.trace` when one is set. This is the count-based plausibility every
operator asks; the optional causal-LM filter of finished negatives is
:mod:`tags.negatives.plausibility`.

The service's shared helpers live beside it, never in an operator module: ``choices``
(ranking substitutes, count substitutes), ``values`` (category-smoothed attribute value
shares), ``verbs`` (verb classes of relations and acts) and ``objects`` (an entity's object
substitutes, which the replace and add operators share).

May import: ``proposals``, :mod:`tags.negatives.backoff`, ``edits``, ``lexicon``, ``scenes``,
``wordnet`` (nothing above it in ``operators``).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from parsers.morphology import ZERO_PLURALS
from tags.core.edits import fix_articles, make_edit
from tags.negatives.backoff import RolePools, SiblingBackoff, wordnet_similarity
from tags.negatives.lexicon import (
    EXCLUSIVE_VERBS,
    GENERIC_NOUNS,
    PEOPLE_WORDS,
    PLURALIA_TANTUM,
    attribute_class,
    editable_words,
)
from tags.negatives.operators.proposals import Choice
from tags.negatives.scenes import SceneCounts
from tags.negatives.wordnet import wordnet

#: A subject substitute that its predicate's frame never attests is kept when the corpus
#: names it with the predicate's verb in at least this many captions (graded backoff from
#: the frame "dance inside" to the verb "dance"; see :meth:`SceneEvidence.attests`).
VERB_BACKOFF_MIN = 3
#: :meth:`SceneEvidence.prepare` reads WordNet's senses of at most this many of the corpus's
#: object nouns, attribute values and verbs each (the most frequent) before workers fork:
#: a bounded start-up (about 0.4 s for 2,400 nouns, 900 values and 1,300 verbs here).
WARM_WORDS = 5000
#: Colours (a closed class) are backed off to the noun's category: a noun's colour ``v``
#: counts ``n(v, noun) + COLOUR_PRIOR * P(v | category)`` mentions, the category's colour
#: distribution taken over its other nouns (:meth:`SceneEvidence.colour_count`). A noun
#: the corpus rarely colours borrows its kinds' colours; a noun seen in many colours keeps
#: its own ("a red stop sign" stays red: 11 mentions, none blue).
COLOUR_PRIOR = 10.0
#: A noun's colours count toward its category's (:meth:`SceneEvidence.colour_table`) as at
#: most this many mentions, in proportion: no one noun speaks for its kind ("the sky" is
#: blue 194 times; without the cap it made "a green valley" "a blue valley", valleys and
#: skies being filed together).
COLOUR_NOUN_CAP = 10.0
#: ... and a backed-off colour needs at least this share of the noun's smoothed colour
#: mentions (besides ``min_count`` smoothed mentions).
COLOUR_MIN_SHARE = 0.05
#: A WordNet antonym the noun itself is never given is backed off to its category: it fits
#: when at least this many other nouns of the category take both values ("a full plate" ->
#: "an empty plate": full and empty bowls, cups and boxes; "full gear" -> not "empty gear").
ANTONYM_MIN_NOUNS = 2
#: ... else at least this many other nouns of its WordNet lexicographer file ("noun.food":
#: "cooked noodles" -> "raw": cooked and raw meat, carrots, fish).
ANTONYM_MIN_FILE_NOUNS = 3
#: The substitution category of colour words used as nouns ("dressed in blue").
COLOUR_CATEGORY = "<colour>"
#: An object substitute must follow the caption's predicate in at least this share of its
#: uses, relative to the original's share ("sleeping on a couch" -> not "in a couch").
FRAME_MIN_RATIO = 0.2
#: ... when it was seen as an object at least this often (else too little evidence).
FRAME_MIN_USES = 5
#: A substitute (an object, an act) that goes with one of the caption's verbs this much worse
#: than the original (log lift, see :meth:`SceneCounts.verb_delta`) is dropped: the
#: original is attested with the verb far above chance, the substitute is not ("throwing the
#: ball" -> not "the computer keyboard").
MIN_VERB_FIT = -1.5


@dataclass
class Trace:
    """Why a caption's units got no substitute, counted where each refusal happens (see
    :attr:`SceneEvidence.trace`): ``units`` counts units refused as a whole
    ("object:pronoun"), ``candidates`` substitutes refused one by one
    ("object:unattested")."""

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


def is_act(value: str) -> bool:
    """Whether an attribute value is a bare act: one -ing word ("smiling", "running")."""
    return " " not in value and len(value) > 4 and value.endswith("ing")


def frame_of(predicate: str) -> str:
    """The frame an object takes after ``predicate``: its last word ("stand on" -> "on",
    "ride" -> "ride")."""
    return predicate.rsplit(" ", 1)[-1]


def _capped(colours: Counter) -> Counter:
    """``colours`` scaled down to :data:`COLOUR_NOUN_CAP` mentions in all, if more."""
    total = sum(colours.values())
    if total <= COLOUR_NOUN_CAP:
        return colours
    return Counter({v: c * COLOUR_NOUN_CAP / total for v, c in colours.items()})


class SceneEvidence:
    """What a corpus's :class:`SceneCounts` and WordNet attest, cached for every operator.

    Args:
        scenes: counts of the corpus the captions come from (built in a first pass).
        min_count: an object, attribute or relation surface seen fewer times is never a
            substitute (parse noise).
        frequency_power: substitutes are weighted by ``count ** frequency_power`` (times
            their support in the caption's contexts): higher values favour common words.
        fluency: strength of the corpus-bigram reweighting (0: off); see :meth:`fluent`.
        min_fluency: object substitutes whose bigram log-probability change is below this
            are dropped.
        noun_classes: ``{class: [noun, ...]}``: nouns substituted for each other as one
            category, in place of their WordNet category.
        sibling_backoff: a relation the corpus never shows the substitute in may be
            attested by its near kinds (:meth:`roles_fit`, :mod:`tags.negatives.backoff`).
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
        sibling_backoff: bool = False,
    ):
        self.scenes = scenes
        self.sibling_backoff = sibling_backoff
        self._siblings: SiblingBackoff | None = None
        self._role_pools: RolePools | None = None
        self.min_count = min_count
        self.frequency_power = frequency_power
        self.fluency = fluency
        self.min_fluency = min_fluency
        facts = getattr(scenes, "facts", None)  # a counts store's WordNet answers
        self.wordnet = wordnet() if facts is None else facts.service(wordnet())
        self.noun_classes = {
            noun.lower(): f"class:{name}"
            for name, nouns in (noun_classes or {}).items()
            for noun in nouns
        }
        #: When set, every refusal is counted in it; ``None``: not counted.
        self.trace: Trace | None = None
        self._by_category: dict[tuple[str | None, bool], dict[str, float]] = {}
        self._ranks: dict[tuple[str | None, bool], dict[str, int]] = {}  # usable objects' order
        self._written: frozenset[tuple[str, str]] | None = None
        self._frames: dict[str, Counter] = {}
        self._frame_totals: dict[str, int] = {}  # uses of each object after any frame
        self._partner_index: dict[tuple[str, str, str], tuple[str, ...]] | None = None
        self._partner_cache: dict[tuple[str, str, str], frozenset[str | None]] = {}
        self._surfaces: dict[tuple[str, bool], str | None] = {}
        self._category_counts: dict[str | None, Counter] = {}
        self._object_category_counts: dict[str, Counter] = {}
        self._category_triples: Counter | None = None
        self._category_postures: dict[str | None, dict[str, frozenset[str]]] = {}
        self._person = self.category("man")
        self._category_colours: dict[str | None, Counter] | None = None
        self._category_values: dict[str | None, dict[str, set[str]]] | None = None
        self._noun_colours: dict[str, Counter] = {}
        self._people_acts: Counter | None = None
        self._people_places: Counter | None = None
        self._verb_noun_index: dict[str, frozenset[str]] | None = None

    def refuse(self, rule: str, unit: bool = False) -> None:
        """Count one refusal in :attr:`trace` (a unit as a whole, or one substitute)."""
        if self.trace is not None:
            (self.trace.units if unit else self.trace.candidates)[rule] += 1

    def prepare(self) -> None:
        """Build the lookup tables now (before worker processes fork, so they share them)."""
        _ = self.scenes.index
        self.usable_objects(None, False)
        self.written_relations()
        self.object_frames()
        self.partners()
        self._verb_nouns()
        self.colour_table()
        self.value_nouns()
        self.acts_of("person")
        self.people_places()
        self.category_triples()
        self.object_category_predicates("man")
        self.wordnet.related("dog", "cat")
        self.wordnet.warm(*self._frequent_words())

    def _frequent_words(self) -> tuple[list[str], list[str], list[str]]:
        """The corpus's most frequent object nouns, one-word attribute values and verbs
        (:data:`WARM_WORDS` of each at most, by mentions; ties by name): what planning asks
        WordNet about most (:meth:`prepare`)."""
        index = self.scenes.index
        nouns: Counter = Counter()
        for number in (False, True):
            nouns.update(dict(index["objects_by_number"][number].items()))
        values = {v: len(p) for v, p in index["objects_with_attribute"].items() if " " not in v}
        verbs: Counter = Counter()
        for (verb, _), count in self.scenes.verb_object.items():
            verbs[verb] += count

        def most(counts) -> list[str]:
            ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
            return [word for word, _ in ranked[:WARM_WORDS]]

        return most(nouns), most(values), most(verbs)

    # --------------------------------------------------------------- words
    def category(self, noun: str) -> str | None:
        """The substitution category of a noun: its ``noun_classes`` class, else WordNet's."""
        return self.noun_classes.get(noun) or self.wordnet.category(noun)

    def is_person(self, name: str) -> bool:
        """People of any kind ("man", "skier", "person", "people", "female")."""
        return name in PEOPLE_WORDS or self.category(name) == self._person

    def similar_attributes(self, a: str, b: str) -> bool:
        """Whether two attribute values mean about the same ("small", "little")."""
        return " " not in a and " " not in b and self.wordnet.related(a, b, "a")

    # ------------------------------------------------------------- objects
    def usable_objects(self, category: str | None, plural: bool) -> dict[str, float]:
        """Objects of one category and number that may be substitutes at all, with their
        corpus counts (computed once per category and number). Colour words used as nouns
        are also grouped under :data:`COLOUR_CATEGORY`."""
        key = (category, plural)
        found = self._by_category.get(key)
        if found is None:
            if not self._by_category:  # first call: sort every object name once
                for number in (False, True):
                    for other, count in self.scenes.index["objects_by_number"][number].items():
                        if count < self.min_count or not self.substitute_ok(other):
                            continue
                        group = (self.category(other), number)
                        self._by_category.setdefault(group, {})[other] = count
                        if attribute_class(other) == "colour":
                            colours = self._by_category.setdefault((COLOUR_CATEGORY, number), {})
                            colours[other] = count
            found = self._by_category.setdefault(key, {})
        return found

    def substitute_ok(self, name: str) -> bool:
        """Whether an object name may ever be a substitute: an editable common noun, not
        generic, not a proper name, not too general to be false (depth <= 7)."""
        if not editable_words(name) or name in GENERIC_NOUNS or not name.replace(" ", "").isalpha():
            return False
        if name in self.noun_classes:
            return True
        if self.wordnet.is_name(name):
            return False  # "in this city" -> not "in this brazil"
        depth = self.wordnet.depth(name)
        return depth is None or depth > 7  # too general to be false ("instrument", "device")

    def substitute_surface(self, name: str, plural: bool) -> str | None:
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
                and not (  # a plural written as the singular ("racquet" tagged NNS once)
                    plural
                    and surface == self.scenes.surface(name, False)
                    and surface.split()[-1] not in ZERO_PLURALS
                )
                and not self.wordnet.is_activity(name.split()[-1])
                and not self.scenes.verb_like(name)
            )
            self._surfaces[key] = surface if ok else None
        return self._surfaces[key]

    def attests(self, pool: Counter, verb: str | None, other: str) -> bool:
        """Whether ``other`` may fill a pool's slot: the pool attests it, or (a subject pool,
        ``verb`` its predicate's lemma) the corpus names ``other`` with that verb in at least
        :data:`VERB_BACKOFF_MIN` captions: a frame backs off to its verb ("a girl dancing
        inside" -> "a boy": boys dance, if never "inside" in the corpus)."""
        return other in pool or (verb is not None and other in self._verb_nouns().get(verb, ()))

    def admitted(
        self, category: str | None, plural: bool, pools: list[Counter], verbs: list[str | None]
    ) -> list[tuple[str, float]]:
        """The :meth:`usable_objects` of ``category`` and number that every pool admits
        (:meth:`attests`: in the pool, or named with its verb often enough), with their
        counts, in :meth:`usable_objects`' order; all of them without pools. Walks the
        smallest of the usable objects and the pools (a pool may hold thousands)."""
        usable = self.usable_objects(category, plural)
        verb_nouns = self._verb_nouns()
        empty: frozenset[str] = frozenset()
        terms = [
            (pool, empty if verb is None else verb_nouns.get(verb, empty))
            for pool, verb in zip(pools, verbs)
        ]
        if not terms:
            return list(usable.items())

        def fits(name: str) -> bool:
            return all(name in pool or name in nouns for pool, nouns in terms)

        pool, nouns = min(terms, key=lambda t: len(t[0]) + len(t[1]))
        if len(pool) + len(nouns) >= len(usable):
            return [(o, c) for o, c in usable.items() if fits(o)]
        found = {o for part in (pool, nouns) for o in part if o in usable and fits(o)}
        rank = self._ranks.get((category, plural))
        if rank is None:
            rank = self._ranks[category, plural] = {o: i for i, o in enumerate(usable)}
        return [(o, usable[o]) for o in sorted(found, key=rank.__getitem__)]

    def _verb_nouns(self) -> dict[str, frozenset[str]]:
        """Per verb, the objects the corpus names with it in at least
        ``max(min_count, VERB_BACKOFF_MIN)`` captions (built once)."""
        if self._verb_noun_index is None:
            least = max(self.min_count, VERB_BACKOFF_MIN)
            index: dict[str, set[str]] = {}
            for (verb, noun), count in self.scenes.verb_object.items():
                if count >= least:
                    index.setdefault(verb, set()).add(noun)
            self._verb_noun_index = {v: frozenset(n) for v, n in index.items()}
        return self._verb_noun_index

    def frame_fits(self, substitute: str, original: str, predicates: list[str]) -> bool:
        """Whether ``substitute`` follows each of ``predicates``' prepositions about as
        readily as the original does: that frame's share of the substitute's uses as an
        object is at least :data:`FRAME_MIN_RATIO` of the original's share ("in a park" is
        usual, "on a park" rare; "standing on" counts as "on"). Objects seen fewer than
        :data:`FRAME_MIN_USES` times pass (too little evidence)."""
        frames = self.object_frames()
        new, old = frames.get(substitute), frames.get(original)
        if not new or not old:
            return True
        totals = self._frame_totals
        new_total = totals.get(substitute)
        if new_total is None:
            new_total = totals[substitute] = sum(new.values())
        old_total = totals.get(original)
        if old_total is None:
            old_total = totals[original] = sum(old.values())
        if new_total < FRAME_MIN_USES:
            return True
        return all(
            new[frame_of(p)] / new_total >= FRAME_MIN_RATIO * old[frame_of(p)] / old_total
            for p in predicates
        )

    def roles_fit(
        self, substitute: str, roles: list[tuple[str, str, str]], original: str | None = None
    ) -> bool:
        """Whether ``substitute`` enters every ``(role, predicate, other)`` relation of the
        original with ``other`` itself or with an object of ``other``'s category: as the
        subject of ``(X, predicate, other)`` or the object of ``(other, predicate, X)``. The
        category backs the triple off where a corpus is sparse ("a woman holding a fan" ->
        "a frisbee": some person holds one), and keeps scenes no writer would make ("a
        child in a bottle", "the anchors on a cart"). An ``other`` without a category needs
        the triple itself. With ``sibling_backoff`` and the ``original`` noun given, the
        substitute's near kinds may attest a relation it is never in (graded: weighted by
        similarity, as a share of its mentions next to the original's)."""
        for role, predicate, other in roles:
            if role == "subject":
                triple = (substitute, predicate, other)
                key = ("object", substitute, predicate)
            else:
                triple = (other, predicate, substitute)
                key = ("subject", predicate, substitute)
            if self.scenes.triples.get(triple):
                continue
            if predicate == "have" and (role == "subject" or not self.is_person(other)):
                # a thing's part is attested for that thing, not its kind ("the roof of a
                # car" -> not "of a motorbike", "the leg of a sheep" -> not "arm"); what a
                # person has ("his bike", "her couch") backs off as other relations do
                return False
            category = self.category(other)
            if category is not None and category in self.partner_categories(key):
                continue
            if not (
                category is not None
                and original
                and self._siblings_fit(substitute, original, role, predicate, category)
            ):
                return False
        return True

    def _siblings_fit(
        self, substitute: str, original: str, role: str, predicate: str, category: str
    ) -> bool:
        """With ``sibling_backoff``: whether the substitute's near kinds enter the relation
        with arguments of ``category`` about as often as the original does
        (:meth:`SiblingBackoff.fits <tags.negatives.backoff.SiblingBackoff.fits>`)."""
        if not self.sibling_backoff:
            return False
        if self._siblings is None:
            index = self.scenes.index["objects_by_number"]
            mentions = Counter(index[False])
            mentions.update(index[True])
            similarity = wordnet_similarity(self.wordnet)
            self._siblings = SiblingBackoff(similarity, self.category, mentions)
            self._role_pools = RolePools(self.scenes.triples, self.category)
        pool = self._role_pools.pool(role, predicate, category)
        return self._siblings.fits(substitute, original, pool)

    def partner_categories(self, key: tuple[str, str, str]) -> frozenset[str | None]:
        """The categories of the arguments the corpus puts in relation ``key``: ``("subject",
        predicate, object)`` -> the subjects' categories, ``("object", subject, predicate)``
        -> the objects' (cached per key)."""
        found = self._partner_cache.get(key)
        if found is None:
            names = self.partners().get(key, ())
            found = self._partner_cache[key] = frozenset(self.category(n) for n in names)
        return found

    def partners(self) -> dict[tuple[str, str, str], tuple[str, ...]]:
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

    def object_frames(self) -> dict[str, Counter]:
        """Per object, how often it follows each frame (computed once)."""
        if not self._frames:
            for obj, predicates in self.scenes.index["predicates_of_object"].items():
                frame = self._frames.setdefault(obj, Counter())
                for predicate, count in predicates.items():
                    frame[frame_of(predicate)] += count
        return self._frames

    def colours(self, noun: str) -> Counter:
        """The colour values the corpus gives ``noun``, with counts (cached)."""
        found = self._noun_colours.get(noun)
        if found is None:
            attributes = self.scenes.index["attributes_of_object"].get(noun, {})
            found = Counter({v: c for v, c in attributes.items() if attribute_class(v) == "colour"})
            self._noun_colours[noun] = found
        return found

    def colour_count(self, value: str, noun: str) -> float:
        """The smoothed count of colour ``value`` for ``noun``: its own mentions plus
        :data:`COLOUR_PRIOR` times the value's share among the colours of the other nouns
        of its substitution category (0 from the category when it has none)."""
        own = self.colours(noun)
        category = self.category(noun)
        pooled = self.colour_table().get(category, Counter()) if category else Counter()
        voice = _capped(own)
        total = sum(pooled.values()) - sum(voice.values())
        share = (pooled.get(value, 0) - voice.get(value, 0)) / total if total > 1e-9 else 0.0
        return own.get(value, 0) + COLOUR_PRIOR * max(share, 0.0)

    def colour_table(self) -> dict[str | None, Counter]:
        """Per substitution category, the colours the corpus gives its nouns, each noun's
        counts capped at :data:`COLOUR_NOUN_CAP` mentions in all (computed once)."""
        if self._category_colours is None:
            table: dict[str | None, Counter] = {}
            for name in self.scenes.index["attributes_of_object"]:
                own = self.colours(name)
                if own:
                    table.setdefault(self.category(name), Counter()).update(_capped(own))
            self._category_colours = table
        return self._category_colours

    def colour_fits(self, value: str, noun: str) -> bool:
        """Whether ``value`` is a plausible colour of ``noun`` by its category-smoothed count
        (:meth:`colour_count`): at least ``min_count`` mentions and :data:`COLOUR_MIN_SHARE`
        of the noun's smoothed colour mentions ("a white toilet" -> not "a blue toilet" from
        one blue sink; "a brown duck" -> "a white duck": white birds)."""
        count = self.colour_count(value, noun)
        total = sum(self.colours(noun).values()) + COLOUR_PRIOR
        return count >= self.min_count and count >= COLOUR_MIN_SHARE * total

    def category_colours(self, noun: str) -> frozenset[str]:
        """Colour values any other noun of ``noun``'s category is given (candidates for
        :meth:`colour_fits`)."""
        category = self.category(noun)
        return frozenset(self.colour_table().get(category, ())) if category else frozenset()

    def value_nouns(self) -> dict[str | None, dict[str, set[str]]]:
        """Per substitution category and per WordNet lexicographer file (keys
        ``"file:noun.artifact"``), each attribute value and the nouns the corpus gives it
        (one mention is enough: the evidence is how many nouns of the kind take the value;
        with ``min_count`` mentions a noun, "short" was too rare for "a long hallway" -> "a
        short hallway" or "an old trunk" -> "a new trunk"; computed once)."""
        if self._category_values is None:
            table: dict[str | None, dict[str, set[str]]] = {}
            for name, values in self.scenes.index["attributes_of_object"].items():
                classes = (self.category(name), f"file:{self.wordnet.lexname(name)}")
                for value in values:
                    for key in classes:
                        table.setdefault(key, {}).setdefault(value, set()).add(name)
            self._category_values = table
        return self._category_values

    def antonym_fits(self, value: str, antonym: str, noun: str) -> int:
        """How many other nouns of ``noun``'s kind the corpus gives both ``value`` and its
        ``antonym`` (a scale the kind takes both ways: "full" / "empty" plates, cups and
        boxes, but not "full" / "empty" gear): of its category, when at least
        :data:`ANTONYM_MIN_NOUNS`, else of its lexicographer file ("noun.food"), when at
        least :data:`ANTONYM_MIN_FILE_NOUNS`; else 0."""
        table = self.value_nouns()
        for key, least in (
            (self.category(noun), ANTONYM_MIN_NOUNS),
            (f"file:{self.wordnet.lexname(noun)}", ANTONYM_MIN_FILE_NOUNS),
        ):
            values = table.get(key, {})
            nouns = len(values.get(value, set()) & values.get(antonym, set()) - {noun})
            if nouns >= least:
                return nouns
        return 0

    # ----------------------------------------------------------- relations
    def category_predicates(self, subject: str) -> Counter:
        """How often people take each predicate when ``subject`` is a person (WordNet
        category), else nothing (cached)."""
        if not self.is_person(subject):
            return Counter()  # only people: any of them may sit, stand, walk...
        category = self._person
        found = self._category_counts.get(category)
        if found is None:
            found = Counter()
            if category is not None:
                for name, predicates in self.scenes.index["predicates_of_subject"].items():
                    if self.is_person(name):
                        found.update(predicates)
            self._category_counts[category] = found
        return found

    def acts_of(self, subject: str) -> Counter:
        """The bare acts (-ing attributes: "smiling", "running") the corpus gives ``subject``,
        backed off to all people when it is a person (as :meth:`category_predicates`;
        cached)."""
        own = self.scenes.index["attributes_of_object"].get(subject, Counter())
        if not self.is_person(subject):
            return Counter({v: c for v, c in own.items() if is_act(v)})
        if self._people_acts is None:
            found: Counter = Counter()
            for name, values in self.scenes.index["attributes_of_object"].items():
                if self.is_person(name):
                    found.update({v: c for v, c in values.items() if is_act(v)})
            self._people_acts = found
        return self._people_acts

    def object_category_predicates(self, obj: str) -> Counter:
        """How often the corpus puts each predicate before an object of ``obj``'s category
        (cached per category); nothing for an object without one ("in front of a cottage"
        backs off to houses: see ``replace_relation``'s landmarks)."""
        category = self.category(obj)
        if category is None:
            return Counter()
        if not self._object_category_counts:  # every category in one pass over the objects
            by_category: dict[str, Counter] = defaultdict(Counter)
            for name, predicates in self.scenes.index["predicates_of_object"].items():
                found = self.category(name)
                if found is not None:
                    by_category[found].update(predicates)
            self._object_category_counts = dict(by_category)
        return self._object_category_counts.get(category, Counter())

    def category_triple(self, subject: str, predicate: str, obj: str) -> int:
        """How often the corpus relates a thing of ``subject``'s WordNet category to one of
        ``obj``'s by ``predicate`` ("a dish under a tray": tableware under tableware); 0 when
        either has no category."""
        cs, co = self.category(subject), self.category(obj)
        if cs is None or co is None:
            return 0
        return self.category_triples().get((cs, predicate, co), 0)

    def people_places(self) -> Counter:
        """How often the corpus puts a person subject in each ``(predicate, object)``
        relation ("in", "restaurant"; built once)."""
        if self._people_places is None:
            table: Counter = Counter()
            for (s, p, o), n in self.scenes.triples.items():
                if self.is_person(s):
                    table[(p, o)] += n
            self._people_places = table
        return self._people_places

    def category_triples(self) -> Counter:
        """The corpus's triples counted by their arguments' categories (built once)."""
        if self._category_triples is None:
            table: Counter = Counter()
            for (s, p, o), n in self.scenes.triples.items():
                cs, co = self.category(s), self.category(o)
                if cs is not None and co is not None:
                    table[(cs, p, co)] += n
            self._category_triples = table
        return self._category_triples

    def postures(self, subject: str) -> dict[str, frozenset[str]]:
        """The posture and locomotion predicates of :meth:`category_predicates` by their
        particle ("on" -> {"sit on", "stand on", ...}; cached)."""
        category = self._person if self.is_person(subject) else None
        found = self._category_postures.get(category)
        if found is None:
            by_particle: dict[str, set[str]] = {}
            for p in self.category_predicates(subject):
                if p.split()[0] in EXCLUSIVE_VERBS:
                    by_particle.setdefault(" ".join(p.split()[1:]), set()).add(p)
            found = {k: frozenset(v) for k, v in by_particle.items()}
            self._category_postures[category] = found
        return found

    def written_relations(self) -> frozenset[tuple[str, str]]:
        """``(predicate, surface)`` of every relation the corpus writes (computed once)."""
        if self._written is None:
            self._written = frozenset(
                (predicate, " ".join(surface)) for predicate, surface, _ in self.scenes.relations
            )
        return self._written

    # -------------------------------------------------------------- fluency
    def fluent(
        self, text: str, spans: tuple, choices: tuple[Choice, ...], floor: float = -math.inf
    ) -> tuple[Choice, ...]:
        """Reweight by how well each substitute fits its neighbours under the corpus's bigram
        model, relative to the original: ``weight * exp(fluency * delta)`` (delta clipped to
        [-10, 2]), so a negative reads as naturally as its positive; substitutes with a
        delta below ``floor`` are dropped."""
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
                self.refuse("object:bigram_fluency")
                continue  # far less natural than the original ("into the lime")
            factor = math.exp(self.fluency * min(max(delta, -10.0), 2.0))
            out.append(Choice(choice.surface, choice.weight * factor, choice.operation))
        return tuple(sorted(out, key=lambda c: (-c.weight, c.surface)))


__all__ = [
    "COLOUR_CATEGORY",
    "COLOUR_MIN_SHARE",
    "COLOUR_NOUN_CAP",
    "COLOUR_PRIOR",
    "MIN_VERB_FIT",
    "SceneEvidence",
    "Trace",
    "frame_of",
    "is_act",
]
