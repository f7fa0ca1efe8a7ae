"""The testbed's verdict: the headroom gate, and how much of the oracle's lead a method closes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tags.testbed.evaluate import KINDS

#: the seeds of the gate
GATE_SEEDS = (0, 1, 2)
#: the gate: oracle >= 90 % on these kinds, plain <= 60 % on those (mean over GATE_SEEDS)
ORACLE_AT_LEAST = {"attribute": 0.9, "relation": 0.9, "role": 0.9}
PLAIN_AT_MOST = {"relation": 0.6, "role": 0.6}
#: the gap closed is reported where the oracle is at least this far above plain
MIN_GAP = 0.1


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample std (0 for one value)."""
    return float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def gate_passes(oracle: dict[str, float], plain: dict[str, float]) -> bool:
    """Oracle means >= :data:`ORACLE_AT_LEAST` and plain means <= :data:`PLAIN_AT_MOST`."""
    return all(oracle[k] >= v for k, v in ORACLE_AT_LEAST.items()) and all(
        plain[k] <= v for k, v in PLAIN_AT_MOST.items()
    )


def gap_closed(method: dict, oracle: dict, plain: dict) -> dict[str, float]:
    """Per kind, (method - plain) / (oracle - plain) of the means (values may be a mean or a
    ``(mean, std)`` pair); ``nan`` where the oracle is not :data:`MIN_GAP` above plain (a
    ratio of two small differences is noise)."""
    mean = {k: v[0] if isinstance(v, (tuple, list)) else v for k, v in method.items()}
    top = {k: v[0] if isinstance(v, (tuple, list)) else v for k, v in oracle.items()}
    low = {k: v[0] if isinstance(v, (tuple, list)) else v for k, v in plain.items()}
    return {
        k: (mean[k] - low[k]) / (top[k] - low[k]) if top[k] - low[k] >= MIN_GAP else float("nan")
        for k in KINDS
    }
