"""Truth audits as plug-ins: training logs how often its negatives are actually true.

Where every training image's scene is known (the shapes benchmark), a run can judge its
negatives: ``tags_dc.truth_scenes`` (the retrieved pools) and ``tags_dc.synthetic.truth_audit``
(the synthetic negatives) name a scenes file. Judging needs the benchmark's scene grammar,
which sits above training, so the audits are plug-ins: entry points of the group
``tags.truth_audits`` (``retrieval``, ``synthetic``), each a factory ``(path, dataset) ->
audit``. ``tags`` registers its own in ``pyproject.toml`` (``tags.benchmark``).

May import: ``tags.core``.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

from tags.core.errors import ConfigError

GROUP = "tags.truth_audits"


def build_audit(kind: str, path: str | None, dataset: Any) -> Any | None:
    """The ``kind`` audit of ``dataset`` against the scenes at ``path`` (``None``: off)."""
    if not path:
        return None
    found = {ep.name: ep for ep in entry_points(group=GROUP)}
    if kind not in found:
        raise ConfigError(
            f"no {kind!r} truth audit is installed (entry points {GROUP!r}); "
            "reinstall tags (pip install -e .)"
        )
    return found[kind].load()(path, dataset)


__all__ = ["GROUP", "build_audit"]
