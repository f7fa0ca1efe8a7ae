"""The results benchmark: every method of :mod:`tags.demo.methods` x several seeds.

Per seed: one shared pre-training run (recipe ``pretrain``), then every method fine-tunes
it with the same budget; each run is evaluated on the test split (R@K, RSum, minimal-pair
accuracy). Runs are independent processes (``jobs`` at a time, ``cpu_count // jobs``
threads each) and cached in ``OUT/seed{s}/{method}/result.json``: an interrupted benchmark
resumes where it stopped. ``aggregate`` gives mean and sample standard deviation over seeds.
"""

from __future__ import annotations

import json
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from tags.demo import methods
from tags.demo.budget import BUDGETS, Budget

METRIC_KEYS = (
    ("retrieval", "i2t_r1"),
    ("retrieval", "i2t_r5"),
    ("retrieval", "i2t_r10"),
    ("retrieval", "t2i_r1"),
    ("retrieval", "t2i_r5"),
    ("retrieval", "t2i_r10"),
    ("retrieval", "rsum"),
    ("minimal_pairs", "overall"),
    ("minimal_pairs", "attribute"),
    ("minimal_pairs", "object"),
    ("minimal_pairs", "relation"),
    ("truth", "i2t_fn_selected"),
    ("truth", "t2i_fn_selected"),
)


def _pretrain_task(out: str, budget: Budget, data: Any, seed: int) -> dict[str, Any]:
    from tags.demo.pipeline import train_and_evaluate

    raw = methods.pretrain_config(budget, data, Path(out) / f"seed{seed}" / "pretrained", seed)
    return train_and_evaluate(raw, "cross", data, budget)


def _pretrained_dual_task(out: str, budget: Budget, data: Any, seed: int, model_dir: str):
    """The pre-trained model scored as a dual encoder (the dual family's starting point)."""
    from tags.backends.tags_model import load_tags_model
    from tags.demo.evaluate import evaluate

    path = Path(out) / f"seed{seed}" / "pretrained-dual.json"
    if path.is_file():
        return json.loads(path.read_text())
    model, tokenizer = load_tags_model(model_dir, "cpu")
    result = {"family": "dual", **evaluate(model, tokenizer, data, budget.max_text_len, "dual")}
    path.write_text(json.dumps(result, indent=1))
    return result


def _method_task(
    out: str, budget: Budget, data: Any, seed: int, name: str, assets: dict[str, Any]
) -> dict[str, Any]:
    from tags.demo.pipeline import reference_scores, train_and_evaluate

    root = Path(out) / f"seed{seed}"
    if name == "oracle":
        assets = {**assets, "oracle_negatives": str(oracle_file(data, root / "oracle.jsonl"))}
    if name == "ndgl":
        assets = {
            **assets,
            "reference_scores": str(
                reference_scores(
                    Path(assets["pretrained"]), data, budget, root / "reference_scores.pt"
                )
            ),
        }
    raw = methods.method_config(name, budget, data, root / name, seed, assets)
    result = train_and_evaluate(raw, methods.get_method(name).family, data, budget)
    return {**result, "truth": run_truth(Path(raw["output_dir"]))}


def run_truth(run: Path) -> dict[str, float]:
    """Scene truth of a run's retrieved negatives and its SelHN / FNE branch shares per
    phase, from its ``metrics.jsonl`` (empty for runs without them)."""
    from tags.benchmark.retrieval_audit import summarize_truth
    from tags.demo.pipeline import read_metrics
    from tags.training.metrics import phase_means

    rows = read_metrics(run / "metrics.jsonl")
    return {
        **summarize_truth(rows),
        **phase_means(rows, "selhn_all_share"),
        **phase_means(rows, "fne_sampled_share"),
    }


def oracle_file(data: Any, path: Path) -> Path:
    """The oracle rung's negatives (scene-checked single edits of every training caption,
    drawn by the benchmark's pair sampler), written once per benchmark and sampler
    (``oracle-balanced.jsonl`` for ``path`` ``oracle.jsonl``;
    :func:`tags.benchmark.write_oracle_negatives`)."""
    from tags.benchmark import write_oracle_negatives
    from tags.benchmark.build import pair_sampler_of, read_manifest

    manifest = read_manifest(Path(data.manifest).parent)
    sampler = pair_sampler_of(manifest)
    path = path.with_name(f"{path.stem}-{sampler}{path.suffix}")
    if path.is_file():
        return path
    seed = manifest["config"]["seed"]
    return write_oracle_negatives(data.scenes, path, seed=seed, sampler=sampler)


def run_results(
    out: str | Path,
    budget: str | Budget = "small",
    seeds: tuple[int, ...] = (0, 1, 2),
    names: tuple[str, ...] | None = None,
    jobs: int = 1,
    data_root: str | Path | None = None,
    log: Any = print,
) -> dict[str, Any]:
    """Run (or resume) the benchmark; returns ``{seed: {method: result}}`` and writes
    ``OUT/results.json`` and ``OUT/results.md``."""
    from tags.benchmark import benchmark_version, read_manifest
    from tags.demo.pipeline import build_data, worker_init

    budget = BUDGETS[budget] if isinstance(budget, str) else budget
    names = tuple(names or methods.list_methods())
    for name in names:
        methods.get_method(name)  # fail early on a typo
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    # one benchmark (data seed 0) for every seed: the spread is the training's
    built, _ = build_data(Path(data_root) if data_root else out / "data", budget, 0, log)
    data = built.paths
    threads = max(1, (os.cpu_count() or 1) // max(1, jobs))
    started = time.perf_counter()
    results: dict[int, dict[str, Any]] = {s: {} for s in seeds}
    with ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=get_context("spawn"),
        initializer=worker_init,
        initargs=(threads,),
    ) as pool:
        pre = {pool.submit(_pretrain_task, str(out), budget, data, s): s for s in seeds}
        text_only = text_only_rows(data.root)  # here, while the workers pre-train
        pending = {}
        for future in as_completed(pre):
            seed = pre[future]
            result = future.result()
            results[seed]["pretrained"] = result
            log(f"seed {seed}: pretrained ({result['train_s']:.0f} s)")
            assets = {"pretrained": result["model_dir"]}
            dual = pool.submit(
                _pretrained_dual_task, str(out), budget, data, seed, result["model_dir"]
            )
            pending[dual] = (seed, "pretrained-dual")
            for name in names:
                task = pool.submit(_method_task, str(out), budget, data, seed, name, assets)
                pending[task] = (seed, name)
        for future in as_completed(pending):
            seed, name = pending[future]
            results[seed][name] = future.result()
            elapsed = time.perf_counter() - started
            log(f"seed {seed}: {name} done ({elapsed / 60:.1f} min so far)")
    summary = {**text_only, **aggregate(results)}
    payload = {
        "budget": budget.to_dict(),
        "seeds": list(seeds),
        "featurizer": built.featurizer,
        "benchmark_version": benchmark_version(read_manifest(data.root)),
        "summary": summary,
        # per seed: scene truth of the retrieved negatives, SelHN / FNE branch shares per phase
        "truth": {
            s: {n: r["truth"] for n, r in per.items() if r.get("truth")}
            for s, per in results.items()
        },
        "wall_clock_s": time.perf_counter() - started,
    }
    (out / "results.json").write_text(json.dumps(payload, indent=1))
    plots = draw_result_plots(out, seeds[0], names)
    table = results_markdown(summary, budget, list(seeds), payload["benchmark_version"])
    table += "".join(f"\n![{name}]({path.name})\n" for name, path in plots.items())
    (out / "results.md").write_text(table)
    return payload


def text_only_rows(root: Path) -> dict[str, dict[str, Any]]:
    """The benchmark's text-only baselines (:func:`tags.benchmark.text_only_baselines`) as
    summary rows ``text-only: NAME`` (family ``text``; percent, std 0: deterministic)."""
    from tags.benchmark import text_only_baselines

    rows: dict[str, dict[str, Any]] = {}
    for name, accuracy in text_only_baselines(root).items():
        row: dict[str, Any] = {"family": "text", "n_seeds": 1}
        row.update({k: [100.0 * v, 0.0] for k, v in accuracy.items()})
        rows[f"text-only: {name}"] = row
    return rows


def draw_result_plots(out: Path, seed: int, names: tuple[str, ...]) -> dict[str, Path]:
    """The first seed's curves: the hardest retrieved negative's margin (i2t) of every
    method, and SelHN's all-negatives branch share (when ``selhn`` ran)."""
    from tags.demo.pipeline import read_metrics
    from tags.evaluation.plots import line_plot

    def series(rows: list[dict[str, Any]], key: str) -> list[tuple[float, float]]:
        return [(r["step"], r[key]) for r in rows if key in r]

    metrics = {n: read_metrics(out / f"seed{seed}" / n / "metrics.jsonl") for n in names}
    hardness = {
        n: series(rows, key)
        for n, rows in metrics.items()
        for key in ("itm_i2t/hardness", "i2t/hardness")
        if any(key in r for r in rows)
    }
    plots: dict[str, Path] = {}
    if hardness:
        title = "hardness: s(hardest negative) - s(positive), i2t"
        plots["hardness"] = line_plot(hardness, out / "hardness.png", title)
    shares = {
        f"selhn: {key.split('/')[0]}": series(metrics.get("selhn", []), key)
        for key in ("i2t/selhn_all_share", "t2i/selhn_all_share")
    }
    if any(shares.values()):
        title = "SelHN: share of anchors on the all-negatives branch"
        plots["selhn_share"] = line_plot(shares, out / "selhn_share.png", title)
    return plots


def _families(name: str) -> str:
    if name == "pretrained":
        return "cross"
    if name == "pretrained-dual":
        return "dual"
    return methods.get_method(name).family


def _mean_std(values: list[float]) -> list[float]:
    """``[mean, sample std]`` (std 0 for one value)."""
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1) if len(values) > 1 else 0
    return [mean, math.sqrt(var)]


def aggregate(results: dict[int, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per method: ``{metric: [mean, std]}`` over seeds (percent), std with ddof=1."""
    names: list[str] = []
    for per_seed in results.values():
        names += [n for n in per_seed if n not in names]
    summary: dict[str, dict[str, Any]] = {}
    for name in names:
        runs = [per_seed[name] for per_seed in results.values() if name in per_seed]
        row: dict[str, Any] = {"family": _families(name), "n_seeds": len(runs)}
        for section, key in METRIC_KEYS:
            scale = 100.0 if section in ("minimal_pairs", "truth") else 1.0
            values = [scale * r[section][key] for r in runs if key in r.get(section, {})]
            if not values:
                continue
            row[key] = _mean_std(values)
        for section, key in (("retrieval", "rsum"), ("minimal_pairs", "overall")):
            scale = 100.0 if section == "minimal_pairs" else 1.0
            values = [scale * r["val"][section][key] for r in runs if r.get("val")]
            if values:  # the val split, on which hyper-parameters are chosen
                row[f"val_{key}"] = _mean_std(values)
        for key in ("true", "ungrammatical"):  # truth audit of the synthetic negatives
            values = [100.0 * r["truth_audit"][key] for r in runs if r.get("truth_audit")]
            if values:
                row[f"synthetic_{key}"] = _mean_std(values)
        summary[name] = row
    return summary


def results_markdown(
    summary: dict[str, dict[str, Any]], budget: Budget, seeds: list[int], version: str = ""
) -> str:
    """The README table: mean ± std over seeds (test split; val RSum and MP as well when
    the runs have a val split); ``version`` names the benchmark's pairs."""
    head = ["family", "method", "seeds", "i2t R@1/5/10", "t2i R@1/5/10", "RSum", "MP"]
    head += ["attr", "obj", "rel", "FN% i2t/t2i"]
    with_val = any("val_rsum" in row for row in summary.values())
    if with_val:
        head += ["val RSum", "val MP"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def cell(row: dict[str, Any], key: str) -> str:
        if key not in row:
            return "-"
        mean, std = row[key]
        return f"{mean:.1f} ± {std:.1f}"

    def triple(row: dict[str, Any], prefix: str) -> str:
        return "/".join(
            f"{row[k][0]:.1f}" if k in row else "-"
            for k in (f"{prefix}_r1", f"{prefix}_r5", f"{prefix}_r10")
        )

    known = [n for n in summary if summary[n]["family"] == "text"]
    known += ["pretrained", *methods.list_methods("cross")]
    known += ["pretrained-dual", *methods.list_methods("dual")]
    order = [n for n in known if n in summary] + [n for n in summary if n not in known]
    for name in order:
        row = summary[name]
        lines.append(
            "| "
            + " | ".join(
                [
                    row["family"],
                    name,
                    str(row["n_seeds"]),
                    triple(row, "i2t"),
                    triple(row, "t2i"),
                    cell(row, "rsum"),
                    cell(row, "overall"),
                    cell(row, "attribute"),
                    cell(row, "object"),
                    cell(row, "relation"),
                    "/".join(
                        f"{row[k][0]:.2f}" if k in row else "-"
                        for k in ("i2t_fn_selected", "t2i_fn_selected")
                    ),
                ]
                + ([cell(row, "val_rsum"), cell(row, "val_overall")] if with_val else [])
            )
            + " |"
        )
    lines += [
        "",
        f"Budget `{budget.name}`, seeds {seeds}"
        + (f", benchmark {version}" if version else "")
        + ": mean ± sample std. R@K and RSum in percent "
        "(full ranking of the test split); MP = minimal-pair accuracy in percent (chance 50); "
        "FN% = share of the retrieved negatives entering L_ITM that are true of the anchor's "
        "scene (shapes benchmark truth; cross-encoder runs only). text-only rows: models "
        "that never see the image (a trigram LM of the training captions; an n-gram "
        "classifier fitted on the training split's minimal pairs): the MP a text shortcut "
        "gives."
        + (
            " val RSum / val MP: the same on the val split (choose settings there)."
            if with_val
            else ""
        ),
    ]
    audited = [n for n in order if "synthetic_true" in summary[n]]
    if audited:
        lines += [
            "",
            "Truth audit of the synthetic negatives during training (judged against the "
            "true scenes, `tags.benchmark.oracle`): *true* = false negatives the filter "
            "missed, *ungrammatical* = outside the benchmark's grammar; percent.",
            "",
            "| method | true | ungrammatical |",
            "|---|---|---|",
        ]
        lines += [
            f"| {n} | {cell(summary[n], 'synthetic_true')} | "
            f"{cell(summary[n], 'synthetic_ungrammatical')} |"
            for n in audited
        ]
    return "\n".join(lines) + "\n"


__all__ = [
    "aggregate",
    "draw_result_plots",
    "oracle_file",
    "results_markdown",
    "run_results",
    "run_truth",
    "text_only_rows",
]
