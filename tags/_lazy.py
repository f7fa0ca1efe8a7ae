"""Lazy package exports: names resolve on first access, so importing a package (and the
``tags`` command line) does not import torch until something needs it."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(
    package: str, exports: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` whose ``exports`` map a public name to
    the submodule defining it."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{exports[name]}"), name)

    def __dir__() -> list[str]:
        return sorted([*vars(importlib.import_module(package)), *exports])

    return __getattr__, __dir__
