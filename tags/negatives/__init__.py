"""TAGS-DC negative generation: mask scene-graph units, refill, filter, select, label.

One module per stage:

- ``planner``: :class:`EditPlanner`, which runs the registered edit ``operators`` (replace
  object / attribute / relation, swaps, adds) over one analysis of each caption and one
  shared plausibility service (``operators.evidence``; ``scenes``: what the corpus attests;
  ``lexicon``: closed word classes; ``wordnet``: WordNet); ``skipped``: the report of
  captions left without a negative;
- ``masking``: :class:`UnitMasker` (scene-graph units) and :class:`WordMasker` (baseline);
- ``refill``: :class:`MLMRefiller` (any :class:`MaskedLM`) and :class:`VocabularyRefiller`
  (typed substitution from the corpus's :class:`SceneGraphVocabulary`, no weights);
- ``models``: adapters for local HF masked LMs and :class:`~tags.modeling.TagsModel`;
- ``filters``: identical / debris / duplicate / false-negative filters;
- ``plausibility``: an optional causal-LM filter (:class:`PlausibilityFilter`);
- ``selection``: top-m by ITM score (:class:`PairScorer`) or a seeded sample;
- ``labels``: WoD labels and WoC targets of a negative;
- ``pipeline``: :class:`NegativeGenerator`, the streaming pipeline;
- ``config`` / ``factory``: :class:`GenerationConfig` (every setting; the presets are
  instances) and :func:`create_generator`, the one way to build a generator;
- ``io`` / ``features``: caption readers, resumable writer, region features;
- ``exports``: NegCLIP CSV, SugarCrepe JSON, Parquet and ``datasets`` exports (a registry);
- ``batch`` / ``counts`` / ``columns``: the engine-neutral batch function
  (:class:`GenerateBatch`) and the counting pass as map + merge (:class:`CountBatch`,
  :func:`merge_counts`) for Hugging Face ``datasets`` and Ray Data.

Heavy modules (torch, transformers) load on first attribute access.

Layer: above data. May import ``tags.data``, ``tags.backends``, ``tags.modeling``,
``parsers``, ``heads`` and ``tags.core``; never training, evaluation or anything above.
"""

from __future__ import annotations

from tags.core.lazy import lazy_exports

_EXPORTS = {
    "Candidate": "tags.core.types",
    "Caption": "tags.core.types",
    "Edit": "tags.core.types",
    "ImageGroup": "tags.core.types",
    "apply_edits": "tags.core.types",
    "MaskedCopy": "masking",
    "TokenView": "masking",
    "UnitMasker": "masking",
    "WordMasker": "masking",
    "SceneGraphVocabulary": "vocabulary",
    "SceneCounts": "scenes",
    "Additions": "additions",
    "SkipReport": "skipped",
    "Trace": "planner",
    "Choice": "planner",
    "EditPlanner": "planner",
    "PlannedUnit": "planner",
    "swap_candidates": "planner",
    "MaskedLM": "refill",
    "MLMRefiller": "refill",
    "RefillJob": "refill",
    "VocabularyRefiller": "refill",
    "sample_refills": "refill",
    "HFMaskedLM": "tags.backends.masked_lm",
    "TagsMaskedLM": "tags.backends.masked_lm",
    "TagsPairScorer": "tags.backends.masked_lm",
    "load_tags_model": "tags.backends.tags_model",
    "filter_candidates": "filters",
    "CausalLM": "plausibility",
    "PlausibilityFilter": "plausibility",
    "PairScorer": "selection",
    "select": "selection",
    "TokenLabels": "labels",
    "token_labels": "labels",
    "GenerationConfig": "config",
    "create_generator": "factory",
    "GenerationStats": "pipeline",
    "NegativeGenerator": "pipeline",
    "NegativeRecord": "pipeline",
    "caption_seed": "pipeline",
    "JsonlWriter": "tags.core.io",
    "read_captions": "tags.core.io",
    "scan_output": "tags.core.io",
    "Regions": "tags.core.regions",
    "open_regions": "tags.core.regions",
    "BatchSettings": "batch",
    "GenerateBatch": "batch",
    "CountBatch": "counts",
    "count_groups": "counts",
    "merge_counts": "counts",
    "caption_columns": "columns",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
