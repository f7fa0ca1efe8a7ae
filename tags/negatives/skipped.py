"""The skipped-caption report of ``tags generate --report-skipped FILE``.

One JSON line per caption left without a negative: ``image_id``, ``caption_id``, ``caption``
and ``reason`` (:attr:`~tags.negatives.pipeline.CaptionResult.skipped`, counted where the
refusal happened). A resumed run appends to the report and leaves out captions already in it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, TextIO


class SkipReport:
    """Writes skipped captions to ``path`` (JSON Lines); counts reasons in :attr:`reasons`."""

    def __init__(self, path: str | Path, resume: bool = False):
        self.path = Path(path)
        self.reasons: Counter = Counter()
        self._seen: set[str] = set()
        if resume and self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    self._seen.add(json.dumps(json.loads(line)["caption_id"]))
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut short by the interruption
        self._handle: TextIO | None = None
        self._mode = "a" if resume else "w"

    def __enter__(self) -> SkipReport:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, self._mode, encoding="utf-8")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def write(self, result: Any) -> None:
        """Report ``result`` (a :class:`~tags.negatives.pipeline.CaptionResult`) when it has
        no negative."""
        if result.records or self._handle is None:
            return
        caption = result.caption
        self.add(caption.image_id, caption.caption_id, caption.text, result.skipped)

    def add(self, image_id: Any, caption_id: Any, text: str, reason: str | None) -> None:
        """Report one caption without a negative (once: a caption reported before is not)."""
        if self._handle is None:
            return
        key = json.dumps(caption_id)
        if key in self._seen:
            return
        self._seen.add(key)
        reason = reason or "no_negative"
        self.reasons[reason] += 1
        row = {"image_id": image_id, "caption_id": caption_id, "caption": text, "reason": reason}
        self._handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        self._handle.flush()

    def summary(self, top: int = 5) -> str:
        """One line: how many captions were reported and the most common reasons."""
        total = sum(self.reasons.values())
        common = ", ".join(f"{r} {n}" for r, n in self.reasons.most_common(top))
        return f"skipped captions: {total} written to {self.path}" + (
            f" ({common})" if common else ""
        )


__all__ = ["SkipReport"]
