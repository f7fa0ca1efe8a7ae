"""``tags generate --preset`` values: generation settings filled in where the command line
(or :class:`~tags.negatives.batch.GenerateBatch`) leaves them."""

from __future__ import annotations

from typing import Any

#: preset name -> settings (``max_edits``, ``swaps``, ``adds``, ``unconstrained``)
PRESETS: dict[str, dict[str, Any]] = {
    # one scene-graph unit per negative, planned substitutes, swaps: for datasets
    # (add edits are asked for with --adds: blind readers judged almost none clearly false)
    "minimal": {"max_edits": 1, "swaps": True, "adds": False, "unconstrained": False},
    # the paper's masking (about 15% of the tokens in whole units per copy), planned refills
    "multi-unit": {"max_edits": None, "swaps": False, "adds": False, "unconstrained": False},
    # the TAGS paper exactly: that masking, MLM refills over the whole vocabulary, no planner
    "paper": {"max_edits": None, "swaps": False, "adds": False, "unconstrained": True},
}


__all__ = ["PRESETS"]
