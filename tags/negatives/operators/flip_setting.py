"""Flip the setting: the adverbs "outside" / "outdoors" to "inside" / "indoors" and back,
where the caption says nothing else about where it is.

A caption's setting word is exclusive by itself ("a couple of men in ties are outside" ->
"inside"); the caption's other words must not place it, so no relation of the caption puts
anything in, on or at a place ("children playing outside in the snow" -> not "inside in
the snow"; read from the words, since the setting word often breaks the parse). Only the
adverb, never a preposition ("outside a home": the relation operator flips those) nor the
adjective ("an outdoor scene of a man flying a kite": the scene's acts place it, which the
words need not say). Typed ``relation`` (where).

May import: ``proposals``, ``context``, ``base``, ``registry``; never another operator module.
"""

from __future__ import annotations

from tags.negatives.lexicon import garment_slot
from tags.negatives.operators.base import EditOperator
from tags.negatives.operators.context import CaptionContext
from tags.negatives.operators.proposals import Choice, PlannedUnit, Proposal
from tags.negatives.operators.registry import register_operator

#: Setting adverbs and their opposites (a closed class).
SETTING_OPPOSITES = {
    "outside": "inside",
    "inside": "outside",
    "outdoors": "indoors",
    "indoors": "outdoors",
}
#: Prepositions that place something: a relation with one of them (its object not worn)
#: already says where the caption is.
PLACING_WORDS = frozenset(
    {"in", "on", "at", "inside", "outside", "under", "near", "by", "beside", "behind"}
    | {"across", "through", "along", "into", "onto", "over", "down", "up", "around", "from"}
)
#: Tags that start the noun phrase of a preposition ("outside a home", "outside of").
_PHRASE_TAGS = ("DT", "PRP$", "NN", "JJ", "CD", "IN", "POS")


def _placed(graph) -> bool:
    """Whether a preposition of the caption puts something at a place: a placing word
    before a noun phrase whose noun is not worn ("on a long bench", "into a tunnel"; not
    "men in ties"). Read from the words, since a setting adverb often breaks the parse."""
    tokens = graph.tokens
    for i, (start, end, tag) in enumerate(tokens):
        if graph.caption[start:end].lower() not in PLACING_WORDS or tag not in ("IN", "RP"):
            continue
        nouns = [
            graph.caption[s:e].lower() for s, e, t in tokens[i + 1 : i + 6] if t.startswith("NN")
        ]
        if any(garment_slot(noun) is None for noun in nouns):
            return True  # "on top of a large rock": the rock places it
    return False


@register_operator("flip_setting", rank=33)
class FlipSetting(EditOperator):
    """Flip a setting adverb ("outside" -> "inside", "outdoors" -> "indoors")."""

    edit_types = ("relation",)

    def propose(self, context: CaptionContext) -> list[Proposal]:
        graph = context.graph
        tokens = graph.tokens
        out = []
        for i, (start, end, tag) in enumerate(tokens):
            word = graph.caption[start:end].lower()
            if word not in SETTING_OPPOSITES or tag not in ("RB", "RP"):
                continue  # "an outdoors wok": an adjective
            following = tokens[i + 1][2] if i + 1 < len(tokens) else "."
            if following.startswith(_PHRASE_TAGS):
                continue  # "outside a home", "outside of it": a preposition
            if _placed(graph):
                self.evidence.refuse("setting:placed", unit=True)
                continue
            choice = Choice((SETTING_OPPOSITES[word],), 1.0, "flip")
            out.append(Proposal(PlannedUnit("relation", ((start, end),), (choice,)), (3, i)))
        return out


__all__ = ["SETTING_OPPOSITES", "FlipSetting"]
