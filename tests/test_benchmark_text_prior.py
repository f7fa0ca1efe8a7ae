"""Minimal pairs without a text prior (the balanced sampler, benchmark v2) and the
text-only baselines that check it."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest

from tags.benchmark import (
    BenchmarkConfig,
    benchmark_version,
    build_benchmark,
    read_manifest,
    read_pairs,
    split_minimal_pairs,
    text_only_baselines,
)
from tags.benchmark.captions import Claim, holds, sample_claims
from tags.benchmark.minimal_pairs import (
    PAIR_TYPES,
    balanced_minimal_pairs,
    minimal_pairs,
    sample_minimal_pairs,
)
from tags.benchmark.scenes import RELATIONS, generate_scene
from tags.evaluation.text_prior import NgramLM, PairClassifier, text_only_accuracy

IDS = range(300)


@pytest.fixture(scope="module")
def items():
    out = []
    for i in IDS:
        scene = generate_scene(i)
        out.append((scene, sample_claims(scene, np.random.default_rng([0, i, 1]))))
    return out


def _directions(pairs, kind):
    return Counter((p.original, p.replacement) for p in pairs if p.type == kind)


def test_balanced_pairs_use_each_word_pair_equally_often_in_both_directions(items):
    pairs = balanced_minimal_pairs(items, seed=0)
    for kind in PAIR_TYPES:
        directions = _directions(pairs, kind)
        assert directions, kind
        assert all(directions[(b, a)] == n for (a, b), n in directions.items()), kind
    # most of what the uniform sampler draws survives
    uniform = sample_minimal_pairs(items, 0, sampler="uniform")
    for kind in PAIR_TYPES:
        kept = sum(p.type == kind for p in pairs) / sum(p.type == kind for p in uniform)
        assert kept > 0.75, (kind, kept)


def test_balanced_pairs_take_one_edit_per_caption_and_type_in_caption_order(items):
    scenes = {scene.image_id: (scene, claims) for scene, claims in items}
    pairs = balanced_minimal_pairs(items, seed=0)
    per_caption = Counter((p.image_id, p.caption, p.type) for p in pairs)
    assert max(per_caption.values()) == 1  # per_type = 1
    assert max(Counter(balanced_minimal_pairs(items, 0, per_type=2)).values()) == 1
    # order: by image, then caption, as the uniform sampler writes them
    order = [(p.image_id, [c.text for c in scenes[p.image_id][1]].index(p.caption)) for p in pairs]
    assert order == sorted(order)


def test_balanced_negatives_are_single_edits_false_of_their_scene(items):
    scenes = {scene.image_id: (scene, claims) for scene, claims in items}
    for pair in balanced_minimal_pairs(items[:60], seed=3):
        scene, claims = scenes[pair.image_id]
        claim = next(c for c in claims if c.text == pair.caption)
        assert holds(claim, scene)
        negative = _edited_claim(claim, pair)  # the one unit the pair names, changed
        assert negative.text == pair.negative
        assert not holds(negative, scene)


def _edited_claim(claim: Claim, pair) -> Claim:
    from tags.benchmark.minimal_pairs import single_edits

    return next(
        e
        for kind, old, new, e in single_edits(claim)
        if (kind, old, new) == (pair.type, pair.original, pair.replacement)
        and e.text == pair.negative
    )


def test_balanced_sampler_is_deterministic_and_seeded(items):
    a = balanced_minimal_pairs(items, seed=0)
    assert a == balanced_minimal_pairs(list(items), seed=0)
    assert a != balanced_minimal_pairs(items, seed=1)
    with pytest.raises(ValueError, match="per_type"):
        balanced_minimal_pairs(items, seed=0, per_type=0)
    with pytest.raises(ValueError, match="pair sampler"):
        sample_minimal_pairs(items, 0, sampler="nope")


def test_uniform_sampler_is_the_v1_draw(items):
    expected = []
    for scene, claims in items[:30]:
        expected += minimal_pairs(scene, claims, np.random.default_rng([5, scene.image_id, 2]))
    assert sample_minimal_pairs(items[:30], 5, sampler="uniform") == expected


def _word_prior(pair_type_words):
    """A text-only scorer that prefers captions by one fixed word ranking (no image, no
    context): what a unigram text prior can do."""
    rank = {w: i for i, w in enumerate(pair_type_words)}

    def score(text: str) -> float:
        return max((rank[w] for w in rank if f" {w} " in f" {text} "), default=-1)

    return score


def test_a_word_prior_wins_exactly_half_of_balanced_relation_pairs(items):
    balanced = [p for p in balanced_minimal_pairs(items, seed=0) if p.type == "relation"]
    uniform = [p for p in sample_minimal_pairs(items, 0, sampler="uniform") if p.type == "relation"]
    # "next to" and "on top of" are rarely true: a scorer that dislikes them wins v1 pairs
    score = _word_prior(["next to", "on top of", *RELATIONS[:4]])
    pairs_b = [(p.caption, p.negative) for p in balanced]
    pairs_u = [(p.caption, p.negative) for p in uniform]
    wins_b = text_only_accuracy(score, pairs_b)["overall"]
    reverse_b = text_only_accuracy(lambda t: -score(t), pairs_b)["overall"]
    assert math.isclose(wins_b, 0.5) and math.isclose(reverse_b, 0.5)
    assert text_only_accuracy(score, pairs_u)["overall"] > 0.6


def test_ngram_lm_is_a_distribution_and_prefers_what_it_saw():
    lm = NgramLM().fit(["a red circle above a blue square", "two shapes: a circle and a star"])
    vocabulary = [*lm.cont1, "unseen"]
    for context in [("<s>", "<s>"), ("a", "red"), ("circle", "above"), ("x", "y")]:
        assert math.isclose(sum(lm.prob(*context, w) for w in vocabulary), 1.0, rel_tol=1e-9)
    assert lm.score("a red circle above a blue square") > lm.score(
        "a red square above a blue circle"
    )
    with pytest.raises(ValueError):
        NgramLM().fit([])
    with pytest.raises(ValueError):
        NgramLM(discount=1.5)


def test_pair_classifier_learns_a_planted_prior_and_not_a_symmetric_one():
    rng = np.random.default_rng(0)
    shapes = ["circle", "square", "star", "diamond"]

    def caption(rel: str) -> str:
        a, b = rng.choice(shapes, 2, replace=False)
        return f"a {a} {rel} a {b}"

    planted = [(caption("above"), caption("next to")) for _ in range(200)]
    clf = PairClassifier(steps=100).fit(planted)
    held_out = [(caption("above"), caption("next to")) for _ in range(50)]
    assert text_only_accuracy(clf.score, held_out)["overall"] > 0.95
    symmetric = [(caption("above"), caption("below")) for _ in range(100)]
    symmetric += [(caption("below"), caption("above")) for _ in range(100)]
    clf = PairClassifier(steps=100).fit(symmetric)
    test = [(caption("above"), caption("below")) for _ in range(50)]
    test += [(caption("below"), caption("above")) for _ in range(50)]
    assert 0.3 <= text_only_accuracy(clf.score, test)["overall"] <= 0.7
    with pytest.raises(ValueError):
        PairClassifier().fit([])


def test_accuracy_groups_and_checks_lengths():
    acc = text_only_accuracy(len, [("aaa", "a"), ("a", "aaa"), ("aa", "a")], ["x", "y", "x"])
    assert acc == {"overall": 2 / 3, "x": 1.0, "y": 0.0}
    with pytest.raises(ValueError):
        text_only_accuracy(len, [("a", "b")], ["x", "y"])
    with pytest.raises(ValueError):
        text_only_accuracy(len, [])


SMALL = BenchmarkConfig(train=150, val=0, test=40, featurizer="random", crop_size=32)


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    root = tmp_path_factory.mktemp("prior")
    v2 = build_benchmark(root / "v2", SMALL, threads=1)
    v1 = build_benchmark(
        root / "v1", BenchmarkConfig(**{**SMALL.__dict__, "pair_sampler": "uniform"})
    )
    return v1, v2


def test_builds_say_their_version_and_sampler(builds):
    v1, v2 = builds
    m1, m2 = read_manifest(v1.paths.root), read_manifest(v2.paths.root)
    assert m2["format"] == "tags-benchmark/2" and m2["config"]["pair_sampler"] == "balanced"
    assert benchmark_version(m2) == "v2 (balanced pairs)"
    assert "uniform" in benchmark_version(m1)
    # the same scenes and captions; only the pairs differ
    assert v1.paths.captions.read_bytes() == v2.paths.captions.read_bytes()
    assert read_pairs(v1.paths.pairs) != read_pairs(v2.paths.pairs)
    assert split_minimal_pairs(v2.paths.scenes, "test", 0) == read_pairs(v2.paths.pairs)


def test_an_old_v1_build_still_loads_and_says_so(builds, tmp_path):
    v1, _ = builds
    manifest = json.loads(v1.paths.manifest.read_text())
    manifest["format"] = "tags-benchmark/1"
    del manifest["config"]["pair_sampler"]
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    old = read_manifest(tmp_path)
    assert benchmark_version(old).startswith("v1 (uniform pairs")
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "other/9"}))
    with pytest.raises(ValueError, match="format"):
        read_manifest(tmp_path)
    with pytest.raises(ValueError, match="not found"):
        read_manifest(tmp_path / "missing")


def test_pair_sampler_is_part_of_the_cache_key(builds):
    from tags.benchmark import cached_manifest

    v1, v2 = builds
    assert cached_manifest(v2.paths.root, SMALL) is not None
    assert cached_manifest(v1.paths.root, SMALL) is None
    with pytest.raises(ValueError, match="pair_sampler"):
        BenchmarkConfig(pair_sampler="random")
    with pytest.raises(ValueError, match="pairs_per_type"):
        BenchmarkConfig(pairs_per_type=0)


def test_text_only_baselines_score_every_type(builds):
    _, v2 = builds
    results = text_only_baselines(v2.paths.root)
    assert set(results) == {"trigram LM", "n-gram classifier"}
    for accuracy in results.values():
        assert set(accuracy) == {"overall", *PAIR_TYPES, "role"}
        assert all(0.0 <= v <= 1.0 for v in accuracy.values())
    # rescoring the same scenes with v1's sampler: the LM finds the relation-word prior
    v1_rel = text_only_baselines(v2.paths.root, sampler="uniform")["trigram LM"]["relation"]
    assert v1_rel > results["trigram LM"]["relation"]
