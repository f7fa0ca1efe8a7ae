"""The edit operator interface and what operators propose.

An :class:`EditOperator` looks at one caption's :class:`~.context.CaptionContext` and
proposes edits of one kind: ``"unit"`` operators propose :class:`PlannedUnit` s (spans with
substitutes, refilled by the weight-free refiller or an MLM), ``"candidate"`` operators
finished negatives (:class:`~tags.negatives.types.Candidate`: swaps, additions). Every
proposal carries a ``key``: the planner merges all operators' proposals by it (a stable
sort), so the order of a caption's units and candidates follows the caption's graph, not the
order the operators ran in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from tags.negatives.types import Candidate

if TYPE_CHECKING:
    from tags.negatives.operators.context import CaptionContext
    from tags.negatives.operators.evidence import SceneEvidence

CharSpan = tuple[int, int]

#: The key of a proposal that gives none: after every built-in proposal.
LAST: tuple[int, ...] = (1 << 30,)


@dataclass(frozen=True)
class Choice:
    """One substitute of a unit: a surface per span, its weight, and the operation."""

    surface: tuple[str, ...]
    weight: float
    operation: str = "replace"


@dataclass(frozen=True)
class PlannedUnit:
    """An editable unit: ``(type, spans, choices)`` (unpacks like ``SceneGraph.units()``)."""

    type: str
    spans: tuple[CharSpan, ...]
    choices: tuple[Choice, ...]
    #: The unit's share of a caption's negatives next to other units (1: an equal share).
    prior: float = 1.0

    def __iter__(self):  # (type, spans) as the maskers read units
        return iter((self.type, self.spans))


@dataclass(frozen=True)
class Proposal:
    """What an operator proposes for a caption: a unit to refill or a finished candidate,
    with the key it is merged by (built-ins: ``(part, index, ...)`` in the caption's graph)."""

    item: PlannedUnit | Candidate
    key: tuple[int, ...] = LAST


class EditOperator:
    """One kind of edit, proposed from a caption's shared analysis.

    Subclasses set :attr:`name` (via :func:`~.registry.register_operator`),
    :attr:`edit_types`, :attr:`kind` and :attr:`switch`, and implement :meth:`propose`.
    One instance serves a whole corpus: it may cache what depends on the corpus only.

    Args:
        evidence: the shared plausibility service (corpus counts, WordNet, categories).
    """

    #: The registry name (set by :func:`~.registry.register_operator`).
    name: ClassVar[str] = ""
    #: The edit types (``Edit.unit_type``) this operator writes.
    edit_types: ClassVar[tuple[str, ...]] = ()
    #: ``"unit"``: units with substitutes for the refill source; ``"candidate"``: finished
    #: negatives.
    kind: ClassVar[Literal["unit", "candidate"]] = "unit"
    #: The generation switch that turns it on (``"swaps"``, ``"role_swaps"``, ``"adds"``);
    #: ``None``: always on.
    switch: ClassVar[str | None] = None

    def __init__(self, evidence: SceneEvidence):
        self.evidence = evidence

    def prepare(self) -> None:
        """Build corpus-wide tables now (before worker processes fork, so they share them)."""

    def propose(self, context: CaptionContext) -> list[Proposal]:
        """The edits this operator proposes for one caption."""
        raise NotImplementedError

    def fallback(self, context: CaptionContext) -> list[Proposal]:
        """Further candidates for a caption whose every candidate was refused (none by
        default)."""
        return []


__all__ = ["LAST", "CharSpan", "Choice", "EditOperator", "PlannedUnit", "Proposal"]
