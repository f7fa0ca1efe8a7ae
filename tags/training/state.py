"""Loop position and the other custom objects saved with every checkpoint.

The scheduler, the :class:`TrainState` and the recipe's stateful objects (miners, momentum
encoder, queue) are saved by :func:`save_custom_states` as one ``tags_state.pt`` of plain
tensors and Python values, and read back with ``torch.load(weights_only=True)``: a crafted
checkpoint cannot run code. (Accelerate's ``register_for_checkpointing`` would unpickle its
``custom_checkpoint_N.pkl`` with ``weights_only=False``; checkpoints written that way by older
versions are read file by file with ``weights_only=True`` too, and refused when that fails.)
"""

from __future__ import annotations

import contextlib
import dataclasses
import pickle
import re
import tempfile
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from tags.core.errors import ConfigError

#: The custom objects' states, in registration order, in one file per checkpoint.
CUSTOM_STATE_FILE = "tags_state.pt"
#: Accelerate's per-object files (checkpoints of older versions).
LEGACY_STATE = re.compile(r"^custom_checkpoint_(\d+)\.pkl$")
_FORMAT = 1


@dataclass
class TrainState:
    """``step``: optimizer steps done; ``epoch`` / ``batch_in_epoch``: data position (micro
    batches consumed in the current epoch); ``phase``: the phase whose start has run;
    ``skipped``: steps skipped for a non-finite loss (``max_nonfinite_steps``); ``best`` /
    ``best_step``: the best value of ``eval.metric`` so far and its step; ``stale``:
    evaluations since it (early stopping, ``eval.patience``); ``log_window``: the metric
    sums of the steps since the last logged row (``{"count", "sums"}``, saved only when
    non-empty), so that a run resumed off a ``log_every`` boundary logs the row the
    uninterrupted run would have."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    phase: int = -1
    skipped: int = 0  # optimizer steps skipped for a non-finite loss
    best: float = float("-inf")
    best_step: int = 0
    stale: int = 0
    log_window: dict[str, Any] = field(default_factory=dict)

    def state_dict(self) -> dict[str, Any]:
        state = dataclasses.asdict(self)
        if not state["log_window"]:  # (a checkpoint at a log step: nothing pending)
            del state["log_window"]
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        kinds = {f.name: type(f.default) for f in dataclasses.fields(self)}
        self.log_window = {}
        for key, value in state.items():  # checkpoints older than a field lack it
            if key == "log_window":
                self.log_window = dict(value)
                continue
            setattr(self, key, kinds.get(key, int)(value))


def save_custom_states(objects: Sequence[Any], directory: str | Path) -> Path:
    """Write every object's ``state_dict()`` to ``directory/tags_state.pt``; returns it."""
    path = Path(directory) / CUSTOM_STATE_FILE
    torch.save({"format": _FORMAT, "states": [obj.state_dict() for obj in objects]}, path)
    return path


def legacy_state_files(directory: str | Path) -> list[tuple[int, Path]]:
    """Accelerate's ``custom_checkpoint_N.pkl`` files of ``directory`` as ``(N, path)``,
    by ``N``."""
    found = [(LEGACY_STATE.match(p.name), p) for p in Path(directory).iterdir()]
    return sorted((int(m.group(1)), p) for m, p in found if m)


def _safe_load(path: Path) -> Any:
    """``torch.load(weights_only=True)``; a file that needs more is refused, never run."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError) as err:
        first = str(err).strip().splitlines()[0].split(". ")[0] if str(err).strip() else ""
        first = first or type(err).__name__
        raise ConfigError(
            f"resume_from: {path} is not a tags checkpoint state (plain tensors and values); "
            f"refused to load it ({first})"
        ) from None


def load_custom_states(directory: str | Path) -> list[Any]:
    """The states :func:`save_custom_states` wrote (or an older checkpoint's
    ``custom_checkpoint_N.pkl``), read without unpickling code (:class:`ConfigError` if a
    file holds anything else)."""
    directory = Path(directory)
    path = directory / CUSTOM_STATE_FILE
    if path.is_file():
        saved = _safe_load(path)
        if not isinstance(saved, dict) or saved.get("format") != _FORMAT:
            raise ConfigError(f"resume_from: {path} is not a tags checkpoint state")
        return list(saved["states"])
    legacy = legacy_state_files(directory)
    if not legacy or [n for n, _ in legacy] != list(range(len(legacy))):
        raise ConfigError(
            f"resume_from: {directory} has no {CUSTOM_STATE_FILE} (nor a complete set of "
            "custom_checkpoint_N.pkl): not a tags checkpoint"
        )
    return [_safe_load(p) for _, p in legacy]


@contextlib.contextmanager
def accelerate_view(
    checkpoint: str | Path,
    leave_out: Collection[str] = (),
    substitutes: Mapping[str, Callable[[Path], Any]] | None = None,
) -> Iterator[Path]:
    """``checkpoint`` for ``accelerator.load_state``; for an older checkpoint holding
    ``custom_checkpoint_N.pkl`` (which ``load_state`` would unpickle with
    ``weights_only=False``), or with files to ``leave_out`` or replace (``substitutes``:
    name -> a function writing the file at the path given; an inexact resume), a temporary
    folder of links to its other files."""
    checkpoint, substitutes = Path(checkpoint), dict(substitutes or {})
    if not (legacy_state_files(checkpoint) or leave_out or substitutes):
        yield checkpoint
        return
    with tempfile.TemporaryDirectory(prefix="tags-resume-") as tmp:
        for entry in checkpoint.iterdir():
            skip = LEGACY_STATE.match(entry.name) or entry.name in leave_out
            if not skip and entry.name not in substitutes:
                (Path(tmp) / entry.name).symlink_to(entry.resolve())
        for name, write in substitutes.items():
            write(Path(tmp) / name)
        yield Path(tmp)


def restore_custom_states(
    objects: Sequence[Any], directory: str | Path, states: list[Any] | None = None
) -> None:
    """Load the states :func:`load_custom_states` reads (or already read: ``states``) into
    ``objects`` (same order)."""
    states = load_custom_states(directory) if states is None else states
    if len(states) != len(objects):
        raise ConfigError(
            f"resume_from: {directory} holds {len(states)} saved states but this run has "
            f"{len(objects)} (scheduler, loop state, recipe objects): a checkpoint of another "
            "recipe or configuration"
        )
    for obj, state in zip(objects, states):
        try:
            obj.load_state_dict(state)
        except (KeyError, ValueError, TypeError, RuntimeError, AttributeError) as err:
            why = (str(err).strip().splitlines() or [""])[0][:160]
            raise ConfigError(
                f"resume_from: {Path(directory) / CUSTOM_STATE_FILE}: the saved state of the "
                f"{type(obj).__name__} does not fit this run ({type(err).__name__}: {why}): "
                "a damaged checkpoint, or one of another recipe or configuration"
            ) from None


__all__ = [
    "CUSTOM_STATE_FILE",
    "TrainState",
    "accelerate_view",
    "legacy_state_files",
    "load_custom_states",
    "restore_custom_states",
    "save_custom_states",
]
