"""``--model`` / ``--baseline`` / ``--tokenizer`` / ``--mlm`` of every command: one resolver.

A local folder is used as given; a name that is not one but is a Hugging Face hub id in the
local cache becomes its snapshot folder (works with ``HF_HUB_OFFLINE=1``). Anything else is
kept as typed, so the command's own check reports it, with the fetch hint of
:func:`tags.backends.hub.missing_model_message`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class ModelPath(str):
    """A resolved model folder that remembers what was typed (``typed``: labels, reports)."""

    typed: str


def model_ref(text: str) -> str:
    """Argparse ``type=`` of model options: a folder, or a cached hub id's snapshot folder."""
    if not Path(text).expanduser().exists():
        from tags.backends.hub import cached_snapshot

        snapshot = cached_snapshot(text)
        if snapshot is not None:
            resolved = ModelPath(snapshot)
            resolved.typed = text
            return resolved
    return text


def spacy_parser(model: str | None, parser_class: Any = None, **kwargs: Any) -> Any:
    """``SceneGraphParser(model, **kwargs)`` (``parser_class``: another parser class) for
    ``--model`` of ``parse`` / ``eval-parser``: a spaCy model that is not installed, or not
    a pipeline with a tagger and a parser, is a :class:`CommandError` naming it."""
    from tags.core.errors import CommandError, one_line

    if parser_class is None:
        from parsers.scene_graph_parser import SceneGraphParser as parser_class
    try:
        return parser_class(model, **kwargs)
    except (OSError, ValueError) as err:
        label = f"--model {model}" if model else "spaCy model"
        raise CommandError(f"{label}: {one_line(err)}") from None


def typed_name(value: str) -> str:
    """What the user typed for a model option (the hub id, not its snapshot folder)."""
    return getattr(value, "typed", value)


__all__ = ["ModelPath", "model_ref", "spacy_parser", "typed_name"]
