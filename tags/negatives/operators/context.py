"""One caption's analysis, computed once and shared by every edit operator.

:class:`CaptionContext` holds a parsed caption with the facts several operators ask about
(its words, verbs, gendered pronouns, the objects it names, whether a count is pinned) and a
memo for what one operator computes and another reuses (an object's substitutes:
:func:`~.objects.object_substitutes`, which the replace and add operators share). Each fact
is computed on first use, once per caption.

May import: ``evidence``, ``syntax``, ``lexicon``, ``scenes`` (never an operator module).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from parsers import SceneGraph
from tags.negatives.lexicon import (
    FEMALE_MARKERS,
    FEMALE_NOUNS,
    GENDERED_PRONOUNS,
    HE_PRONOUNS,
    MALE_MARKERS,
    MALE_NOUNS,
    SHE_PRONOUNS,
)
from tags.negatives.operators.evidence import SceneEvidence
from tags.negatives.operators.syntax import counted, joined
from tags.negatives.scenes import is_plural, verbs_of, words_of

#: Phrases that say a person is shirtless (a male marker, as "shirtless").
_SHIRTLESS = (
    " no shirt ",
    " without a shirt ",
    " without shirt ",
    " without his shirt ",
    " shirt off ",  # "a man with his shirt off"
)


class CaptionContext:
    """A parsed caption and its shared facts (see the module docstring).

    Args:
        graph: the caption's scene graph.
        evidence: the shared evidence service the operators ask.
    """

    def __init__(self, graph: SceneGraph, evidence: SceneEvidence):
        self.graph = graph
        self.caption = graph.caption
        self.evidence = evidence
        #: What one operator computed for another (key -> value), e.g. object substitutes.
        self.memo: dict[Any, Any] = {}

    def in_alternative(self, spans) -> bool:
        """Whether a unit is one side of an alternative: "or" right before or after it or
        its noun phrase ("a young boy or girl", "standing or lying", "a small crate or a
        large crate"). Either side may hold, so an edit of one ("a young woman or girl")
        need not be false."""
        start, end = spans[0][0], spans[-1][1]
        for entity in self.graph.entities:  # the noun phrase the unit is in, if any
            phrase = entity.span or entity.head_span
            if phrase is not None and phrase[0] <= start and end <= phrase[1]:
                start, end = min(start, phrase[0]), max(end, phrase[1])
        before = words_of(self.caption[:start])[-1:]
        after = words_of(self.caption[end:])[:1]
        return "or" in before + after

    @cached_property
    def names(self) -> tuple[str, ...]:
        """Each entity's name, lower-cased."""
        return tuple(e.name.lower() for e in self.graph.entities)

    @cached_property
    def tokens(self) -> frozenset[str]:
        """The caption's lower-cased whitespace tokens ("man," keeps its comma)."""
        return frozenset(self.caption.lower().split())

    @cached_property
    def words(self) -> frozenset[str]:
        """The caption's lower-cased words, punctuation dropped."""
        return frozenset(words_of(self.caption))

    @cached_property
    def verbs(self) -> tuple[str, ...]:
        """The caption's verb lemmas (auxiliaries left out), sorted."""
        return verbs_of(self.graph)

    @cached_property
    def pronouns(self) -> frozenset[str]:
        """The gendered pronouns among the caption's words ("behind her." counts)."""
        return GENDERED_PRONOUNS & self.words

    @cached_property
    def pronoun_gender(self) -> frozenset[str]:
        """The person nouns the pronouns allow (both genders' with "his ... her")."""
        pronouns = self.pronouns
        return (MALE_NOUNS if pronouns & HE_PRONOUNS else frozenset()) | (
            FEMALE_NOUNS if pronouns & SHE_PRONOUNS else frozenset()
        )

    @cached_property
    def marked_genders(self) -> frozenset[str]:
        """``"f"`` / ``"m"``: the caption names something only women / men wear or grow
        (:data:`FEMALE_MARKERS`, :data:`MALE_MARKERS`, "with no shirt on")."""
        tokens, caption = self.words, f" {' '.join(words_of(self.caption))} "
        male = bool(tokens & MALE_MARKERS) or any(p in caption for p in _SHIRTLESS)
        return frozenset({"f"} if tokens & FEMALE_MARKERS else set()) | (
            {"m"} if male else frozenset()
        )

    @cached_property
    def marker_excluded(self) -> frozenset[str]:
        """Person nouns of the gender the caption's clothing or hair rules out ("woman in a
        bikini" -> not "man")."""
        marked = self.marked_genders
        return (MALE_NOUNS if "f" in marked else frozenset()) | (
            FEMALE_NOUNS if "m" in marked else frozenset()
        )

    @cached_property
    def one_gender_markers(self) -> frozenset[str]:
        """Markers of the gender nobody in the caption has (only women: no beard; only men:
        no dress)."""
        women, men = bool(self.words & FEMALE_NOUNS), bool(self.words & MALE_NOUNS)
        if women and not men:
            return MALE_MARKERS
        if men and not women:
            return FEMALE_MARKERS
        return frozenset()

    @cached_property
    def count_pinned(self) -> bool:
        """Whether a count is pinned elsewhere in the caption (:func:`~.syntax.counted`)."""
        return counted(self.caption)

    def shared_by_several(self, index: int) -> bool:
        """Whether several things are in one relation with entity ``index``: two subjects or
        more, or one joined to another by "and", "or" or a comma ("a man and a dog sitting
        on a bench"), or a plural or group subject ("three people are sitting on a bench",
        "a family on a couch")."""
        graph, wordnet = self.graph, self.evidence.wordnet
        subjects = {r.subject for r in graph.relations if r.object == index != r.subject}
        subjects |= {j for s in subjects for j in joined(graph, s) if j != index}  # "a man and"
        return len(subjects) > 1 or any(
            self.is_plural(s) or wordnet.lexname(self.names[s]) == "noun.group" for s in subjects
        )

    def is_plural(self, index: int) -> bool:
        """Whether entity ``index``'s head is plural (cached)."""
        key = ("plural", index)
        if key not in self.memo:
            self.memo[key] = is_plural(self.graph, self.graph.entities[index].head_span)
        return self.memo[key]


__all__ = ["CaptionContext"]
