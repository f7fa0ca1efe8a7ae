"""What edit operators propose: the shared value types at the bottom of ``operators``.

A unit operator proposes :class:`PlannedUnit` s (spans with substitutes, each a
:class:`Choice`), a candidate operator finished negatives
(:class:`~tags.core.types.Candidate`); both travel in a :class:`Proposal` with the ``key``
the planner merges all operators' proposals by (a stable sort), so the order of a caption's
units and candidates follows the caption's graph, not the order the operators ran in.

May import: :mod:`tags.core` only (every other module of ``operators`` imports this one).
"""

from __future__ import annotations

from dataclasses import dataclass

from tags.core.types import Candidate

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


__all__ = ["LAST", "CharSpan", "Choice", "PlannedUnit", "Proposal"]
