"""Tables of suite results, and the side-by-side report of a model against its baseline.

A *model report* is ``{"retrieval": {metric: value} | None, "suites": {label: SuiteResult
dict}}``. :func:`compare` flattens one or two of them into rows (section, metric, n,
baseline, model, delta); :func:`markdown_table` and :func:`bar_plot` draw those rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tags.evaluation.suites.evaluate import METRICS

#: retrieval rows of the report, in order (percent except rsum)
RETRIEVAL_ROWS = ("i2t_r1", "i2t_r5", "i2t_r10", "t2i_r1", "t2i_r5", "t2i_r10", "rsum")


def format_suite(result: dict[str, Any]) -> str:
    """Console table of one suite: one row per subset, then overall (and macro)."""
    metrics = METRICS[result["task"]]
    text = result.get("text_only")  # the text-only baseline's accuracy, a column of its own
    groups = result.get("groups") or {}
    names = [*(len(s) + 2 for s in result["subsets"]), *(len(f"{g} (mean)") for g in groups)]
    width = max([len("overall"), *names]) + 2
    distinct = result.get("n_distinct")
    lines = [
        f"{result['name']}: {result['n_items']} items, {result['n_pairs']} pairs"
        + (
            f" ({distinct} distinct, each scored once)"
            if distinct not in (None, result["n_pairs"])
            else ""
        ),
        f"{'subset':<{width}}{'n':>7}"
        + "".join(f"{m:>10}" for m in metrics)
        + (f"{'text-only':>11}" if text else ""),
    ]

    def text_cell(row: dict[str, float] | None, key: str = "accuracy") -> str:
        return f"{row[key]:>11.2f}" if text and row and key in row else ""

    def row_line(name: str, row: dict[str, Any], text_row: dict | None) -> str:
        return (
            f"{name:<{width}}{row['n']:>7}"
            + "".join(f"{row[m]:>10.2f}" for m in metrics)
            + text_cell(text_row)
        )

    grouped = {s for g in groups.values() for s in g["subsets"]}
    for group, row in groups.items():  # the paper's layout: group mean, then its subsets
        lines.append(
            row_line(f"{group} (mean)", row, text.get("groups", {}).get(group) if text else None)
        )
        for name in row["subsets"]:
            sub = result["subsets"][name]
            lines.append(row_line(f"  {name}", sub, text["subsets"].get(name) if text else None))
    for name, row in result["subsets"].items():
        if name not in grouped:
            lines.append(row_line(name, row, text["subsets"].get(name) if text else None))
    overall = result["overall"]
    lines.append(
        f"{'overall':<{width}}{result['n_items']:>7}"
        + "".join(f"{overall[m]:>10.2f}" for m in metrics)
        + text_cell(text["overall"] if text else None)
    )
    if "macro" in overall:
        lines.append(
            f"{'macro':<{width}}{'':>7}{overall['macro']:>10.2f}"
            + text_cell(text["overall"] if text else None, "macro")
        )
    return "\n".join(lines)


def report_rows(report: dict[str, Any]) -> list[tuple[str, str, int | None, float]]:
    """``(section, metric, n, value)`` rows of one model report."""
    rows: list[tuple[str, str, int | None, float]] = []
    retrieval = report.get("retrieval")
    if retrieval:
        rows += [("retrieval", k, None, float(retrieval[k])) for k in RETRIEVAL_ROWS]
    for label, result in report.get("suites", {}).items():
        metrics = METRICS[result["task"]]
        rows += [(label, m, result["n_items"], result["overall"][m]) for m in metrics]
        if "macro" in result["overall"]:
            rows.append((label, "macro", None, result["overall"]["macro"]))
        groups = result.get("groups") or {}
        order = [  # each group's mean, then its subsets; ungrouped subsets last
            x
            for g, row in groups.items()
            for x in [(f"{g} (mean)", row), *((s, result["subsets"][s]) for s in row["subsets"])]
        ]
        grouped = {s for row in groups.values() for s in row["subsets"]}
        order += [(s, row) for s, row in result["subsets"].items() if s not in grouped]
        for name, row in order:
            for m in metrics:
                rows.append((label, name if len(metrics) == 1 else f"{name} {m}", row["n"], row[m]))
    return rows


def row_strata(report: dict[str, Any]) -> dict[tuple[str, str], tuple[list[np.ndarray], str]]:
    """Per-item values behind the rows of :func:`report_rows` (where the report carries
    them: ``retrieval_ranks``, each suite's ``outcomes``): ``{(section, metric): (strata,
    combine)}`` as :func:`tags.evaluation.bootstrap.paired_bootstrap` takes them. Macro rows
    (a minimum subset size decides their subsets) have none."""
    out: dict[tuple[str, str], tuple[list[np.ndarray], str]] = {}
    ranks = report.get("retrieval_ranks")
    if report.get("retrieval") and ranks:
        hits = {d: {k: np.asarray(ranks[d]) < k for k in (1, 5, 10)} for d in ("i2t", "t2i")}
        for d in ("i2t", "t2i"):
            for k in (1, 5, 10):
                out[("retrieval", f"{d}_r{k}")] = ([hits[d][k]], "mean")
        out[("retrieval", "rsum")] = ([sum(hits[d].values()) for d in ("i2t", "t2i")], "sum")
    for label, result in report.get("suites", {}).items():
        outcomes = result.get("outcomes")
        if not outcomes:
            continue
        subset = np.asarray(outcomes["subset"])
        metrics = METRICS[result["task"]]
        for m in metrics:
            values = np.asarray(outcomes[m], dtype=np.float64)
            out[(label, m)] = ([values], "mean")
            for group, row in (result.get("groups") or {}).items():
                name = f"{group} (mean)" if len(metrics) == 1 else f"{group} (mean) {m}"
                out[(label, name)] = ([values[subset == s] for s in row["subsets"]], "mean")
            for s in result["subsets"]:
                name = s if len(metrics) == 1 else f"{s} {m}"
                out[(label, name)] = ([values[subset == s]], "mean")
    return out


def _same_items(model: dict[str, Any], baseline: dict[str, Any], section: str) -> bool:
    """Whether both reports scored the same items of ``section`` (paired resampling)."""
    if section == "retrieval":
        a, b = model.get("retrieval_ranks") or {}, baseline.get("retrieval_ranks") or {}
        return all(len(a.get(d, [])) == len(b.get(d, [])) > 0 for d in ("i2t", "t2i"))
    a = (model.get("suites", {}).get(section) or {}).get("outcomes") or {}
    b = (baseline.get("suites", {}).get(section) or {}).get("outcomes") or {}
    return bool(a) and a.get("subset") == b.get("subset")


def compare(
    model: dict[str, Any],
    baseline: dict[str, Any] | None = None,
    *,
    resamples: int = 0,
    seed: int = 0,
) -> list[dict]:
    """Rows ``{section, metric, n, model, baseline, delta, ci}`` (``baseline``/``delta``
    None without a baseline or where the baseline lacks the row). ``ci``: with
    ``resamples`` > 0, the 95 % paired bootstrap interval ``[low, high]`` of the delta
    (items resampled, ``seed`` fixed) where both reports carry per-item values; else None."""
    from tags.evaluation.bootstrap import paired_bootstrap

    before = {(s, m): v for s, m, _, v in report_rows(baseline)} if baseline else {}
    mine = row_strata(model) if baseline and resamples else {}
    theirs = row_strata(baseline) if baseline and resamples else {}
    rows = []
    for section, metric, n, value in report_rows(model):
        old = before.get((section, metric))
        ci = None
        key = (section, metric)
        paired = key in mine and key in theirs and _same_items(model, baseline, section)
        if old is not None and paired and all(len(x) for x in mine[key][0]):
            (a, combine), (b, _) = mine[key], theirs[key]
            ci = list(
                paired_bootstrap(list(zip(a, b)), combine=combine, resamples=resamples, seed=seed)
            )
        rows.append(
            {
                "section": section,
                "metric": metric,
                "n": n,
                "baseline": old,
                "model": value,
                "delta": None if old is None else value - old,
                "ci": ci,
            }
        )
    return rows


def _cell(value: float | None, signed: bool = False) -> str:
    if value is None:
        return ""
    return f"{value:+.2f}" if signed else f"{value:.2f}"


def markdown_table(rows: Sequence[dict], model: str = "model", baseline: str = "baseline") -> str:
    """One Markdown table: section | metric | n | baseline | model | delta (| 95 % CI of
    the delta, when a row has one)."""
    has_baseline = any(r["baseline"] is not None for r in rows)
    has_ci = any(r.get("ci") for r in rows)
    head = ["section", "metric", "n", *([baseline] if has_baseline else []), model]
    head += ["Δ"] if has_baseline else []
    head += ["Δ 95% CI"] if has_ci else []
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 3 + "---:|" * (len(head) - 3)]
    for r in rows:
        cells = [r["section"], r["metric"], "" if r["n"] is None else str(r["n"])]
        if has_baseline:
            cells.append(_cell(r["baseline"]))
        cells.append(_cell(r["model"]))
        if has_baseline:
            cells.append(_cell(r["delta"], signed=True))
        if has_ci:
            ci = r.get("ci")
            cells.append(f"[{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def bar_plot(
    rows: Sequence[dict],
    path: str | Path,
    title: str = "",
    names: tuple[str, str] = ("baseline", "model"),
) -> Path:
    """Horizontal grouped bars (baseline, model) of every percent row, grouped by section
    (RSum, out of 600, is left out); saved as a PNG with Pillow."""
    from PIL import Image, ImageDraw

    from tags.evaluation.plots import BACKGROUND, COLORS

    rows = [r for r in rows if r["metric"] != "rsum"]
    bar, gap, left, right, top = 7, 6, 230, 60, 34
    height = top + 30 + (2 * bar + gap) * len(rows) + 14 * len({r["section"] for r in rows})
    width = 760
    height = max(height, 80)
    image = Image.new("RGB", (width, height), BACKGROUND)
    draw = ImageDraw.Draw(image)
    draw.text((10, 8), title, fill=(0, 0, 0))
    scale = (width - left - right) / 100.0
    colors = {names[0]: (170, 170, 170), names[1]: COLORS[0]}
    for k, (name, color) in enumerate(colors.items()):
        draw.rectangle((left + 160 * k, 22, left + 160 * k + 10, 30), fill=color)
        draw.text((left + 160 * k + 14, 20), name[:22], fill=(0, 0, 0))
    for tick in (0, 50, 100):
        x = left + tick * scale
        draw.line((x, top + 6, x, height - 16), fill=(210, 210, 210))
        draw.text((x - 8, height - 14), str(tick), fill=(0, 0, 0))
    y, section = top + 10, None
    for r in rows:
        if r["section"] != section:
            section = r["section"]
            draw.text((6, y), section, fill=(0, 0, 0))
            y += 14
        draw.text((16, y + 2), r["metric"][:34], fill=(60, 60, 60))
        for k, key in enumerate(("baseline", "model")):
            value = r[key]
            if value is not None:
                y0 = y + k * bar
                draw.rectangle(
                    (left, y0, left + value * scale, y0 + bar - 1), fill=colors[names[k]]
                )
                if key == "model":
                    draw.text((left + value * scale + 4, y), f"{value:.1f}", fill=(0, 0, 0))
        y += 2 * bar + gap
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)
    return path


__all__ = [
    "RETRIEVAL_ROWS",
    "bar_plot",
    "compare",
    "format_suite",
    "markdown_table",
    "report_rows",
    "row_strata",
]
