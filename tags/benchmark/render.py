"""Draw a :class:`~tags.benchmark.scenes.Scene` with Pillow."""

from __future__ import annotations

import math

from PIL import Image, ImageDraw

from tags.benchmark.scenes import Scene, SceneObject


def _regular(cx: float, cy: float, r: float, sides: int, start: float) -> list[tuple[float, float]]:
    return [
        (
            cx + r * math.cos(start + 2 * math.pi * k / sides),
            cy + r * math.sin(start + 2 * math.pi * k / sides),
        )
        for k in range(sides)
    ]


def shape_polygon(obj: SceneObject) -> list[tuple[float, float]] | None:
    """Vertices of ``obj`` inside its box, or None for a circle."""
    cx, cy, r = obj.cx, obj.cy, obj.radius
    if obj.shape == "circle":
        return None
    if obj.shape == "square":
        return [(cx - r, cy - r), (cx + r, cy - r), (cx + r, cy + r), (cx - r, cy + r)]
    if obj.shape == "triangle":
        return [(cx, cy - r), (cx + r, cy + r), (cx - r, cy + r)]
    if obj.shape == "diamond":
        return [(cx, cy - r), (cx + r, cy), (cx, cy + r), (cx - r, cy)]
    if obj.shape == "hexagon":
        return _regular(cx, cy, r, 6, 0.0)
    if obj.shape == "star":
        outer = _regular(cx, cy, r, 5, -math.pi / 2)
        inner = _regular(cx, cy, 0.45 * r, 5, -math.pi / 2 + math.pi / 5)
        return [p for pair in zip(outer, inner, strict=True) for p in pair]
    raise ValueError(f"unknown shape {obj.shape!r}")


def render_scene(scene: Scene) -> Image.Image:
    """An RGB image of the scene (solid background, one filled shape per object)."""
    image = Image.new("RGB", (scene.width, scene.height), scene.background)
    draw = ImageDraw.Draw(image)
    for obj in scene.objects:
        polygon = shape_polygon(obj)
        if polygon is None:
            draw.ellipse(obj.box, fill=obj.rgb)
        else:
            draw.polygon(polygon, fill=obj.rgb)
    return image


__all__ = ["render_scene", "shape_polygon"]
