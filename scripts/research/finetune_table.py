"""The fine-tuning comparison's tables and goal check, and their block in a markdown file.

``scripts/benchmarks/hf_finetune.py`` summarizes each fine-tuning over seeds
(:func:`summarize`), prints :func:`table` and :func:`goal_lines`, and with ``--readme FILE``
rewrites the block between ``<!-- hf_finetune.py FAMILY: begin -->`` and
``<!-- hf_finetune.py FAMILY: end -->`` with :func:`readme_table`, so the README's table is
regenerated from the runs, never typed.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

#: Scores of a run, in table order (RSum as is, accuracies in percent).
METRICS: tuple[str, ...] = ("rsum", "mp", "mp_attribute", "mp_object", "mp_relation", "mp_role")
HEADERS: tuple[str, ...] = ("RSum", "MP", "attribute", "object", "relation", "role swap")

#: Method -> its row label (after the family name: "CLIP plain", "BLIP TAGS-DC").
LABELS: dict[str, str] = {
    "pretrained": "pre-trained (no fine-tuning)",
    "plain": "plain",
    "negclip": "+ tags negatives (NegCLIP-style)",
    "hardest": "hardest",
    "itm-hardest": "ITM + retrieved hard negatives",
    "tags": "TAGS (ITM + ISTM)",
    "tags-dc": "TAGS-DC",
}

#: The comparisons the goal is checked on: (method with tags negatives, its baseline).
GOALS: tuple[tuple[str, str], ...] = (
    ("negclip", "plain"),
    ("tags", "itm-hardest"),
    ("tags-dc", "itm-hardest"),
)
#: The goal: MP up by this many points, outside one std, RSum down by at most 1 %.
GOAL_MP_POINTS = 5.0
GOAL_RSUM_LOSS_PERCENT = 1.0


def summarize(records: Sequence[Mapping[str, Any]], split: str) -> dict[str, Any]:
    """Mean and sample std (over seeds) of each metric; train seconds' mean."""
    summary: dict[str, Any] = {"seeds": len(records)}
    for key in METRICS:
        values = [r["scores"][split][key] * (1 if key == "rsum" else 100) for r in records]
        summary[key] = statistics.fmean(values)
        summary[key + "_std"] = statistics.stdev(values) if len(values) > 1 else 0.0
    seconds = [r["train_seconds"] for r in records if r.get("train_seconds")]
    summary["train_seconds"] = statistics.fmean(seconds) if seconds else None
    return summary


def _cells(summary: Mapping[str, Any]) -> list[str]:
    if summary["seeds"] > 1:
        return [f"{summary[m]:.1f} ± {summary[m + '_std']:.1f}" for m in METRICS]
    return [f"{summary[m]:.1f}" for m in METRICS]


def row_label(family: str, method: str) -> str:
    """``"CLIP plain"``, ``"BLIP TAGS-DC"``."""
    return f"{family.upper()} {LABELS.get(method, method)}"


def table(summaries: Mapping[str, Mapping[str, Any]], family: str) -> str:
    """The full table: seeds and train seconds beside every metric."""
    lines = [
        "| model | seeds | " + " | ".join(HEADERS) + " | train s |",
        "|---|---:|" + "---:|" * len(HEADERS) + "---:|",
    ]
    for method, s in summaries.items():
        seconds = f"{s['train_seconds']:.0f}" if s.get("train_seconds") else "-"
        cells = " | ".join(_cells(s))
        lines.append(f"| {row_label(family, method)} | {s['seeds']} | {cells} | {seconds} |")
    return "\n".join(lines)


def readme_table(summaries: Mapping[str, Mapping[str, Any]], family: str) -> str:
    """The README's table: one row per fine-tuning named by model and method."""
    lines = ["| model | " + " | ".join(HEADERS) + " |", "|---|" + "---:|" * len(HEADERS)]
    for method, s in summaries.items():
        lines.append(f"| {row_label(family, method)} | " + " | ".join(_cells(s)) + " |")
    return "\n".join(lines)


def goal_lines(summaries: Mapping[str, Mapping[str, Any]], family: str) -> list[str]:
    """The goal checked for every (tags method, baseline) pair present: MP >= baseline + 5
    points, the gap larger than either row's std, RSum at most 1 % below the baseline's."""
    lines = []
    for method, baseline in GOALS:
        if method not in summaries or baseline not in summaries:
            continue
        n, p = summaries[method], summaries[baseline]
        gain = n["mp"] - p["mp"]
        spread = max(p["mp_std"], n["mp_std"])
        rsum_change = 100 * (n["rsum"] - p["rsum"]) / p["rsum"]
        reached = gain >= GOAL_MP_POINTS and gain > spread
        reached = reached and rsum_change >= -GOAL_RSUM_LOSS_PERCENT
        by_type = ", ".join(
            f"{name} {n[key] - p[key]:+.1f}"
            for key, name in zip(METRICS[2:], HEADERS[2:], strict=True)
        )
        lines.append(
            f"{row_label(family, method)} vs {row_label(family, baseline)}: MP {gain:+.1f} "
            f"points (largest std {spread:.1f}), {by_type}; RSum {rsum_change:+.1f} %. Goal "
            f"(MP >= +{GOAL_MP_POINTS:g}, outside one std, RSum >= -{GOAL_RSUM_LOSS_PERCENT:g} "
            f"%): {'reached' if reached else 'not reached'}."
        )
    return lines


def block_markers(name: str) -> tuple[str, str]:
    """The comment lines that delimit block ``name`` in a markdown file."""
    return f"<!-- {name}: begin -->", f"<!-- {name}: end -->"


def splice_block(text: str, name: str, block: str) -> str:
    """``text`` with the lines between block ``name``'s markers replaced by ``block``.

    Raises:
        ValueError: the markers are missing, repeated or out of order.
    """
    begin, end = block_markers(name)
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.strip() == begin]
    ends = [i for i, line in enumerate(lines) if line.strip() == end]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise ValueError(
            f"needs exactly one {begin!r} line followed by one {end!r} line "
            f"(found {len(starts)} and {len(ends)}); add them around the table to regenerate"
        )
    body = block.rstrip("\n") + "\n"
    return "".join(lines[: starts[0] + 1]) + body + "".join(lines[ends[0] :])
