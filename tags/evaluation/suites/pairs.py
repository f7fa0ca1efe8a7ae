"""Positive/negative pair files: the shapes benchmark's minimal pairs, and any JSON Lines of
(image, positive, negative), ``tags generate`` output included."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tags.core.edits import unit_edits
from tags.evaluation.suites._files import first_of, folder_of, iter_records, text
from tags.evaluation.suites.base import ImageRef, Suite, SuiteError, SuiteItem, register_suite

IMAGE_KEYS = ("filename", "image", "image_path", "image_id")
POSITIVE_KEYS = ("positive", "caption", "true_caption")
NEGATIVE_KEYS = ("negative", "negative_caption", "false_caption")
PAIRS_FILE = "test_minimal_pairs.jsonl"


@dataclass(frozen=True)
class MinimalPair:
    """A true caption of ``image_id`` and a false caption one unit away from it."""

    image_id: int
    caption: str
    negative: str
    type: str
    original: str
    replacement: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def write_pairs(pairs: Iterable[MinimalPair], path: str | Path) -> None:
    """Write ``pairs`` as JSON Lines (one :class:`MinimalPair` a line)."""
    with open(path, "w", encoding="utf-8") as f:
        for pair in pairs:
            f.write(json.dumps(pair.to_dict()) + "\n")


def read_pairs(path: str | Path) -> list[MinimalPair]:
    """The :class:`MinimalPair` records of a file :func:`write_pairs` wrote; a line that is
    not UTF-8, not JSON or not a pair is an ``InputError`` naming the file and the line."""
    from tags.core.io import InputError, json_lines

    hint = "pass the test_minimal_pairs.jsonl of a tags make-benchmark directory"
    fields = tuple(MinimalPair.__dataclass_fields__)
    pairs = []
    for number, record in json_lines(path, hint):
        if not isinstance(record, dict) or set(record) != set(fields):
            raise InputError(
                f"{path}:{number}: not a minimal pair (an object with {', '.join(fields)}); {hint}"
            )
        pairs.append(MinimalPair(**record))
    return pairs


@register_suite("shapes", "shapes benchmark minimal pairs: a make-benchmark DIR (or its pairs)")
def read_shapes(path: Path) -> Suite:
    file = path if path.is_file() else path / PAIRS_FILE
    if not file.is_file():
        raise SuiteError(f"suite shapes: {file} not found (build it with tags make-benchmark)")
    try:
        pairs = read_pairs(file)
    except ValueError as err:  # not UTF-8, not JSON or not pairs: the file and the line
        raise SuiteError(f"suite shapes: {err}") from None
    items = [
        SuiteItem((ImageRef(f"{p.image_id}.png", key=p.image_id),), (p.caption, p.negative), p.type)
        for p in pairs
    ]
    return Suite(
        "shapes",
        "options",
        items,
        image_root=folder_of(file, "images"),
        features=folder_of(file, "features"),
    )


def _subset(record: dict) -> str:
    """``type`` / ``subset`` when given; for ``tags generate`` records the edit types."""
    for key in ("subset", "type"):
        if isinstance(record.get(key), str):
            return record[key]
    edits = record.get("edits")
    if isinstance(edits, list) and edits:
        edits = unit_edits(edits)
        kinds = sorted({str(e.get("type")) for e in edits if isinstance(e, dict)})
        operations = sorted({str(e.get("operation")) for e in edits if isinstance(e, dict)})
        return f"{'+'.join(operations)} {'+'.join(kinds)}"
    return "all"


@register_suite("pairs", "JSONL of (image, positive, negative), e.g. tags generate output")
def read_pairs_jsonl(path: Path) -> Suite:
    if not path.is_file():
        raise SuiteError(f"suite pairs: give a .jsonl file, not {path}")
    items = []
    for where, record in iter_records(path, "pairs"):
        image = first_of(record, IMAGE_KEYS, where, "pairs")
        key = record.get("image_id")
        ref = ImageRef(str(image), key=key)
        captions = (
            text(record, POSITIVE_KEYS, where, "pairs"),
            text(record, NEGATIVE_KEYS, where, "pairs"),
        )
        items.append(SuiteItem((ref,), captions, _subset(record), str(len(items))))
    return Suite(
        "pairs",
        "options",
        items,
        image_root=folder_of(path, "images"),
        features=folder_of(path, "features"),
    )


__all__ = ["read_pairs_jsonl", "read_shapes"]
