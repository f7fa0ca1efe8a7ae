"""The run directory: inputs checked before anything is written, one run per ``output_dir``.

- :func:`check_inputs`: every file the config names exists (before ``output_dir`` is touched);
- :func:`check_output_dir`: a directory that holds another run is refused unless
  ``resume_from`` is set, and a resume whose seed, batch or learning rates differ from the
  saved ``config.yaml`` is refused;
- :func:`trim_metrics`: on resume, drop metric rows logged after the checkpoint;
- :func:`clear_run`: remove a run's outputs (callers that own the directory, e.g. the demo).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from tags.core.errors import ConfigError

#: What a run writes into ``output_dir`` (a lock file aside).
RUN_MARKERS = ("config.yaml", "metrics.jsonl", "checkpoints", "phases", "model")
LOCK_FILE = ".tags-train.lock"
#: Settings a resumed run must share with the run it continues.
RESUME_KEYS = ("recipe", "seed", "batch_size", "gradient_accumulation_steps")


def _alias(path: str) -> bool:
    return path in ("minilm", "tiny-mlm")


def check_inputs(config: Any) -> None:
    """Raise :class:`ConfigError` naming the first config key whose file is missing."""
    data = config.data
    paths: list[tuple[str, str | None]] = []
    if data.captions != "synthetic":
        if not data.captions:
            raise ConfigError("data.captions: no caption file given")
        paths.append(("data.captions", data.captions))
        images = getattr(data, "images", None)  # raw images (HF backends) instead of features
        paths.append(("data.images", images) if images else ("data.features", data.features or ""))
    paths += [("data.negatives", data.negatives)]
    paths += [("eval.captions", config.eval.captions), ("eval.features", config.eval.features)]
    paths += [("eval.images", getattr(config.eval, "images", None) or None)]
    paths += [(f"vse.reference_scores.{i}", p) for i, p in enumerate(config.vse.reference_scores)]
    if config.model.source != "scratch":
        paths.append(("model.path", config.model.path or ""))
    if config.model.tokenizer:
        paths.append(("model.tokenizer", config.model.tokenizer))
    if config.recipe == "tags-dc" and config.tags_dc.synthetic.source == "static":
        paths.append(
            ("tags_dc.synthetic.static_generator", config.tags_dc.synthetic.static_generator)
        )
    for key, path in paths:
        if path is None or _alias(path):
            continue
        if not path:
            raise ConfigError(f"{key}: no path given")
        if not Path(path).exists():
            raise ConfigError(f"{key}: {path} not found")


def holds_run(output_dir: str | Path) -> list[str]:
    """The run outputs present in ``output_dir`` (empty: no run there)."""
    root = Path(output_dir)
    return [name for name in RUN_MARKERS if (root / name).exists()]


def check_output_dir(config: Any) -> None:
    """Refuse to mix two runs in one ``output_dir`` (see the module docstring)."""
    root = Path(config.output_dir)
    if root.exists() and not root.is_dir():
        raise ConfigError(f"output_dir: {root} is a file, not a directory")
    found = holds_run(root)
    if not found:
        return
    if not config.resume_from:
        raise ConfigError(
            f"output_dir {root} holds another run ({', '.join(found)}): pass "
            "resume_from=latest to continue it, or choose a new output_dir"
        )
    saved_path = root / "config.yaml"
    if not saved_path.is_file():
        return
    try:
        saved = yaml.safe_load(saved_path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{saved_path}: unreadable ({err})") from None
    changed = []
    for key in RESUME_KEYS:
        if key in saved and saved[key] != getattr(config, key):
            changed.append(f"{key} {saved[key]!r} -> {getattr(config, key)!r}")
    old_lrs = [p.get("lr") for p in saved.get("phases", [])]
    new_lrs = [p.lr for p in config.phases]
    if old_lrs and [float(x) for x in old_lrs] != new_lrs:
        changed.append(f"phase lr {old_lrs} -> {new_lrs}")
    if changed:
        raise ConfigError(
            f"resume_from: settings differ from the run in {root}: {'; '.join(changed)}; "
            "resume with the same settings or choose a new output_dir"
        )


def trim_metrics(path: str | Path, step: int) -> int:
    """Drop ``metrics.jsonl`` rows logged after ``step`` (a resumed run logs them again);
    returns how many were dropped."""
    path = Path(path)
    if not path.is_file():
        return 0
    keep, dropped = [], 0
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row_step = int(json.loads(line).get("step", 0))
        except (ValueError, AttributeError):
            dropped += 1
            continue
        if row_step > step:
            dropped += 1
        else:
            keep.append(line)
    if dropped:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("".join(f"{line}\n" for line in keep), encoding="utf-8")
        tmp.replace(path)
    return dropped


def clear_run(output_dir: str | Path) -> None:
    """Remove a previous run's outputs from ``output_dir`` (other files are kept)."""
    root = Path(output_dir)
    for name in (*RUN_MARKERS, "synthetic_data"):
        target = root / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()


__all__ = [
    "LOCK_FILE",
    "RUN_MARKERS",
    "check_inputs",
    "check_output_dir",
    "clear_run",
    "holds_run",
    "trim_metrics",
]
