"""The one checked loader of saved model and tokenizer folders.

Every load of a ``save_pretrained`` folder in tags (TagsModel, the BLIP / BLIP-2 / CLIP /
SigLIP backends, ``--mlm``, static generators, causal LMs, tokenizers) runs its
``from_pretrained`` call through :func:`load_model_dir` or :func:`load_tokenizer_dir`, which
turn a damaged folder into one :class:`CheckpointError` naming the folder and the file:

- a missing folder, ``config.json`` or weight file, or a ``config.json`` that is not a JSON
  object (checked before loading);
- a truncated or corrupt weight file (``SafetensorError``, a cut zip or pickle);
- a ``config.json`` whose sizes do not match the saved tensors (transformers' load report of
  ``MISMATCH`` rows is held back and summed up as one line);
- any other JSON file of the folder that is not JSON (tokenizer, processor).

On success nothing changes: transformers' load report (missing or unexpected keys) is
logged as it would have been. Standard library only (the names of the third-party errors
are matched as text), so every layer can use it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from tags.core.errors import CheckpointError, UserError, first_line

T = TypeVar("T")

#: What ``save_pretrained`` writes for the weights (one of them, the first found is read).
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
#: The end of every error about a model folder that cannot be loaded.
MODEL_HINT = "pass a complete directory written by save_pretrained (copy or save it again)"
#: The end of the error about a config.json that does not fit its weights.
MISMATCH_HINT = (
    "restore the config.json saved with these weights (or save the model again with "
    "save_pretrained)"
)
#: Errors of a damaged weight file (by name: safetensors, zipfile, pickle).
_DAMAGED = ("SafetensorError", "HeaderTooLarge", "BadZipFile", "UnpicklingError", "EOFError")
#: Texts of torch / transformers RuntimeErrors about a damaged weight file.
_DAMAGED_TEXT = ("PytorchStreamReader", "zip archive", "invalid load key", "unexpected EOF")
#: transformers' RuntimeErrors about tensors whose sizes differ from what config.json gives.
_MISMATCH_TEXT = ("ignore_mismatched_sizes", "size mismatch")
#: The logger of transformers' load report (logged as one warning per load).
REPORT_LOGGER = "transformers.modeling_utils"
_MISMATCH_ROW = re.compile(
    r"^(\S+)\s*\|\s*MISMATCH\b.*?ckpt:\s*torch\.Size\(\[([^\]]*)\]\)\s*vs\s*model:\s*"
    r"torch\.Size\(\[([^\]]*)\]\)",
    re.M,
)


def weight_file(folder: str | Path) -> Path | None:
    """The weight file of a saved folder that ``from_pretrained`` reads, or ``None``."""
    for name in WEIGHT_FILES:
        if (Path(folder) / name).is_file():
            return Path(folder) / name
    return None


def read_config(folder: str | Path) -> dict[str, Any]:
    """``config.json`` of a saved model folder as a dict; a missing folder or file, or one
    that is not a JSON object, is a :class:`CheckpointError` naming it."""
    folder = Path(folder)
    if not folder.exists():
        raise CheckpointError(folder, "not found", "check the path", plain=True)
    if not folder.is_dir():
        raise CheckpointError(
            folder, "is a file", "give the model directory (save_pretrained)", plain=True
        )
    config = folder / "config.json"
    if not config.is_file():
        raise CheckpointError(
            folder,
            "has no config.json: not a saved transformers model",
            "save_pretrained writes config.json and the weights",
            plain=True,
        )
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except ValueError as err:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise CheckpointError(
            folder, f"config.json is not valid JSON ({first_line(err)})", MODEL_HINT
        ) from None
    if not isinstance(data, dict):
        raise CheckpointError(
            folder, f"config.json holds a {type(data).__name__}, not a JSON object", MODEL_HINT
        )
    return data


def check_weights(folder: str | Path) -> Path:
    """The weight file of ``folder`` (:func:`weight_file`), else a :class:`CheckpointError`."""
    found = weight_file(folder)
    if found is None:
        raise CheckpointError(
            folder,
            f"has config.json but no weights (expected one of {', '.join(WEIGHT_FILES)})",
            MODEL_HINT,
            plain=True,
        )
    return found


class _Hold(logging.Filter):
    """Holds every record of a logger (released by :func:`_held_report`)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def filter(self, record: logging.LogRecord) -> bool:
        self.records.append(record)
        return False


#: transformers checks a model's tensor-parallel plan on every load when the loading
#: logger's own level is WARNING or above (as :func:`_held_report` sets it), on this logger:
#: for a model without a plan, loaded without tensor parallelism, it names every layer "not
#: sharded". Not a load fault: dropped during the load.
TP_PLAN_LOGGER = "transformers.distributed.tensor_parallel"


class _DropTPPlanNotes(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(("The following layers were not sharded",
                                               "The following TP rules were not applied"))  # fmt: skip


@contextlib.contextmanager
def _held_report() -> Iterator[_Hold]:
    """transformers' load report held back during the block (recorded even where its
    verbosity hides warnings, so that a failed load can be summed up): logged after the
    block when it succeeds (only what the logger's level lets through, as before), dropped
    when it raises."""
    logger = logging.getLogger(REPORT_LOGGER)
    level, own = logger.getEffectiveLevel(), logger.level
    hold, drop = _Hold(), _DropTPPlanNotes()
    logger.addFilter(hold)
    logging.getLogger(TP_PLAN_LOGGER).addFilter(drop)
    logger.setLevel(min(level, logging.WARNING))
    try:
        yield hold
    finally:
        logger.removeFilter(hold)
        logging.getLogger(TP_PLAN_LOGGER).removeFilter(drop)
        logger.setLevel(own)
    for record in hold.records:
        if record.levelno >= level:
            logger.handle(record)


def _mismatch_example(records: list[logging.LogRecord]) -> str:
    """``", e.g. KEY: [A] in the weights, [B] by config.json"`` (the first key by name)
    from a held load report."""
    rows = sorted(m.groups() for r in records for m in _MISMATCH_ROW.finditer(r.getMessage()))
    if not rows:
        return ""
    key, saved, built = rows[0]
    return f", e.g. {key}: [{saved}] in the weights, [{built}] by config.json"


def _damaged_json(folder: Path) -> tuple[str, str] | None:
    """``(file name, why)`` of the first JSON file of ``folder`` that is not JSON."""
    for path in sorted(folder.glob("*.json")):
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except ValueError as err:
            return path.name, first_line(err)
        except OSError:
            continue
    return None


def _as_checkpoint_error(
    err: Exception, folder: Path, weights: Path | None, records: list[logging.LogRecord]
) -> CheckpointError | None:
    """What a failed ``from_pretrained`` of ``folder`` means, or ``None`` (a bug: re-raise)."""
    name = type(err).__name__
    text = str(err)
    if isinstance(err, RuntimeError) and any(t in text for t in _MISMATCH_TEXT):
        where = weights.name if weights is not None else "the weights"
        return CheckpointError(
            folder,
            f"config.json does not match the weights in {where} (tensor sizes differ"
            f"{_mismatch_example(records)})",
            MISMATCH_HINT,
        )
    damaged = name in _DAMAGED or (
        isinstance(err, RuntimeError) and any(t in text for t in _DAMAGED_TEXT)
    )
    if damaged:
        where = weights.name if weights is not None else "the weight file"
        return CheckpointError(
            folder,
            f"cannot be read ({where} is damaged or incomplete: {first_line(err)})",
            MODEL_HINT,
        )
    if isinstance(err, (OSError, ValueError)):
        bad = _damaged_json(folder)
        if bad is not None:
            why = f"{bad[0]} is not JSON: {bad[1]}"
            return CheckpointError(folder, f"cannot be read ({why})", MODEL_HINT)
        return CheckpointError(folder, f"cannot be read ({first_line(err)})", MODEL_HINT)
    return None


def load_model_dir(path: str | Path, load: Callable[[], T], *, weights: bool = True) -> T:
    """``load()`` (a ``from_pretrained`` of the folder ``path``) with the folder checked
    first (:func:`read_config`, and :func:`check_weights` when ``weights``) and what a
    damaged folder raises turned into one :class:`CheckpointError` (see the module)."""
    folder = Path(path)
    read_config(folder)
    found = check_weights(folder) if weights else weight_file(folder)
    with _held_report() as hold:
        try:
            return load()
        except UserError:
            raise
        except Exception as err:
            problem = _as_checkpoint_error(err, folder, found, hold.records)
            if problem is None:
                raise
            raise problem from err


def load_tokenizer_dir(path: str | Path, load: Callable[[], T], hint: str = MODEL_HINT) -> T:
    """``load()`` (a tokenizer's ``from_pretrained`` of the folder ``path``) with a damaged
    tokenizer file named: a :class:`CheckpointError` naming the folder and the file. Any
    other error (no tokenizer saved there) passes unchanged, for the caller's own message."""
    folder = Path(path)
    try:
        return load()
    except UserError:
        raise
    except (OSError, ValueError) as err:
        bad = _damaged_json(folder) if folder.is_dir() else None
        if bad is None:
            raise
        raise CheckpointError(
            folder, f"cannot be read ({bad[0]} is not JSON: {bad[1]})", hint
        ) from err


__all__ = [
    "MISMATCH_HINT",
    "MODEL_HINT",
    "REPORT_LOGGER",
    "WEIGHT_FILES",
    "check_weights",
    "load_model_dir",
    "load_tokenizer_dir",
    "read_config",
    "weight_file",
]
