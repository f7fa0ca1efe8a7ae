"""Benchmark scenes: seeded, well-formed, relations consistent with the rendered pixels."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tags.benchmark.render import render_scene
from tags.benchmark.scenes import COLORS, RELATIONS, SHAPES, SIZES, Scene, generate_scene

IDS = range(40)


def _mask(scene: Scene, index: int) -> np.ndarray:
    """Pixels covered by object ``index`` alone."""
    alone = replace(scene, objects=(scene.objects[index],))
    pixels = np.asarray(render_scene(alone), dtype=np.int16)
    return np.abs(pixels - np.asarray(scene.background, dtype=np.int16)).max(axis=2) > 0


def test_same_seed_same_scene_and_other_seed_differs():
    assert [generate_scene(i, seed=3) for i in IDS] == [generate_scene(i, seed=3) for i in IDS]
    assert [generate_scene(i, seed=3) for i in IDS] != [generate_scene(i, seed=4) for i in IDS]


def test_scene_round_trips_through_dict():
    scene = generate_scene(5)
    assert Scene.from_dict(scene.to_dict()) == scene


@pytest.mark.parametrize("image_id", IDS)
def test_scene_is_well_formed(image_id):
    scene = generate_scene(image_id, image_size=160)
    assert 2 <= len(scene.objects) <= 4
    assert len({(o.color, o.shape) for o in scene.objects}) == len(scene.objects)
    for obj in scene.objects:
        assert obj.shape in SHAPES and obj.color in COLORS and obj.size in SIZES
        x1, y1, x2, y2 = obj.box
        assert 0 <= x1 < x2 <= scene.width and 0 <= y1 < y2 <= scene.height
    assert all(r in RELATIONS for _, r, _ in scene.relations)


def test_sizes_are_visually_distinct():
    radii = {"small": [], "large": []}
    for i in IDS:
        for obj in generate_scene(i).objects:
            radii[obj.size].append(obj.radius)
    assert max(radii["small"]) * 1.5 < min(radii["large"])


@pytest.mark.parametrize("image_id", IDS)
def test_relations_agree_with_rendered_pixels(image_id):
    scene = generate_scene(image_id)
    masks = [_mask(scene, i) for i in range(len(scene.objects))]
    extents = []
    for mask in masks:
        ys, xs = np.nonzero(mask)
        assert len(xs) > 20  # every object is visible
        extents.append((xs.min(), ys.min(), xs.max(), ys.max()))
    for s, relation, o in scene.relations:
        (sx1, sy1, sx2, sy2), (ox1, oy1, ox2, oy2) = extents[s], extents[o]
        if relation == "to the left of":
            assert sx2 < ox1
        elif relation == "to the right of":
            assert sx1 > ox2
        elif relation == "above":
            assert sy2 < oy1
        elif relation == "below":
            assert sy1 > oy2
        elif relation == "next to":
            assert min(sy2, oy2) >= max(sy1, oy1)  # side by side: vertical extents overlap
        elif relation == "on top of":
            assert sy1 < oy1 and abs((sx1 + sx2) - (ox1 + ox2)) / 2 < scene.width / 8
    # objects never overlap in the picture
    total = np.sum(masks, axis=0)
    assert total.max() <= 1


def test_every_scene_has_relations_and_some_have_each_kind():
    seen = set()
    for i in range(200):
        scene = generate_scene(i)
        assert scene.relations
        seen |= {r for _, r, _ in scene.relations}
    assert seen == set(RELATIONS)
