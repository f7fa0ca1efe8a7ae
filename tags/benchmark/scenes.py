"""Seeded scene graphs of coloured shapes: objects with attributes and geometric relations.

Relations are computed from the object boxes, so they never contradict the rendered picture.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from tags.benchmark.config import SMALLEST_RADIUS

SHAPES: tuple[str, ...] = ("circle", "square", "triangle", "star", "diamond", "hexagon")
COLORS: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40),
    "green": (40, 170, 60),
    "blue": (50, 90, 230),
    "yellow": (235, 215, 40),
    "purple": (150, 60, 190),
    "orange": (245, 140, 30),
    "white": (240, 240, 240),
}
SIZES: tuple[str, ...] = ("small", "large")
_COLOR_NAMES: tuple[str, ...] = tuple(COLORS)
RELATIONS: tuple[str, ...] = (
    "to the left of",
    "to the right of",
    "above",
    "below",
    "next to",
    "on top of",
)

# Geometry, as fractions of the image side.
_RADIUS = {"small": (SMALLEST_RADIUS, 0.08), "large": (0.13, 0.16)}
_MARGIN = 0.02  # minimum clear gap for left/right/above/below
_TOUCH = 0.03  # maximum gap for "on top of"
_NEAR = 0.12  # maximum horizontal gap for "next to"


@dataclass(frozen=True)
class SceneObject:
    """One shape: its labels, its centre and half side (pixels), its fill colour."""

    shape: str
    color: str
    size: str
    cx: float
    cy: float
    radius: float
    rgb: tuple[int, int, int]

    @property
    def box(self) -> tuple[float, float, float, float]:
        """Pixel box ``(x1, y1, x2, y2)`` the shape is drawn in."""
        r = self.radius
        return (self.cx - r, self.cy - r, self.cx + r, self.cy + r)


@dataclass(frozen=True)
class Scene:
    """An image's true scene graph; ``relations`` holds ``(subject, relation, object)``."""

    image_id: int
    width: int
    height: int
    background: tuple[int, int, int]
    objects: tuple[SceneObject, ...]
    relations: tuple[tuple[int, str, int], ...] = field(default=())

    def related(self, subject: int, obj: int) -> set[str]:
        return {r for s, r, o in self.relations if s == subject and o == obj}

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["relations"] = [list(r) for r in self.relations]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Scene:
        objects = tuple(SceneObject(**{**o, "rgb": tuple(o["rgb"])}) for o in data["objects"])
        return cls(
            image_id=int(data["image_id"]),
            width=int(data["width"]),
            height=int(data["height"]),
            background=tuple(data["background"]),
            objects=objects,
            relations=tuple((int(s), str(r), int(o)) for s, r, o in data["relations"]),
        )


def relations_between(a: SceneObject, b: SceneObject, side: float) -> set[str]:
    """Relations that hold from ``a`` to ``b``, read off their boxes."""
    ax1, ay1, ax2, ay2 = a.box
    bx1, by1, bx2, by2 = b.box
    margin = _MARGIN * side
    out: set[str] = set()
    if ax2 + margin <= bx1:
        out.add("to the left of")
    if ax1 >= bx2 + margin:
        out.add("to the right of")
    if ay2 + margin <= by1:
        out.add("above")
    if ay1 >= by2 + margin:
        out.add("below")
    v_overlap = min(ay2, by2) - max(ay1, by1)
    h_gap = max(bx1 - ax2, ax1 - bx2)
    if v_overlap >= 0.5 * min(ay2 - ay1, by2 - by1) and 0 <= h_gap <= _NEAR * side:
        out.add("next to")
    v_gap = by1 - ay2
    if 0 <= v_gap <= _TOUCH * side and abs(a.cx - b.cx) <= 0.5 * min(a.radius, b.radius):
        out.add("on top of")
    return out


def scene_relations(
    objects: tuple[SceneObject, ...], side: float
) -> tuple[tuple[int, str, int], ...]:
    """All true ``(subject, relation, object)`` triples, in a fixed order."""
    triples = []
    for i, a in enumerate(objects):
        for j, b in enumerate(objects):
            if i != j:
                rels = relations_between(a, b, side)
                triples += [(i, r, j) for r in RELATIONS if r in rels]
    return tuple(triples)


def _jitter(
    rgb: tuple[int, int, int], rng: np.random.Generator, amount: int
) -> tuple[int, int, int]:
    shift = rng.integers(-amount, amount + 1, 3).tolist()
    r, g, b = (min(255, max(0, c + d)) for c, d in zip(rgb, shift, strict=True))
    return r, g, b


def _pick(rng: np.random.Generator, options: Sequence[str]) -> str:
    """``rng.choice(options)`` without building an array: the same draw from the same
    stream (``choice`` draws ``integers(len(options))``), a few times faster."""
    return options[int(rng.integers(len(options)))]


def _gap(a: SceneObject, b: SceneObject) -> float:
    """Clear gap between two boxes (negative when they overlap)."""
    ax1, ay1, ax2, ay2 = a.box
    bx1, by1, bx2, by2 = b.box
    return max(bx1 - ax2, ax1 - bx2, by1 - ay2, ay1 - by2)


def _new_object(
    rng: np.random.Generator,
    side: int,
    used: set[tuple[str, str]],
    center: tuple[float, float] | None,
) -> SceneObject:
    while True:
        shape = _pick(rng, SHAPES)
        color = _pick(rng, _COLOR_NAMES)
        if (color, shape) not in used:
            break
    size = _pick(rng, SIZES)
    lo, hi = _RADIUS[size]
    radius = float(round(rng.uniform(lo, hi) * side, 1))
    if center is None:
        cx, cy = rng.uniform(radius + 2, side - radius - 2, 2)
    else:
        cx, cy = center
    return SceneObject(
        shape,
        color,
        size,
        float(round(cx, 1)),
        float(round(cy, 1)),
        radius,
        _jitter(COLORS[color], rng, 15),
    )


def generate_scene(
    image_id: int,
    seed: int = 0,
    image_size: int = 192,
    min_objects: int = 2,
    max_objects: int = 4,
    stack_prob: float = 0.3,
) -> Scene:
    """A random scene for ``image_id``; the same ``(seed, image_id)`` gives the same scene."""
    rng = np.random.default_rng([seed, image_id])
    count = int(rng.integers(min_objects, max_objects + 1))
    side = image_size
    margin = _MARGIN * side
    objects: list[SceneObject] = []
    used: set[tuple[str, str]] = set()
    for _ in range(500):
        if len(objects) == count:
            break
        center = None
        min_gap = margin
        if objects and rng.random() < stack_prob:
            # stack onto an existing object: touching, horizontally aligned
            base = objects[int(rng.integers(len(objects)))]
            probe = _new_object(rng, side, used, (0.0, 0.0))
            dx = rng.uniform(-0.3, 0.3) * min(probe.radius, base.radius)
            gap = rng.uniform(0.2, 0.9) * _TOUCH * side
            center = (base.cx + dx, base.cy - base.radius - gap - probe.radius)
            min_gap = 0.0
            candidate = SceneObject(
                probe.shape,
                probe.color,
                probe.size,
                float(round(center[0], 1)),
                float(round(center[1], 1)),
                probe.radius,
                probe.rgb,
            )
            others = [o for o in objects if o is not base]
        else:
            candidate = _new_object(rng, side, used, None)
            others = objects
        x1, y1, x2, y2 = candidate.box
        if x1 < 1 or y1 < 1 or x2 > side - 1 or y2 > side - 1:
            continue
        if center is not None and _gap(candidate, base) < 0:
            continue
        if all(_gap(candidate, o) >= max(min_gap, margin if o in others else 0.0) for o in objects):
            objects.append(candidate)
            used.add((candidate.color, candidate.shape))
    background = _jitter((45, 45, 50), rng, 10)
    objs = tuple(objects)
    return Scene(image_id, side, side, background, objs, scene_relations(objs, side))


__all__ = [
    "COLORS",
    "RELATIONS",
    "SHAPES",
    "SIZES",
    "Scene",
    "SceneObject",
    "generate_scene",
    "relations_between",
    "scene_relations",
]
