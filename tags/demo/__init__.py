"""``tags demo``: benchmark -> hardest-negative baseline vs TAGS-DC -> report with plots.

- ``budget``: the named training budgets (``small``, ``tiny``);
- ``pipeline``: build data, train both methods, evaluate, sample negatives;
- ``plots``: a tiny Pillow line-plot helper;
- ``report``: ``report.md`` + ``results.json``.
"""

from __future__ import annotations

from tags._lazy import lazy_exports

_EXPORTS = {
    "BUDGETS": "budget",
    "Budget": "budget",
    "run_demo": "pipeline",
    "line_plot": "plots",
    "write_report": "report",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
