"""A write into ``output_dir`` that fails (a full disk, a file size limit, a read-only
folder) is one line naming the folder and how to continue, not a traceback.

PyTorch, safetensors and Accelerate report such failures in their own ways (``OSError``
without a file name, ``SafetensorError``, ``RuntimeError`` from the zip writer);
:func:`write_failure` recognises them.
"""

from __future__ import annotations

from pathlib import Path

from tags.core.errors import UserError


class OutputWriteError(UserError, OSError):
    """A file of the run could not be written (exit 2; ``resume_from=latest`` continues)."""


#: Words of the RuntimeErrors torch's zip writer (``torch.save``) gives for a failed write.
_WRITE_WORDS = (
    "failed writing",
    "file write failed",
    "unexpected pos",  # after a short write
    "No space left on device",
)


def write_failure(err: BaseException, output_dir: str | Path) -> str | None:
    """The one-line message for ``err`` when it is a failed write, else ``None``."""
    if isinstance(err, UserError):
        return None
    if isinstance(err, OSError):
        reason = err.strerror or str(err)
        where = err.filename or output_dir
    elif type(err).__name__ == "SafetensorError" or (
        isinstance(err, RuntimeError) and any(w in str(err) for w in _WRITE_WORDS)
    ):
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        where = output_dir
    else:
        return None
    return (
        f"output_dir {output_dir}: cannot write {where} ({reason}); free space (or fix the "
        "folder) and run again with resume_from=latest: it continues from the last complete "
        "checkpoint"
    )


__all__ = ["OutputWriteError", "write_failure"]
