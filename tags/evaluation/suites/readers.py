"""The suite registry with every built-in reader loaded: :func:`list_suites`, :func:`read_suite`.

Each reader module registers itself with :func:`~tags.evaluation.suites.base.register_suite`
on import; importing them here, above them, keeps the registry's direction one way.
"""

from __future__ import annotations

from pathlib import Path

from tags.evaluation.suites import aro, pairs, sugarcrepe, winoground  # noqa: F401 (register)
from tags.evaluation.suites.base import _SUITES, Suite, SuiteError


def list_suites() -> dict[str, str]:
    """``{name: description}`` of every registered suite reader."""
    return {k: v[1] for k, v in sorted(_SUITES.items())}


def read_suite(name: str, path: str | Path) -> Suite:
    """Read ``path`` with the reader registered as ``name``."""
    suites = _SUITES
    if name not in suites:
        raise SuiteError(f"unknown suite {name!r}; known: {', '.join(sorted(suites))}")
    path = Path(path)
    if not path.exists():
        raise SuiteError(f"suite {name}: {path} not found")
    return suites[name][0](path)


__all__ = ["list_suites", "read_suite"]
