"""What the corpus's scene graphs attest: the plausibility side of an edit.

:class:`SceneCounts` counts, over every parsed caption of a corpus, the object surfaces (with
grammatical number), the relation surfaces (with their Penn-tag shape, e.g. ``VBG IN`` for
"sitting on"), the attribute surfaces, and the combinations they occur in:
``(attribute, object)``, ``(subject, predicate, object)``, ``(subject, predicate)`` and
``(predicate, object)``. An edit is plausible when the combinations it creates are attested
(see :mod:`tags.negatives.planner`), and the objects a caption names together (whether a
substitute fits the rest of its scene). Everything is keyed by canonical names (lemmas), so "dogs
sitting" and "a dog sits" count together.

Word knowledge comes from below: closed classes from :mod:`tags.negatives.lexicon`, verb
lemmas from :func:`tags.negatives.wordnet.verb_lemma` (re-exported here).

Imports: :mod:`parsers` (the scene graph, :mod:`parsers.morphology`),
:mod:`tags.negatives.lexicon` and :mod:`tags.negatives.wordnet`; nothing above them.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from parsers import SceneGraph
from parsers.morphology import ZERO_PLURALS
from tags.negatives.lexicon import AUXILIARY_VERBS, NUMBER_VALUES, PLURAL_CUES
from tags.negatives.store import SummedCounts, SummedGroups, grouped_sections
from tags.negatives.wordnet import verb_lemma

_WORD = re.compile(r"\w+(?:['’]\w+)*")


def words_of(text: str) -> list[str]:
    """Lower-cased words (punctuation dropped)."""
    return _WORD.findall(text.lower())


#: The most entries a query memo of :class:`SceneCounts` keeps before it starts afresh.
_MEMO_SIZE = 1 << 17

#: Tags of a plural noun head.
PLURAL_TAGS = frozenset({"NNS", "NNPS"})

#: The lift (log) above which a context object or verb counts as a cue of the original's
#: scene (:meth:`SceneCounts.shares_scene`): half again as often as chance.
_LIFT = math.log(1.5)

#: Two verbs exclude each other (:meth:`SceneCounts.verbs_exclusive`) when the captions of one
#: image pair them at most this share of chance ...
EXCLUSIVE_LIFT = 0.25
#: ... and chance expects at least this many such pairs (else too little evidence).
EXCLUSIVE_EXPECTED = 5.0


def verbs_of(graph: SceneGraph) -> tuple[str, ...]:
    """The distinct verb lemmas of a caption (auxiliaries left out), sorted: what its objects
    are doing or having done to them ("throwing" in "a pitcher throwing the ball")."""
    out = set()
    for start, end, tag in graph.tokens:
        if tag.startswith("VB"):
            lemma = verb_lemma(graph.caption[start:end])
            if lemma.isalpha() and lemma not in AUXILIARY_VERBS:
                out.add(lemma)
    return tuple(sorted(out))


def normal(text: str) -> str:
    """Lower-cased, whitespace-collapsed text."""
    return " ".join(text.lower().split())


def shape(tags: list[str]) -> str:
    """A relation's tag shape ("VBG IN"); particles and adverbs merge into ``RP``."""
    return " ".join("RP" if t in {"RP", "RB", "TO"} else t for t in tags)


def relation_surface(graph: SceneGraph, spans: tuple[tuple[int, int], ...]) -> tuple[str, ...]:
    return tuple(normal(graph.caption[s:e]) for s, e in spans)


def relation_shape(graph: SceneGraph, spans: tuple[tuple[int, int], ...]) -> str:
    return " | ".join(shape(graph.tags_in(span)) for span in spans)


def is_plural(graph: SceneGraph, span: tuple[int, int]) -> bool:
    """Number of an object from the tag of its head (last) token; a zero-plural noun
    (:data:`ZERO_PLURALS`) after a count of two or more, a quantifier or a collective's "of"
    is plural ("a herd of sheep" -> "a herd of horses", not "of horse")."""
    tags = graph.tags_in(span)
    if not tags:
        return False
    zero_plural = graph.caption[span[0] : span[1]].split()[-1].lower() in ZERO_PLURALS
    if tags[-1] in PLURAL_TAGS and not (zero_plural and _after_indefinite_article(graph, span)):
        return True  # (the tagger may call "a sheep grazing" plural: the article says one)
    if not zero_plural:
        return False
    if _bare_inside(graph, span):
        return True  # "people looking at sheep in pens": one sheep would take an article
    before = [graph.caption[s:e].lower() for s, e, _ in graph.tokens if e <= span[0]][-4:]
    if before and before[-1] == "of":
        before = before[:-1]
    before = [w for w in before if w not in ("a", "an", "the")]
    word = before[-1] if before else ""
    return (
        word in PLURAL_CUES
        or (word.isdigit() and int(word) >= 2)
        or (NUMBER_VALUES.get(word, 0) >= 2)
    )


#: Tags of the words between an article and its head noun ("a black *sheep*").
_MODIFIER_TAGS = frozenset({"JJ", "JJR", "JJS", "VBN", "VBG", "NN", "RB", "CD"})
#: Tags that open a noun phrase with a determiner, a possessive or a count.
_DETERMINER_TAGS = frozenset({"DT", "PDT", "PRP$", "POS", "CD", "WDT", "WP$"})


def _opener(graph: SceneGraph, span: tuple[int, int]) -> tuple[str, str] | None:
    """The word and tag before the phrase of the head at ``span``, past its modifiers
    (``None`` where the phrase opens the caption)."""
    before = [(graph.caption[s:e].lower(), t) for s, e, t in graph.tokens if e <= span[0]]
    while before and before[-1][1] in _MODIFIER_TAGS:
        before.pop()
    return before[-1] if before else None


def _after_indefinite_article(graph: SceneGraph, span: tuple[int, int]) -> bool:
    """Whether the phrase of the head at ``span`` opens with "a" / "an"."""
    opener = _opener(graph, span)
    return opener is not None and opener[0] in ("a", "an")


def _bare_inside(graph: SceneGraph, span: tuple[int, int]) -> bool:
    """Whether the phrase of the head at ``span`` has no determiner, possessive or count and
    does not open the caption ("looking at *sheep*"; not "A sheep", "his sheep", "Sheep
    grazing", which may be headline style)."""
    opener = _opener(graph, span)
    return opener is not None and opener[1] not in _DETERMINER_TAGS


def _most_common(counts: Counter) -> Any:
    """The most frequent key; ties go to the smallest (independent of insertion order)."""
    return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def is_bare(graph: SceneGraph, entity) -> bool:
    """A singular noun phrase with nothing before its head inside the caption ("in water";
    not a caption-initial "Man on a bench", which is headline style)."""
    span = entity.span or entity.head_span
    if span is None or span[0] == 0:
        return False
    before = [t for s, e, t in graph.tokens if e <= entity.head_span[0]]
    return (
        span[0] == entity.head_span[0]
        and bool(before)
        and before[-1] not in {"DT", "PRP$", "CD", "JJ", "POS", "NN", "NNS", "HYPH", "PDT", "WP$"}
    )


@dataclass
class SceneCounts:
    """Counts of scene-graph surfaces and combinations (see the module docstring)."""

    #: (name, surface, plural) of object mentions.
    objects: Counter = field(default_factory=Counter)
    #: Names of singular objects written without a determiner inside the caption
    #: ("buying fish", "in water"): mass-noun use.
    bare: Counter = field(default_factory=Counter)
    #: (value, surface) of attributes.
    attributes: Counter = field(default_factory=Counter)
    #: Lower-cased words and word pairs of the captions ("<s>"/"</s>" at the ends): a
    #: bigram model of the corpus, for how well a substitute fits its neighbours.
    unigrams: Counter = field(default_factory=Counter)
    bigrams: Counter = field(default_factory=Counter)
    #: (predicate, surface tuple, tag shape) of relation mentions.
    relations: Counter = field(default_factory=Counter)
    attribute_object: Counter = field(default_factory=Counter)
    triples: Counter = field(default_factory=Counter)
    subject_predicate: Counter = field(default_factory=Counter)
    predicate_object: Counter = field(default_factory=Counter)
    #: (name, name) of two different objects in one caption (sorted): which things the
    #: corpus shows together, for whether a substitute fits the rest of the scene.
    cooccurrence: Counter = field(default_factory=Counter)
    #: Captions per verb lemma, and (verb lemma, object name) of one caption: which things
    #: the corpus's actions involve ("throw" with "ball", never with "computer keyboard").
    verbs: Counter = field(default_factory=Counter)
    verb_object: Counter = field(default_factory=Counter)
    #: Several captions of one image (:meth:`add_group`): grouped captions naming an object
    #: (``"<s>"``: all grouped captions), grouped captions whose sibling captions name it, and
    #: (name, other) with ``name`` in a caption and ``other`` in a sibling of it: the names
    #: writers give the same thing or place ("street" / "alley", "water" / "ocean").
    grouped: Counter = field(default_factory=Counter)
    sibling: Counter = field(default_factory=Counter)
    codescription: Counter = field(default_factory=Counter)
    #: The same for verb lemmas (``"<s>"`` in ``verb_grouped``: all grouped captions, kept
    #: apart from ``grouped`` so a verb-only table, the built-in background's, can be added):
    #: grouped captions using a verb, grouped captions whose siblings use it, and (verb,
    #: other) across sibling captions: which acts writers see in one image
    #: (:meth:`verbs_exclusive`).
    verb_grouped: Counter = field(default_factory=Counter)
    verb_sibling: Counter = field(default_factory=Counter)
    verb_codescription: Counter = field(default_factory=Counter)
    _index: dict[str, Any] | None = field(default=None, init=False, repr=False)
    #: WordNet's answers for the words of these counts, when read from a counts store that
    #: keeps them (:class:`WordFacts`); the planner asks WordNet itself otherwise.
    facts: Any = field(default=None, init=False, repr=False, compare=False)
    #: The planner's index as a counts store keeps it (:meth:`index_tables`: name -> a
    #: mapped :class:`~tags.negatives.store.GroupedTable` or table), plus the background
    #: counts merged in (:meth:`merged`); ``None``: the index is built from the counts.
    stored_index: Any = field(default=None, init=False, repr=False, compare=False)
    _background: Any = field(default=None, init=False, repr=False, compare=False)

    # ---------------------------------------------------------------- building
    def add_graph(self, graph: SceneGraph) -> None:
        """Count one parsed caption (graphs without token tags count no surfaces)."""
        tokens = ["<s>", *words_of(graph.caption), "</s>"]
        self.unigrams.update(tokens)
        self.bigrams.update(f"{a} {b}" for a, b in itertools.pairwise(tokens))
        names = [e.name.lower() for e in graph.entities]
        self.cooccurrence.update(itertools.combinations(sorted(set(names)), 2))
        verbs = verbs_of(graph)
        self.verbs.update(verbs)
        self.verb_object.update((v, n) for v in verbs for n in sorted(set(names)))
        for entity, name in zip(graph.entities, names):
            if entity.head_span is not None and graph.tokens:
                surface = normal(graph.caption[slice(*entity.head_span)])
                plural = is_plural(graph, entity.head_span)
                self.objects[(name, surface, plural)] += 1
                if not plural and is_bare(graph, entity):
                    self.bare[name] += 1
        for attribute in graph.attributes:
            self.attribute_object[(attribute.value, names[attribute.entity])] += 1
            if attribute.span is not None:
                self.attributes[
                    (attribute.value, normal(graph.caption[slice(*attribute.span)]))
                ] += 1
        for relation in graph.relations:
            subject, obj = names[relation.subject], names[relation.object]
            predicate = relation.predicate
            self.triples[(subject, predicate, obj)] += 1
            self.subject_predicate[(subject, predicate)] += 1
            self.predicate_object[(predicate, obj)] += 1
            if relation.spans and graph.tokens:
                surface = relation_surface(graph, relation.spans)
                self.relations[(predicate, surface, relation_shape(graph, relation.spans))] += 1
        self._index = None

    def add_group(self, graphs: Sequence[SceneGraph]) -> None:
        """Count which objects the captions of one image name across captions (call
        :meth:`add_graph` for each caption as well); a group of one counts nothing."""
        if len(graphs) < 2:
            return
        names = [{e.name.lower() for e in graph.entities} for graph in graphs]
        for i, own in enumerate(names):
            others = set().union(*(n for j, n in enumerate(names) if j != i))
            self.grouped.update(["<s>", *own])
            self.sibling.update(others)
            self.codescription.update((a, b) for a in own for b in others if a != b)
        verbs = [set(verbs_of(graph)) for graph in graphs]
        for i, own in enumerate(verbs):
            others = set().union(*(v for j, v in enumerate(verbs) if j != i))
            self.verb_grouped.update(["<s>", *own])
            self.verb_sibling.update(others)
            self.verb_codescription.update((a, b) for a in own for b in others if a != b)
        self._index = None

    def merged(self, other: SceneCounts) -> SceneCounts:
        """A new :class:`SceneCounts` holding both corpora's counts (``self`` + a background
        corpus): substitutes and combinations attested in either count. Counts mapped from
        a store (:mod:`tags.negatives.store`) are not copied: each table of the result is
        a :class:`~tags.negatives.store.SummedCounts` view of the two (same values, same
        order of keys)."""
        out = SceneCounts()
        out.facts = self.facts
        if all(isinstance(getattr(self, name), Counter) for name in self._FIELDS):
            out.update(self)
            out.update(other)
            return out
        for name in self._FIELDS:
            setattr(out, name, SummedCounts(getattr(self, name), getattr(other, name)))
        if self.stored_index is not None and self._background is None:
            out.stored_index, out._background = self.stored_index, other
        return out

    def update(self, other: SceneCounts) -> None:
        """Add ``other``'s counts to these (in place): counting two parts of a corpus and
        adding them gives the counts of the whole (:mod:`tags.negatives.counts`)."""
        for name in self._FIELDS:
            getattr(self, name).update(getattr(other, name))
        self._index = None

    # ---------------------------------------------------------------- queries
    @property
    def index(self) -> dict[str, Any]:
        """Lookup tables built on first use (and after every update); from a counts store
        that keeps them, views of its mapped tables (:meth:`index_tables`), summed with the
        background's as building them from the summed counts would (the same counts, the
        same order)."""
        if self._index is None:
            if self.stored_index is not None:
                self._index = self._mapped_index()
            else:
                self._index = self._built_index()
        return self._index

    def index_tables(self) -> dict[str, Any]:
        """The index (:attr:`index`, built from these counts) as the tables a counts store
        keeps: ``index/NAME`` (and ``index/NAME/groups`` for a table of groups)."""
        index = self._built_index()
        tables: dict[str, Any] = {}
        for name in INDEX_GROUPS:
            tables.update(grouped_sections(f"index/{name}", index[name]))
        for name in INDEX_FLAT:
            tables[f"index/{name}"] = index[name]
        return tables

    def _mapped_index(self) -> dict[str, Any]:
        stored = self.stored_index
        background = None if self._background is None else self._background.index
        index: dict[str, Any] = {}
        for name in INDEX_GROUPS:
            table = stored[name]
            index[name] = table if background is None else SummedGroups(table, background[name])
        for name in INDEX_FLAT:
            table = stored[name]
            if background is None:
                index[name] = table
            elif name == "followers":  # distinct pairs: the background's own pairs add
                extra = Counter(pair.split(" ", 1)[0] for pair in self.bigrams._extra())
                index[name] = SummedCounts(table, extra)
            else:
                index[name] = SummedCounts(table, background[name])
        index["total"] = sum(self.unigrams.values())
        index["memos"] = {}
        return index

    def _built_index(self) -> dict[str, Any]:
        objects_by_number: dict[bool, Counter] = defaultdict(Counter)
        surfaces: dict[tuple[str, bool], Counter] = defaultdict(Counter)
        object_totals: Counter = Counter()  # both numbers (:meth:`object_count`)
        for (name, surface, plural), count in self.objects.items():
            objects_by_number[plural][name] += count
            surfaces[(name, plural)][surface] += count
            object_totals[name] += count
        by_attribute: dict[str, Counter] = defaultdict(Counter)
        attrs_by_object: dict[str, Counter] = defaultdict(Counter)
        for (value, name), count in self.attribute_object.items():
            by_attribute[value][name] += count
            attrs_by_object[name][value] += count
        subjects_of: dict[str, Counter] = defaultdict(Counter)
        preds_of_subject: dict[str, Counter] = defaultdict(Counter)
        for (subject, predicate), count in self.subject_predicate.items():
            subjects_of[predicate][subject] += count
            preds_of_subject[subject][predicate] += count
        objects_of: dict[str, Counter] = defaultdict(Counter)
        preds_of_object: dict[str, Counter] = defaultdict(Counter)
        for (predicate, obj), count in self.predicate_object.items():
            objects_of[predicate][obj] += count
            preds_of_object[obj][predicate] += count
        relation_surfaces: dict[tuple[str, str], Counter] = defaultdict(Counter)
        for (predicate, surface, tag_shape), count in self.relations.items():
            relation_surfaces[(tag_shape, predicate)][surface] += count
        attribute_surface: dict[str, Counter] = defaultdict(Counter)
        for (value, surface), count in self.attributes.items():
            attribute_surface[value][surface] += count
        verb_words: Counter = Counter()  # the verb of relation surfaces ("walks down")
        for (_, surface, tag_shape), count in self.relations.items():
            if surface and surface[0] and tag_shape.startswith("VB"):
                verb_words[surface[0].split()[0]] += count
        noun_words: Counter = Counter()  # the last word of object surfaces
        for (_, surface, _), count in self.objects.items():
            if surface:
                noun_words[surface.split()[-1]] += count
        followers: Counter = Counter()
        for pair in self.bigrams:
            followers[pair.split(" ", 1)[0]] += 1
        return {
            "followers": followers,
            "verb_words": verb_words,
            "noun_words": noun_words,
            "total": sum(self.unigrams.values()),
            "objects_by_number": objects_by_number,
            "object_totals": object_totals,
            "surfaces": surfaces,
            "objects_with_attribute": by_attribute,
            "attributes_of_object": attrs_by_object,
            "subjects_of": subjects_of,
            "objects_of": objects_of,
            "predicates_of_subject": preds_of_subject,
            "predicates_of_object": preds_of_object,
            "relation_surfaces": relation_surfaces,
            "attribute_surface": attribute_surface,
            "memos": {},  # of pure queries over these counts (:meth:`memo`)
        }

    def memo(self, name: str) -> dict:
        """A dictionary to cache a pure query over these counts in, by the query's ``name``:
        emptied whenever the counts change (with the index)."""
        memos = (self._index if self._index is not None else self.index)["memos"]
        found = memos.get(name)
        if found is None:
            found = memos[name] = {}
        return found

    def verb_like(self, surface: str) -> bool:
        """Whether the corpus uses the last word of an object surface more often as a verb
        than as an object ("a helmet walks", "sunglasses leans": tagger slips)."""
        word = surface.split()[-1] if surface.split() else surface
        index = self.index
        return index["verb_words"].get(word, 0) > index["noun_words"].get(word, 0)

    def object_count(self, name: str) -> int:
        return self.index["object_totals"].get(name, 0)

    def surface(self, name: str, plural: bool) -> str | None:
        """The most frequent written form of object ``name`` in the given number."""
        forms = self.index["surfaces"].get((name, plural))
        return _most_common(forms) if forms else None

    def bigram_logp(self, previous: str, word: str, discount: float = 0.75) -> float:
        """log P(word | previous): absolute discounting, interpolated with add-one unigrams."""
        memo = self.memo("bigram_logp")
        key = (previous, word, discount)
        found = memo.get(key)
        if found is None:
            if len(memo) >= _MEMO_SIZE:
                memo.clear()
            found = memo[key] = self._bigram_logp(self.index, previous, word, discount)
        return found

    def _bigram_logp(self, index: dict, previous: str, word: str, discount: float) -> float:
        unigram = (self.unigrams.get(word, 0) + 1) / (index["total"] + len(self.unigrams) + 1)
        context = self.unigrams.get(previous, 0)
        if not context:
            return math.log(unigram)
        pair = self.bigrams.get(f"{previous} {word}", 0)
        backoff = discount * index["followers"].get(previous, 0) / context
        return math.log(max(pair - discount, 0) / context + backoff * unigram)

    def fluency_delta(self, text: str, spans: tuple, surfaces: tuple[str, ...]) -> float:
        """How much more (or less, negative) probable the corpus bigram model finds ``text``
        with ``spans`` replaced by ``surfaces``, over the words the change touches."""
        edited, cursor = [], 0
        for (start, end), surface in zip(spans, surfaces):
            edited.append(text[cursor:start])
            edited.append(surface)
            cursor = end
        edited.append(text[cursor:])
        before = self._sentence(text)
        after = ["<s>", *words_of("".join(edited)), "</s>"]
        # the common prefix and suffix add the same terms to both: score the middle only
        head = 0
        while head < min(len(before), len(after)) - 1 and before[head] == after[head]:
            head += 1
        tail = 0
        while (
            tail < min(len(before), len(after)) - head - 1 and before[-1 - tail] == after[-1 - tail]
        ):
            tail += 1
        start = max(head - 1, 0)

        def score(tokens: list[str]) -> float:
            window = tokens[start : len(tokens) - tail + 1]
            return sum(self.bigram_logp(a, b) for a, b in itertools.pairwise(window))

        # the original's score over the same window, asked again for each substitute
        memo = self.memo("fluency_before")
        key = (text, start, tail)
        original = memo.get(key)
        if original is None:
            if len(memo) >= 4096:
                memo.clear()
            original = memo[key] = score(before)
        return score(after) - original

    def _sentence(self, text: str) -> list[str]:
        """``<s>``, the words of ``text``, ``</s>`` (a caption's, asked for each substitute:
        kept for the last few captions). Callers must not change the list."""
        memo = self.memo("sentence")
        found = memo.get(text)
        if found is None:
            if len(memo) >= 64:
                memo.clear()
            found = memo[text] = ["<s>", *words_of(text), "</s>"]
        return found

    def context_logp(
        self, name: str, context: Iterable[str], own: int = 0, prior: float = 5.0
    ) -> float:
        """sum over ``context`` of log P(c in the caption | ``name`` in it), smoothed toward
        P(c) with ``prior`` pseudo-captions (a rarely seen ``name`` proves little either way);
        ``own`` mentions (the caption being edited, when it was counted) are left out."""
        captions = max(self.unigrams.get("<s>", 0), 1)
        mentions = max(self.object_count(name) - own, 0)
        total = 0.0
        for other in context:
            pair = (name, other) if name < other else (other, name)
            together = max(self.cooccurrence.get(pair, 0) - own, 0)
            marginal = (self.object_count(other) + 0.5) / (captions + 1.0)
            total += math.log((together + prior * marginal) / (mentions + prior))
        return total

    def context_delta(self, original: str, substitute: str, context: Iterable[str]) -> float:
        """How much better (positive) or worse ``substitute`` fits the caption's other objects
        than ``original`` does, in nats ("a parachute" next to "a bowling lane": far worse).
        The caption itself is assumed counted (one co-occurrence of the original with each
        context object is its own). 0 for counts without co-occurrences (an old vocabulary)."""
        context = [c for c in context if c not in (original, substitute)]
        if not context or not self.cooccurrence:
            return 0.0
        return self.context_logp(substitute, context) - self.context_logp(original, context, 1)

    def object_lift(self, name: str, other: str, own: int = 0) -> float:
        """log of how much more often than chance captions naming ``name`` also name
        ``other``: (observed + 1) / (expected + 1), 0 without evidence either way (see
        :meth:`verb_lift`)."""
        captions = max(self.unigrams.get("<s>", 0) - own, 1)
        mentions = max(self.object_count(name) - own, 0)
        pair = (name, other) if name < other else (other, name)
        observed = max(self.cooccurrence.get(pair, 0) - own, 0)
        expected = mentions * max(self.object_count(other) - own, 0) / captions
        return math.log((observed + 1.0) / (expected + 1.0))

    def shares_scene(
        self, original: str, substitute: str, context: Iterable[str], verbs: Iterable[str] = ()
    ) -> bool:
        """Whether ``substitute`` is attested in the kind of scene the caption shows: the
        caption's object or verb that goes with ``original`` most above chance (its cue; lift
        >= log 1.5, the caption itself left out) goes with ``substitute`` above chance too.
        True when nothing in the caption is such a cue: "a man reading on the computer at a
        desk" -> "on the typewriter" (seen at desks), not "on the bow"; "an elderly person in
        a wheelchair" -> not "in a highchair"."""
        if not self.cooccurrence:
            return True
        cues = [
            (self.object_lift(original, c, 1), self.object_lift, c)
            for c in context
            if c not in (original, substitute)
        ]
        if self.verb_object:
            cues += [(self.verb_lift(original, v, 1), self.verb_lift, v) for v in verbs]
        if not cues:
            return True
        strength, lift, cue = max(cues, key=lambda item: item[0])
        return strength < _LIFT or lift(substitute, cue) > 0.0

    def codescription_lift(self, name: str, other: str) -> float:
        """log of how much more often than chance captions naming ``name`` have a sibling
        caption of the same image naming ``other``: (observed + 1) / (expected + 1), 0
        without grouped captions. High for two names of one thing or of things seen together
        ("street" / "alley" about log 3 on Flickr30K), below 0 for exclusive scenes ("field" /
        "street")."""
        captions = self.grouped.get("<s>", 0)
        if not captions:
            return 0.0
        observed = self.codescription.get((name, other), 0)
        expected = self.grouped.get(name, 0) * self.sibling.get(other, 0) / captions
        return math.log((observed + 1.0) / (expected + 1.0))

    def verbs_exclusive(self, verb: str, other: str) -> bool:
        """Whether two verbs name acts that exclude each other, by what writers of one image
        say: captions using ``verb`` have a sibling caption using ``other`` at most
        :data:`EXCLUSIVE_LIFT` times as often as chance, with at least
        :data:`EXCLUSIVE_EXPECTED` such siblings expected ("riding" / "walking" a bike;
        "sitting" / "working" are often said of one image). False without grouped captions."""
        captions = self.verb_grouped.get("<s>", 0)
        if not captions:
            return False
        expected = self.verb_grouped.get(verb, 0) * self.verb_sibling.get(other, 0) / captions
        observed = self.verb_codescription.get((verb, other), 0)
        return expected >= EXCLUSIVE_EXPECTED and (observed + 1.0) / (expected + 1.0) <= (
            EXCLUSIVE_LIFT
        )

    def verb_codescription_lift(self, verb: str, other: str) -> float:
        """log of how much more often than chance captions using ``verb`` have a sibling
        caption of the same image using ``other``: (observed + 1) / (expected + 1), 0
        without grouped captions ("jump" / "fly": log 2 on Flickr30K, said of one leap)."""
        memo = self.memo("verb_codescription_lift")
        found = memo.get((verb, other))
        if found is not None:
            return found
        captions = self.verb_grouped.get("<s>", 0)
        if not captions:
            return 0.0
        expected = self.verb_grouped.get(verb, 0) * self.verb_sibling.get(other, 0) / captions
        observed = self.verb_codescription.get((verb, other), 0)
        if len(memo) >= _MEMO_SIZE:
            memo.clear()
        found = memo[(verb, other)] = math.log((observed + 1.0) / (expected + 1.0))
        return found

    def verb_lift(self, name: str, verb: str, own: int = 0) -> float:
        """log of how much more often than chance captions naming ``name`` use ``verb``:
        (observed + 1) / (expected + 1), so no evidence either way is 0 (a rare object, a
        rare verb) and only co-occurrence the corpus shows counts."""
        captions = max(self.unigrams.get("<s>", 0) - own, 1)
        mentions = max(self.object_count(name) - own, 0)
        observed = max(self.verb_object.get((verb, name), 0) - own, 0)
        expected = mentions * max(self.verbs.get(verb, 0) - own, 0) / captions
        return math.log((observed + 1.0) / (expected + 1.0))

    def verb_delta(self, original: str, substitute: str, verbs: Iterable[str]) -> float:
        """The least, over the caption's ``verbs``, of how much better ``substitute`` goes
        with the verb than ``original`` does (:meth:`verb_lift`; the caption itself assumed
        counted): "throwing the ball" -> "the computer keyboard" is far below 0, "the frisbee"
        about 0. 0 for counts without verb co-occurrences (an old vocabulary)."""
        if not self.verb_object:
            return 0.0
        return min(
            (self.verb_lift(substitute, v) - self.verb_lift(original, v, 1) for v in verbs),
            default=0.0,
        )

    def attribute_surface(self, value: str) -> str:
        forms = self.index["attribute_surface"].get(value)
        return _most_common(forms) if forms else value

    # ---------------------------------------------------------------- storage
    _FIELDS = (
        "objects",
        "bare",
        "attributes",
        "relations",
        "attribute_object",
        "unigrams",
        "bigrams",
        "triples",
        "subject_predicate",
        "predicate_object",
        "cooccurrence",
        "verbs",
        "verb_object",
        "grouped",
        "sibling",
        "codescription",
        "verb_grouped",
        "verb_sibling",
        "verb_codescription",
    )

    def to_dict(self) -> dict[str, Any]:
        def key(k: Any) -> Any:
            return [key(x) for x in k] if isinstance(k, tuple) else k

        return {
            name: [[key(k), c] for k, c in sorted(getattr(self, name).items(), key=str)]
            for name in self._FIELDS
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SceneCounts:
        def key(k: Any) -> Any:
            return tuple(key(x) for x in k) if isinstance(k, list) else k

        counts = cls()
        for name in cls._FIELDS:
            getattr(counts, name).update({key(k): c for k, c in data.get(name, [])})
        if counts.verb_grouped and "<s>" not in counts.verb_grouped:
            # written before verb groups kept their own caption count: the same captions
            counts.verb_grouped["<s>"] = counts.grouped.get("<s>", 0)
        return counts


#: The index's tables of groups (``{group: {key: count}}``) and flat tables, as a counts
#: store keeps them (:meth:`SceneCounts.index_tables`).
INDEX_GROUPS = (
    "objects_by_number",
    "surfaces",
    "objects_with_attribute",
    "attributes_of_object",
    "subjects_of",
    "objects_of",
    "predicates_of_subject",
    "predicates_of_object",
    "relation_surfaces",
    "attribute_surface",
)
INDEX_FLAT = ("object_totals", "verb_words", "noun_words", "followers")


def fact_words(counts: SceneCounts) -> list[str]:
    """The object names of ``counts`` whose WordNet answers a counts store keeps (every
    name in an object, attribute or relation table, and each name's last word), in first
    seen order."""
    found: dict[str, None] = {}
    columns = (
        ("objects", (0,)),
        ("attribute_object", (1,)),
        ("triples", (0, 2)),
        ("subject_predicate", (0,)),
        ("predicate_object", (1,)),
    )
    for name, positions in columns:
        for key in getattr(counts, name):
            for i in positions:
                word = key[i]
                if type(word) is str and word not in found:
                    found[word] = None
                    parts = word.split()
                    if parts:
                        found.setdefault(parts[-1], None)
    return list(found)


@dataclass(frozen=True)
class WordFacts:
    """WordNet's answers kept in a counts store (:func:`tags.negatives.wordnet.word_facts`):
    the packed table, the category and lexicographer-file names in number order, and the
    :func:`~tags.negatives.wordnet.fingerprint` they were computed under."""

    packed: Any
    categories: tuple[str, ...]
    lexnames: tuple[str, ...]
    fingerprint: str

    def service(self, service: Any) -> Any:
        """``service`` answering from these facts when they were computed under it (a
        :class:`~tags.negatives.wordnet.StoredWordNet`), else ``service`` itself."""
        from tags.negatives.wordnet import StoredWordNet, fingerprint

        if self.fingerprint != fingerprint(service):
            return service
        return StoredWordNet(service, self.packed, list(self.categories), list(self.lexnames))


#: The image-group verb counts: all a verb co-description table holds
#: (``scripts/build_verb_codescription.py``).
VERB_GROUP_FIELDS = ("verb_grouped", "verb_sibling", "verb_codescription")

__all__ = [
    "AUXILIARY_VERBS",
    "INDEX_FLAT",
    "INDEX_GROUPS",
    "PLURAL_CUES",
    "PLURAL_TAGS",
    "VERB_GROUP_FIELDS",
    "ZERO_PLURALS",
    "SceneCounts",
    "WordFacts",
    "fact_words",
    "is_bare",
    "is_plural",
    "normal",
    "relation_shape",
    "shape",
    "verb_lemma",
    "verbs_of",
]
