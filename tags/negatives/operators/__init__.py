"""Edit operators: each kind of edit a small registered unit over one shared evidence service.

An operator (:class:`EditOperator`) proposes one kind of edit from a caption's
:class:`CaptionContext` (the caption's graph and facts, computed once), asking the shared
plausibility service (:class:`SceneEvidence`: the corpus's counts and WordNet) what is
attested. The :class:`~tags.negatives.planner.EditPlanner` runs the registered operators in
the order of :func:`list_operators`:

==================  =========  ====================================  ==============
operator            kind       edits                                 on
==================  =========  ====================================  ==============
replace_object      unit       an entity's head noun                 always
replace_attribute   unit       an attribute value or a count         always
replace_relation    unit       a verb or a preposition               always
pluralize           candidate  a free subject made two ("two dogs")  always
swap_attribute      candidate  the attributes of two objects         ``swaps``
swap_object         candidate  the nouns around a relation           ``swaps``
swap_role           candidate  the noun phrases around a relation    ``role_swaps``
add_attribute       candidate  a colour, material or pattern added   ``adds``
add_object          candidate  "and a Y" after a noun phrase         ``adds``
==================  =========  ====================================  ==============

Register your own with :func:`register_operator` (importing this package registers the
built-ins); closed word classes live in :mod:`tags.negatives.lexicon`.
"""

from tags.negatives.operators.add import AddAttribute, AddObject
from tags.negatives.operators.base import (
    Choice,
    EditOperator,
    PlannedUnit,
    Proposal,
)
from tags.negatives.operators.context import CaptionContext
from tags.negatives.operators.evidence import SceneEvidence, Trace
from tags.negatives.operators.flip_setting import FlipSetting
from tags.negatives.operators.pluralize import Pluralize
from tags.negatives.operators.registry import (
    UnknownOperatorError,
    get_operator,
    list_operators,
    operator_class,
    register_operator,
    unregister_operator,
)
from tags.negatives.operators.replace_act import ReplaceAct
from tags.negatives.operators.replace_attribute import ReplaceAttribute
from tags.negatives.operators.replace_object import ReplaceObject
from tags.negatives.operators.replace_relation import ReplaceRelation
from tags.negatives.operators.swaps import SwapAttribute, SwapObject, SwapRole

__all__ = [
    "AddAttribute",
    "AddObject",
    "CaptionContext",
    "Choice",
    "EditOperator",
    "FlipSetting",
    "PlannedUnit",
    "Pluralize",
    "Proposal",
    "ReplaceAct",
    "ReplaceAttribute",
    "ReplaceObject",
    "ReplaceRelation",
    "SceneEvidence",
    "SwapAttribute",
    "SwapObject",
    "SwapRole",
    "Trace",
    "UnknownOperatorError",
    "get_operator",
    "list_operators",
    "operator_class",
    "register_operator",
    "unregister_operator",
]
