"""A truth oracle: image id -> true scene (from a benchmark's ``scenes.jsonl``), and the
truth of any text about that image (:func:`tags.benchmark.truth.caption_truth`).

Training audits its synthetic negatives with it (``tags_dc.synthetic.truth_audit``), the
demo its generated and retrieved negatives: ``true`` = a false negative that the
caption-based filter missed, ``ungrammatical`` = outside the benchmark's grammar.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tags.benchmark.scenes import Scene
from tags.benchmark.truth import Truth, caption_truth, truth_shares


class TruthOracle:
    """Judges texts against the true scene of their image.

    Args:
        scenes: image id (the benchmark's global ``imgid``) -> :class:`Scene`.
    """

    def __init__(self, scenes: Mapping[int, Scene]) -> None:
        self.scenes = dict(scenes)

    @classmethod
    def from_path(cls, path: str | Path) -> TruthOracle:
        """From a ``scenes.jsonl`` or a benchmark directory holding one."""
        path = Path(path)
        if path.is_dir():
            path = path / "scenes.jsonl"
        if not path.is_file():
            raise FileNotFoundError(f"truth oracle: no scenes file at {path}")
        scenes = {}
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    record = json.loads(line)
                    scenes[int(record["image_id"])] = Scene.from_dict(record["scene"])
        return cls(scenes)

    def judge(self, image_id: Any, text: str) -> Truth:
        """``"true"``, ``"false"`` or ``"ungrammatical"`` of ``text`` for image ``image_id``."""
        scene = self.scenes.get(int(image_id))
        if scene is None:
            raise KeyError(f"truth oracle: no scene for image {image_id!r}")
        return caption_truth(text, scene)

    def judge_all(self, image_ids: Sequence[Any], texts: Sequence[Sequence[str]]) -> list[Truth]:
        """Every text of ``texts[i]`` judged against image ``image_ids[i]``, flattened."""
        return [self.judge(i, t) for i, group in zip(image_ids, texts, strict=True) for t in group]

    def shares(self, image_ids: Sequence[Any], texts: Sequence[Sequence[str]]) -> dict[str, float]:
        """:func:`truth_shares` of :meth:`judge_all` (keys true, false, ungrammatical, n)."""
        return truth_shares(self.judge_all(image_ids, texts))


def pooled_shares(rows: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Shares over several :meth:`TruthOracle.shares` results, weighted by their ``n``."""
    rows = [r for r in rows if r.get("n")]
    n = sum(r["n"] for r in rows)
    out = {
        k: (sum(r[k] * r["n"] for r in rows) / n if n else 0.0)
        for k in ("true", "false", "ungrammatical")
    }
    out["n"] = float(n)
    return out


__all__ = ["TruthOracle", "pooled_shares"]
