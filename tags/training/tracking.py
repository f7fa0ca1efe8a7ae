"""Metric logging: JSON lines always (main process), tensorboard through Accelerate when
installed and enabled."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any


def tensorboard_available() -> bool:
    return importlib.util.find_spec("tensorboard") is not None or (
        importlib.util.find_spec("tensorboardX") is not None
    )


class JsonlTracker:
    """Appends ``{"step": ..., **metrics}`` lines to ``path`` (main process only)."""

    def __init__(self, path: str | Path, enabled: bool = True) -> None:
        self.path = Path(path)
        self.enabled = enabled
        if enabled:
            self.path.parent.mkdir(parents=True, exist_ok=True)

    def log(self, values: dict[str, Any], step: int) -> None:
        if not self.enabled:
            return
        clean = {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in values.items()
        }
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"step": step, **clean}) + "\n")


__all__ = ["JsonlTracker", "tensorboard_available"]
