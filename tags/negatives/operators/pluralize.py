"""Pluralize: a free subject made two ("a dog running along the beach" -> "two dogs").

A count edit for the many captions that name their subject once: the article of a singular
subject's phrase becomes "two" and its head noun takes the plural the corpus writes ("a
brown dog" -> "two brown dogs"). One edit, typed ``attribute`` like the other count edits,
spanning the phrase from the article to the head.

Graded evidence, not lists: the noun must be one the corpus (input plus background) writes in
the plural in at least :data:`PLURAL_MIN_SHARE` of its mentions, with a plural surface seen
at least ``min_count`` times. The grammar keeps the rest of the caption true to the count:

- a person or an animal (WordNet): what a writer counts; an inanimate subject is often one
  of several left unsaid ("a tree near the building" -> "two trees" may well be true, as
  "next to a building" -> "next to two buildings" read in a blind read);
- nothing holds it to one: every relation of it a posture or locomotion verb with a free
  particle, or that particle alone (:data:`FREE_PARTICLES`: "running along the beach";
  not "sitting on a chair", "riding a horse", "in a red shirt"); it is no relation's
  object; the caption has no finite verb or pronoun that would have to agree ("a dog
  runs", "his bike") nor a word that says it is alone;
- its phrase right after "a"/"an", with no word that says there is one ("a lone man",
  "another dog"), its head not followed by "of" nor a collective ("a group of", "a
  crowd") nor by "and" / "or" and a phrase without a determiner of its own ("a man and
  woman": the article is both's); no noun the caption names again ("a cat ... the cat") and no count pinned
  elsewhere (:func:`~.syntax.counted`).

May import: ``proposals``, ``context``, ``base``, ``registry``, ``syntax``; never another
operator module.
"""

from __future__ import annotations

from tags.core.edits import make_edit
from tags.core.types import Candidate
from tags.negatives.lexicon import EXCLUSIVE_VERBS, GENERIC_NOUNS, editable_words
from tags.negatives.operators.base import EditOperator
from tags.negatives.operators.context import CaptionContext
from tags.negatives.operators.proposals import Proposal
from tags.negatives.operators.registry import register_operator
from tags.negatives.operators.syntax import mentioned_again, tokens_before

#: A noun is made two only when at least this share of its mentions in the corpus are plural.
PLURAL_MIN_SHARE = 0.05
#: The prior of a pluralized candidate next to a substitute's share of its unit's weight.
PLURAL_WEIGHT = 0.25
#: Words in a phrase that say there is one of it.
SINGLE_WORDS = frozenset(
    {"lone", "single", "solitary", "only", "sole", "another", "other", "same", "one", "whole"}
)
#: Collective heads ("a crowd", "a herd") and parts of a place ("the side", "a corner"):
#: their count is not the scene's.
COLLECTIVES = frozenset(
    {
        "group", "couple", "pair", "lot", "bunch", "crowd", "team", "herd", "flock", "number",
        "variety", "assortment", "set", "side", "top", "bottom", "edge", "middle", "front",
        "back", "corner", "end", "view", "background", "foreground", "distance",
    }
)  # fmt: skip


#: A subject is made two only where nothing in the caption holds one: every relation it is
#: the subject of is a posture or locomotion verb (:data:`EXCLUSIVE_VERBS`, but not "ride")
#: with one of these particles, or one of them alone ("a dog running along the beach" ->
#: "two dogs"; "sitting on a chair", "riding a horse", "in a red shirt" hold one).
FREE_PARTICLES = (
    "near", "next to", "beside", "by", "behind", "in front of", "along", "across", "down",
    "up", "through", "around", "toward", "towards", "past", "among", "outside",
)  # fmt: skip
#: Words that say a subject is by itself ("skiing down a hill alone").
ALONE_WORDS = frozenset({"alone", "solo", "lonely", "himself", "herself", "itself"})
#: Tags of a finite verb or a pronoun: a verb that would have to agree with a plural subject
#: ("a dog runs"), a pronoun that would have to follow it ("his bike").
_AGREEING_TAGS = frozenset({"VBZ", "VBP", "VBD", "MD", "PRP", "PRP$"})


def _free(predicate: str) -> bool:
    """Whether a subject's relation leaves it free to be two (see :data:`FREE_PARTICLES`)."""
    words = predicate.split()
    if predicate in FREE_PARTICLES:
        return True
    return (
        len(words) >= 2
        and words[0] in EXCLUSIVE_VERBS
        and words[0] != "ride"
        and " ".join(words[1:]) in FREE_PARTICLES
    )


#: Tags that open a noun phrase of its own after "and" ("a man and a woman", "and his dog")
_OWN_DETERMINER_TAGS = frozenset({"DT", "PRP$", "CD", "PDT", "WP$"})


def _elided_article(tokens: list, at: int) -> bool:
    """Whether the phrase starting at token ``at`` (after "and" / "or") has no determiner
    of its own, so that the article before the "and" is its too ("a man and woman")."""
    return at < len(tokens) and tokens[at][2] not in _OWN_DETERMINER_TAGS


@register_operator("pluralize", rank=35)
class Pluralize(EditOperator):
    """One object made two: "a remote" -> "two remotes" (operation ``replace``, typed
    ``attribute``; always on)."""

    edit_types = ("attribute",)
    kind = "candidate"

    def propose(self, context: CaptionContext) -> list[Proposal]:
        graph, evidence = context.graph, context.evidence
        if context.count_pinned or not graph.tokens:
            return []
        subjects = {r.subject for r in graph.relations}
        objects = {r.object for r in graph.relations}
        tied = {r.subject for r in graph.relations if not _free(r.predicate)}
        agreeing = any(t in _AGREEING_TAGS for _, _, t in graph.tokens) or bool(
            ALONE_WORDS & context.words
        )
        surfaces = evidence.scenes.index["surfaces"]
        by_number = evidence.scenes.index["objects_by_number"]
        words = [graph.caption[s:e].lower() for s, e, _ in graph.tokens]
        out = []
        for index, entity in enumerate(graph.entities):
            if index not in subjects or index in objects or index in tied or agreeing:
                continue
            if entity.head_span is None:
                continue
            if entity.span is None or entity.quantity_span is not None:
                continue
            tags = graph.tags_in(entity.head_span)
            if tags != ["NN"] or entity.head_span[1] != entity.span[1]:
                continue
            name = context.names[index]
            written = graph.caption[slice(*entity.head_span)]
            phrase = graph.caption[entity.span[0] : entity.head_span[1]]
            first = phrase.split()[0].lower()
            inside = {w.lower() for w in phrase.split()[1:-1]}
            if first not in ("a", "an") or inside & SINGLE_WORDS or not editable_words(name):
                continue
            if name in GENERIC_NOUNS or name.split()[-1] in COLLECTIVES:
                continue
            if not evidence.wordnet.is_animate(name.split()[-1]):
                continue  # "a tree near the building": one of several, unsaid
            if mentioned_again(graph.caption, entity.head_span, written):
                continue
            position = len(tokens_before(graph, entity))
            following = words[position + 1] if position + 1 < len(words) else ""
            if following == "of":
                continue  # "a piece of cake": the count belongs to the cake
            if following in ("and", "or") and _elided_article(graph.tokens, position + 2):
                continue  # "a man and woman": the article is the woman's too
            plural, single = by_number[True].get(name, 0), by_number[False].get(name, 0)
            if plural < evidence.min_count or plural < PLURAL_MIN_SHARE * (plural + single):
                evidence.refuse("count:rarely_plural")
                continue
            forms = surfaces.get((name, True))
            if not forms:
                continue
            surface = max(sorted(forms), key=forms.get)
            if len(surface.split()) != len(written.split()):
                continue
            middle = graph.caption[entity.span[0] + len(phrase.split()[0]) : entity.head_span[0]]
            edit = make_edit(
                "attribute",
                graph.caption,
                entity.span[0],
                entity.head_span[1],
                f"two{middle}{surface}",
            )
            if edit is None:
                continue
            text = graph.caption[: edit.start] + edit.replacement + graph.caption[edit.end :]
            out.append(Proposal(Candidate(text, (edit,), weight=PLURAL_WEIGHT), (1, 5, index)))
        return out


__all__ = ["PLURAL_MIN_SHARE", "PLURAL_WEIGHT", "Pluralize"]
