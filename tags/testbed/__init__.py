"""The binding testbed: a world where the choice of negatives decides what a matcher learns.

Fresh procedural 2-4 object scenes every training step (the shapes benchmark's generator,
captioner and truth), perception given (symbolic regions, or a frozen CNN's features of
rendered crops), composition learned: which caption words name which region and which role
each plays. Plain training (another scene's caption as the negative) stays near chance on
relations and role swaps within the budget; scene-checked minimal-pair negatives (the oracle)
reach 95-100 %. Every method is measured by the share of that gap it closes.

- ``config``: :class:`TestbedConfig` (one run's settings) and the method names;
- ``vocab``: the word-level vocabulary and tokenizer;
- ``world``: fresh scenes, their negatives and batches (the oracle's :class:`NegativeSampler`);
- ``tags_pool``: ``tags generate`` negatives served by caption (``tags``);
- ``mining``: retrieved hard negatives chosen by a :mod:`tags.mining` miner (``mined``);
- ``self_negatives``: TAGS and TAGS-DC, the model's own MLM refills (``istm``, ``tags-dc``);
- ``matcher``: the TagsModel cross-encoder with its binding term;
- ``dual``: a dual encoder (``variant="dual"``) and its CLIP / NegCLIP loss;
- ``pixels``: region features of rendered crops from a frozen CNN;
- ``hf``: Hugging Face CLIP / BLIP on rendered whole scenes (``variant="hf-clip"``,
  ``"hf-blip"``), through :mod:`tags.backends`;
- ``evaluate``: held-out minimal pairs per kind, retrieval;
- ``training``: one run, its curve and record;
- ``verdict``: the gate and the gap closed.

Layer: above ``tags.benchmark`` (and everything below it); used by ``tags.demo``.
"""

from __future__ import annotations

from tags.core.lazy import lazy_exports

_EXPORTS = {
    "TestbedConfig": "config",
    "METHODS": "config",
    "METHOD_NAMES": "config",
    "KINDS": "evaluate",
    "eval_set": "evaluate",
    "evaluate": "evaluate",
    "retrieval": "evaluate",
    "Matcher": "matcher",
    "DualMatcher": "dual",
    "TagsPool": "tags_pool",
    "training_captions": "world",
    "train": "training",
    "gap_closed": "verdict",
    "gate_passes": "verdict",
    "mean_std": "verdict",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
