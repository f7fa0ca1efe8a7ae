"""Model and tokenizer from a :class:`~tags.training.config.ModelConfig` (local files only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torch import nn

from tags.core.checkpoints import MODEL_HINT, load_model_dir
from tags.core.errors import check_config_json, reading

ALIASES = ("minilm", "tiny-mlm")


def resolve_path(path: str) -> str:
    """Expand the asset aliases ``minilm`` / ``tiny-mlm`` to their installed directories."""
    from tags.modeling import minilm_path, tiny_mlm_path

    if path == "minilm":
        return str(minilm_path())
    if path == "tiny-mlm":
        return str(tiny_mlm_path())
    return path


def create_tokenizer(config: Any) -> Any:
    """The fast tokenizer of ``model.tokenizer`` (default: ``model.path``, else tiny-mlm)."""
    from tags.backends.masked_lm import load_tokenizer
    from tags.core.errors import ConfigError

    path = config.tokenizer or (config.path if config.source in ("text", "tags") else "tiny-mlm")
    key = "model.tokenizer" if config.tokenizer else "model.path"
    with reading(f"{key} {path} (tokenizer)", MODEL_HINT, ConfigError):
        return load_tokenizer(resolve_path(path))


def create_model(config: Any, tokenizer: Any, feature_size: int | None = None) -> nn.Module:
    """A :class:`TagsModel` per ``config.source``; ``dropout`` sets BERT's hidden and
    attention dropout; ``feature_size`` (from the data) is the default region feature size.
    A directory that cannot be loaded (no or invalid ``config.json``, truncated weights) is a
    ``ConfigError`` naming ``model.path``."""
    from tags.core.errors import ConfigError

    if config.source == "scratch" or not config.path:
        return _create_model(config, tokenizer, feature_size)
    with reading(f"model.path {config.path}", MODEL_HINT, ConfigError):
        check_config_json(resolve_path(config.path))
        return _create_model(config, tokenizer, feature_size)


def _create_model(config: Any, tokenizer: Any, feature_size: int | None) -> nn.Module:
    from tags.core.errors import ConfigError
    from tags.modeling import TagsConfig, TagsModel

    overrides = dict(config.overrides)
    if config.dropout is not None:
        overrides.setdefault("hidden_dropout_prob", config.dropout)
        overrides.setdefault("attention_probs_dropout_prob", config.dropout)
    if config.attn_implementation:
        overrides.setdefault("attn_implementation", config.attn_implementation)
    if config.source == "scratch":
        overrides.setdefault("vocab_size", len(tokenizer))
        overrides.setdefault("mask_token_id", tokenizer.mask_token_id)
        if feature_size is not None:
            overrides.setdefault("region_feature_size", feature_size)
        return TagsModel(TagsConfig(**overrides))
    if not config.path:
        raise ConfigError(f"model.source={config.source} needs model.path")
    path = resolve_path(config.path)
    if config.source == "text":
        if feature_size is not None:
            overrides.setdefault("region_feature_size", feature_size)
        return load_model_dir(path, lambda: TagsModel.from_text_pretrained(path, **overrides))
    if config.source == "tags":
        return load_model_dir(path, lambda: TagsModel.from_pretrained(path, **overrides))
    if config.source == "uniter":
        if not Path(path).is_file():
            raise FileNotFoundError(f"UNITER checkpoint not found: {path}")
        return TagsModel.from_uniter_checkpoint(path, **overrides)
    raise ConfigError(f"unknown model.source {config.source!r}")


__all__ = ["MODEL_HINT", "create_model", "create_tokenizer", "resolve_path"]
