"""Loading a saved :class:`~tags.modeling.TagsModel` with its heads checked.

``from_pretrained`` silently initialises heads whose weights a checkpoint lacks;
:func:`load_checked` records them and :func:`head_problem` says why a head is not usable
(not built, not saved, saved but never trained).

May import: ``tags.core`` and the rest of ``tags.modeling``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: TagsModel's heads and their state-dict prefixes
HEAD_PREFIXES = {"itm": "itm_head.", "mlm": "mlm_head.", "wod": "wod_head.", "woc": "woc_head."}

#: how each head gets trained (the second half of :func:`require_heads`' error)
HEAD_TRAINING: dict[str, str] = {
    "itm": "train it with the pretrain or tags-dc recipe (weights.itm > 0)",
    "mlm": "train it with the pretrain recipe, or tags-dc with weights.mlm > 0",
    "wod": "train it with a tags-dc phase that has weights.wod > 0 (the NSGDC phase)",
    "woc": "train it with a tags-dc phase that has weights.woc > 0 (the NSGDC phase)",
}


def missing_head_weights(missing_keys: Iterable[str], prefixes: Mapping[str, str]) -> set[str]:
    """Heads (``prefixes``: head name -> state-dict prefix) some of whose weights a checkpoint
    lacked, so that ``from_pretrained`` initialised them at random (tied decoders aside)."""
    missing = [k for k in missing_keys if not k.endswith("decoder.weight")]
    return {name for name, prefix in prefixes.items() if any(k.startswith(prefix) for k in missing)}


def head_message(
    name: str, problem: str, purpose: str, family: str, path: str | Path | None = None
) -> str:
    """The one-line error for head ``name`` of a ``family`` model being ``problem``."""
    where = f"{path}: " if path is not None else ""
    return (
        f"{where}{purpose} needs a trained {name.upper()} head, and this {family} "
        f"model's is {problem}; {HEAD_TRAINING.get(name, 'train it first')}"
    )


def load_checked(path: str | Path, **kwargs: Any) -> Any:
    """``TagsModel.from_pretrained`` that notes, as ``model.tags_missing_heads``, the heads
    whose weights the checkpoint lacked (transformers initialises them at random). A damaged
    folder (no or invalid ``config.json``, cut weights, sizes that do not match) is one
    :class:`~tags.core.errors.CheckpointError` (:func:`tags.core.checkpoints.load_model_dir`)."""
    from tags.core.checkpoints import load_model_dir
    from tags.modeling.modeling_tags import TagsModel

    model, info = load_model_dir(
        path, lambda: TagsModel.from_pretrained(path, output_loading_info=True, **kwargs)
    )
    model.tags_missing_heads = missing_head_weights(info.get("missing_keys", ()), HEAD_PREFIXES)
    return model


def head_problem(model: Any, name: str) -> str | None:
    """Why head ``name`` of a TagsModel is not usable, or ``None``: a head is usable when the
    config builds it, the checkpoint held its weights and, where ``config.trained_heads`` is
    recorded, a recipe trained it."""
    config = model.config
    if not getattr(config, f"use_{name}_head", False):
        return f"not built (config.json: use_{name}_head false)"
    if name in getattr(model, "tags_missing_heads", ()):
        return "not in the checkpoint's weights (it would be randomly initialised)"
    trained = getattr(config, "trained_heads", None)
    if trained is not None and name not in trained:
        return f"saved but never trained (trained_heads: {', '.join(trained) or 'none'})"
    return None


__all__ = [
    "HEAD_PREFIXES",
    "HEAD_TRAINING",
    "head_message",
    "head_problem",
    "load_checked",
    "missing_head_weights",
]
