"""The edit operator interface: one kind of edit proposed from a caption's shared analysis.

An :class:`EditOperator` looks at one caption's :class:`~.context.CaptionContext` and
proposes edits of one kind (:class:`~.proposals.Proposal` s: ``"unit"`` operators
:class:`~.proposals.PlannedUnit` s with substitutes, refilled by the weight-free refiller or
an MLM; ``"candidate"`` operators finished negatives, :class:`~tags.core.types.Candidate`:
swaps, additions), asking the shared evidence service (:class:`~.evidence.SceneEvidence`)
what the corpus and WordNet attest.

May import: ``proposals``, ``evidence``, ``context`` (never an operator module).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from tags.negatives.operators.context import CaptionContext
from tags.negatives.operators.evidence import SceneEvidence
from tags.negatives.operators.proposals import Proposal


class EditOperator:
    """One kind of edit, proposed from a caption's shared analysis.

    Subclasses set :attr:`name` (via :func:`~.registry.register_operator`),
    :attr:`edit_types`, :attr:`kind` and :attr:`switch`, and implement :meth:`propose`.
    One instance serves a whole corpus: it may cache what depends on the corpus only.

    Args:
        evidence: the shared evidence service (corpus counts, WordNet, categories).
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


__all__ = ["EditOperator"]
