"""Replace an object: an entity's head noun by another object of its category and number.

One unit per entity, with the substitutes the evidence service gives
(:func:`~.objects.object_substitutes`, where the rules are: same category and number, not a
synonym, every combination attested, person nouns by gender and age, fit with the caption's
other objects and verbs).

May import: ``proposals``, ``context``, ``base``, ``registry`` and the evidence service's
``objects``; never another operator module.
"""

from __future__ import annotations

from tags.negatives.operators.base import EditOperator
from tags.negatives.operators.context import CaptionContext
from tags.negatives.operators.objects import object_substitutes
from tags.negatives.operators.proposals import PlannedUnit, Proposal
from tags.negatives.operators.registry import register_operator


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


__all__ = ["ReplaceObject"]
