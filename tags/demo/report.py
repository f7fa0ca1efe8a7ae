"""``report.md`` + ``results.json`` + PNG plots of a demo run."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from tags.evaluation.plots import line_plot

RETRIEVAL_KEYS = ("i2t_r1", "i2t_r5", "i2t_r10", "t2i_r1", "t2i_r5", "t2i_r10", "rsum")
PAIR_KEYS = ("overall", "attribute", "object", "relation")
LOSS_KEYS = ("loss/total", "loss/itm", "loss/mlm", "loss/istm", "loss/wod", "loss/woc")


def _fmt(value: Any, digits: int = 1) -> str:
    if isinstance(value, int | float) and math.isfinite(value):
        return f"{value:.{digits}f}"
    return "-"


def results_table(
    methods: dict[str, dict[str, Any]], text_only: dict[str, dict[str, float]] | None = None
) -> str:
    """Markdown table: retrieval R@K/RSum (percent) and minimal-pair accuracy (percent);
    ``text_only`` baselines (``{name: {pair type: accuracy}}``) first, MP only."""
    head = ["method", *RETRIEVAL_KEYS, *(f"MP {k}" for k in PAIR_KEYS)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    rows = {f"text-only: {n}": {"minimal_pairs": a} for n, a in (text_only or {}).items()}
    for name, result in {**rows, **methods}.items():
        retrieval = result.get("retrieval", {})
        pairs = result.get("minimal_pairs", {})
        cells = [name, *(_fmt(retrieval.get(k)) for k in RETRIEVAL_KEYS)]
        cells += [_fmt(100 * pairs[k]) if k in pairs else "-" for k in PAIR_KEYS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _series(rows: list[dict[str, Any]], key: str) -> list[tuple[float, float]]:
    return [(r["step"], r[key]) for r in rows if key in r and "step" in r]


def draw_plots(out: Path, metrics: dict[str, list[dict[str, Any]]]) -> dict[str, Path]:
    """Loss curves, hardness over training and SelHN branch shares (when logged)."""
    plots: dict[str, Path] = {}
    losses = {
        f"{m}: {k.split('/')[1]}": _series(rows, k)
        for m, rows in metrics.items()
        for k in LOSS_KEYS
        if any(k in r and r[k] != 0 for r in rows)
    }
    if losses:
        plots["loss"] = line_plot(losses, out / "loss.png", "training losses")
    hardness = {
        f"{m}: {k.split('/')[0]}": _series(rows, k)
        for m, rows in metrics.items()
        for k in sorted({k for r in rows for k in r if k.endswith("/hardness")})
    }
    if hardness:
        plots["hardness"] = line_plot(
            hardness, out / "hardness.png", "hardness: s(hardest neg) - s(pos)"
        )
    shares = {
        f"{m}: {k}": _series(rows, k)
        for m, rows in metrics.items()
        for k in sorted({k for r in rows for k in r if "selhn" in k})
    }
    if shares:
        plots["selhn"] = line_plot(shares, out / "selhn_share.png", "SelHN 'all' branch share")
    return plots


def _negatives_section(samples: list[dict[str, Any]]) -> list[str]:
    lines = ["## Generated negatives (TAGS-DC model, test captions)", ""]
    if not samples:
        return [*lines, "No negatives were generated.", ""]
    for sample in samples:
        lines.append(f"- **{sample['positive']}** (image {sample['image_id']})")
        if not sample["negatives"]:
            lines.append("  - (none survived the filters)")
        for neg in sample["negatives"]:
            edits = "; ".join(
                f"{e['type']}: '{e['original']}' -> '{e['replacement']}'" for e in neg["edits"]
            )
            truth = f"; {neg['truth']}" if "truth" in neg else ""
            lines.append(f"  - {neg['text']}  ({edits}; ITM {_fmt(neg.get('score'), 3)}{truth})")
    return [*lines, ""]


STAGES = ("data", "retrieval", "synthetic", "forward", "backward")


def stage_table(stages: dict[str, dict[str, float]]) -> str:
    """Markdown: seconds per training stage (rows) and method (columns)."""
    names = list(stages)
    lines = ["| stage | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    known = [s for s in STAGES if any(s in v for v in stages.values())]
    for stage in known:
        lines.append(f"| {stage} | " + " | ".join(_fmt(stages[n].get(stage)) for n in names) + " |")
    steps = {n: stages[n].get("step", 0.0) + stages[n].get("backward", 0.0) for n in names}
    lines.append("| step total | " + " | ".join(_fmt(steps[n]) for n in names) + " |")
    return "\n".join(lines)


def _truth_section(payload: dict[str, Any]) -> list[str]:
    methods = payload.get("methods", {})
    rows = {n: r["truth_audit"] for n, r in methods.items() if r.get("truth_audit")}
    sample = payload.get("samples_truth")
    if not rows and not sample:
        return []
    lines = [
        "## Truth audit of the synthetic negatives",
        "",
        "Every negative judged against the true scene of its image "
        "(`tags.benchmark.oracle.TruthOracle`): *true* = a false negative that the "
        "caption filter missed, *ungrammatical* = outside the benchmark's grammar.",
        "",
        "| negatives | true % | ungrammatical % | n |",
        "|---|---:|---:|---:|",
    ]
    for name, row in rows.items():
        lines.append(
            f"| `{name}` training (per step) | {_fmt(100 * row['true'])} | "
            f"{_fmt(100 * row['ungrammatical'])} | {_fmt(row['per_step'])} |"
        )
    if sample:
        lines.append(
            f"| generated samples (below) | {_fmt(100 * sample['true'])} | "
            f"{_fmt(100 * sample['ungrammatical'])} | {int(sample['n'])} |"
        )
    return [*lines, ""]


def truth_table(metrics: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Scene truth of each run's retrieved negatives (percent; empty without audit)."""
    from tags.benchmark.retrieval_audit import summarize_truth

    keys = ("fn_pool_step_mean", "fn_top1_step_mean", "fn_topk_step_mean", "fn_selected")
    keys += ("fne_precision", "fne_recall")
    rows = {m: summarize_truth(r) for m, r in metrics.items()}
    rows = {m: t for m, t in rows.items() if t}
    if not rows:
        return []
    head = ["method", "pool", "top-1", "top-k", "selected", "FNE precision", "FNE recall"]
    lines = ["## False negatives among retrieved negatives (scene truth)", ""]
    lines += ["Percent true of the anchor's scene, i2t / t2i; FNE: posterior > 0.5.", ""]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, t in rows.items():
        cells = [
            "/".join(
                _fmt(100 * t[f"{d}_{k}"], 2) if f"{d}_{k}" in t else "-" for d in ("i2t", "t2i")
            )
            for k in keys
        ]
        lines.append("| " + " | ".join([f"`{name}`", *cells]) + " |")
    return [*lines, ""]


def write_report(
    out: str | Path, payload: dict[str, Any], metrics: dict[str, list[dict[str, Any]]]
) -> Path:
    """Write ``results.json``, the plots and ``report.md`` under ``out``; return the report."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(payload, indent=2, default=str))
    plots = draw_plots(out, metrics)
    budget = payload.get("budget", {})
    methods = payload.get("methods", {})
    lines = [
        "# tags demo: pre-training, then hardest-negative ITM vs TAGS-DC",
        "",
        f"Budget `{budget.get('name', '?')}`, seed {payload.get('seed')}, region features: "
        f"{payload.get('featurizer', '?')}, benchmark {payload.get('benchmark_version', '?')}. "
        "Small models and few steps: the numbers show "
        "the pipeline working, not the paper's results.",
        "",
        "## Results (test split)",
        "",
        "R@K in percent (full cross-encoder ranking by the ITM logit, i2t / t2i), RSum, and "
        "minimal-pair accuracy (MP, percent: the true caption's ITM logit above its one-edit "
        "false caption; chance = 50). `pretrained` is the shared starting point of both "
        "fine-tuning runs. The text-only rows never see the image (a trigram LM of the "
        "training captions; an n-gram classifier fitted on the training split's minimal "
        "pairs): near 50 means no text shortcut wins the pairs.",
        "",
        results_table(methods, payload.get("text_only")),
        "",
    ]
    for name, result in methods.items():
        lines.append(
            f"- `{name}`: {result.get('label', '')}; {result.get('n_test_images')} test images, "
            f"{result.get('n_test_texts')} captions, {result.get('n_pairs')} minimal pairs."
        )
    lines += ["", *truth_table(metrics)]
    lines += ["## Training budget", "", "| setting | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in budget.items()]
    timings = payload.get("timings_s", {})
    lines += ["", "Wall-clock seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items())]
    stages = {n: v for n, v in payload.get("stage_seconds", {}).items() if v}
    if stages:
        lines += [
            "",
            "Fine-tuning seconds per stage (sums of the logged `time/*` metrics): data "
            "loading, retrieval pool scoring, synthetic negatives, the training forward with "
            "its losses, backward + optimizer step.",
            "",
            stage_table(stages),
        ]
    lines += ["", *_truth_section(payload)]
    lines += ["", "## Training curves", ""]
    lines += [f"![{name}]({path.name})" for name, path in plots.items()] or ["(nothing logged)"]
    lines += ["", *_negatives_section(payload.get("samples", []))]
    report = out / "report.md"
    report.write_text("\n".join(lines) + "\n")
    return report


__all__ = ["draw_plots", "results_table", "stage_table", "truth_table", "write_report"]
