"""A checkpoint's files: their manifest, and every file a resume reads checked before (and
the random states after) Accelerate's ``load_state``.

``accelerator.load_state`` reads the model (``model.safetensors``, or ``pytorch_model.bin``),
``optimizer.bin``, ``scaler.pt`` (fp16) and this process's ``random_states_N.pkl``; tags
reads ``tags_state.pt`` itself (:mod:`tags.training.state`). Accelerate stops with a traceback
on a damaged optimizer file, and *skips* a damaged random-states file (a log line at INFO
level): the run would go on, no longer sure to be exact, without a word. So:

- :func:`complete_text` lists every file of a checkpoint with its size and CRC-32 in the
  ``COMPLETE`` marker (its first line is the step, as before);
- :func:`check_files` compares the files with that list (checkpoints of older versions have
  none) and opens each one as Accelerate will (the safetensors header, the zip directory and
  pickle of a torch file, the random states' contents); a missing, cut, changed or unreadable
  file is a :class:`Problem`;
- :func:`rng_differs`: after ``load_state``, which random states in force are not the file's
  (Accelerate skipped them).

A problem with the weights or ``tags_state.pt`` stops a resume (nothing to continue); one with
the optimizer, the gradient scaler or the random states stops it too, unless the user allows
an inexact resume (``allow_inexact_resume``): it then goes on without them, naming each.
"""

from __future__ import annotations

import random
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tags.training.state import CUSTOM_STATE_FILE, LEGACY_STATE

MODEL_FILES = ("model.safetensors", "pytorch_model.bin")  # Accelerate's, safetensors first
OPTIMIZER_FILE = "optimizer.bin"
SCALER_FILE = "scaler.pt"
RNG_FILE = re.compile(r"^random_states_(\d+)\.pkl$")
#: What a resume without the file loses, and whether it can go on at all without it.
_MEANING: tuple[tuple[re.Pattern[str], str, bool], ...] = (
    (re.compile(r"^(model|pytorch_model)(_\d+)?\.(safetensors|bin)$"), "the weights", True),
    (re.compile(rf"^{re.escape(CUSTOM_STATE_FILE)}$"), "the loop position and schedule", True),
    (LEGACY_STATE, "the loop position and schedule", True),
    (re.compile(r"^optimizer(_\d+)?\.bin$"), "the optimizer state", False),
    (re.compile(rf"^{re.escape(SCALER_FILE)}$"), "the fp16 loss scale", False),
    (RNG_FILE, "the random states", False),
)
_CHUNK = 1 << 22


@dataclass(frozen=True)
class Problem:
    """A file of a checkpoint a resume cannot use: ``reason`` follows "is" (``missing``,
    ``unreadable (...)``); ``lost``: what a resume without it loses; ``fatal``: nothing to
    resume without it."""

    name: str
    reason: str
    lost: str
    fatal: bool

    def __str__(self) -> str:
        return f"{self.name} is {self.reason}"


def problem(name: str, reason: str) -> Problem:
    """The :class:`Problem` of file ``name``, with what it means for a resume."""
    for pattern, lost, fatal in _MEANING:
        if pattern.match(name):
            return Problem(name, reason, lost, fatal)
    return Problem(name, reason, "its contents", False)


def _crc(path: Path) -> int:
    crc = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            crc = zlib.crc32(chunk, crc)
    return crc


def complete_text(directory: str | Path, step: int, marker: str = "COMPLETE") -> str:
    """The ``COMPLETE`` marker of a checkpoint: the step, then ``CRC32 SIZE NAME`` of each
    of its files."""
    files = sorted(p for p in Path(directory).iterdir() if p.is_file() and p.name != marker)
    lines = [f"{_crc(p):08x} {p.stat().st_size} {p.name}" for p in files]
    return "".join(f"{line}\n" for line in [str(step), *lines])


def read_manifest(marker: Path) -> tuple[dict[str, tuple[int, int]], list[Problem]]:
    """``{name: (size, crc)}`` of a ``COMPLETE`` marker (empty for older checkpoints)."""
    listed: dict[str, tuple[int, int]] = {}
    try:
        lines = marker.read_text(encoding="utf-8").splitlines()[1:]
    except (OSError, UnicodeDecodeError) as err:
        return {}, [Problem(marker.name, f"unreadable: {err}", "the check of the files", False)]
    for number, line in enumerate(lines, 2):
        parts = line.split(maxsplit=2)
        try:
            listed[parts[2]] = (int(parts[1]), int(parts[0], 16))
        except (IndexError, ValueError):
            reason = f"unreadable: line {number} is {line[:40]!r}"
            return listed, [Problem(marker.name, reason, "the check of the files", False)]
    return listed, []


def _manifest_problems(directory: Path, marker: str, contents: bool) -> list[Problem]:
    listed, found = read_manifest(directory / marker)
    for name, (size, crc) in listed.items():
        path = directory / name
        if not path.is_file():
            found.append(problem(name, "missing"))
        elif path.stat().st_size != size:
            actual = path.stat().st_size
            found.append(problem(name, f"not the file saved: {actual} bytes, {size} saved"))
        elif contents and _crc(path) != crc:
            found.append(problem(name, f"not the file saved: its CRC-32 differs from {marker}'s"))
    return found


def first_line(err: BaseException) -> str:
    """The first line (or sentence) of an error message, for a one-line report."""
    text = (str(err).strip().splitlines() or [""])[0]
    return (text.split(". ")[0][:160] if text else "") or type(err).__name__


def _open_model(path: Path) -> None:
    if path.suffix == ".safetensors":
        from safetensors import safe_open

        with safe_open(str(path), "pt") as handle:  # checks the header covers the file
            list(handle.keys())
    else:
        _torch_load(path, mmap=True)


def _torch_load(path: Path, mmap: bool = False) -> Any:
    """As Accelerate reads it (``weights_only=True`` with its allowed numpy types); ``mmap``:
    the zip directory and the pickle are read, the tensors' bytes are not."""
    from accelerate.utils import load

    return load(path, map_location="cpu", mmap=mmap) if mmap else load(path, map_location="cpu")


class _Unusable(ValueError):
    """A file that reads well but does not fit this run (its message is the reason)."""


def _check_rng(states: Any, cuda: bool) -> None:
    """Raise if ``states`` is not a random-states dict Accelerate can apply (on copies)."""
    if not isinstance(states, dict):
        raise ValueError(f"a {type(states).__name__}, not a dict")
    random.Random().setstate(states["random_state"])
    np.random.RandomState().set_state(states["numpy_random_seed"])
    torch.Generator().set_state(states["torch_manual_seed"])
    if cuda and not states.get("torch_cuda_manual_seed"):
        raise _Unusable("without CUDA random states (saved on a machine without a GPU)")


def check_files(
    directory: str | Path,
    *,
    process_index: int = 0,
    num_processes: int = 1,
    scaler: bool = False,
    cuda: bool = False,
    contents: bool = True,
    marker: str = "COMPLETE",
) -> tuple[list[Problem], dict[str, Any] | None]:
    """The problems of the files a resume of ``directory`` reads (see the module docstring)
    and this process's random states as read (``None`` when unusable). ``contents``: also
    compare each file's CRC-32 with the marker's (the main process)."""
    directory = Path(directory)
    found = _manifest_problems(directory, marker, contents)
    bad = {p.name for p in found}

    def probe(name: str, opener: Any) -> Any:
        path = directory / name
        if name in bad:
            return None
        if not path.is_file():
            found.append(problem(name, "missing"))
            return None
        try:
            return opener(path)
        except _Unusable as err:
            found.append(problem(name, str(err)))
            return None
        except Exception as err:  # any failure to read it: named, never a traceback
            found.append(problem(name, f"unreadable: {first_line(err)}"))
            return None

    model = next((n for n in MODEL_FILES if (directory / n).is_file()), MODEL_FILES[0])
    probe(model, _open_model)
    probe(OPTIMIZER_FILE, lambda path: _torch_load(path, mmap=True))
    if scaler:
        probe(SCALER_FILE, _torch_load)
    rng_name = f"random_states_{process_index}.pkl"

    def read_rng(path: Path) -> Any:
        states = _torch_load(path)
        _check_rng(states, cuda)
        return states

    rng = probe(rng_name, read_rng)
    if process_index == 0:
        for entry in sorted(directory.iterdir()):
            match = RNG_FILE.match(entry.name)
            if match and int(match.group(1)) >= num_processes:
                reason = (
                    f"unused: saved by process {match.group(1)} of a run with more processes "
                    f"(this run has {num_processes})"
                )
                lost = "that process's random states"
                found.append(Problem(entry.name, reason, lost, False))
    return found, rng


def rng_differs(states: dict[str, Any], device: torch.device) -> list[str]:
    """The generators whose state in force is not the one in ``states`` (after
    ``load_state``: the ones Accelerate did not restore)."""
    differ = []
    if random.getstate() != states["random_state"]:
        differ.append("python")
    now, saved = np.random.get_state(), states["numpy_random_seed"]
    same_np = now[0] == saved[0] and np.array_equal(now[1], saved[1]) and now[2:] == saved[2:]
    if not same_np:
        differ.append("numpy")
    if not torch.equal(torch.get_rng_state(), states["torch_manual_seed"]):
        differ.append("torch")
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        cuda = states.get("torch_cuda_manual_seed") or []
        if index >= len(cuda) or not torch.equal(torch.cuda.get_rng_state(index), cuda[index]):
            differ.append("cuda")
    return differ


def refusal(checkpoint: Path, problems: list[Problem], earlier: Path | None) -> str:
    """The one-line refusal of a resume of ``checkpoint`` (fatal problems first)."""
    problems = sorted(problems, key=lambda p: not p.fatal)
    first, rest = problems[0], problems[1:]
    also = f" (also: {'; '.join(map(str, rest))})" if rest else ""
    other = (
        f"resume from an earlier checkpoint (resume_from={earlier})"
        if earlier is not None
        else "no earlier checkpoint is left"
    )
    head = f"resume_from: {checkpoint / first.name} is {first.reason}{also}"
    if first.fatal:
        return f"{head}: the run cannot continue without {first.lost}; {other}, or start anew"
    return (
        f"{head}: without {first.lost} the run may not continue exactly; {other}, or pass "
        "--allow-inexact-resume (allow_inexact_resume=true) to continue without it"
    )


def inexact_warning(checkpoint: Path, problems: list[Problem]) -> str:
    """The warning of a resume that goes on without ``problems`` (allow_inexact_resume)."""
    parts = "; ".join(f"{p.lost} ({p})" for p in problems)
    return (
        f"warning: resumed from {checkpoint} inexactly (allow_inexact_resume): not restored: "
        f"{parts}; the run is not the one an uninterrupted run would give"
    )


__all__ = [
    "MODEL_FILES",
    "OPTIMIZER_FILE",
    "SCALER_FILE",
    "Problem",
    "check_files",
    "complete_text",
    "first_line",
    "inexact_warning",
    "problem",
    "read_manifest",
    "refusal",
    "rng_differs",
]
