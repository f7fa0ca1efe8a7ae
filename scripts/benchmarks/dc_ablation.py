"""Why the NSGDC phase gives back TAGS's gain: TAGS-DC with and without its WoD/WoC losses.

TAGS-DC differs from TAGS (one ISTM phase) in two ways at once: the schedule (NSG for
``steps - dc_steps``, then NSGDC with the weights reloaded, a fresh optimizer and warm-up,
and the lr halved) and the WoD/WoC losses of the NSGDC phase. This script separates them.
It fine-tunes the pre-trained models of a finished results benchmark (``--results``, one per
seed) with:

- ``tags``: TAGS, as in the benchmark;
- ``tags-dc``: TAGS-DC, as in the benchmark (``tags_dc.woc_init: mlm``, the default: the
  WoC head starts as a copy of the trained MLM head);
- ``tags-dc-woc-random``: TAGS-DC with the pre-trained checkpoint's untrained WoC head
  (``woc_init: random``, the default before);
- ``tags-dc-schedule``: TAGS-DC's two phases with the WoD and WoC weights set to 0
  (the schedule alone);
- ``tags-dc-continue``: TAGS-DC whose NSGDC phase keeps the optimizer state (phase
  ``init: continue`` instead of ``previous``; the lr is still halved, with a new warm-up).

Every run is evaluated on the test split (RSum, minimal pairs). Runs are cached in
``OUT/seed{s}/{variant}`` like the benchmark's. ``jobs`` single-threaded runs go side by
side.

    python scripts/benchmarks/dc_ablation.py --results runs/results --out runs/dc_ablation
    python scripts/benchmarks/dc_ablation.py --results runs/ladder900 --out runs/dc900 \
        --variants tags-dc-schedule --set steps=900 dc_steps=300 name=small900
"""

from __future__ import annotations

import argparse
import json
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Any

VARIANTS = ("tags", "tags-dc", "tags-dc-woc-random", "tags-dc-schedule", "tags-dc-continue")


def variant_config(variant: str, budget: Any, data: Any, out: Path, seed: int, assets: dict):
    """The TrainConfig mapping of one variant (see the module docstring)."""
    from tags.demo import methods

    base = "tags" if variant == "tags" else "tags-dc"  # TAGS-DC's phases and heads
    raw = methods.method_config(base, budget, data, out, seed, assets)
    if variant == "tags-dc-schedule":
        for phase in raw["phases"]:
            phase["weights"] = {**phase["weights"], "wod": 0.0, "woc": 0.0}
    if variant == "tags-dc-continue":
        raw["phases"][-1]["init"] = "continue"
    if variant == "tags-dc-woc-random":
        raw["tags_dc"]["woc_init"] = "random"
    return raw


def run_one(variant: str, budget: Any, data: Any, out: str, seed: int, pretrained: str):
    from tags.demo.pipeline import train_and_evaluate

    root = Path(out) / f"seed{seed}" / variant
    raw = variant_config(variant, budget, data, root, seed, {"pretrained": pretrained})
    result = train_and_evaluate(raw, "cross", data, budget)
    return {
        "rsum": result["retrieval"]["rsum"],
        "mp": 100 * result["minimal_pairs"]["overall"],
        **{f"mp_{k}": 100 * v for k, v in result["minimal_pairs"].items() if k != "overall"},
        "truth": result.get("truth_audit"),
        "train_s": result["train_s"],
    }


def main() -> int:
    from tags.demo.budget import BUDGETS, override_budget
    from tags.demo.pipeline import build_data, worker_init
    from tags.demo.results import _mean_std

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", required=True, help="a results benchmark OUT (seed*/)")
    parser.add_argument("--out", default="runs/dc_ablation")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument(
        "--num-workers",
        "--jobs",
        dest="jobs",
        type=int,
        default=2,
        metavar="N",
        help="runs in parallel (--jobs: deprecated alias)",
    )
    parser.add_argument("--budget", default="small", choices=sorted(BUDGETS))
    parser.add_argument(
        "--set",
        nargs="+",
        default=[],
        metavar="FIELD=VALUE",
        help="override fields of the budget, as demo_results.py --set (steps=900 dc_steps=300)",
    )
    args = parser.parse_args()
    try:
        budget = override_budget(BUDGETS[args.budget], args.set)
    except ValueError as error:
        parser.error(f"--set {error}")
    results = Path(args.results)
    built, _ = build_data(results / "data", budget, 0, print)
    tasks = {}
    threads = max(1, (os.cpu_count() or 1) // args.jobs)
    with ProcessPoolExecutor(
        args.jobs, mp_context=get_context("spawn"), initializer=worker_init, initargs=(threads,)
    ) as pool:
        for seed in args.seeds:
            pretrained = results / f"seed{seed}" / "pretrained" / "model"
            if not pretrained.is_dir():
                raise SystemExit(f"{pretrained}: no pre-trained model (run the benchmark)")
            for variant in args.variants:
                future = pool.submit(
                    run_one, variant, budget, built.paths, args.out, seed, str(pretrained)
                )
                tasks[future] = (seed, variant)
        done: dict[str, dict[int, dict]] = {v: {} for v in args.variants}
        for future in as_completed(tasks):
            seed, variant = tasks[future]
            done[variant][seed] = future.result()
            print(f"seed {seed} {variant}: {done[variant][seed]}", flush=True)
    print("\n| variant | RSum | MP | MP attribute | MP object | MP relation |")
    print("|---|---:|---:|---:|---:|---:|")
    for variant, per_seed in done.items():
        cells = []
        for key in ("rsum", "mp", "mp_attribute", "mp_object", "mp_relation"):
            mean, std = _mean_std([r[key] for r in per_seed.values()])
            cells.append(f"{mean:.1f} ± {std:.1f}")
        print(f"| {variant} | " + " | ".join(cells) + " |")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "ablation.json").write_text(json.dumps(done, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
