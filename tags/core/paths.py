"""Image file names from a dataset kept under the root they are read (or exported) under.

A caption file names its images (Karpathy ``filename``, JSONL ``filename``, suite
``image_path``); such a name that is absolute or holds a ``..`` part would read, or point
an export at, a file outside the user's image root. Every reader refuses it unless the user
passes ``--allow-outside-root`` (training: ``data.allow_outside_root: true``). Light: no
torch import (``tags export`` uses it).
"""

from __future__ import annotations

from pathlib import Path, PurePath

#: How a user allows image file names outside the root (CLI flag, training config key).
ALLOW_OUTSIDE_ROOT = "--allow-outside-root (training: data.allow_outside_root=true)"


def leaves_root(name: str) -> bool:
    """Whether a dataset's image file name points outside the folder it is read under: an
    absolute path or a ``..`` part (the root's own symlinks are the user's and followed)."""
    path = PurePath(name)
    return path.is_absolute() or ".." in path.parts


def outside_root_message(name: str, root: str | Path) -> str:
    """The one-line refusal, naming the file name and the flag."""
    return (
        f"image file name {name!r} points outside the image root {root} (an absolute path or "
        f"'..'): refused; pass {ALLOW_OUTSIDE_ROOT} to allow it"
    )


__all__ = ["ALLOW_OUTSIDE_ROOT", "leaves_root", "outside_root_message"]
