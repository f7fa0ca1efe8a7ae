"""``tags_dc.synthetic.role_swaps`` reaches the training engine: a TAGS-DC step on shapes
captions gets role swaps ("X above Y" -> "Y above X"), false of their scenes, only when set."""

from __future__ import annotations

import json

import pytest
from _training_utils import tiny_config

from tags.benchmark.build import BenchmarkConfig, build_benchmark
from tags.benchmark.oracle import TruthOracle
from tags.benchmark.scenes import SHAPES
from tags.training import training_function
from tags.training.synthetic import EngineSource


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench")
    config = BenchmarkConfig(train=40, val=0, test=2, featurizer="random", crop_size=32)
    return build_benchmark(root / "data", config, threads=1).paths


def _negatives(bench, tmp_path, monkeypatch, role_swaps: bool):
    """Every (positive, negative, edits) a one-step TAGS-DC run generates."""
    seen = []
    call = EngineSource.__call__

    def spy(self, model, request):
        out = call(self, model, request)
        for text, pool in zip(request.texts, out):
            seen.extend((text, negative, edits) for negative, edits in pool)
        return out

    monkeypatch.setattr(EngineSource, "__call__", spy)
    config = tiny_config(
        "tags-dc",
        tmp_path / f"run_{role_swaps}",
        f"data.captions={bench.captions}",
        f"data.features={bench.features}",
        "data.split=train",
        "batch_size=8",
        "tags_dc.synthetic.masking=unit",
        f"tags_dc.synthetic.noun_classes={{shape: [{', '.join(SHAPES)}]}}",
        "tags_dc.synthetic.top_m=8",
        "tags_dc.synthetic.stratify_types=true",
        f"tags_dc.synthetic.role_swaps={str(role_swaps).lower()}",
        "phases.0.steps=1",
    )
    training_function(config)
    return seen


def test_role_swaps_reach_the_training_engine_and_are_false(bench, tmp_path, monkeypatch):
    plain = _negatives(bench, tmp_path, monkeypatch, role_swaps=False)
    assert plain
    assert not [e for _, _, edits in plain for e in edits if e.operation == "swap"]
    swapped = _negatives(bench, tmp_path, monkeypatch, role_swaps=True)
    roles = [
        (positive, negative)
        for positive, negative, edits in swapped
        if {(e.type, e.operation) for e in edits} == {("relation", "swap")}
    ]
    assert roles
    oracle = TruthOracle.from_path(bench.scenes)
    images = {}  # a caption of the benchmark -> its image id
    for image in json.loads(bench.captions.read_text())["images"]:
        for sentence in image["sentences"]:
            images[sentence["raw"]] = image["imgid"]
    for positive, negative in roles:
        assert sorted(positive.split()) == sorted(negative.split())  # the same words
        assert oracle.judge(images[positive], negative) == "false"
