"""Compositional test suites in their published formats, scored by any backend.

Layout (one job per module):

- ``base``: :class:`SuiteItem` / :class:`Suite` (what readers produce), the registry
  (``@register_suite``, :func:`list_suites`, :func:`read_suite`);
- readers, one module per format: ``sugarcrepe``, ``aro`` (VG-Relation, VG-Attribution,
  COCO-Order, Flickr-Order; word-order options in ``order``), ``winoground``, ``pairs``
  (the shapes benchmark's minimal pairs, any positive/negative JSONL);
- ``scoring``: the pair-scorer interface, :class:`BackendScorer` and the image sources;
- ``evaluate``: accuracies (ties are failures), per subset, micro and macro;
- ``report``: console / Markdown tables, the before/after comparison, the bar plot;
- ``runner``: one model on many suites (``tags evaluate --suite``, ``tags report``).
"""

from __future__ import annotations

from tags.core.lazy import lazy_exports

_EXPORTS = {
    "ImageRef": "base",
    "Suite": "base",
    "SuiteError": "base",
    "SuiteItem": "base",
    "SuiteSpec": "base",
    "list_suites": "readers",
    "read_suite": "readers",
    "register_suite": "base",
    "BackendScorer": "scoring",
    "PairScorer": "scoring",
    "PixelSource": "scoring",
    "RegionSource": "scoring",
    "SuiteResult": "evaluate",
    "evaluate_suite": "evaluate",
    "score_items": "evaluate",
    "compare": "report",
    "format_suite": "report",
    "markdown_table": "report",
    "bar_plot": "report",
    "SuiteOptions": "runner",
    "run_suites": "runner",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
