"""Image file names from a dataset kept under the root they are read (or exported) under.

A caption file names its images (Karpathy ``filename``, JSONL ``filename``, suite
``image_path``); such a name that is absolute or holds a ``..`` part would read, or point
an export at, a file outside the user's image root. Every reader refuses it unless the user
passes ``--allow-outside-root`` (training: ``data.allow_outside_root: true``). Symlinks inside
the root are followed, wherever they lead (the root is the user's own); for an untrusted image
tree ``--confine-to-root`` (training: ``data.confine_to_root: true``) also refuses a file
whose real path, symlinks resolved, is outside the root (:func:`escapes_root`). Light: no
torch import (``tags export`` uses it).
"""

from __future__ import annotations

from pathlib import Path, PurePath

#: How a user allows image file names outside the root (CLI flag, training config key).
ALLOW_OUTSIDE_ROOT = "--allow-outside-root (training: data.allow_outside_root=true)"
#: How a user refuses symlinks that lead out of the root (CLI flag, training config key).
CONFINE_TO_ROOT = "--confine-to-root (training: data.confine_to_root=true)"


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


def escapes_root(path: str | Path, real_root: Path) -> Path | None:
    """The real path of ``path`` (every symlink resolved) when it is outside ``real_root``
    (itself resolved), else ``None``."""
    real = Path(path).resolve()
    return None if real.is_relative_to(real_root) else real


def escapes_root_message(name: str, real: Path, root: str | Path) -> str:
    """The one-line refusal of a file that a symlink takes out of the root."""
    return (
        f"image file name {name!r} leads outside the image root {root} (a symlink to {real}): "
        f"refused by {CONFINE_TO_ROOT}; copy the file into the root, or leave that option off "
        "for data you trust"
    )


def confine_conflict_message() -> str:
    """The refusal of both options at once (one allows what the other refuses)."""
    return f"{ALLOW_OUTSIDE_ROOT} and {CONFINE_TO_ROOT} exclude each other: give one"


__all__ = [
    "ALLOW_OUTSIDE_ROOT",
    "CONFINE_TO_ROOT",
    "confine_conflict_message",
    "escapes_root",
    "escapes_root_message",
    "leaves_root",
    "outside_root_message",
]
