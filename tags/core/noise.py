"""Library output the CLI silences because it reads like a fault but is not one:
transformers' / the hub's per-load progress bars ("Loading weights", "Writing model shards"),
and Accelerate's "Removed shared tensor ..." note when the shared tensors are TAGS' decoders
tied to the word embeddings by design. Any other warning passes."""

from __future__ import annotations

import ast
import logging
import os
import re
import sys

#: Tensors tied to the word embeddings by design (``TagsModel._tied_weights_keys``; the TAGS
#: heads of BLIP / BLIP-2): Accelerate drops them from a checkpoint and reloading re-ties them.
TIED_BY_DESIGN = re.compile(r"(^|\.)(mlm|woc)(_head)?\.decoder\.weight$")
_SHARED = re.compile(r"^(?:\[RANK \d+\] )?Removed shared tensor (\{.*?\}) while saving")


def quiet_loading() -> None:
    """No transformers / hub progress bars on model loads and saves (``HF_HUB_DISABLE_
    PROGRESS_BARS`` set to a false value by the user keeps them)."""
    setting = os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS")
    if setting is not None and setting.strip().lower() in ("0", "false", "no", "off", ""):
        return
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # modules not imported yet
    from huggingface_hub.utils import disable_progress_bars

    disable_progress_bars()  # read by transformers when it is imported after this
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()


class TiedDecoderFilter(logging.Filter):
    """Drops Accelerate's "Removed shared tensor {...} while saving" record when every
    tensor it names is a decoder in :data:`TIED_BY_DESIGN`; keeps every other record."""

    def filter(self, record: logging.LogRecord) -> bool:
        match = _SHARED.match(record.getMessage())
        if match is None:
            return True
        try:
            names = ast.literal_eval(match.group(1))
        except (ValueError, SyntaxError):
            return True
        return not (names and all(TIED_BY_DESIGN.search(str(n)) for n in names))


def quiet_tied_weights() -> None:
    """Install :class:`TiedDecoderFilter` on Accelerate's logger (once)."""
    logger = logging.getLogger("accelerate.utils.other")
    if not any(isinstance(f, TiedDecoderFilter) for f in logger.filters):
        logger.addFilter(TiedDecoderFilter())


__all__ = ["TIED_BY_DESIGN", "TiedDecoderFilter", "quiet_loading", "quiet_tied_weights"]
