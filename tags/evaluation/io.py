"""Evaluation sets from files or from a training dataset, on top of the shared readers.

Reading is delegated, so ids and formats are those of ``tags generate`` / ``tags train``:
captions via :func:`tags.data.load_image_groups` (Karpathy JSON, SCAN precomp, JSON Lines),
regions via :func:`tags.core.regions.open_regions` (a directory of per-image ``.npz``
with ``features`` ``[R, D]`` + ``boxes`` ``[R, 4]`` (pixels with ``image_w``/``image_h`` or
``width``/``height``, or normalised) or ``[R, 7]``; or a precomp ``{split}_ims.npy``).

What evaluation adds:

- a SCAN data directory may be given for both: ``{split}_caps.txt`` and ``{split}_ims.npy``;
- caption groups sharing an image id (JSON Lines with non-adjacent captions) are merged, so
  every image appears once in the gallery;
- a precomp array is read by the image's *position* in the split (row ``n`` = ``n``-th image,
  as SCAN writes them; for precomp captions this is the image id), and must hold one row per
  image. It has no boxes: every region gets the whole-image box (see :data:`WHOLE_IMAGE_NOTE`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from tags.evaluation.data import RetrievalImages, RetrievalTexts

CAPTION_FORMATS = ("karpathy", "precomp", "jsonl")
WHOLE_IMAGE_NOTE = "precomp features carry no boxes: every region uses the whole-image box"


def resolve_captions(path: str | Path, split: str) -> Path:
    """A caption file, or ``{split}_caps.txt`` inside a SCAN data directory."""
    path = Path(path)
    return path / f"{split}_caps.txt" if path.is_dir() else path


def resolve_features(path: str | Path, split: str) -> Path:
    """A feature path, or ``{split}_ims.npy`` when a directory holds one."""
    path = Path(path)
    if path.is_dir() and (path / f"{split}_ims.npy").is_file():
        return path / f"{split}_ims.npy"
    return path


def merge_groups(groups: list[Any]) -> list[Any]:
    """One group per image id (first appearance order), captions in source order."""
    merged: dict[Any, Any] = {}
    for group in groups:
        key = str(group.image_id)
        if key in merged:
            merged[key].captions.extend(group.captions)
        else:
            merged[key] = group
    return list(merged.values())


def load_groups(
    captions: str | Path, fmt: str | None = None, split: str = "test", limit: int | None = None
) -> list[Any]:
    """Image groups of ``split`` (merged by image id), the first ``limit`` only."""
    from tags.data import load_image_groups

    path = resolve_captions(captions, split)
    if not path.is_file():
        raise FileNotFoundError(f"captions file not found: {path}")
    groups = merge_groups(load_image_groups(path, fmt, split))
    return groups[:limit] if limit is not None else groups


def images_from_groups(
    groups: list[Any], features: str | Path, split: str = "test", complete: bool = True
) -> tuple[RetrievalImages, str | None]:
    """Padded regions of ``groups``' images and an optional note for the user.

    Args:
        complete: ``groups`` is the whole split, so a precomp array must have exactly one
            row per image (catches SCAN files that repeat every image 5 times).
    """
    from tags.core.regions import PrecompRegions, open_regions

    store = open_regions(resolve_features(features, split))
    if isinstance(store, PrecompRegions):
        rows = store.array.shape[0]
        if rows < len(groups) or (complete and rows != len(groups)):
            raise ValueError(
                f"{store.path}: {rows} rows for {len(groups)} images; evaluation needs one "
                "row per image in split order"
            )
        regions = [store.get(n) for n in range(len(groups))]
        note: str | None = WHOLE_IMAGE_NOTE
    else:
        regions = [store.get(g.image_id, g.filename) for g in groups]
        note = None
    images = RetrievalImages.from_regions(
        [r.features for r in regions],
        [r.boxes for r in regions],
        ids=[g.image_id for g in groups],
    )
    return images, note


def _check_alignment(captions: str | Path, fmt: str | None, features: str | Path, split: str):
    """Precomp captions against a precomp array: 5 lines per row (names both counts)."""
    from tags.core.regions import open_regions
    from tags.data.captions import check_alignment

    path = resolve_captions(captions, split)
    if path.is_file():
        check_alignment(path, fmt, open_regions(resolve_features(features, split)))


def texts_from_groups(
    groups: list[Any], tokenizer: Any, max_length: int | None = None
) -> RetrievalTexts:
    """Tokenized captions of ``groups``; ``txt2img`` = the group's position."""
    captions = [c.text for g in groups for c in g.captions]
    txt2img = [n for n, g in enumerate(groups) for _ in g.captions]
    return RetrievalTexts.from_captions(tokenizer, captions, txt2img, max_length)


def load_retrieval_split(
    captions: str | Path,
    features: str | Path,
    tokenizer: Any,
    *,
    fmt: str | None = None,
    split: str = "test",
    max_length: int | None = None,
    limit_images: int | None = None,
) -> tuple[RetrievalImages, RetrievalTexts, list[str]]:
    """``(images, texts, notes)`` of one split, ready for
    :func:`~tags.evaluation.evaluate_retrieval`."""
    _check_alignment(captions, fmt, features, split)
    groups = load_groups(captions, fmt, split)
    complete = limit_images is None or limit_images >= len(groups)
    groups = groups if complete else groups[:limit_images]
    images, note = images_from_groups(groups, features, split, complete)
    texts = texts_from_groups(groups, tokenizer, max_length)
    return images, texts, [note] if note else []


def from_dataset(dataset: Any, pad_token_id: int = 0) -> tuple[RetrievalImages, RetrievalTexts]:
    """Evaluation set of a :class:`tags.data.ImageTextDataset` (its tokenization and
    ``max_regions``; ``txt2img`` = its ``image_of``)."""
    from tags.data import pad_text

    regions = [dataset.image(n) for n in range(dataset.num_images)]
    images = RetrievalImages.from_regions([f for f, _ in regions], [b for _, b in regions])
    input_ids, attention_mask = pad_text(
        [dataset.tokens(j) for j in range(len(dataset))], pad_token_id
    )
    captions = [dataset.text(j) for j in range(len(dataset))]
    txt2img = torch.as_tensor(np.asarray(dataset.image_of), dtype=torch.long)
    return images, RetrievalTexts(input_ids, txt2img, attention_mask, captions)


__all__ = [
    "CAPTION_FORMATS",
    "WHOLE_IMAGE_NOTE",
    "from_dataset",
    "images_from_groups",
    "load_groups",
    "load_retrieval_split",
    "merge_groups",
    "resolve_captions",
    "resolve_features",
    "texts_from_groups",
]
