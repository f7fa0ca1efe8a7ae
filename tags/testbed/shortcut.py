"""The trained text-only check of the negatives a run drew: what a model trained on them could
learn from their words alone (1-4-gram logistic regression fitted on the pairs of half the
captions, scored on the other half, 3 splits; 50 %: no shortcut)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

#: per-kind figures need at least this many pairs
MIN_PAIRS_PER_KIND = 100


def pair_shortcut(rows: Sequence[tuple[str, str, str]]) -> dict[str, float | int]:
    """``rows`` of ``(positive, negative, kind)``: the held-out accuracy overall and per kind
    with at least :data:`MIN_PAIRS_PER_KIND` pairs (split by positive caption)."""
    from tags.evaluation.text_prior import held_out_pair_accuracy

    def accuracy(part: Sequence[tuple[str, str, str]]) -> float:
        pairs = [(p, n) for p, n, _ in part]
        return statistics.fmean(held_out_pair_accuracy(pairs, [p for p, _ in pairs]))

    found: dict[str, float | int] = {"pairs": len(rows)}
    if len({p for p, _, _ in rows}) < 4:
        return found
    found["overall"] = round(accuracy(rows), 4)
    for kind in sorted({k for _, _, k in rows}):
        part = [r for r in rows if r[2] == kind]
        if len(part) >= MIN_PAIRS_PER_KIND:
            found[kind] = round(accuracy(part), 4)
    return found
