"""A tokenizer that cannot tell the training captions' words apart is refused at start.

A wrong or broken tokenizer directory (every word the unknown token, or every word one id)
trains without an error and learns nothing from the text; :func:`check_tokenizer` tokenizes
a sample of the training captions first and raises :class:`ConfigError` naming the
directory when the ids are degenerate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tags.core.errors import ConfigError

#: Captions tokenized for the check.
SAMPLE = 256
#: Refused above this share of unknown-token ids.
MAX_UNKNOWN = 0.5


def caption_sample(dataset: Any, size: int = SAMPLE) -> list[str]:
    """Up to ``size`` training captions spread over ``dataset`` (``[]`` when it has no
    ``text(index)``)."""
    text = getattr(dataset, "text", None)
    if text is None or not len(dataset):
        return []
    step = max(1, len(dataset) // size)
    return [text(i) for i in range(0, len(dataset), step)][:size]


def tokenizer_source(model: Any) -> str:
    """Where a run's tokenizer comes from, as the config key and path that name it."""
    if model.tokenizer:
        return f"model.tokenizer {model.tokenizer}"
    if model.source in ("text", "tags", "backend") and model.path:
        return f"model.path {model.path}"
    return "model.tokenizer tiny-mlm"


def check_tokenizer(tokenizer: Any, texts: Sequence[str], where: str) -> None:
    """Raise :class:`ConfigError` (naming ``where``, the tokenizer directory) when ``texts``
    come out as mostly unknown tokens or as too few distinct ids for their distinct words."""
    words = {w for t in texts for w in t.lower().split()}
    if len(words) < 4:
        return  # too few words to judge
    ids = [i for row in tokenizer(list(texts), add_special_tokens=False)["input_ids"] for i in row]
    unk = getattr(tokenizer, "unk_token_id", None)
    unknown = sum(i == unk for i in ids) / len(ids) if ids and unk is not None else 0.0
    distinct = len(set(ids))
    if unknown > MAX_UNKNOWN or distinct < min(10, len(words) // 2):
        raise ConfigError(
            f"{where}: this tokenizer maps {len(texts)} training captions ({len(words)} distinct "
            f"words) to {distinct} distinct ids, {unknown:.0%} of them the unknown token: a model "
            "trained with it learns nothing from the text; pass the tokenizer the model was "
            "made with (model.tokenizer=DIR)"
        )


__all__ = ["caption_sample", "check_tokenizer", "tokenizer_source"]
