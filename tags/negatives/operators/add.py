"""Add edits: an attribute or an object the scene does not contain, inserted.

SugarCrepe's ``add_att`` / ``add_obj`` kinds. Each negative is the positive with one
insertion, an :class:`~tags.core.types.Edit` with an empty ``original`` (``start ==
end``) and ``operation="add"``, so :func:`~tags.core.types.apply_edits` still rebuilds
the negative (an article before an added attribute may be widened into the edit to agree:
"an apple" -> "a red apple").

- **attribute** (:class:`AddAttribute`): a colour, material or pattern put before an
  object's noun ("a dog" -> "a black dog") when the object has no value of that class yet.
  The value must be plausible for the noun by graded evidence: its share among the noun's
  attested values of the class, smoothed toward its share in the noun's category
  (:class:`~.values.ValueShares`), at least :data:`MIN_ADD_SHARE`; and not the noun's usual
  value (share at most :data:`MAX_ADD_SHARE`: "green grass" is likely true).
- **object** (:class:`AddObject`): "and a Y" coordinated after an object's noun phrase ("a
  dog on a couch" -> "a dog and a cat on a couch"). Y is one of the object replacement's
  substitutes for that object (same category and number, attested in every relation the
  object takes, fits the caption's other objects and verbs), not yet in the caption, and not
  something the corpus's other captions of an image tend to name next to the caption's
  objects (:meth:`SceneCounts.codescription_lift`: it may be there unsaid).

Neither is ever true by construction the way a swap is false; the false-negative filter
(the image's other captions) and these evidence thresholds keep the chance low.

May import: ``proposals``, ``evidence``, ``context``, ``base``, ``registry`` and the evidence
service's helpers (``objects``, ``values``, ``syntax``); never another operator module.
"""

from __future__ import annotations

import math

from parsers import SceneGraph
from tags.core.edits import fix_articles, wants_an
from tags.core.types import Candidate, Edit, apply_edits
from tags.negatives.lexicon import (
    BINDING_WORDS,
    COLOURED_WORDS,
    COORDINATORS,
    GENERIC_NOUNS,
    HAIR_COLOURS,
    HAIR_NOUNS,
    NEGATORS,
    SINGULAR_VERB_WORDS,
    attribute_class,
    editable_words,
    garment_slot,
)
from tags.negatives.operators.base import EditOperator
from tags.negatives.operators.context import CaptionContext
from tags.negatives.operators.evidence import SceneEvidence
from tags.negatives.operators.objects import object_substitutes
from tags.negatives.operators.proposals import Proposal
from tags.negatives.operators.registry import register_operator
from tags.negatives.operators.syntax import modifies_noun, noun_start
from tags.negatives.operators.values import VALUE_CLASSES, ValueShares
from tags.negatives.scenes import words_of

#: Attribute classes an addition may use: visible properties where one value excludes the
#: others (sizes, ages and states are relative or may hold unsaid).
ADD_CLASSES = VALUE_CLASSES
#: A value below this smoothed share of its class for the noun is implausible ("a green dog").
MIN_ADD_SHARE = 0.03
#: ... above it, the noun's usual value, which a writer may leave unsaid ("green grass").
MAX_ADD_SHARE = 0.25
#: The prior of an add candidate next to a substitute's share of its unit's weight.
ADD_WEIGHT = 0.5
#: Add candidates kept per caption and kind (the most plausible first), so additions do not
#: crowd out the replacements and swaps of a caption.
ADD_CHOICES = 1
#: Further additions per kind tried for a caption whose every candidate was refused (the
#: image's other captions name the first additions, or nothing else could be edited): a
#: caption gets a negative whenever some plausible insertion is left.
FALLBACK_ADDS = 4
#: Codescription lift (log) above which an added object may be in the image unsaid.
CODESCRIBED = math.log(2.0)
#: Tags after a singular noun phrase that agree with it alone: "a dog and a cat sits" is
#: ungrammatical. A plural phrase keeps a plural verb either way.
_SINGULAR_VERBS = frozenset({"VBZ", "MD"})
_NOUN_TAGS = frozenset({"NN", "NNS"})
_FINITE_TAGS = frozenset({"VBZ", "VBP", "VBD", "MD"})
_PREMODIFIER_TAGS = frozenset({"DT", "PRP$", "POS", "CD", "JJ", "PDT"})

#: ``(position, inserted text, weight)`` of one possible insertion.
Insertion = tuple[int, str, float]


def insertion(caption: str, unit_type: str, position: int, text: str) -> Candidate | None:
    """The candidate with ``text`` inserted at ``position`` (an edit with an empty original,
    ``operation="add"``; a preceding "a"/"an" is widened in to agree); ``None`` for nothing."""
    if not text.strip():
        return None
    if any(c.isalpha() for c in caption) and caption.upper() == caption:
        text = text.upper()  # an all-caps caption stays all caps
    edit = Edit(unit_type, "", text, position, position, "add")
    edits = fix_articles(caption, [edit])
    return Candidate(apply_edits(caption, edits), tuple(edits))


def eligible(evidence: SceneEvidence, graph: SceneGraph, index: int) -> bool:
    """An object whose phrase can take an insertion: a common noun (not a pronoun, a
    name, a generic or never-edited word), not a compound's modifier ("tennis" in
    "tennis court"), not negated ("no shoes")."""
    entity = graph.entities[index]
    if entity.head_span is None or entity.span is None:
        return False
    tags = graph.tags_in(entity.head_span)
    if not tags or not all(t in _NOUN_TAGS for t in tags):
        return False
    name = entity.name.lower()
    if name in GENERIC_NOUNS or not name.replace(" ", "").isalpha():
        return False
    if not editable_words(name) or modifies_noun(graph, entity.head_span):
        return False
    if evidence.scenes.verb_like(graph.caption[slice(*entity.head_span)].lower()):
        return False  # "his teammate waits": a verb tagged as a noun
    own = words_of(graph.caption[entity.span[0] : entity.head_span[0]])
    before = words_of(graph.caption[: entity.span[0]])[-1:]
    return not NEGATORS.intersection(own + before)


class _AddOperator(EditOperator):
    """An add operator: its insertions over all objects, the heaviest first."""

    kind = "candidate"
    switch = "adds"
    #: The second element of its proposals' keys (attributes before objects).
    part = 0

    def insertions(self, context: CaptionContext, index: int) -> list[Insertion]:
        """The insertions this operator may make at object ``index``."""
        raise NotImplementedError

    def _ranked(self, context: CaptionContext) -> list[tuple[float, int, str]]:
        key = ("add", self.edit_types[0])
        found = context.memo.get(key)
        if found is None:
            found = []
            for index in range(len(context.graph.entities)):
                found.extend((w, p, t) for p, t, w in self.insertions(context, index))
            found.sort(key=lambda x: (-x[0], x[1], x[2]))
            context.memo[key] = found
        return found

    def candidates(self, context: CaptionContext, first: int, limit: int) -> list[Proposal]:
        """``limit`` insertions from the ``first`` (by weight), each weighted ``ADD_WEIGHT``
        times its share of the kind's weight."""
        kind = self.edit_types[0]
        found = self._ranked(context)
        if not found:
            return []
        total = sum(w for w, _, _ in found) or 1.0
        out = []
        for rank, (weight, position, text) in enumerate(found[first : first + limit], first):
            inserted = text if kind == "object" else f"{text} "
            candidate = insertion(context.caption, kind, position, inserted)
            if candidate is not None:
                candidate = Candidate(
                    candidate.text, candidate.edits, weight=ADD_WEIGHT * weight / total
                )
                out.append(Proposal(candidate, (2, self.part, rank)))
        return out

    def propose(self, context: CaptionContext) -> list[Proposal]:
        return self.candidates(context, 0, ADD_CHOICES)

    def fallback(self, context: CaptionContext) -> list[Proposal]:
        return self.candidates(context, ADD_CHOICES, FALLBACK_ADDS)


@register_operator("add_attribute", rank=70)
class AddAttribute(_AddOperator):
    """Insert a colour, material or pattern before an object's noun (on with ``adds``)."""

    edit_types = ("attribute",)
    part = 0

    def __init__(self, evidence: SceneEvidence):
        super().__init__(evidence)
        self._values = ValueShares(evidence)
        self._describable_cache: dict[str, bool] = {}

    def prepare(self) -> None:
        self._values.prepare()

    def value_shares(self, name: str, kind: str) -> dict[str, float]:
        """Smoothed share of each value of class ``kind`` for noun ``name``
        (:meth:`ValueShares.shares <tags.negatives.operators.values.ValueShares.shares>`)."""
        return self._values.shares(name, kind)

    def _describable(self, name: str) -> bool:
        """Whether a noun may take an added colour, material or pattern: not a person (it
        reads as skin or a costume), not a body part (hair aside). Cached per noun."""
        found = self._describable_cache.get(name)
        if found is None:
            found = not self.evidence.is_person(name) and (
                name in HAIR_NOUNS or not self.evidence.wordnet.is_body_part(name.split()[-1])
            )
            self._describable_cache[name] = found
        return found

    def insertions(self, context: CaptionContext, index: int) -> list[Insertion]:
        """``(position, value, weight)`` of the attributes that may be added to object
        ``index``: before the first noun of its head (compounds included)."""
        graph = context.graph
        if not eligible(self.evidence, graph, index):
            return []
        entity = graph.entities[index]
        name = context.names[index]
        if not self._describable(name):
            return []  # people (skin, a costume), body parts (hair aside)
        if attribute_class(name) is not None:
            return []  # "dressed in blue": the noun is itself a value
        after = [graph.caption[s:e].lower() for s, e, _ in graph.tokens if s >= entity.head_span[1]]
        if after[:1] == ["of"]:
            return []  # "two pads of butter": the colour would go to the measure, not the butter
        position = noun_start(graph, entity.head_span[0])
        if position == 0 or position < entity.span[0]:
            return []  # sentence start (case) or a noun chain reaching out of the phrase
        present = {attribute_class(a.value) for a in graph.attributes_of(index)}
        phrase = words_of(graph.caption[: entity.head_span[1]])[-4:]  # "rainbow colored kite"
        present |= {attribute_class(w) for w in phrase}
        if COLOURED_WORDS.intersection(phrase):
            present.add("colour")
        words = context.words
        out = []
        for kind in ADD_CLASSES:
            if kind in present:
                continue
            for value, share in self.value_shares(name, kind).items():
                if not MIN_ADD_SHARE <= share <= MAX_ADD_SHARE or value in words:
                    continue
                if value in HAIR_COLOURS and name not in HAIR_NOUNS:
                    continue  # "a blond dog": hair colours are for hair
                surface = self.evidence.scenes.attribute_surface(value)
                if surface in words or not surface.isalpha():
                    continue
                out.append((position, surface, share * (1.0 - share) ** 3))
        return out


@register_operator("add_object", rank=80)
class AddObject(_AddOperator):
    """Coordinate "and a Y" after an object's noun phrase (on with ``adds``)."""

    edit_types = ("object",)
    part = 1

    def __init__(self, evidence: SceneEvidence):
        super().__init__(evidence)
        self._names: dict[tuple[str, bool], str] | None = None

    def prepare(self) -> None:
        self._name_of("", False)

    def _name_of(self, surface: str, plural: bool) -> str | None:
        """The object name the corpus most often writes as ``surface`` in that number."""
        if self._names is None:
            best: dict[tuple[str, bool], tuple[int, str]] = {}
            for (name, written, number), count in self.evidence.scenes.objects.items():
                key = (written, number)
                if key not in best or (count, name) > best[key]:
                    best[key] = (count, name)
            self._names = {key: name for key, (_, name) in best.items()}
        return self._names.get((surface, plural))

    def _mass(self, name: str) -> bool:
        """Whether the corpus mostly writes a singular noun without an article ("rice")."""
        scenes = self.evidence.scenes
        singular = scenes.index["objects_by_number"][False].get(name, 0)
        return singular > 0 and scenes.bare.get(name, 0) * 2 > singular

    def insertions(self, context: CaptionContext, index: int) -> list[Insertion]:
        """``(position, text, weight)`` of the objects that may be coordinated after object
        ``index``'s phrase (``text`` is the inserted " and a Y")."""
        graph = context.graph
        if not eligible(self.evidence, graph, index):
            return []
        entity = graph.entities[index]
        end = entity.span[1]
        after = [(graph.caption[s:e].lower(), t) for s, e, t in graph.tokens if s >= end]
        plural = context.is_plural(index)
        if after:
            word, tag = after[0]
            if word in BINDING_WORDS or tag in ("POS", "WDT", "WP", "WP$", "HYPH"):
                return []
            if not plural and (tag in _SINGULAR_VERBS or word in SINGULAR_VERB_WORDS):
                return []  # "a dog sits" -> not "a dog and a cat sits"
        if entity.head_span[1] != end:
            return []  # the phrase goes on after its head
        if not plural:  # the first finite verb after the phrase (participles skipped)
            verbs = [(w, t) for w, t in after if t in _FINITE_TAGS]
            if verbs and (verbs[0][1] in _SINGULAR_VERBS or verbs[0][0] in SINGULAR_VERB_WORDS):
                return []  # "a man wearing sunglasses is" -> not "a man and a woman ... is"
        before = [
            (graph.caption[s:e].lower(), t) for s, e, t in graph.tokens if e <= entity.span[0]
        ]
        while before and before[-1][1] in _PREMODIFIER_TAGS:
            before.pop()  # "on his bike": look past the determiner
        if before and before[-1][1] in ("IN", "RP", "TO") and before[-1][0] != "with":
            return []  # "on a bed and a couch", "into a tunnel and a chimney": one place
        if (before and before[-1][0] in COORDINATORS) or (after and after[0][0] in COORDINATORS):
            return []  # "a man and a woman" -> not "a man and a woman and a boy"
        slot = garment_slot(context.names[index])
        choices = object_substitutes(context, index)
        if not choices:
            return []
        present = context.names
        words = context.words
        out = []
        for choice in choices:
            surface = choice.surface[0]
            noun = surface.split()[-1]
            if noun in words:
                continue
            if slot is not None and garment_slot(surface) == slot:
                continue  # "wearing shorts and jeans": one garment where another is
            name = self._name_of(surface, plural)
            if name is not None and any(
                self.evidence.scenes.codescription_lift(p, name) >= CODESCRIBED for p in present
            ):
                continue  # other writers name it next to this scene's objects: may be there
            if plural or (name is not None and self._mass(name)):
                text = f" and {surface}"
            else:
                text = f" and {'an' if wants_an(surface) else 'a'} {surface}"
            out.append((end, text, choice.weight))
        return out


__all__ = [
    "ADD_CHOICES",
    "ADD_CLASSES",
    "ADD_WEIGHT",
    "FALLBACK_ADDS",
    "AddAttribute",
    "AddObject",
    "eligible",
    "insertion",
]
