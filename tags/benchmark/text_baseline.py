"""The benchmark's text-only baselines: models that never see an image, fitted on the
training split, scoring the test minimal pairs. Near 50 % per type means the pairs carry no
text prior; above it, a VL model can win pairs from the words alone.

- ``trigram LM``: :class:`~tags.evaluation.text_prior.NgramLM` on the training captions;
- ``n-gram classifier``: :class:`~tags.evaluation.text_prior.PairClassifier` on the training
  split's minimal pairs and role pairs, drawn by the build's own pair sampler.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tags.benchmark.build import (
    MANIFEST_FILE,
    PAIRS_FILE,
    SCENES_FILE,
    pair_sampler_of,
    read_manifest,
)
from tags.benchmark.minimal_pairs import MinimalPair, read_pairs
from tags.benchmark.oracle_negatives import read_scenes, split_minimal_pairs, split_role_pairs
from tags.evaluation.text_prior import NgramLM, PairClassifier, text_only_accuracy

BASELINES: tuple[str, ...] = ("trigram LM", "n-gram classifier")


def _accuracy(model: Any, pairs: Sequence[MinimalPair]) -> dict[str, float]:
    return text_only_accuracy(
        model.score, [(p.caption, p.negative) for p in pairs], [p.type for p in pairs]
    )


def benchmark_test_pairs(root: str | Path, sampler: str | None = None) -> list[MinimalPair]:
    """The build's test minimal pairs (its file), or those ``sampler`` draws from the same
    test scenes when it differs from the build's sampler."""
    root = Path(root)
    manifest = read_manifest(root)
    if sampler is None or sampler == pair_sampler_of(manifest):
        return read_pairs(root / PAIRS_FILE)
    return split_minimal_pairs(
        root / SCENES_FILE, "test", manifest["config"]["seed"], sampler=sampler
    )


def text_only_baselines(
    root: str | Path, sampler: str | None = None, seed: int = 0
) -> dict[str, dict[str, float]]:
    """``{baseline: {"overall", "attribute", "object", "relation", "role": accuracy}}`` on a
    built benchmark's test pairs (and its test role pairs, scored separately: ``role`` does
    not enter ``overall``, as in the model's minimal-pair accuracy). ``sampler`` rescores
    the same scenes with another pair sampler (e.g. ``uniform``, v1's) for comparison;
    ``seed`` seeds the classifier's initialisation."""
    root = Path(root)
    if not (root / MANIFEST_FILE).is_file():
        raise ValueError(f"{root}: no {MANIFEST_FILE} (build it with tags make-benchmark)")
    manifest = read_manifest(root)
    sampler = sampler or pair_sampler_of(manifest)
    bench_seed = manifest["config"]["seed"]
    scenes = root / SCENES_FILE
    captions = [c.text for _, claims in read_scenes(scenes, "train") for c in claims]
    if not captions:
        raise ValueError(f"{scenes}: no training captions to fit the text-only models on")
    train_pairs = split_minimal_pairs(scenes, "train", bench_seed, sampler=sampler)
    train_pairs += split_role_pairs(scenes, "train")
    pairs = benchmark_test_pairs(root, sampler)
    roles = split_role_pairs(scenes, "test")
    models = {
        "trigram LM": NgramLM().fit(captions),
        "n-gram classifier": PairClassifier().fit(
            [(p.caption, p.negative) for p in train_pairs], seed=seed
        ),
    }
    results = {}
    for name, model in models.items():
        accuracy = _accuracy(model, pairs)
        accuracy["role"] = _accuracy(model, roles)["overall"]
        results[name] = accuracy
    return results


__all__ = ["BASELINES", "benchmark_test_pairs", "text_only_baselines"]
