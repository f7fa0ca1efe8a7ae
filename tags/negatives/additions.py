"""The add edits of ``--adds`` over one planner: :class:`Additions` runs the ``add_attribute``
and ``add_object`` operators (:mod:`tags.negatives.operators.add`, where the rules live) on a
caption's analysis, for the generator's add pass."""

from __future__ import annotations

from typing import Any

from parsers import SceneGraph
from tags.core.types import Candidate
from tags.negatives.operators.add import ADD_CHOICES, AddAttribute, AddObject, Insertion
from tags.negatives.operators.context import CaptionContext


class Additions:
    """Attribute and object additions of a caption, over an
    :class:`~tags.negatives.planner.EditPlanner`'s evidence."""

    def __init__(self, planner: Any):
        self.planner = planner
        self.scenes = planner.scenes
        self.attribute = AddAttribute(planner.evidence)
        self.object = AddObject(planner.evidence)
        self._context: CaptionContext | None = None

    def _context_of(self, graph: SceneGraph) -> CaptionContext:
        if self._context is None or self._context.graph is not graph:
            self._context = self.planner.analyse(graph)
        return self._context

    def prepare(self) -> None:
        """Build the category tables now (before worker processes fork)."""
        self.attribute.prepare()
        self.object.prepare()

    def value_shares(self, name: str, kind: str) -> dict[str, float]:
        """See :meth:`AddAttribute.value_shares`."""
        return self.attribute.value_shares(name, kind)

    def attribute_choices(self, graph: SceneGraph, index: int) -> list[Insertion]:
        """``(position, value, weight)`` of the attributes that may be added to object
        ``index``."""
        return self.attribute.insertions(self._context_of(graph), index)

    def object_choices(self, graph: SceneGraph, index: int) -> list[Insertion]:
        """``(position, " and a Y", weight)`` of the objects that may be coordinated after
        object ``index``."""
        return self.object.insertions(self._context_of(graph), index)

    def candidates(
        self, graph: SceneGraph, first: int = 0, limit: int = ADD_CHOICES
    ) -> list[Candidate]:
        """Attribute then object additions of ``graph``: per kind, ``limit`` of them from
        the ``first`` (by weight)."""
        context = self._context_of(graph)
        found = self.attribute.candidates(context, first, limit)
        found += self.object.candidates(context, first, limit)
        return [p.item for p in found]


__all__ = ["Additions"]
