"""Edit planning: which scene-graph units may change, and into what.

:class:`EditPlanner` runs the registered edit operators (:mod:`tags.negatives.operators`)
over one caption's :class:`~tags.negatives.operators.CaptionContext`, computed once and
shared, with one :class:`~tags.negatives.operators.SceneEvidence` (the corpus's counts and
WordNet) behind every plausibility question. Unit operators give :class:`PlannedUnit` s, each
a unit's spans with the substitutes (:class:`Choice`) that keep the caption grammatical and
the scene plausible while making it false; every refill source draws from these choices only
(the weight-free refiller by their corpus weight, an MLM by its image-conditioned scores).
Candidate operators (swaps, additions) give finished negatives. Proposals are merged in the
caption's order (entities, attributes, relations), whatever order the operators ran in.

The rules of each operator are documented in its module: ``replace_object`` (and the
evidence service's ``objects``), ``replace_attribute``, ``replace_act``,
``replace_relation``, ``swaps``, ``add``.

May import: the :mod:`tags.negatives.operators` package (its public interface: the registry,
the shared types, :func:`~tags.negatives.operators.swaps.swap_candidates`) and the evidence
service's ``choices``; never an operator module.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from parsers import SceneGraph
from tags.core.types import Candidate
from tags.negatives.operators import (
    CaptionContext,
    Choice,
    EditOperator,
    PlannedUnit,
    Proposal,
    SceneEvidence,
    Trace,
    get_operator,
    list_operators,
    swap_candidates,
)
from tags.negatives.operators.choices import COUNT_PRIOR, number_choices
from tags.negatives.scenes import SceneCounts

#: Substitutes weighted below this share of their unit's best substitute are dropped: the
#: tail of a broad category that nothing in the caption supports ("hit a ball on a tee" ->
#: "a computer keyboard", "the reins of a brown horse" -> "of a brown sheep"; "a pink dog").
#: Person nouns are exempt: every one fits where one does (their weights follow frequency).
MIN_CHOICE_SHARE = 0.1


@dataclass(frozen=True)
class CaptionPlan:
    """What the planner proposes for one caption: units to refill, finished candidates,
    and the caption's analysis (for :meth:`EditPlanner.fallback`)."""

    context: CaptionContext
    units: list[PlannedUnit]
    candidates: list[Candidate]


class EditPlanner:
    """Plans minimal, grammatical, plausible edits from a corpus's :class:`SceneCounts`.

    Args:
        scenes, min_count, frequency_power, fluency, min_fluency, noun_classes: the
            shared plausibility service's settings (see :class:`SceneEvidence`).
        operators: the registered operators to run, by name (default: every registered
            one, in :func:`~tags.negatives.operators.list_operators` order).
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
        operators: Sequence[str] | None = None,
    ):
        self.evidence = SceneEvidence(
            scenes,
            min_count=min_count,
            frequency_power=frequency_power,
            fluency=fluency,
            min_fluency=min_fluency,
            noun_classes=noun_classes,
        )
        names = list_operators() if operators is None else list(operators)
        self.operators: list[EditOperator] = [get_operator(n, self.evidence) for n in names]

    # ------------------------------------------------------------ shared
    @property
    def scenes(self) -> SceneCounts:
        return self.evidence.scenes

    @property
    def wordnet(self):
        return self.evidence.wordnet

    @property
    def trace(self) -> Trace | None:
        """When set, every refusal is counted in it (:meth:`explain`); ``None``: not counted."""
        return self.evidence.trace

    @trace.setter
    def trace(self, value: Trace | None) -> None:
        self.evidence.trace = value

    def category(self, noun: str) -> str | None:
        """The substitution category of a noun: its ``noun_classes`` class, else WordNet's."""
        return self.evidence.category(noun)

    def similar_attributes(self, a: str, b: str) -> bool:
        """Whether two attribute values mean about the same ("small", "little")."""
        return self.evidence.similar_attributes(a, b)

    def number_choices(self, text: str) -> tuple[Choice, ...]:
        """Other plural counts written like ``text`` (:func:`~.operators.choices.number_choices`)."""
        return number_choices(self.evidence, text)

    def operator_names(self) -> list[str]:
        """The names of the operators this planner runs, in order."""
        return [op.name for op in self.operators]

    def prepare(self, switches: Collection[str] | None = None) -> None:
        """Build the lookup tables now (before worker processes fork, so they share them):
        the evidence's and those of the operators ``switches`` turn on (``None``: all)."""
        self.evidence.prepare()
        for operator in self.operators:
            if switches is None or operator.switch is None or operator.switch in switches:
                operator.prepare()

    def explain(self, graph: SceneGraph) -> Trace:
        """Plan ``graph`` again with every refusal counted: why its units have no substitute
        (for captions left without a negative; the planned units are the same)."""
        trace = self.trace = Trace()
        try:
            self.plan(graph)
            return trace
        finally:
            self.trace = None

    # ------------------------------------------------------------ planning
    def analyse(self, graph: SceneGraph) -> CaptionContext:
        """The caption's shared analysis, which every operator reads."""
        return CaptionContext(graph, self.evidence)

    def plan(self, graph: SceneGraph) -> list[PlannedUnit]:
        """Every editable unit of ``graph`` with its substitutes (units without any are left
        out): the unit operators' proposals."""
        return self._units(self.analyse(graph))

    def propose(self, graph: SceneGraph, switches: Collection[str] = ()) -> CaptionPlan:
        """Units and candidates of ``graph`` from every operator that is always on or whose
        :attr:`~EditOperator.switch` is in ``switches`` (``"swaps"``, ``"role_swaps"``,
        ``"adds"``)."""
        context = self.analyse(graph)
        units = self._units(context)
        found = [p for op in self._candidate_operators(switches) for p in op.propose(context)]
        return CaptionPlan(context, units, _merged(found))

    def fallback(self, context: CaptionContext, switches: Collection[str] = ()) -> list[Candidate]:
        """Further candidates for a caption whose every candidate was refused (the add
        operators' next insertions)."""
        found = [p for op in self._candidate_operators(switches) for p in op.fallback(context)]
        return _merged(found)

    def _candidate_operators(self, switches: Collection[str]) -> list[EditOperator]:
        return [
            op
            for op in self.operators
            if op.kind == "candidate" and (op.switch is None or op.switch in switches)
        ]

    def _units(self, context: CaptionContext) -> list[PlannedUnit]:
        proposals = [p for op in self.operators if op.kind == "unit" for p in op.propose(context)]
        units: list[PlannedUnit] = []
        seen: set[tuple[tuple[int, int], ...]] = set()
        evidence = self.evidence
        for unit in _merged(proposals):
            if not isinstance(unit, PlannedUnit):
                continue
            kind, spans, choices = unit.type, unit.spans, unit.choices
            if choices and context.in_alternative(spans):
                evidence.refuse(f"{kind}:alternative", unit=True)
                continue
            if choices and spans not in seen:
                seen.add(spans)
                floor = evidence.min_fluency if kind == "object" else -math.inf
                choices = evidence.fluent(context.caption, spans, choices, floor)
                if choices and not (
                    kind == "object" and evidence.is_person(choices[0].surface[-1])
                ):
                    least = MIN_CHOICE_SHARE * max(c.weight for c in choices)
                    choices = tuple(c for c in choices if c.weight >= least)
                if choices:
                    units.append(PlannedUnit(kind, spans, choices, unit.prior))
        return units


def _merged(proposals: list[Proposal]) -> list:
    """The proposals' items in key order (stable: equal keys keep the operators' order)."""
    return [p.item for p in sorted(proposals, key=lambda p: p.key)]


__all__ = [
    "COUNT_PRIOR",
    "MIN_CHOICE_SHARE",
    "CaptionPlan",
    "Choice",
    "EditPlanner",
    "PlannedUnit",
    "Trace",
    "swap_candidates",
]
