"""Minimal-pair negatives (one attribute, object or relation changed, checked false) and
the fine-grained accuracy they measure (positive scored above its minimal pair)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from tags.benchmark.captions import Claim, Mention, holds
from tags.benchmark.scenes import COLORS, RELATIONS, SHAPES, SIZES, Scene

PAIR_TYPES: tuple[str, ...] = ("attribute", "object", "relation")


@dataclass(frozen=True)
class MinimalPair:
    """A true caption of ``image_id`` and a false caption one unit away from it."""

    image_id: int
    caption: str
    negative: str
    type: str
    original: str
    replacement: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _with_mention(claim: Claim, index: int, mention: Mention) -> Claim:
    mentions = list(claim.mentions)
    mentions[index] = mention
    return replace(claim, mentions=tuple(mentions))


def single_edits(claim: Claim) -> Iterable[tuple[str, str, str, Claim]]:
    """Every claim one unit away: ``(type, original, replacement, edited claim)``."""
    for i, m in enumerate(claim.mentions):
        if m.color is not None:
            for color in COLORS:
                if color != m.color:
                    yield (
                        "attribute",
                        m.color,
                        color,
                        _with_mention(claim, i, replace(m, color=color)),
                    )
        if m.size is not None:
            for size in SIZES:
                if size != m.size:
                    yield "attribute", m.size, size, _with_mention(claim, i, replace(m, size=size))
        for shape in SHAPES:
            if shape != m.shape:
                yield "object", m.shape, shape, _with_mention(claim, i, replace(m, shape=shape))
    if claim.relation is not None:
        for relation in RELATIONS:
            if relation != claim.relation:
                yield "relation", claim.relation, relation, replace(claim, relation=relation)


def minimal_pairs(
    scene: Scene, claims: Sequence[Claim], rng: np.random.Generator, per_type: int = 1
) -> list[MinimalPair]:
    """Up to ``per_type`` false single-unit edits of each type for each true claim."""
    pairs: list[MinimalPair] = []
    for claim in claims:
        by_type: dict[str, list[tuple[str, str, Claim]]] = {t: [] for t in PAIR_TYPES}
        for kind, old, new, edited in single_edits(claim):
            if not holds(edited, scene):
                by_type[kind].append((old, new, edited))
        for kind in PAIR_TYPES:
            options = by_type[kind]
            for k in rng.permutation(len(options))[:per_type]:
                old, new, edited = options[int(k)]
                pairs.append(MinimalPair(scene.image_id, claim.text, edited.text, kind, old, new))
    return pairs


def role_swap_pairs(scene: Scene, claims: Sequence[Claim]) -> list[MinimalPair]:
    """Each true relation claim against its role swap, the two mentions exchanged ("a red
    circle above a blue square" -> "a blue square above a red circle"), where the swap is
    false of ``scene``: type ``role``. Both captions have the same words, so no text prior
    separates them (unlike the ``relation`` pairs, whose false relation word is drawn among
    the false ones); only the layout does."""
    pairs: list[MinimalPair] = []
    for claim in claims:
        if claim.relation is None or len(claim.mentions) != 2:
            continue
        a, b = claim.mentions
        swapped = replace(claim, mentions=(b, a))
        if swapped.text != claim.text and not holds(swapped, scene):
            pairs.append(
                MinimalPair(scene.image_id, claim.text, swapped.text, "role", a.text, b.text)
            )
    return pairs


def write_pairs(pairs: Iterable[MinimalPair], path: str | Path) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for pair in pairs:
            f.write(json.dumps(pair.to_dict()) + "\n")


def read_pairs(path: str | Path) -> list[MinimalPair]:
    with open(path, encoding="utf-8") as f:
        return [MinimalPair(**json.loads(line)) for line in f if line.strip()]


ScoreFn = Callable[[Sequence[int], Sequence[str]], Sequence[float]]


def minimal_pair_wins(
    score_fn: ScoreFn, pairs: Sequence[MinimalPair], batch_size: int = 256
) -> np.ndarray:
    """Per pair: does its true caption score strictly above its negative?
    ``score_fn(image_ids, captions)``."""
    if not pairs:
        raise ValueError("no minimal pairs to score")
    wins = np.zeros(len(pairs), dtype=bool)
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start : start + batch_size]
        ids = [p.image_id for p in chunk]
        pos = np.asarray(score_fn(ids, [p.caption for p in chunk]), dtype=np.float64)
        neg = np.asarray(score_fn(ids, [p.negative for p in chunk]), dtype=np.float64)
        wins[start : start + len(chunk)] = pos.reshape(-1) > neg.reshape(-1)
    return wins


def minimal_pair_accuracy(
    score_fn: ScoreFn, pairs: Sequence[MinimalPair], batch_size: int = 256
) -> dict[str, float]:
    """Share of pairs whose true caption scores strictly above its negative, overall and
    per type (:data:`PAIR_TYPES` and ``role``; types without pairs are left out);
    ``score_fn(image_ids, captions)``."""
    wins = minimal_pair_wins(score_fn, pairs, batch_size)
    result = {"overall": float(wins.mean())}
    types = np.array([p.type for p in pairs])
    for kind in (*PAIR_TYPES, "role"):
        mask = types == kind
        if mask.any():
            result[kind] = float(wins[mask].mean())
    return result


def accuracy_by_word(
    pairs: Sequence[MinimalPair], wins: Sequence[bool], field: str = "replacement"
) -> dict[str, tuple[float, int]]:
    """``{word: (accuracy, pairs)}``, the pairs grouped by their false (``replacement``) or
    true (``original``) word: where a score follows the words rather than the image."""
    if field not in ("original", "replacement"):
        raise ValueError(f"field must be 'original' or 'replacement', got {field!r}")
    if len(pairs) != len(wins):
        raise ValueError(f"{len(pairs)} pairs but {len(wins)} wins")
    groups: dict[str, list[bool]] = {}
    for pair, win in zip(pairs, wins):
        groups.setdefault(getattr(pair, field), []).append(bool(win))
    return {word: (sum(v) / len(v), len(v)) for word, v in sorted(groups.items())}


__all__ = [
    "PAIR_TYPES",
    "MinimalPair",
    "accuracy_by_word",
    "minimal_pair_accuracy",
    "minimal_pair_wins",
    "minimal_pairs",
    "read_pairs",
    "role_swap_pairs",
    "single_edits",
    "write_pairs",
]
