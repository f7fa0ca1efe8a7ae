"""What ``tags generate --resume`` checks about its input before it continues a run.

- :func:`fingerprint`: sha256 and size of the caption file, saved in the output's
  ``*.meta.json``; a resume whose input no longer has it is refused
  (``--resume-changed-input`` continues anyway, see :func:`check_kept`);
- :func:`count_unique`: image groups and captions of the input, refusing a caption id that
  appears twice (a resume and the exports find captions by id);
- :func:`check_kept`: every caption whose negatives an interrupted run wrote is still in the
  changed input, with the same text, before the point where the run continues.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tags.negatives.io import InputError
from tags.negatives.types import ImageGroup


def fingerprint(path: str | Path) -> dict[str, Any]:
    """``{"sha256": hex digest, "bytes": size}`` of a file's bytes."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return {"sha256": digest.hexdigest(), "bytes": size}


def fingerprint_change(saved: dict[str, Any], now: dict[str, Any]) -> str | None:
    """How the input changed between two fingerprints (``None``: the same file content)."""
    if saved.get("sha256") == now["sha256"]:
        return None
    if saved.get("bytes") != now["bytes"]:
        return f"{saved.get('bytes')} -> {now['bytes']} bytes"
    return f"same size, other content (sha256 {str(saved.get('sha256'))[:12]}... -> " + (
        f"{now['sha256'][:12]}...)"
    )


def _where(fmt: str, line: int) -> str:
    return f"images[{line - 1}]" if fmt == "karpathy" else f"line {line}"


def count_unique(groups: Iterable[ImageGroup], path: str | Path, fmt: str) -> tuple[int, int]:
    """(image groups, captions) of ``groups``; :class:`InputError` naming the file, the id
    and both places when a caption id appears twice."""
    seen: dict[Any, int] = {}
    images = captions = 0
    for group in groups:
        images += 1
        for caption in group.captions:
            captions += 1
            key = caption.caption_id
            if key in seen:
                raise InputError(
                    f"{path}: caption id {key!r} appears twice ({_where(fmt, seen[key])} and "
                    f"{_where(fmt, caption.line)}): tags generate names each negative by its "
                    "caption id (--resume and the exports find captions by it); give every "
                    "sentence its own id (Karpathy: sentid)"
                )
            seen[key] = caption.line
    return images, captions


def kept_captions(path: str | Path, offset: int) -> dict[Any, str]:
    """``caption_id -> positive`` of the records in the first ``offset`` bytes of an output
    (the finished captions :func:`~tags.negatives.io.scan_output` found)."""
    kept: dict[Any, str] = {}
    done = 0
    with open(path, "rb") as handle:
        for raw in handle:
            done += len(raw)
            if done > offset:
                break
            record = json.loads(raw)
            kept.setdefault(record["caption_id"], record["positive"])
    return kept


def check_kept(
    kept: dict[Any, str], groups: Iterable[ImageGroup], path: str | Path, resume_after: Any
) -> None:
    """Every kept caption is in ``groups`` up to ``resume_after`` with the text its records
    were made from (a caption longer than ``--max-tokens`` was cut: its start); else
    :class:`InputError` naming the caption."""
    waiting = dict(kept)
    for group in groups:
        for caption in group.captions:
            key = caption.caption_id
            if key in waiting:
                text = " ".join(caption.text.split())
                positive = waiting.pop(key)
                if not (text == positive or text.startswith(positive + " ")):
                    raise InputError(
                        f"--resume-changed-input: {path}: caption {key!r} is now {text[:60]!r}, "
                        f"but the output's negatives were made from {positive[:60]!r}; the kept "
                        "records would not match the input: run without --resume (--overwrite)"
                    )
            if key == resume_after:
                if waiting:
                    missing = next(iter(waiting))
                    raise InputError(
                        f"--resume-changed-input: {path}: caption {missing!r} of the output is "
                        "not before the resume point in the changed input; run without --resume "
                        "(--overwrite)"
                    )
                return
    # resume_after not found: the generator names it (NegativeGenerator.generate)


__all__ = ["check_kept", "count_unique", "fingerprint", "fingerprint_change", "kept_captions"]
