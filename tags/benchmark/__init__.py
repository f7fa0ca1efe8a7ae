"""A compositional benchmark of rendered shapes: true scene graphs, true captions, region
features from pixels, and minimal-pair negatives for fine-grained accuracy.

Modules: :mod:`.scenes` (seeded scene graphs), :mod:`.render` (Pillow), :mod:`.captions`
(claims, templates, truth), :mod:`.truth` (free text judged against a scene),
:mod:`.oracle` (image id -> scene, texts judged: audits of negatives),
:mod:`.minimal_pairs` (negatives + accuracy), :mod:`.oracle_negatives` (minimal pairs of any
split and scene-checked training negatives, read back from ``scenes.jsonl``),
:mod:`.efficientnet` / :mod:`.features` (region featurizers), :mod:`.config` (arguments),
:mod:`.build` (writer + cache), :mod:`.text_baseline` (text-only models scoring the
pairs), :mod:`.hf_models` (HF CLIP / BLIP pre-trained from scratch on the rendered
images). Names below are imported lazily (torch loads only when a featurizer or the builder
is used).

Layer: a user of the library (``tags make-benchmark``, the demo). May import
``tags.training`` and every layer below it; never ``tags.demo`` or ``tags.cli``.
"""

from __future__ import annotations

from tags.core.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "BenchmarkConfig": "config",
    "BuildResult": "build",
    "build_benchmark": "build",
    "cached_manifest": "build",
    "benchmark_version": "build",
    "pair_sampler_of": "build",
    "read_manifest": "build",
    "Claim": "captions",
    "Mention": "captions",
    "holds": "captions",
    "sample_claims": "captions",
    "EfficientNetFeaturizer": "features",
    "RandomConvFeaturizer": "features",
    "crop_regions": "features",
    "make_featurizer": "features",
    "region_boxes": "features",
    "MinimalPair": "minimal_pairs",
    "accuracy_by_word": "minimal_pairs",
    "minimal_pair_accuracy": "minimal_pairs",
    "minimal_pair_wins": "minimal_pairs",
    "minimal_pairs": "minimal_pairs",
    "balanced_minimal_pairs": "minimal_pairs",
    "sample_minimal_pairs": "minimal_pairs",
    "BASELINES": "text_baseline",
    "text_only_baselines": "text_baseline",
    "read_pairs": "minimal_pairs",
    "role_swap_pairs": "minimal_pairs",
    "oracle_negatives": "oracle_negatives",
    "read_scenes": "oracle_negatives",
    "split_minimal_pairs": "oracle_negatives",
    "split_role_pairs": "oracle_negatives",
    "write_oracle_negatives": "oracle_negatives",
    "render_scene": "render",
    "Scene": "scenes",
    "SceneObject": "scenes",
    "generate_scene": "scenes",
    "caption_truth": "truth",
    "parse_claim": "truth",
    "truth_shares": "truth",
    "TruthOracle": "oracle",
    "HFModelConfig": "hf_models",
    "HFTrainConfig": "hf_models",
    "build_blip": "hf_models",
    "build_clip": "hf_models",
    "evaluate_hf": "hf_models",
    "pretrain_hf": "hf_models",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
