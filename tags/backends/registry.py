"""Backend registry keyed by ``config.json``'s ``model_type`` (like transformers' Auto classes)."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from tags.backends.base import VLBackend
from tags.backends.hub import resolve_model
from tags.core.checkpoints import WEIGHT_FILES, load_model_dir
from tags.core.errors import BackendError

_BACKENDS: dict[str, type[VLBackend]] = {}
#: modules holding the built-in backends, imported on first lookup
_BUILTIN_MODULES = (
    "tags.backends.tags_model",
    "tags.backends.blip",
    "tags.backends.blip2",
    "tags.backends.clip",
)
B = TypeVar("B", bound=type[VLBackend])


def register_backend(*model_types: str) -> Callable[[B], B]:
    """Class decorator: serve checkpoints whose ``config.json`` has one of ``model_types``."""

    def wrap(cls: B) -> B:
        for model_type in model_types:
            if _BACKENDS.get(model_type, cls) is not cls:
                raise ValueError(f"model_type {model_type!r} already has a backend")
            _BACKENDS[model_type] = cls
        cls.model_types = tuple(model_types)
        return cls

    return wrap


def _builtins() -> dict[str, type[VLBackend]]:
    for module in _BUILTIN_MODULES:
        importlib.import_module(module)
    return _BACKENDS


def list_backends() -> dict[str, str]:
    """``{model_type: backend name}`` of every registered backend."""
    return {k: v.name for k, v in sorted(_builtins().items())}


def backend_class(model_type: str, where: str = "") -> type[VLBackend]:
    backends = _builtins()
    if model_type not in backends:
        raise BackendError(
            f"{where}model_type {model_type!r} has no tags backend; supported: "
            f"{', '.join(sorted(backends))}"
        )
    return backends[model_type]


def read_model_type(path: str | Path) -> tuple[str, dict[str, Any]]:
    """``(model_type, config dict)`` of a local checkpoint directory, with errors that name
    what is missing."""
    path = resolve_model(path)  # a folder, or a hub id in the local cache
    if not path.is_dir():
        raise BackendError(f"{path} is a file; give the model directory (save_pretrained)")
    config_file = path / "config.json"
    if not config_file.is_file():
        raise BackendError(
            f"{path} has no config.json: not a saved transformers model "
            "(save_pretrained writes config.json and the weights)"
        )
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise BackendError(f"{config_file}: not valid JSON ({err})") from err
    model_type = config.get("model_type") if isinstance(config, dict) else None
    if not isinstance(model_type, str):
        raise BackendError(f"{config_file} has no 'model_type'")
    return model_type, config


def load_backend(path: str | Path, **kwargs: Any) -> VLBackend:
    """The backend of a local checkpoint directory, or of a hub id in the local cache
    (model, tokenizer and processor).

    Nothing is downloaded. ``kwargs`` go to the backend's ``from_pretrained`` (e.g.
    ``dtype``). No weights, damaged weights or a ``config.json`` that does not fit them are
    one :class:`~tags.core.errors.CheckpointError` naming the folder and the file.
    """
    path = resolve_model(path)
    model_type, _ = read_model_type(path)
    cls = backend_class(model_type, f"{Path(path) / 'config.json'}: ")
    return load_model_dir(path, lambda: cls.from_pretrained(path, **kwargs))


def as_backend(model: Any, tokenizer: Any = None, processor: Any = None) -> VLBackend:
    """``model`` itself when it is a backend, else the backend of its ``config.model_type``."""
    if isinstance(model, VLBackend):
        return model
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    if model_type is None:
        raise BackendError(f"{type(model).__name__} has no config.model_type: not a backend model")
    return backend_class(model_type)(model, tokenizer, processor)


__all__ = [
    "WEIGHT_FILES",
    "as_backend",
    "backend_class",
    "list_backends",
    "load_backend",
    "read_model_type",
    "register_backend",
]
