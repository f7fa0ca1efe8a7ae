"""Suite accuracy from pair scores: options accuracy, Winoground text / image / group.

Every (image, caption) pair of the suite is scored once (a caption shared by several
items, e.g. a positive with many negatives, is not scored twice). A comparison is won only
when the true side scores **strictly** higher: ties count as failures, so a suite whose
negatives equal their positives scores 0.

Numbers are percentages. ``overall`` counts every item (micro); ``macro`` is the mean over
subsets with at least ``suite.macro_min_count`` items (ARO reports macro accuracy over
relations / attribute pairs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from tags.evaluation.suites.base import Suite
from tags.evaluation.suites.scoring import PairScorer

METRICS = {"options": ("accuracy",), "group": ("text", "image", "group")}


@dataclass
class SuiteResult:
    """Per-suite numbers: ``overall`` and per-``subsets`` metrics (percent) and counts."""

    name: str
    task: str
    overall: dict[str, float]
    subsets: dict[str, dict[str, float]]
    n_items: int
    n_pairs: int
    notes: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    #: a text-only model's ``{"overall": {...}, "subsets": {...}}`` (options suites only)
    text_only: dict[str, Any] | None = None
    #: distinct (image, caption) pairs, each scored once (what the progress bar counts)
    n_distinct: int | None = None
    #: subset groups (SugarCrepe: REPLACE / SWAP / ADD): ``{group: {metric, "n", "subsets"}}``
    #: where a metric is the mean over the group's subsets
    groups: dict[str, dict[str, Any]] | None = None
    #: per item, in the suite's order: ``{"subset": [...], metric: [0/1, ...]}`` (paired
    #: bootstrap intervals of ``tags report``; left out of written JSON)
    outcomes: dict[str, list[Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def item_outcomes(task: str, scores: np.ndarray) -> dict[str, bool]:
    """Right/wrong of one item's ``[images, captions]`` score matrix (strict wins)."""
    if task == "options":
        return {"accuracy": bool(scores[0, 0] > scores[0, 1:].max())}
    text = bool(scores[0, 0] > scores[0, 1] and scores[1, 1] > scores[1, 0])
    image = bool(scores[0, 0] > scores[1, 0] and scores[1, 1] > scores[0, 1])
    return {"text": text, "image": image, "group": text and image}


def score_items(
    suite: Suite, scorer: PairScorer, masks: Sequence[np.ndarray] | None = None
) -> list[np.ndarray]:
    """``[images, captions]`` scores of every item (NaN where ``masks`` leave a pair out);
    each distinct (image, caption) pair goes to ``scorer`` once."""
    index: dict[tuple[Any, str], int] = {}
    for n, item in enumerate(suite.items):
        for i, ref in enumerate(item.images):
            for c, caption in enumerate(item.captions):
                if masks is None or masks[n][i, c]:
                    index.setdefault((ref, caption), len(index))
    keys = list(index)
    values = np.asarray(scorer([k[0] for k in keys], [k[1] for k in keys]), dtype=np.float64)
    if values.shape != (len(keys),) or np.isnan(values).any():
        raise ValueError(f"scorer returned {values.shape} scores (NaN?) for {len(keys)} pairs")
    matrices = []
    for n, item in enumerate(suite.items):
        m = np.full((len(item.images), len(item.captions)), np.nan)
        for i, ref in enumerate(item.images):
            for c, caption in enumerate(item.captions):
                if masks is None or masks[n][i, c]:
                    m[i, c] = values[index[(ref, caption)]]
        matrices.append(m)
    return matrices


def rerank(first: list[np.ndarray], suite: Suite, scorer: PairScorer, k: int) -> list[np.ndarray]:
    """Two-stage: each image's top-``k`` captions (and, with two images, each caption's
    top-``k`` images) by ``first`` are rescored by ``scorer``; the rest keep their first-stage order below them.
    With ``k`` >= the options of an item it equals scoring everything with ``scorer``."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    masks = []
    for m in first:
        rows = np.zeros(m.shape, dtype=bool)
        cols = np.zeros(m.shape, dtype=bool)
        np.put_along_axis(rows, np.argsort(-m, axis=1, kind="stable")[:, :k], True, axis=1)
        np.put_along_axis(cols, np.argsort(-m, axis=0, kind="stable")[:k], True, axis=0)
        masks.append(rows | cols if m.shape[0] > 1 else rows)  # one image: its options only
    second = score_items(suite, scorer, masks)
    out = []
    for m, s, mask in zip(first, second, masks):
        below = m - m.max() + s[mask].min() - 1.0
        out.append(np.where(mask, s, below))
    return out


def summarize(suite: Suite, matrices: Sequence[np.ndarray]) -> SuiteResult:
    """Percent right overall, per subset, and macro over subsets (options task)."""
    metrics = METRICS[suite.task]
    outcomes = [item_outcomes(suite.task, m) for m in matrices]
    subsets: dict[str, list[dict[str, bool]]] = {}
    for item, outcome in zip(suite.items, outcomes):
        subsets.setdefault(item.subset, []).append(outcome)

    def percent(rows: list[dict[str, bool]], key: str) -> float:
        return 100.0 * float(np.mean([r[key] for r in rows]))

    table = {
        name: {**{k: percent(rows, k) for k in metrics}, "n": len(rows)}
        for name, rows in sorted(subsets.items())
    }
    overall = {k: percent(outcomes, k) for k in metrics}
    if suite.task == "options":
        kept = [v["accuracy"] for v in table.values() if v["n"] >= suite.macro_min_count]
        if kept:
            overall["macro"] = float(np.mean(kept))
    result = SuiteResult(
        suite.name, suite.task, overall, table, len(suite.items), suite.num_pairs, list(suite.notes)
    )
    result.groups = group_means(suite.name, table, metrics)
    result.outcomes = {
        "subset": [item.subset for item in suite.items],
        **{k: [int(o[k]) for o in outcomes] for k in metrics},
    }
    return result


def subset_groups(suite_name: str) -> dict[str, tuple[str, ...]]:
    """The published grouping of a suite's subsets (SugarCrepe's REPLACE / SWAP / ADD),
    ``{}`` for a suite without one."""
    if suite_name == "sugarcrepe":
        from tags.evaluation.suites.sugarcrepe import GROUPS

        return GROUPS
    return {}


def group_means(
    suite_name: str, table: dict[str, dict[str, float]], metrics: Sequence[str]
) -> dict[str, dict[str, Any]] | None:
    """``{group: {metric: mean over its subsets present, "n": items, "subsets": [...]}}``
    (unweighted means, as the paper's group columns); None without groups."""
    out = {}
    for group, members in subset_groups(suite_name).items():
        present = [s for s in members if s in table]
        if present:
            out[group] = {
                **{m: float(np.mean([table[s][m] for s in present])) for m in metrics},
                "n": int(sum(table[s]["n"] for s in present)),
                "subsets": present,
            }
    return out or None


def text_only_result(suite: Suite, score: Callable[[str], float]) -> dict[str, Any] | None:
    """A model that never sees the image, ``score(caption)``, on an options suite: the same
    accuracy (strict wins, per subset, macro) as a VL model; ``None`` for group suites
    (a caption-only score cannot tell two images apart)."""
    if suite.task != "options":
        return None
    matrices = [np.array([[score(c) for c in item.captions]]) for item in suite.items]
    result = summarize(suite, matrices)
    out = {"overall": result.overall, "subsets": result.subsets}
    return out | ({"groups": result.groups} if result.groups else {})


def evaluate_suite(
    suite: Suite,
    scorer: PairScorer,
    *,
    first_stage: PairScorer | None = None,
    topk: int = 1,
) -> SuiteResult:
    """Score ``suite`` with ``scorer`` (or ``first_stage`` then ``scorer`` on its top-k)."""
    if first_stage is None:
        result = summarize(suite, score_items(suite, scorer))
    else:
        result = summarize(suite, rerank(score_items(suite, first_stage), suite, scorer, topk))
    result.n_distinct = distinct_pairs(suite)
    return result


def distinct_pairs(suite: Suite) -> int:
    """Distinct (image, caption) pairs of ``suite``: what :func:`score_items` scores."""
    return len({(r, c) for item in suite.items for r in item.images for c in item.captions})


__all__ = [
    "METRICS",
    "SuiteResult",
    "distinct_pairs",
    "evaluate_suite",
    "group_means",
    "item_outcomes",
    "rerank",
    "score_items",
    "subset_groups",
    "summarize",
    "text_only_result",
]
