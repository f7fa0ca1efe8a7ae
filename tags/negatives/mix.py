"""The mix of generated negatives by SugarCrepe kind (``replace_att``, ``swap_obj``,
``add_att``, ...): shares over a run's results, as the quality report of
``scripts/benchmarks/negative_quality.py`` prints them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any


def kind_of(record: Any) -> str:
    """The SugarCrepe kind of a negative record (:func:`~tags.negatives.exports.subset_of`
    of its edits)."""
    from tags.negatives.exports import subset_of

    return subset_of([e.to_dict() for e in record.edits])


def type_mix(results: Sequence[Any], allowed: Sequence[bool] | None = None) -> dict[str, float]:
    """Shares of the negatives of ``results`` (each with ``records``) by kind, and of
    relation edits, swaps and adds in all. With ``allowed`` (per result: whether its
    caption's structure allows a swap, :func:`~tags.negatives.operators.swaps.swap_allowed`),
    also the share of captions that allow one and the swap share among those captions'
    negatives ("swap (where allowed)")."""
    kinds = Counter(kind_of(r) for result in results for r in result.records)
    total = max(sum(kinds.values()), 1)
    mix = {k: v / total for k, v in sorted(kinds.items())}
    mix["relation (all)"] = (kinds["replace_rel"] + kinds["swap_rel"]) / total
    mix["swap (all)"] = sum(v for k, v in kinds.items() if k.startswith("swap")) / total
    mix["add (all)"] = sum(v for k, v in kinds.items() if k.startswith("add")) / total
    if allowed is not None:
        mine = [kind_of(r) for result, ok in zip(results, allowed) if ok for r in result.records]
        swapped = sum(k.startswith("swap") for k in mine)
        mix["swap allowed (captions)"] = sum(allowed) / max(len(allowed), 1)
        mix["swap (where allowed)"] = swapped / max(len(mine), 1)
    return mix


__all__ = ["kind_of", "type_mix"]
