"""Which training errors are failed writes into ``output_dir`` (one line, exit 2) and
which stay bugs (a traceback)."""

from __future__ import annotations

import errno

from tags.training.config import ConfigError
from tags.training.writes import write_failure


class SafetensorError(Exception):
    """Named like safetensors' error (recognised by name: no import)."""


def test_failed_writes_are_named_with_the_folder():
    full = OSError(errno.ENOSPC, "No space left on device")
    message = write_failure(full, "runs/x")
    assert message is not None and message.startswith("output_dir runs/x: cannot write runs/x")
    assert "No space left on device" in message and "resume_from=latest" in message
    named = OSError(errno.EFBIG, "File too large", "runs/x/metrics.jsonl")
    assert "cannot write runs/x/metrics.jsonl (File too large)" in write_failure(named, "runs/x")
    short = RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 39 vs 38")
    assert write_failure(short, "runs/x") is not None
    cut = SafetensorError("Error while serializing: I/O error: File too large (os error 27)")
    assert "I/O error" in write_failure(cut, "runs/x")


def test_other_errors_stay_what_they_are():
    assert write_failure(RuntimeError("index 5 is too large for dim 3"), "runs/x") is None
    assert write_failure(ValueError("bad"), "runs/x") is None
    assert write_failure(ConfigError("data.captions: missing"), "runs/x") is None
