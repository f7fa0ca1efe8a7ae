"""Vision-language backends: one interface over every model family tags can train and score.

Recipes, the negative generator and the evaluator talk to :class:`VLBackend` only; which
model sits behind it is decided once, from the checkpoint directory's ``config.json``
(``model_type``), by :func:`load_backend` (or :func:`as_backend` for a model in memory).

Layout (one module per family):

- ``base``: :class:`VLBackend` (the interface), :class:`BackendError`, capabilities;
- ``registry``: ``@register_backend``, :func:`load_backend`, :func:`as_backend`;
- ``tags_model``: :class:`TagsBackend`, the UNITER-style :class:`~tags.modeling.TagsModel`
  on region features;
- ``blip``: :class:`BlipBackend`, ``BlipForImageTextRetrieval`` (ITM + ITC) on pixels;
- ``blip2``: :class:`Blip2Backend`, ``Blip2ForImageTextRetrieval`` (Q-Former ITM + ITC);
- ``clip``: :class:`ClipBackend` / :class:`SiglipBackend`, contrastive dual encoders.

Attributes are imported lazily, so importing the package does not import torch.

Layer: above modeling. May import ``tags.modeling``, ``heads``, ``parsers`` and
``tags.core``.
"""

from __future__ import annotations

from tags.core.lazy import lazy_exports

_EXPORTS = {
    "VLBackend": "base",
    "BackendError": "tags.core.errors",
    "CAPABILITIES": "base",
    "register_backend": "registry",
    "list_backends": "registry",
    "load_backend": "registry",
    "as_backend": "registry",
    "read_model_type": "registry",
    "TagsBackend": "tags_model",
    "BlipBackend": "blip",
    "Blip2Backend": "blip2",
    "ClipBackend": "clip",
    "SiglipBackend": "clip",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
