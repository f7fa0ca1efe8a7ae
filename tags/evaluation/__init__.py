"""Image-text retrieval evaluation: R@1/5/10, RSum, medr/meanr under the standard protocols.

Layout (one job per module):

- ``metrics``: ranks and metrics of a score matrix, k-fold averaging (NumPy only);
- ``data``: :class:`RetrievalImages` / :class:`RetrievalTexts`, the in-memory evaluation set;
- ``scoring``: full cross-encoder, dual-encoder and two-stage (dual top-k + cross rerank)
  score matrices, sharded over processes with Accelerate;
- ``retrieval``: the protocols (Flickr30K 1K, COCO 1K / 5K) and :func:`evaluate_retrieval`;
- ``io``: caption and region-feature readers for ``tags evaluate``;
- ``explain`` / ``highlight``: ``tags explain`` (per-word WoD mismatch, WoC corrections, ITM
  score; WoD/WoC accuracy on generated negatives) and its console / HTML renderings.
- ``text_prior`` / ``refine``: text-only baselines of pair suites; SugarCrepe's adversarial
  refinement (``tags export --format sugarcrepe --refine``).

Attributes are imported lazily, so the metrics work without importing torch.

Layer: beside ``tags.mining``, below training (which validates with it). May import
``tags.negatives`` and every layer below it.
"""

from __future__ import annotations

from tags.core.lazy import lazy_exports

_EXPORTS = {
    "METRIC_KEYS": "metrics",
    "retrieval_metrics": "metrics",
    "kfold_metrics": "metrics",
    "i2t_ranks": "metrics",
    "t2i_ranks": "metrics",
    "fold_bounds": "metrics",
    "RetrievalImages": "data",
    "RetrievalTexts": "data",
    "image_subset": "data",
    "MODES": "scoring",
    "compute_scores": "scoring",
    "encode_images": "scoring",
    "encode_texts": "scoring",
    "rerank_topk": "scoring",
    "score_matrix_cross": "scoring",
    "score_matrix_dual": "scoring",
    "PROTOCOLS": "retrieval",
    "RetrievalResult": "retrieval",
    "evaluate_retrieval": "retrieval",
    "format_table": "retrieval",
    "load_retrieval_split": "io",
    "from_dataset": "io",
    "Explanation": "explain",
    "explain": "explain",
    "token_accuracy": "explain",
    "render_html": "highlight",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
