"""A run split over processes: every process writes its part next to the output
(:func:`part_path`); the parts joined in order (:func:`merge_parts`) equal the output of a
single process."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path


def part_path(out: Path, index: int, count: int) -> Path:
    """Where process ``index`` of ``count`` writes its part of ``out``."""
    return out.with_name(f"{out.name}.part{index}of{count}")


def concatenate(parts: Sequence[Path], out: Path) -> Path:
    """``parts`` joined in order into ``out``, written to a temporary file beside it and then
    renamed, so a crash leaves no half ``out`` (nor the temporary file)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as sink:
            for part in parts:
                with open(part, "rb") as source:
                    while chunk := source.read(1 << 22):
                        sink.write(chunk)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def merge_parts(parts: Sequence[Path], out: Path) -> None:
    """Concatenate shard outputs in shard order (equal to the unsharded output) into
    ``out`` (atomically, :func:`concatenate`), then remove the parts and their settings
    files."""
    concatenate(parts, out)
    for part in parts:
        part.unlink()
        part.with_name(part.name + ".meta.json").unlink(missing_ok=True)


def merge_all(out: Path, count: int) -> None:
    """Merge the ``count`` parts of ``out`` (:func:`part_path`) into ``out``."""
    merge_parts([part_path(out, i, count) for i in range(count)], out)


__all__ = ["concatenate", "merge_all", "merge_parts", "part_path"]
