"""Bad input, told apart from bugs: :class:`UserError` is the one base the CLI catches.

Each layer raises its own type (training config: ``ConfigError``, images: ``ImageError``,
region features: ``FeaturesError``, caption files: ``InputError``, model directories:
``BackendError``, output locks: ``LockError``, command-line files and options:
:class:`CommandError`); each of them is a :class:`UserError`. The
``tags`` command prints such an error as one line naming the file (and line or key) and what
to do, and exits 2; ``tags --debug COMMAND`` shows the traceback instead. Anything else is a
bug and keeps its traceback. Light: no imports beyond the standard library.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

#: What reading a damaged file raises besides OSError/ValueError/EOFError (by name: no import).
_READ_ERRORS = ("SafetensorError", "BadZipFile", "UnpicklingError", "HeaderTooLarge")


class UserError(Exception):
    """Input the user can fix (a file, a setting, an option): never a traceback."""


class CommandError(UserError, ValueError):
    """The CLI layer's own: a file or option given on the command line is unusable."""


class ConfigError(UserError, ValueError):
    """A config file or override is invalid (unknown key, wrong type, bad value)."""


class BackendError(UserError, ValueError):
    """A model directory or a request the backend cannot serve (the message says why)."""


class CheckpointError(BackendError):
    """A saved model or tokenizer folder that cannot be loaded (``tags.core.checkpoints``):
    ``folder``, what is wrong with it (``reason``, naming the file) and what to do (``hint``).
    :func:`reading` puts its own label (an option or config key and the path) in place of
    the folder."""

    def __init__(self, folder: str | Path, reason: str, hint: str = "", plain: bool = False):
        self.folder, self.reason, self.hint, self.plain = str(folder), reason, hint, plain
        super().__init__(self.labelled(self.folder))

    def labelled(self, label: str) -> str:
        """The message with ``label`` in place of the folder."""
        text = f"{label}{' ' if self.plain else ': '}{self.reason}"
        return f"{text}; {self.hint}" if self.hint else text


class NonFiniteError(ArithmeticError):
    """A computation gave NaN or inf (diverged weights, an exploding learning rate): training
    turns it into a stop naming the step (exit 3)."""


def one_line(message: object) -> str:
    """``message`` on one line: its non-empty lines joined by ``"; "``."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    return "; ".join(lines)


def worker_unwrapped(err: BaseException) -> str:
    """The message of ``err``; for one a ``DataLoader`` worker raised (PyTorch re-raises it
    in the main process as ``"Caught X in DataLoader worker process N. Original Traceback
    ..."``) the original message, without the worker's traceback."""
    text = str(err)
    if not (text.startswith("Caught ") and "Original Traceback" in text):
        return text
    name = re.escape(type(err).__name__)
    found = list(re.finditer(rf"^(?:[\w.]+\.)?{name}: ", text, flags=re.M))
    return text[found[-1].end() :].strip() if found else text


def user_message(err: BaseException) -> str | None:
    """The one-line message of an error the user can fix, or ``None`` for a bug.

    A :class:`UserError`, or an ``OSError`` about a named file (permission denied, no
    space left, a folder where a file was expected...)."""
    if isinstance(err, UserError):
        return one_line(worker_unwrapped(err)) or type(err).__name__
    if isinstance(err, OSError) and err.filename is not None:
        reason = err.strerror or one_line(err)
        return f"{err.filename}: {reason}; check the path and its permissions"
    return None


def as_command_error(err: BaseException) -> CommandError:
    """A bad input a command caught (its own error type, an ``OSError``, a ``ValueError``)
    as a :class:`CommandError` for the CLI's handler: one line, exit 2."""
    return CommandError(user_message(err) or one_line(worker_unwrapped(err)))


def first_line(err: BaseException) -> str:
    """The first line of ``err``'s message (a UTF-8 decode error: where the text is not
    UTF-8, without the codec's wording)."""
    if isinstance(err, UnicodeDecodeError):
        return f"not UTF-8 text: {err.reason} at byte {err.start}"
    lines = str(err).strip().splitlines()
    return lines[0].strip() if lines else type(err).__name__


def check_config_json(directory: str | Path) -> None:
    """A model directory's ``config.json``, if there, is a JSON object (``ValueError``)."""
    path = Path(directory) / "config.json"
    if not path.is_file():
        return
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"config.json is not valid JSON ({first_line(err)})") from None
    if not isinstance(data, dict):
        raise ValueError(f"config.json holds a {type(data).__name__}, not a JSON object")


@contextlib.contextmanager
def reading(what: str, hint: str, error: Callable[[str], Exception]) -> Iterator[None]:
    """Turn what reading a damaged or missing file raises inside the block (``OSError``,
    ``ValueError``, a truncated safetensors/zip/pickle) into one ``error`` that names
    ``what`` and ends with ``hint``; a :class:`CheckpointError` gets ``what`` in place of its
    folder, any other :class:`UserError` passes unchanged."""
    try:
        yield
    except CheckpointError as err:  # a damaged model folder: named by this label instead
        raise error(err.labelled(what)) from None
    except UserError:
        raise
    except Exception as err:
        if not isinstance(err, (OSError, ValueError, EOFError)) and (
            type(err).__name__ not in _READ_ERRORS
        ):
            raise
        raise error(f"{what}: cannot be read ({first_line(err)}); {hint}") from None


__all__ = [
    "BackendError",
    "CheckpointError",
    "CommandError",
    "UserError",
    "as_command_error",
    "check_config_json",
    "first_line",
    "one_line",
    "reading",
    "user_message",
    "worker_unwrapped",
]
