"""Output paths of the CLI: checked before any work, JSON written atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tags.core.errors import CommandError


def out_problem(out: str | Path, option: str = "--out") -> str | None:
    """Why ``out`` cannot be written as a file (a folder, a read-only file, no writable
    folder to create it in), as one line; ``None`` when it can."""
    path = Path(out)
    if path.is_dir():
        return f"{option} {path}: a folder; pass a file path"
    if path.exists() and not os.access(path, os.W_OK):
        return f"{option} {path}: not writable; pass a file you can write"
    parent = next((p for p in (path.parent, *path.parent.parents) if p.exists()), Path("."))
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        return f"{option} {path}: cannot write in {parent}; pass a writable path"
    return None


def dir_problem(out: str | Path, option: str = "--out") -> str | None:
    """Why ``out`` cannot be used as an output folder (an existing file, or no writable
    folder to create it in), as one line; ``None`` when it can."""
    path = Path(out)
    if path.exists() and not path.is_dir():
        return f"{option} {path}: an existing file, not a folder; pass a folder path"
    if path.is_dir():
        if not os.access(path, os.W_OK | os.X_OK):
            return f"{option} {path}: not writable; pass a folder you can write"
        return None
    parent = next((p for p in path.parents if p.exists()), Path("."))
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        return f"{option} {path}: cannot create it in {parent}; pass a writable path"
    return None


def check_out(out: str | Path | None, option: str = "--out", overwrite: bool = True) -> None:
    """:func:`out_problem` as a :class:`~tags.core.errors.CommandError` (nothing for ``None``);
    an existing file is refused too unless ``overwrite``."""
    problem = out_problem(out, option) if out else None
    if problem is None and out and not overwrite and Path(out).exists():
        problem = f"{option} {out} exists; pass --overwrite to replace it"
    if problem is not None:
        raise CommandError(problem)


def write_json(out: str | Path, data: Any, option: str = "--out") -> None:
    """``data`` as indented JSON at ``out`` via a temporary file + ``os.replace`` (never
    half written); an ``OSError`` is a :class:`~tags.core.errors.CommandError` naming it."""
    path = Path(out)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError as err:
        raise CommandError(f"{option} {path}: cannot be written ({err.strerror or err})") from None
    finally:
        tmp.unlink(missing_ok=True)


__all__ = ["check_out", "dir_problem", "out_problem", "write_json"]
