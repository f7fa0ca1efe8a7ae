"""Background scene counts: what a larger corpus attests, added to the input corpus's own.

The edit planner only offers substitutes and combinations that its corpus attests
(:mod:`tags.negatives.planner`). A small caption file attests little: few substitutes, weak
co-occurrence evidence, so many captions get no negative and the rest lean on the few edits
that need no evidence (counts, gender). A background corpus adds its counts to the input's:

- ``factual`` (**default** of ``tags generate``): the scene graphs of the 37,861 Visual
  Genome region captions of the FACTUAL train split (MIT licence), parsed by this project's
  parser; shipped as ``tags/negatives/data/background_factual.json.gz`` and rebuilt by
  ``scripts/build_background_scenes.py``;
- ``factual+verbs``: ``factual`` plus the image-group verb counts of Flickr30K dev (5
  captions an image: which verbs the writers of one image use together, the evidence of
  :meth:`~tags.negatives.scenes.SceneCounts.verbs_exclusive`), so that a corpus of one
  caption an image gets exclusive verbs too; aggregated counts of verb lemmas only, shipped
  as ``tags/negatives/data/verbs_flickr30k_dev.json.gz`` and rebuilt by
  ``scripts/build_verb_codescription.py`` (not the default: its new verb pairs read worse,
  see ``docs/experiments/2026-11-26-verbs.md``);
- a path: a :class:`~tags.negatives.scenes.SceneCounts` JSON (``.json`` or ``.json.gz``) or a
  ``tags generate`` vocabulary file (its ``scenes``), e.g. of a large caption corpus;
- ``none``: the input corpus alone (the behaviour before backgrounds existed);
- several of the above but ``none``, separated by commas, summed: ``factual,train.vocab.json``
  adds the captions of a larger corpus of the same kind (a training split's, when
  generating for its test split) to the built-in background.
"""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from pathlib import Path

from tags.negatives.scenes import SceneCounts

DATA = Path(__file__).resolve().parent / "data"
#: Built-in backgrounds by name.
BUILTIN = {
    "factual": DATA / "background_factual.json.gz",
    "factual+verbs": DATA / "background_factual.json.gz",
}
DEFAULT_BACKGROUND = "factual"
#: Image-group verb counts (of Flickr30K dev) that the built-in ``+verbs`` backgrounds add.
VERB_TABLE = DATA / "verbs_flickr30k_dev.json.gz"


def _read_json(path: Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def background_parts(spec: str) -> list[str]:
    """The sources a ``--background`` value names: its comma-separated parts. Raises
    ``ValueError`` for an empty part or ``none`` among several."""
    parts = [part.strip() for part in spec.split(",")]
    if len(parts) > 1 and any(not part or part.lower() == "none" for part in parts):
        raise ValueError(
            f"background {spec!r}: an empty source or 'none' among several "
            "(give 'none' alone, or sources separated by commas)"
        )
    return parts


@lru_cache(maxsize=4)
def load_background(spec: str | None) -> SceneCounts | None:
    """The background counts named by ``spec`` (a built-in name, a file, several of them
    separated by commas and summed, or ``none``/``None`` for no background). Raises
    ``ValueError`` for an unknown name or a missing file."""
    if spec is None or spec.lower() == "none":
        return None
    parts = background_parts(spec)
    if len(parts) > 1:
        total = SceneCounts()
        for part in parts:
            total.update(_load_one(part))
        return total
    return _load_one(spec)


@lru_cache(maxsize=8)
def _load_one(spec: str) -> SceneCounts:
    """One background source: a built-in name or a file (read once: the option check and
    the planner share it; callers merge it into new counts, never change it)."""
    path = BUILTIN.get(spec, Path(spec))
    if not path.is_file():
        names = ", ".join([*BUILTIN, "none"])
        raise ValueError(f"background {spec!r}: not a file nor one of {names}")
    data = _read_json(path)
    counts = SceneCounts.from_dict(data.get("scenes", data) if "counts" in data else data)
    if spec in BUILTIN and spec.endswith("+verbs"):
        counts.update(SceneCounts.from_dict(_read_json(VERB_TABLE)))
    return counts


def with_background(scenes: SceneCounts, spec: str | None) -> SceneCounts:
    """``scenes`` plus the background named by ``spec`` (``scenes`` itself for none)."""
    background = load_background(spec)
    return scenes if background is None else scenes.merged(background)


__all__ = [
    "BUILTIN",
    "DEFAULT_BACKGROUND",
    "VERB_TABLE",
    "background_parts",
    "load_background",
    "with_background",
]
