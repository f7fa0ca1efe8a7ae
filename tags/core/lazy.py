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
    the module defining it: a submodule of ``package`` (``"pipeline"``) or, for a name that
    a lower layer defines and ``package`` keeps at its documented path, an absolute module
    (``"tags.core.io"``)."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = exports[name]
        if not module.startswith("tags."):
            module = f"{package}.{module}"
        return getattr(importlib.import_module(module), name)

    def __dir__() -> list[str]:
        return sorted([*vars(importlib.import_module(package)), *exports])

    return __getattr__, __dir__
