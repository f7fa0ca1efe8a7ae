"""Caption corpora as image groups.

Reading is delegated to :func:`tags.core.io.read_captions`, so image and caption ids are
exactly those ``tags generate`` writes (precomp: image = line // 5, caption = line number;
Karpathy: ``imgid`` / ``sentid``), and fixed negative pools join on ``caption_id``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tags.core.io import check_precomp_lines, detect_format, karpathy_splits, read_captions
from tags.core.types import ImageGroup


def load_image_groups(
    path: str | Path,
    fmt: str | None = None,
    split: str | None = None,
    limit_images: int | None = None,
) -> list[ImageGroup]:
    """All image groups of a caption file (``fmt``: karpathy | precomp | jsonl | None = by
    extension); ``split`` filters Karpathy images (``"train,restval"``). A precomp file must
    hold 5 lines per image; an empty result (e.g. a split the file lacks) raises."""
    fmt = fmt or detect_format(path)
    if fmt == "precomp" and Path(path).is_file():
        check_precomp_lines(path)
    groups: list[ImageGroup] = []
    for group in read_captions(path, fmt, split=split):
        if group.captions:
            groups.append(group)
        if limit_images is not None and len(groups) >= limit_images:
            break
    if not groups:
        if fmt == "karpathy" and split:
            found = ", ".join(karpathy_splits(path)) or "none"
            raise ValueError(f"{path}: no captions in split {split!r} (splits present: {found})")
        raise ValueError(f"{path}: no captions found (split={split!r})")
    return groups


def check_alignment(path: str | Path, fmt: str | None, regions: Any) -> None:
    """Precomp captions with a precomp ``[N, R, D]`` array: exactly 5 lines per array row
    (raises ``ValueError`` naming both counts)."""
    from tags.core.regions import PrecompRegions

    if (fmt or detect_format(path)) == "precomp" and isinstance(regions, PrecompRegions):
        check_precomp_lines(path, int(regions.array.shape[0]), regions.path)


__all__ = ["check_alignment", "load_image_groups"]
