"""What ``tags generate --resume`` checks about its input before it continues a run.

- :func:`fingerprint`: sha256 and size of the caption file, saved in the output's
  ``*.meta.json``; a resume whose input no longer has it is refused
  (``--resume-changed-input`` continues anyway, see :func:`check_kept`);
- :func:`count_unique`: image groups and captions of the input, refusing a caption id that
  appears twice (a resume and the exports find captions by id);
- :func:`check_kept`: every caption whose negatives an interrupted run wrote is still in the
  changed input, with the same text, before the point where the run continues;
- :func:`check_resume` (:func:`read_meta`, :func:`changed_settings`) / :func:`write_meta`:
  the run's settings and input fingerprint saved next to its output (``OUT.meta.json``),
  and a resume refused when they changed;
- :func:`no_captions`: why an input holds no caption.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tags.core.io import InputError, detect_format, karpathy_splits, scan_output
from tags.core.types import ImageGroup


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


#: Settings added after the first release, with the value a run that predates them had.
LATER_SETTINGS = {
    "role_swaps": False,
    "background": "factual",
    "noun_classes": None,
    "adds": False,
    "balance": False,
    "kinds": None,
}


def read_meta(meta: Path) -> dict[str, Any]:
    """The settings an interrupted run saved in ``meta``; :class:`InputError` when it is
    not a JSON object."""
    try:
        saved = json.loads(meta.read_text(encoding="utf-8"))
        if not isinstance(saved, dict):
            raise ValueError("not a JSON object")
    except (ValueError, UnicodeDecodeError) as err:
        raise InputError(
            f"--resume: {meta} is not valid JSON ({err}); it records the interrupted run's "
            "settings: run without --resume (--overwrite) to start over"
        ) from None
    return saved


#: Settings saved only by later runs whose value an earlier run did not record: not compared
#: when the saved run predates them.
UNRECORDED_BEFORE = ("shard",)


def changed_settings(saved: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    """The keys of ``settings`` whose value differs from the ``saved`` run's (a setting
    the saved run predates counts as :data:`LATER_SETTINGS`' value, or is not compared,
    :data:`UNRECORDED_BEFORE`; with a fingerprint saved, the content decides, not the
    ``captions`` path: a moved file resumes)."""
    keys = [
        k
        for k in settings
        if not (k == "captions" and "input" in saved)
        and not (k in UNRECORDED_BEFORE and k not in saved)
    ]
    return [k for k in keys if saved.get(k, LATER_SETTINGS.get(k)) != settings[k]]


def check_resume(
    meta: Path,
    target: Path,
    settings: dict[str, Any],
    captions: str | Path,
    groups: Callable[[], Iterable[ImageGroup]],
    *,
    resume: bool,
    changed_input: bool = False,
    warn: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Refuse (:class:`InputError`, one line) a resume of ``target`` whose ``settings`` or
    input content (the fingerprint of ``captions``) differ from the interrupted run's saved
    in ``meta``; with ``changed_input`` a changed input is taken when every finished
    caption of ``target`` is still in ``groups()`` before the resume point (``warn`` says
    so). Returns the input's fingerprint for the run's new ``meta``."""
    now = fingerprint(captions)
    if not (resume and meta.exists()):
        return now
    saved = read_meta(meta)
    changed = changed_settings(saved, settings)
    if changed:
        hint = (
            " (it ran without --balance: pass --no-balance)"
            if "balance" in changed and saved.get("balance", False) is False
            else ""
        )
        raise InputError(
            f"--resume with settings different from the interrupted run ({meta}): "
            f"{', '.join(changed)}{hint}; resume with the same settings or run with --overwrite"
        )
    known = saved.get("input")
    change = fingerprint_change(known, now) if isinstance(known, dict) else None
    if change is not None and not changed_input:
        raise InputError(
            f"--resume: --captions {captions} changed since the interrupted run ({change}): "
            "its records and vocabulary come from the old file; pass --resume-changed-input "
            "to keep them and continue on the new file, or --overwrite to start over"
        )
    if change is not None:
        point = scan_output(target)
        if point.last_caption_id is not None:
            kept = kept_captions(target, point.offset)
            check_kept(kept, groups(), captions, point.last_caption_id)
        if warn is not None:
            warn(
                f"warning: --resume-changed-input: {captions} changed ({change}); keeping the "
                f"finished captions and the vocabulary of the interrupted run"
            )
    return now


def write_meta(meta: Path, settings: dict[str, Any], input_print: dict[str, Any]) -> None:
    """The run's settings and input fingerprint, written atomically to ``meta``."""
    tmp = meta.with_name(f".{meta.name}.tmp")
    tmp.write_text(json.dumps({**settings, "input": input_print}, indent=1))
    os.replace(tmp, meta)


def mark_balance(meta: Path, state: str) -> None:
    """Record in ``meta`` that the finished run's balancing ``state`` is ``started`` or
    ``done`` (:mod:`tags.negatives.balance`): a resume then balances again, never generates."""
    saved = read_meta(meta) if meta.exists() else {}
    tmp = meta.with_name(f".{meta.name}.tmp")
    tmp.write_text(json.dumps({**saved, "balanced": state}, indent=1))
    os.replace(tmp, meta)


def balance_state(meta: Path) -> str | None:
    """``started`` / ``done`` when the run of ``meta`` finished and began balancing."""
    if not meta.exists():
        return None
    state = read_meta(meta).get("balanced")
    return state if state in ("started", "done") else None


def no_captions(path: str | Path, fmt: str | None = None, split: str | None = None) -> str:
    """Why the input holds no caption (a Karpathy split it lacks, or an empty file)."""
    fmt = fmt or detect_format(path)
    if fmt == "karpathy" and split:
        found = ", ".join(karpathy_splits(path)) or "none"
        return f"{path}: no captions in split {split!r} (splits present: {found})"
    return f"{path}: no captions found"


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
    (the finished captions :func:`~tags.core.io.scan_output` found)."""
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


__all__ = [
    "LATER_SETTINGS",
    "changed_settings",
    "check_kept",
    "check_resume",
    "count_unique",
    "fingerprint",
    "fingerprint_change",
    "kept_captions",
    "no_captions",
    "read_meta",
    "write_meta",
]
