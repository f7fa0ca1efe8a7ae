"""``tags demo``: benchmark -> pre-training -> hardest-negative baseline vs TAGS-DC -> report.

- ``budget``: the named training budgets (``small``, ``tiny``);
- ``methods``: the compared methods as config builders (registry), and pre-training;
- ``pipeline``: build data, pre-train, fine-tune, evaluate (cached per run), negatives;
- ``evaluate``: R@K / RSum and minimal-pair accuracy, cross (ITM logit) or dual (cosine);
- ``results``: the 3-seed results benchmark over every method (mean ± std);
- ``plots``: a tiny Pillow line-plot helper;
- ``report``: ``report.md`` + ``results.json``;
- ``hf``: ``tags demo --backend clip|blip`` (a Hugging Face CLIP or BLIP pre-trained on the
  rendered shapes; CLIP: plain vs NegCLIP-style fine-tuning with ``tags generate``
  negatives; BLIP: ITM with retrieved hard negatives vs TAGS-DC).

Layer: a user of the library beside the CLI. May import ``tags.benchmark`` and every
layer below it; never ``tags.cli``.
"""

from __future__ import annotations

from tags.core.lazy import lazy_exports

_EXPORTS = {
    "BUDGETS": "budget",
    "Budget": "budget",
    "run_demo": "pipeline",
    "run_hf_demo": "hf",
    "HF_BUDGETS": "hf",
    "run_results": "results",
    "list_methods": "methods",
    "method_config": "methods",
    "line_plot": "plots",
    "write_report": "report",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
