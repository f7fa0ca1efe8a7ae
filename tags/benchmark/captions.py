"""Captions as structured claims about a scene: rendering, truth checking, sampling.

A :class:`Claim` is a template plus object mentions (shape with optional colour and size)
and, for relational templates, one relation from the first mention to the second. Its text
is rendered from the structure, and its truth is checked against the scene graph
(existentially: some assignment of distinct objects to the mentions satisfies it).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from tags.benchmark.scenes import Scene, SceneObject

RELATION_TEMPLATES: tuple[str, ...] = (
    "{a} {rel} {b}",
    "there is {a} {rel} {b}",
    "{a} is {rel} {b}",
)
LIST_TEMPLATE = "{n} shapes: {items}"
_NUMBERS = {2: "two", 3: "three", 4: "four"}
# mention styles: which attributes a mention carries
_STYLES: tuple[tuple[bool, bool], ...] = ((True, True), (False, True), (True, True), (True, False))


@dataclass(frozen=True)
class Mention:
    """A reference to one object: ``shape`` with an optional ``color`` and ``size``."""

    shape: str
    color: str | None = None
    size: str | None = None

    def matches(self, obj: SceneObject) -> bool:
        return (
            obj.shape == self.shape
            and self.color in (None, obj.color)
            and self.size in (None, obj.size)
        )

    @property
    def text(self) -> str:
        words = " ".join(w for w in (self.size, self.color, self.shape) if w)
        return ("an " if words[0] in "aeiou" else "a ") + words


@dataclass(frozen=True)
class Claim:
    """A caption's structure; ``template`` is a format string (see :data:`RELATION_TEMPLATES`)."""

    template: str
    mentions: tuple[Mention, ...]
    relation: str | None = None

    @property
    def text(self) -> str:
        if self.relation is not None:
            a, b = self.mentions
            return self.template.format(a=a.text, rel=self.relation, b=b.text)
        items = [m.text for m in self.mentions]
        joined = ", ".join(items[:-1]) + " and " + items[-1]
        return self.template.format(n=_NUMBERS[len(items)], items=joined)

    def to_dict(self) -> dict[str, Any]:
        return {
            "template": self.template,
            "mentions": [[m.shape, m.color, m.size] for m in self.mentions],
            "relation": self.relation,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Claim:
        mentions = tuple(Mention(*m) for m in data["mentions"])
        return cls(data["template"], mentions, data["relation"])


def holds(claim: Claim, scene: Scene) -> bool:
    """Whether the claim is true for the scene graph."""
    objects = scene.objects
    if claim.relation is None and len(claim.mentions) != len(objects):
        return False  # a list caption states the number of shapes
    # each mention's matching objects first, then the assignments of distinct objects
    matching = [[i for i, o in enumerate(objects) if m.matches(o)] for m in claim.mentions]
    if not all(matching):
        return False
    if claim.relation is not None:
        related = {(s, o) for s, r, o in scene.relations if r == claim.relation}
        return any((a, b) in related for a in matching[0] for b in matching[1] if a != b)
    return any(len(set(a)) == len(a) for a in itertools.product(*matching))


def _mention(obj: SceneObject, rng: np.random.Generator) -> Mention:
    use_size, use_color = _STYLES[int(rng.integers(len(_STYLES)))]
    return Mention(obj.shape, obj.color if use_color else None, obj.size if use_size else None)


def sample_claims(
    scene: Scene, rng: np.random.Generator, count: int = 5, list_prob: float = 0.2
) -> list[Claim]:
    """``count`` distinct true claims (different texts), mostly relational."""
    claims: list[Claim] = []
    texts: set[str] = set()
    relations = list(scene.relations)
    for _ in range(200 * count):
        if len(claims) == count:
            break
        if not relations or rng.random() < list_prob:
            order = rng.permutation(len(scene.objects))
            mentions = tuple(_mention(scene.objects[i], rng) for i in order)
            claim = Claim(LIST_TEMPLATE, mentions)
        else:
            subject, relation, obj = relations[int(rng.integers(len(relations)))]
            template = RELATION_TEMPLATES[int(rng.integers(len(RELATION_TEMPLATES)))]
            mentions = (_mention(scene.objects[subject], rng), _mention(scene.objects[obj], rng))
            claim = Claim(template, mentions, relation)
        if claim.text not in texts and holds(claim, scene):
            claims.append(claim)
            texts.add(claim.text)
    if len(claims) < count:
        raise RuntimeError(f"image {scene.image_id}: only {len(claims)} distinct true captions")
    return claims


__all__ = ["LIST_TEMPLATE", "RELATION_TEMPLATES", "Claim", "Mention", "holds", "sample_claims"]
