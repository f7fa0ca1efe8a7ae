"""Minimal-pair negatives (one attribute, object or relation changed, checked false) and
the fine-grained accuracy they measure (positive scored above its minimal pair).

Two samplers draw the false unit (:data:`PAIR_SAMPLERS`):

- ``balanced`` (benchmark v2, the default): over a whole split, every word pair is used as
  often in one direction as in the other (``a -> b`` as often as ``b -> a``), so each word is
  the false word exactly as often as it is the true word, per type. A text-only model that
  prefers a word (e.g. "next to" is rarely true, so mostly false) wins as many pairs as it
  loses: no text prior.
- ``uniform`` (benchmark v1): per caption, the false unit drawn uniformly among the false
  ones. Rarely true relations are then mostly false words, a text prior a language model
  picks up (a trigram LM of the training captions: 63 % on relation pairs).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import numpy as np

from tags.benchmark.captions import Claim, Mention, holds
from tags.benchmark.config import PAIR_SAMPLERS
from tags.benchmark.scenes import COLORS, RELATIONS, SHAPES, SIZES, Scene
from tags.evaluation.suites.pairs import MinimalPair, read_pairs, write_pairs

PAIR_TYPES: tuple[str, ...] = ("attribute", "object", "relation")
T = TypeVar("T")


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


def false_edits(claim: Claim, scene: Scene) -> dict[str, list[tuple[str, str, Claim]]]:
    """Per type, every single-unit edit of ``claim`` that is false of ``scene``:
    ``(original, replacement, edited claim)``."""
    by_type: dict[str, list[tuple[str, str, Claim]]] = {t: [] for t in PAIR_TYPES}
    for kind, old, new, edited in single_edits(claim):
        if not holds(edited, scene):
            by_type[kind].append((old, new, edited))
    return by_type


def minimal_pairs(
    scene: Scene, claims: Sequence[Claim], rng: np.random.Generator, per_type: int = 1
) -> list[MinimalPair]:
    """Up to ``per_type`` false single-unit edits of each type for each true claim, drawn
    uniformly among the false ones (the ``uniform`` sampler, benchmark v1)."""
    pairs: list[MinimalPair] = []
    for claim in claims:
        by_type = false_edits(claim, scene)
        for kind in PAIR_TYPES:
            options = by_type[kind]
            for k in rng.permutation(len(options))[:per_type]:
                old, new, edited = options[int(k)]
                pairs.append(MinimalPair(scene.image_id, claim.text, edited.text, kind, old, new))
    return pairs


def balanced_minimal_pairs(
    items: Iterable[tuple[Scene, Sequence[Claim]]], seed: int, per_type: int = 1, stream: int = 2
) -> list[MinimalPair]:
    """Minimal pairs of a whole split (``(scene, claims)`` per image) in which every word
    pair occurs as often in each direction (the ``balanced`` sampler, benchmark v2).

    Per type, captions are visited in a seeded order; each takes up to ``per_type`` of its
    false edits, preferring a direction that evens out one drawn before (``b -> a`` after
    ``a -> b``), else one at random; the directions still in surplus at the end lose
    randomly chosen pairs. Pairs come out in caption order (image, caption, type), like
    :func:`minimal_pairs`. Deterministic in ``(seed, stream)`` and the split's content."""
    if per_type < 1:
        raise ValueError(f"per_type must be >= 1, got {per_type}")
    slots: list[tuple[int, Scene, Claim, dict[str, list[tuple[str, str, Claim]]]]] = []
    for scene, claims in items:
        for claim in claims:
            slots.append((len(slots), scene, claim, false_edits(claim, scene)))
    chosen: list[tuple[int, int, MinimalPair]] = []
    for type_index, kind in enumerate(PAIR_TYPES):
        rng = np.random.default_rng([seed, stream, type_index])
        debt: Counter[tuple[str, str]] = Counter()  # > 0: that direction is owed
        picks: list[tuple[int, MinimalPair]] = []
        for s in rng.permutation(len(slots)):
            slot, scene, claim, by_type = slots[int(s)]
            remaining = list(by_type[kind])
            for _ in range(min(per_type, len(remaining))):
                owed = [k for k, (old, new, _) in enumerate(remaining) if debt[(old, new)] > 0]
                pool = owed or list(range(len(remaining)))
                old, new, edited = remaining.pop(pool[int(rng.integers(len(pool)))])
                debt[(old, new)] -= 1
                debt[(new, old)] += 1
                pair = MinimalPair(scene.image_id, claim.text, edited.text, kind, old, new)
                picks.append((slot, pair))
        kept = _symmetric(picks, lambda pick: (pick[1].original, pick[1].replacement), rng)
        chosen += [(slot, type_index, pair) for slot, pair in kept]
    chosen.sort(key=lambda c: (c[0], c[1]))
    return [p for _, _, p in chosen]


def _symmetric(
    items: Sequence[T], direction: Callable[[T], tuple[Any, ...]], rng: np.random.Generator
) -> list[T]:
    """``items`` less randomly chosen ones, so that every direction ``(*group, a, b)``
    occurs as often as its reverse ``(*group, b, a)``; order kept."""
    by_direction: dict[tuple[Any, ...], list[int]] = {}
    for i, item in enumerate(items):
        by_direction.setdefault(direction(item), []).append(i)
    drop: set[int] = set()
    for key in sorted(by_direction, key=repr):
        idx = by_direction[key]
        reverse = len(by_direction.get((*key[:-2], key[-1], key[-2]), ()))
        if len(idx) > reverse:
            drop.update(int(i) for i in rng.choice(idx, len(idx) - reverse, replace=False))
    return [item for i, item in enumerate(items) if i not in drop]


def sample_minimal_pairs(
    items: Iterable[tuple[Scene, Sequence[Claim]]],
    seed: int,
    per_type: int = 1,
    sampler: str = "balanced",
    stream: int = 2,
) -> list[MinimalPair]:
    """The minimal pairs of a split with either sampler (:data:`PAIR_SAMPLERS`).

    ``uniform`` draws per image with ``default_rng([seed, image_id, stream])`` (``stream``
    2: the test pairs, 3: the oracle's training negatives); ``balanced`` draws over the
    whole split with ``default_rng([seed, stream, type])``."""
    if sampler == "balanced":
        return balanced_minimal_pairs(items, seed, per_type, stream)
    if sampler == "uniform":
        pairs: list[MinimalPair] = []
        for scene, claims in items:
            rng = np.random.default_rng([seed, scene.image_id, stream])
            pairs += minimal_pairs(scene, claims, rng, per_type)
        return pairs
    raise ValueError(f"pair sampler must be one of {PAIR_SAMPLERS}, got {sampler!r}")


def role_swap_pairs(scene: Scene, claims: Sequence[Claim]) -> list[MinimalPair]:
    """Each true relation claim against its role swap, the two mentions exchanged ("a red
    circle above a blue square" -> "a blue square above a red circle"), where the swap is
    false of ``scene``: type ``role``. Both captions have the same words, so no word prior
    separates them (unlike ``uniform`` relation pairs); a trigram LM of the training
    captions still wins 51.7 % of them from the word order (3812 pairs; 55 % of "above")."""
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
    "PAIR_SAMPLERS",
    "PAIR_TYPES",
    "MinimalPair",
    "accuracy_by_word",
    "balanced_minimal_pairs",
    "false_edits",
    "minimal_pair_accuracy",
    "minimal_pair_wins",
    "minimal_pairs",
    "read_pairs",
    "role_swap_pairs",
    "sample_minimal_pairs",
    "single_edits",
    "write_pairs",
]
