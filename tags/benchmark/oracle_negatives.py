"""Negatives and minimal pairs read back from a built benchmark's scene graphs.

``scenes.jsonl`` stores every image's true scene and its captions' claims, so any split can
be given exactly the kind of negatives the test split is scored on:

- :func:`split_minimal_pairs`: the minimal pairs of any split (the builder writes the test
  split's only; for ``test`` this gives the same pairs, for ``val`` a selection set);
- :func:`split_role_pairs`: each relation caption against its role swap (``role`` pairs,
  no text prior; not part of the published test pairs);
- :func:`oracle_negatives`: per training caption, single-unit edits checked false against
  the true scene (``holds``), as ``tags generate`` records with character-offset edits, for
  ``tags_dc.synthetic.source: fixed`` (the oracle rung of the demo's ladder).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tags.benchmark.captions import Claim
from tags.benchmark.minimal_pairs import (
    MinimalPair,
    role_swap_pairs,
    sample_minimal_pairs,
)
from tags.benchmark.scenes import Scene


def read_scenes(path: str | Path, split: str | None = None) -> Iterator[tuple[Scene, list[Claim]]]:
    """``(scene, caption claims)`` of every image of ``split`` (all splits when ``None``)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            record = json.loads(line)
            if split is None or record["split"] == split:
                claims = [Claim.from_dict(c) for c in record["captions"]]
                yield Scene.from_dict(record["scene"]), claims


def split_minimal_pairs(
    scenes: str | Path, split: str, seed: int = 0, per_type: int = 1, sampler: str = "balanced"
) -> list[MinimalPair]:
    """The minimal pairs of ``split``, drawn as the builder draws the test split's
    (``seed`` is the benchmark's generator seed, ``sampler`` its ``pair_sampler``)."""
    pairs = sample_minimal_pairs(read_scenes(scenes, split), seed, per_type, sampler)
    if not pairs:
        raise ValueError(f"{scenes}: no images of split {split!r}")
    return pairs


def split_role_pairs(scenes: str | Path, split: str) -> list[MinimalPair]:
    """:func:`~tags.benchmark.minimal_pairs.role_swap_pairs` of every image of ``split``."""
    pairs: list[MinimalPair] = []
    for scene, claims in read_scenes(scenes, split):
        pairs += role_swap_pairs(scene, claims)
    if not pairs:
        raise ValueError(f"{scenes}: no role-swap pairs in split {split!r}")
    return pairs


def word_edit(positive: str, negative: str, kind: str) -> dict[str, Any]:
    """The one changed stretch of whole words (article included when it changes) as an
    :class:`~tags.negatives.Edit` dict with character offsets into ``positive``."""
    a, b = positive.split(" "), negative.split(" ")
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    original = " ".join(a[start : len(a) - end])
    offset = len(" ".join(a[:start])) + (1 if start else 0)
    return {
        "type": kind,
        "original": original,
        "replacement": " ".join(b[start : len(b) - end]),
        "start": offset,
        "end": offset + len(original),
        "operation": "replace",
    }


def oracle_negatives(
    scenes: str | Path,
    split: str = "train",
    per_type: int = 1,
    seed: int = 0,
    captions_per_image: int = 5,
    sampler: str = "balanced",
) -> list[dict[str, Any]]:
    """Per caption of ``split``, up to ``per_type`` false single edits of each type
    (attribute, object, relation), drawn by ``sampler`` (the benchmark's ``pair_sampler``),
    as ``tags generate`` records keyed by the Karpathy ``sentid``
    (``image_id * captions_per_image + k``)."""
    items = list(read_scenes(scenes, split))
    texts = {scene.image_id: {c.text: k for k, c in enumerate(claims)} for scene, claims in items}
    records: list[dict[str, Any]] = []
    for pair in sample_minimal_pairs(items, seed, per_type, sampler, stream=3):
        records.append(
            {
                "caption_id": pair.image_id * captions_per_image
                + texts[pair.image_id][pair.caption],
                "image_id": pair.image_id,
                "positive": pair.caption,
                "negative": pair.negative,
                "edits": [word_edit(pair.caption, pair.negative, pair.type)],
            }
        )
    if not records:
        raise ValueError(f"{scenes}: no images of split {split!r}")
    return records


def write_oracle_negatives(scenes: str | Path, out: str | Path, **kwargs: Any) -> Path:
    """:func:`oracle_negatives` as JSON Lines at ``out`` (``data.negatives`` of a run)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for record in oracle_negatives(scenes, **kwargs):
            f.write(json.dumps(record) + "\n")
    tmp.replace(out)
    return out


__all__ = [
    "oracle_negatives",
    "read_scenes",
    "split_minimal_pairs",
    "split_role_pairs",
    "word_edit",
    "write_oracle_negatives",
]
