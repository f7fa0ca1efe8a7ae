"""``--model`` names: a local directory, or a Hugging Face hub id found in the local cache.

Nothing is downloaded: a hub id resolves to its cached snapshot folder (what
``hf download ID`` or an earlier ``from_pretrained`` left in ``HF_HUB_CACHE``), so it works
with ``HF_HUB_OFFLINE=1``. A name that is neither says how to fetch it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tags.core.errors import BackendError

#: ``name`` or ``org/name`` as the hub spells repository ids.
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")


def hub_cache_dir() -> Path:
    """The hub cache folder as the environment says now (``HF_HUB_CACHE``, else
    ``HF_HOME/hub``, else ``~/.cache/huggingface/hub``); read at each call, not at import."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or Path(
        os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface"
    )
    return Path(home, "hub").expanduser()


def looks_like_repo_id(name: str) -> bool:
    """Whether ``name`` could be a hub id (``org/name``; no leading ``.``, ``/`` or ``~``)."""
    return bool(_REPO_ID.match(name)) and not name.endswith((".", "-"))


def cached_snapshot(repo_id: str) -> Path | None:
    """The cached snapshot folder of hub model ``repo_id`` (``refs/main``), else ``None``."""
    if not looks_like_repo_id(repo_id):
        return None
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    try:
        folder = snapshot_download(repo_id, cache_dir=hub_cache_dir(), local_files_only=True)
    except (LocalEntryNotFoundError, HFValidationError, OSError, ValueError):
        return None
    return Path(folder) if Path(folder).is_dir() else None


def missing_model_message(name: str | Path) -> str:
    """One line for a ``--model`` that is neither a folder nor a cached hub id."""
    text = f"model directory not found: {name}"
    if looks_like_repo_id(str(name)):
        text += (
            f"; as a Hugging Face hub id it is not in the local cache ({hub_cache_dir()}): "
            f"fetch it with `hf download {name}` (HF_HUB_OFFLINE unset), then run again"
        )
    return text


def resolve_model(name: str | Path) -> Path:
    """``name`` when it exists on disk, else the cached snapshot of hub id ``name``; a
    :class:`BackendError` saying how to fetch it otherwise."""
    path = Path(name).expanduser()
    if path.exists():
        return path
    snapshot = cached_snapshot(str(name))
    if snapshot is None:
        raise BackendError(missing_model_message(name))
    return snapshot


__all__ = [
    "cached_snapshot",
    "hub_cache_dir",
    "looks_like_repo_id",
    "missing_model_message",
    "resolve_model",
]
