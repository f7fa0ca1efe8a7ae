"""``report.md`` + ``results.json`` + ``curves.png`` of the binding demo."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from tags.evaluation.plots import line_plot

KIND_COLUMNS: tuple[tuple[str, str], ...] = (
    ("attribute", "attribute"),
    ("object", "object"),
    ("relation", "relation"),
    ("role", "role swap"),
)
#: TAGS-DC negatives shown in the report
SHOWN = 8


def _pct(value: Any) -> str:
    return f"{100 * value:.1f}" if isinstance(value, int | float) and math.isfinite(value) else "-"


def _ratio(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) and math.isfinite(value) else "-"


def summarize(
    records: dict[str, dict[str, Any]], budget: dict[str, Any], seed: int,
    timings: dict[str, float],
) -> dict[str, Any]:  # fmt: skip
    """The results of the runs: per method its final accuracy per kind, MP (all pairs), the
    gap closed per kind, the text-only check of its added negatives and its curve."""
    from tags.testbed import METHOD_NAMES, gap_closed

    finals = {m: r["final"] for m, r in records.items()}
    methods: dict[str, Any] = {}
    for method, record in records.items():
        final = finals[method]
        row = {
            "name": METHOD_NAMES.get(method, method),
            "accuracy": {k: final[k] for k, _ in KIND_COLUMNS if k in final},
            "mp": final["overall"],
            "steps": record["steps_done"],
            "seconds": record["seconds"],
            "curve": [{k: v for k, v in r.items() if k != "loss"} for r in record["curve"]],
            "shortcut": record.get("shortcut"),
        }
        if "oracle" in finals and "plain" in finals and method not in ("oracle", "plain"):
            row["gap_closed"] = gap_closed(final, finals["oracle"], finals["plain"])
        for key in ("self_negatives", "tags_pool"):
            if key in record:
                row[key] = record[key]
        methods[method] = row
    return {
        "world": "binding testbed",
        "seed": seed,
        "budget": budget,
        "eval_pairs": next(iter(records.values()))["eval_pairs"],
        "methods": methods,
        "timings_s": {k: round(v, 1) for k, v in timings.items()},
    }


def results_table(methods: dict[str, Any]) -> list[str]:
    """Markdown rows: MP, accuracy per kind and the relation / role gap closed."""
    head = ["method", "MP", *(name for _, name in KIND_COLUMNS), "gap closed: relation", "role"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for row in methods.values():
        gaps = row.get("gap_closed", {})
        cells = [row["name"], _pct(row["mp"])]
        cells += [_pct(row["accuracy"].get(k)) for k, _ in KIND_COLUMNS]
        if row["name"] in ("plain", "oracle"):
            cells += ["0" if row["name"] == "plain" else "1"] * 2
        else:
            cells += [_ratio(gaps.get("relation")), _ratio(gaps.get("role"))]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _reading(methods: dict[str, Any]) -> list[str]:
    """One paragraph read off the figures: which methods closed the gap, and how far."""
    plain, oracle = methods.get("plain"), methods.get("oracle")
    if not plain or not oracle:
        return []
    p, o = plain["accuracy"], oracle["accuracy"]
    lead = min(o["relation"] - p["relation"], o["role"] - p["role"])
    if lead < 0.1:
        return [
            f"The oracle is less than 10 points above plain training here ({_pct(lead)}): "
            "this budget has no headroom to show what negatives teach (the `tiny` budget is "
            "a smoke run)."
        ]
    parts = [
        f"Plain training reaches {_pct(p['relation'])} % on relations and {_pct(p['role'])} % "
        f"on role swaps; the oracle's minimal pairs reach {_pct(o['relation'])} and "
        f"{_pct(o['role'])}."
    ]
    for row in methods.values():
        gaps = row.get("gap_closed")
        if gaps:
            parts.append(
                f"{row['name']} closes {_ratio(gaps['relation'])} of the relation gap and "
                f"{_ratio(gaps['role'])} of the role-swap gap."
            )
    parts.append(
        "Attribute and object pairs are learned by every method: they need no binding. One "
        "seed: docs/benchmark.md gives the 3-seed figures (mean and std)."
    )
    return [" ".join(parts)]


def _shortcut_lines(methods: dict[str, Any]) -> list[str]:
    lines = [
        "## Text-only check of the training negatives",
        "",
        "A 1-4-gram logistic regression fitted on half the captions' (positive, added "
        "negative) pairs, scored on the other half (3 splits): what a model could learn from "
        "the words alone. 50 % is no shortcut.",
        "",
        "| method | pairs | held-out accuracy |",
        "|---|---:|---:|",
    ]
    for row in methods.values():
        found = row.get("shortcut") or {}
        if found.get("pairs"):
            lines.append(f"| {row['name']} | {found['pairs']} | {_pct(found.get('overall'))} |")
    return [*lines, ""]


def _negatives_lines(methods: dict[str, Any]) -> list[str]:
    lines = []
    pool = methods.get("tags", {}).get("tags_pool")
    if pool:
        true = ", ".join(f"{k} {_pct(v)} %" for k, v in sorted(pool["true_of_scene"].items()))
        lines += [
            f"tags negatives drawn for training, true of their scene (never checked): {true}.",
            "",
        ]
    made = methods.get("tags-dc", {}).get("self_negatives")
    if made:
        truth = made["chosen_truth"]
        lines += [
            f"## TAGS-DC's own negatives (last step, {min(SHOWN, len(made['last_step']))} of "
            f"{len(made['last_step'])})",
            "",
            f"Over the run: {made['chosen']} chosen from {made['candidates']} refills; "
            f"{_pct(truth.get('false', 0.0))} % false of their scene, {_pct(truth.get('true', 0.0))} % "
            f"true (false negatives the filters let through), "
            f"{_pct(truth.get('ungrammatical', 0.0))} % outside the benchmark's grammar.",
            "",
            "| positive | TAGS-DC's negative | truth |",
            "|---|---|---|",
        ]
        lines += [
            f"| {s['positive']} | {s['negative']} | {s['truth']} |"
            for s in made["last_step"][:SHOWN]
        ]
        lines.append("")
    return lines


def write_binding_report(out: str | Path, results: dict[str, Any]) -> Path:
    """Write ``results.json``, ``curves.png`` and ``report.md`` under ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1))
    methods = results["methods"]
    for kind in ("relation", "role"):
        series = {
            row["name"]: [(c["step"], 100 * c[kind]) for c in row["curve"] if kind in c]
            for row in methods.values()
        }
        line_plot(series, out / f"curve_{kind}.png", f"held-out {kind} pairs (%)")
    budget = results["budget"]
    pairs = ", ".join(f"{n} {k}" for k, n in results["eval_pairs"].items())
    lines = [
        "# tags demo: what each method's negatives teach, on the binding testbed",
        "",
        f"Budget `{budget['name']}`: {budget['steps']} steps of {budget['batch_size']} fresh "
        f"scenes per method, seed {results['seed']}, the same model and starting weights for "
        f"all. Held-out: {budget['eval_scenes']} scenes of 2-4 objects ({pairs} pairs). "
        "Accuracy is the share of pairs whose true caption scores above its one-edit false "
        "one (50 = chance). Gap closed = (method - plain) / (oracle - plain). TAGS-DC "
        f"refills every unit of a caption {budget.get('refills', '?')} times from "
        + ("the unit's word class" if budget.get("refill") == "typed" else "the vocabulary")
        + ".",
        "",
        *results_table(methods),
        "",
        *_reading(methods),
        "",
        "![relation pairs](curve_relation.png) ![role swaps](curve_role.png)",
        "",
        *_shortcut_lines(methods),
        *_negatives_lines(methods),
        "## Time",
        "",
        "Wall-clock seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in results["timings_s"].items()),
        "",
    ]
    report = out / "report.md"
    report.write_text("\n".join(lines))
    return report
