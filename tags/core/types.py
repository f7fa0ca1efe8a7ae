"""Plain data objects shared by the negative-generation stages."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

#: Edit types: the scene-graph unit kinds, plus ``word`` for the word-masking baseline.
EDIT_TYPES = ("object", "attribute", "relation", "word")


@dataclass(frozen=True)
class Edit:
    """One replaced stretch of the positive caption.

    ``start``/``end`` are half-open character offsets of ``original`` in the positive, so
    ``positive[start:end] == original``. ``operation`` says how the replacement was chosen:
    ``replace`` (a substitute), ``flip`` (an opposite relation), ``antonym`` (an opposite
    attribute), ``swap`` (two units of the caption exchanged; its edits come in pairs) or
    ``add`` (an attribute or object inserted: ``original`` is empty and ``start == end``,
    unless an article before it was widened in to agree, "an apple" -> "a red apple") or
    ``agree`` (a pronoun that follows another edit's gender change, "man" -> "woman": "his"
    -> "her"; not a unit of its own, see :func:`tags.core.edits.unit_edits`).
    """

    type: str
    original: str
    replacement: str
    start: int
    end: int
    operation: str = "replace"

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "original": self.original,
            "replacement": self.replacement,
            "start": self.start,
            "end": self.end,
            "operation": self.operation,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Edit:
        return cls(
            data["type"],
            data["original"],
            data["replacement"],
            data["start"],
            data["end"],
            data.get("operation", "replace"),
        )

    def with_operation(self, operation: str) -> Edit:
        return Edit(self.type, self.original, self.replacement, self.start, self.end, operation)


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """Apply non-overlapping edits to ``text``. An insertion (``start == end``) goes in
    at its offset, before an edit that starts there.

    Raises:
        ValueError: if edits overlap or an edit's ``original`` is not at its offsets.
    """
    parts: list[str] = []
    cursor = 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        if edit.start < cursor:
            raise ValueError(f"overlapping edit at {edit.start}: {edit}")
        if text[edit.start : edit.end] != edit.original:
            raise ValueError(
                f"edit original {edit.original!r} is not at {edit.start}:{edit.end} "
                f"({text[edit.start : edit.end]!r})"
            )
        parts.append(text[cursor : edit.start])
        parts.append(edit.replacement)
        cursor = edit.end
    parts.append(text[cursor:])
    return "".join(parts)


@dataclass(frozen=True)
class Candidate:
    """A synthetic caption before filtering: its text, its edits and refill diagnostics.

    ``debris`` marks a refill that does not form whole words (a continuation piece at a
    word start, punctuation or a special token where a word should be). ``weight`` is the
    planner's prior of the substitutes used (their share of their unit's weight, multiplied
    over units); ``None`` for unplanned candidates.
    """

    text: str
    edits: tuple[Edit, ...]
    debris: bool = False
    weight: float | None = None


@dataclass(frozen=True)
class Caption:
    """One input caption. ``line`` locates it in the source (1-based line or record)."""

    image_id: Any
    caption_id: Any
    text: str
    line: int = 0


@dataclass
class ImageGroup:
    """All annotated captions of one image, in source order."""

    image_id: Any
    captions: list[Caption] = field(default_factory=list)
    filename: str | None = None


__all__ = ["EDIT_TYPES", "Candidate", "Caption", "Edit", "ImageGroup", "apply_edits"]
