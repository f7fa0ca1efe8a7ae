"""Caption corpora as image groups.

Reading is delegated to :func:`tags.negatives.io.read_captions`, so image and caption ids are
exactly those ``tags generate`` writes (precomp: image = line // 5, caption = line number;
Karpathy: ``imgid`` / ``sentid``), and fixed negative pools join on ``caption_id``.
"""

from __future__ import annotations

from pathlib import Path

from tags.negatives.io import read_captions
from tags.negatives.types import ImageGroup


def load_image_groups(
    path: str | Path,
    fmt: str | None = None,
    split: str | None = None,
    limit_images: int | None = None,
) -> list[ImageGroup]:
    """All image groups of a caption file (``fmt``: karpathy | precomp | jsonl | None = by
    extension); ``split`` filters Karpathy images (``"train,restval"``)."""
    groups: list[ImageGroup] = []
    for group in read_captions(path, fmt, split=split):
        if group.captions:
            groups.append(group)
        if limit_images is not None and len(groups) >= limit_images:
            break
    if not groups:
        raise ValueError(f"{path}: no captions found (split={split!r})")
    return groups


__all__ = ["load_image_groups"]
