"""Winoground (Thrush et al. 2022, huggingface.co/datasets/facebook/winoground):
``examples.jsonl`` with ``image_0, image_1, caption_0, caption_1`` (+ ``collapsed_tag``,
``tag``) and the images in ``images/`` (``{image_k}.png``)."""

from __future__ import annotations

from pathlib import Path

from tags.evaluation.suites._files import find_file, folder_of, iter_records, text
from tags.evaluation.suites.base import ImageRef, Suite, SuiteItem, register_suite

#: per-type rows: Winoground's coarse tag (Object / Relation / Both), else its tag
SUBSET_KEYS = ("collapsed_tag", "tag")


@register_suite("winoground", "Winoground-format JSONL: image_0/1, caption_0/1 (+ images/)")
def read_winoground(path: Path) -> Suite:
    file = find_file(path, ("examples.jsonl",), "winoground")
    items = []
    for where, record in iter_records(file, "winoground"):
        images = tuple(
            ImageRef(text(record, (f"image_{k}",), where, "winoground")) for k in range(2)
        )
        captions = tuple(text(record, (f"caption_{k}",), where, "winoground") for k in range(2))
        subset = next((str(record[k]) for k in SUBSET_KEYS if record.get(k)), "all")
        items.append(SuiteItem(images, captions, subset, str(record.get("id", len(items)))))
    return Suite("winoground", "group", items, image_root=folder_of(file, "images"))


__all__ = ["read_winoground"]
