"""Minimal pairs of any split and scene-checked oracle negatives, read back from scenes."""

from __future__ import annotations

import json

import pytest

from tags.benchmark import BenchmarkConfig, build_benchmark, caption_truth, read_pairs
from tags.benchmark.oracle_negatives import (
    oracle_negatives,
    read_scenes,
    split_minimal_pairs,
    split_role_pairs,
    word_edit,
    write_oracle_negatives,
)
from tags.data import NegativePools


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench")
    config = BenchmarkConfig(train=6, val=3, test=3, seed=4, featurizer="random")
    return build_benchmark(root / "data", config).paths


def test_test_split_pairs_equal_the_builders_and_val_pairs_are_false(bench):
    assert split_minimal_pairs(bench.scenes, "test", seed=4) == read_pairs(bench.pairs)
    scenes = {scene.image_id: scene for scene, _ in read_scenes(bench.scenes, "val")}
    pairs = split_minimal_pairs(bench.scenes, "val", seed=4)
    assert {p.image_id for p in pairs} == set(scenes) and {p.type for p in pairs} >= {"object"}
    for p in pairs:
        assert caption_truth(p.caption, scenes[p.image_id]) == "true"
        assert caption_truth(p.negative, scenes[p.image_id]) == "false"
    with pytest.raises(ValueError, match="no images of split 'dev'"):
        split_minimal_pairs(bench.scenes, "dev")


def test_role_pairs_of_a_split_are_false_swaps(bench):
    scenes = {scene.image_id: scene for scene, _ in read_scenes(bench.scenes, "train")}
    pairs = split_role_pairs(bench.scenes, "train")
    assert pairs and {p.image_id for p in pairs} <= set(scenes)
    for p in pairs:
        assert caption_truth(p.caption, scenes[p.image_id]) == "true"
        assert caption_truth(p.negative, scenes[p.image_id]) == "false"
    with pytest.raises(ValueError, match="no role-swap pairs in split 'dev'"):
        split_role_pairs(bench.scenes, "dev")


def test_oracle_negatives_are_false_single_edits_keyed_by_sentid(bench):
    records = oracle_negatives(bench.scenes, seed=4)
    scenes = {scene.image_id: scene for scene, _ in read_scenes(bench.scenes, "train")}
    sentences = {
        s["sentid"]: s["raw"]
        for image in json.loads(bench.captions.read_text())["images"]
        for s in image["sentences"]
    }
    assert {r["image_id"] for r in records} == set(scenes)
    assert {r["edits"][0]["type"] for r in records} == {"attribute", "object", "relation"}
    for r in records:
        scene = scenes[r["image_id"]]
        assert sentences[r["caption_id"]] == r["positive"]
        assert caption_truth(r["positive"], scene) == "true"
        assert caption_truth(r["negative"], scene) == "false"
        (edit,) = r["edits"]
        pos = r["positive"]
        assert pos[edit["start"] : edit["end"]] == edit["original"]
        assert pos[: edit["start"]] + edit["replacement"] + pos[edit["end"] :] == r["negative"]


def test_word_edit_spans_the_changed_words_and_the_article():
    edit = word_edit("a red circle above a square", "an orange circle above a square", "x")
    assert (edit["original"], edit["replacement"], edit["start"]) == ("a red", "an orange", 0)
    edit = word_edit("a circle next to a star", "a circle to the right of a star", "relation")
    assert (edit["original"], edit["replacement"]) == ("next to", "to the right of")
    assert edit["start"] == len("a circle ")


def test_written_oracle_file_loads_as_fixed_pools(bench, tmp_path):
    path = write_oracle_negatives(bench.scenes, tmp_path / "o" / "oracle.jsonl", seed=4)
    pools = NegativePools.from_jsonl(path)
    first = oracle_negatives(bench.scenes, seed=4)[0]
    negatives = [n for n, _ in pools.get(first["caption_id"])]
    assert first["negative"] in negatives and 1 <= len(negatives) <= 3
