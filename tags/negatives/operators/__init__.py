"""Edit operators: each kind of edit a small registered unit over one shared evidence service.

An operator (:class:`EditOperator`) proposes one kind of edit from a caption's
:class:`CaptionContext` (the caption's graph and facts, computed once), asking the shared
evidence service (:class:`SceneEvidence`: the corpus's counts and WordNet) what is
attested. The :class:`~tags.negatives.planner.EditPlanner` runs the registered operators in
the order of :func:`list_operators`:

==================  =========  ====================================  ==============
operator            kind       edits                                 on
==================  =========  ====================================  ==============
replace_object      unit       an entity's head noun                 always
replace_attribute   unit       an attribute value or a count         always
replace_act         unit       a bare act ("running" -> "sitting")   always
replace_relation    unit       a verb or a preposition               always
flip_setting        unit       "outside" <-> "inside" (adverbs)      always
pluralize           candidate  a free subject made two ("two dogs")  always
swap_attribute      candidate  the attributes of two objects         ``swaps``
swap_object         candidate  the nouns around a relation           ``swaps``
swap_role           candidate  the noun phrases around a relation    ``role_swaps``
add_attribute       candidate  a colour, material or pattern added   ``adds``
add_object          candidate  "and a Y" after a noun phrase         ``adds``
==================  =========  ====================================  ==============

Register your own with :func:`register_operator` (importing this package registers the
built-ins); closed word classes live in :mod:`tags.negatives.lexicon`.

Modules, bottom to top; each imports only those below it, and no operator module imports
another:

- ``proposals``: what operators propose (:class:`Choice`, :class:`PlannedUnit`,
  :class:`Proposal`); ``syntax``: grammar checks on a parse;
- ``evidence``: the evidence service (:class:`SceneEvidence`, :class:`Trace`), with its
  helpers ``choices`` (ranking, counts), ``values`` (attribute value shares) and ``verbs``
  (verb classes);
- ``context``: one caption's analysis (:class:`CaptionContext`); ``objects``: the evidence
  service's object substitutes, shared by ``replace_object`` and ``add_object``;
- ``base`` and ``registry``: the operator interface and its registry;
- the operators, one module each (``replace_object``, ``replace_attribute``,
  ``replace_act``, ``replace_relation``, ``flip_setting``, ``pluralize``, ``swaps``,
  ``add``), and this package, the public interface (the planner imports it).
"""

from tags.negatives.operators.add import AddAttribute, AddObject
from tags.negatives.operators.base import EditOperator
from tags.negatives.operators.context import CaptionContext
from tags.negatives.operators.evidence import SceneEvidence, Trace
from tags.negatives.operators.flip_setting import FlipSetting
from tags.negatives.operators.pluralize import Pluralize
from tags.negatives.operators.proposals import Choice, PlannedUnit, Proposal
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
from tags.negatives.operators.swaps import SwapAttribute, SwapObject, SwapRole, swap_candidates

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
    "swap_candidates",
    "unregister_operator",
]
