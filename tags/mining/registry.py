"""Name -> miner class registry (timm style: ``register_miner``, ``get_miner``, ``list_miners``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from torch import nn

__all__ = ["create_miner", "get_miner", "is_miner", "list_miners", "register_miner"]

_MINERS: dict[str, type[nn.Module]] = {}
T = TypeVar("T", bound=type[nn.Module])


def register_miner(name: str) -> Callable[[T], T]:
    """Class decorator registering a miner under ``name`` (lower case, unique)."""

    def wrap(cls: T) -> T:
        key = name.lower()
        if key in _MINERS and _MINERS[key] is not cls:
            raise ValueError(f"miner {key!r} is already registered by {_MINERS[key].__name__}")
        _MINERS[key] = cls
        cls.miner_name = key  # type: ignore[attr-defined]
        return cls

    return wrap


def list_miners() -> list[str]:
    """Sorted names of every registered miner."""
    return sorted(_MINERS)


def is_miner(name: str) -> bool:
    """Whether ``name`` is registered."""
    return name.lower() in _MINERS


def miner_class(name: str) -> type[nn.Module]:
    """The class registered under ``name``."""
    try:
        return _MINERS[name.lower()]
    except KeyError:
        raise KeyError(f"unknown miner {name!r}; registered: {', '.join(list_miners())}") from None


def get_miner(name: str, **hparams: Any) -> nn.Module:
    """Instantiate the miner registered under ``name`` with keyword hyper-parameters."""
    return miner_class(name)(**hparams)


create_miner = get_miner
