"""Paired bootstrap intervals of a difference between two models scored on the same items.

A metric is a combination of *strata*: each stratum is a vector of per-item values (0/1
correctness, or recall hits) measured for both models on the same items; the metric is the
mean of each stratum, then the mean (``combine="mean"``: a macro average, SugarCrepe's group
means) or the sum (``"sum"``: RSum, i2t over images plus t2i over texts) of those means.
Every resample draws the items of each stratum with replacement, the same draw for both
models (paired), and the interval is the percentile interval of the resampled differences.
"""

from __future__ import annotations

from collections.abc import Sequence

#: Resamples of ``tags report --bootstrap`` by default.
DEFAULT_RESAMPLES = 1000
#: The fixed seed of every interval (a report is reproducible).
DEFAULT_SEED = 0
#: Draws per chunk (bounds memory: chunk x items indices).
_CHUNK = 100


def paired_bootstrap(
    strata: Sequence[tuple[Sequence[float], Sequence[float]]],
    *,
    combine: str = "mean",
    scale: float = 100.0,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> tuple[float, float]:
    """``(low, high)`` of ``metric(model) - metric(baseline)`` (times ``scale``: percent).

    Args:
        strata: ``(model_values, baseline_values)`` per stratum, the same items in the same
            order in both (a stratum of no items is refused).
        combine: ``"mean"`` or ``"sum"`` of the strata means.
        level: the central probability of the interval.
    """
    import numpy as np  # (the constants above are read by the CLI's parser: no import there)

    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if combine not in ("mean", "sum") or not strata:
        raise ValueError(f"combine must be mean or sum of >= 1 strata, got {combine!r}")
    rng = np.random.default_rng(seed)
    total = np.zeros(resamples)
    for model, baseline in strata:
        diff = np.asarray(model, dtype=np.float64) - np.asarray(baseline, dtype=np.float64)
        if diff.ndim != 1 or diff.size == 0:
            raise ValueError(f"a stratum needs paired non-empty vectors, got {diff.shape}")
        for start in range(0, resamples, _CHUNK):
            stop = min(start + _CHUNK, resamples)
            draw = rng.integers(0, diff.size, size=(stop - start, diff.size))
            total[start:stop] += diff[draw].mean(axis=1)
    if combine == "mean":
        total /= len(strata)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(total * scale, [tail, 1.0 - tail])
    return float(low), float(high)


__all__ = ["DEFAULT_RESAMPLES", "DEFAULT_SEED", "paired_bootstrap"]
