"""The two departures of ``tags export --refine`` from SugarCrepe's adversarial_refine.py,
measured: the grid (SugarCrepe's 50 bins per gap, or :func:`auto_grid`) and scorer A (one
cross-fitted classifier, or the mean of 4 or 8). Per subset of a ``tags generate`` output: pairs
kept and the held-out checks (docs/experiments/2026-11-28-sugarcrepe-refine.md).

    python -m scripts.research.refine_ablation NEG.jsonl [--subsets replace_obj,replace_att]
"""

from __future__ import annotations

import argparse

import torch

from tags.evaluation.refine import auto_grid, refine_pairs
from tags.negatives.exports import read_records, subset_of


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("negatives")
    parser.add_argument("--subsets", default="replace_obj,replace_att,replace_rel")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    by: dict[str, list[dict]] = {}
    for record in read_records(args.negatives):
        by.setdefault(subset_of(record.get("edits") or []), []).append(record)
    print(
        "subset | pairs | grid | A fits | kept % | held-out classifier after | refitted | unigram after"
    )
    for name in args.subsets.split(","):
        records = by[name]
        pairs = [(r["positive"], r["negative"]) for r in records]
        keys = [r["image_id"] for r in records]
        auto = auto_grid(len(pairs))
        for grid, repeats in ((50, 4), (auto, 1), (auto, 4), (auto, 8)):
            _, r = refine_pairs(pairs, keys, args.seed, grid=grid, repeats=repeats)
            held = r["held_out"]
            print(
                f"{name} | {len(pairs)} | {grid} | {repeats} | {100 * r['kept_share']:.1f} | "
                f"{100 * held['classifier']['after']:.1f} | "
                f"{100 * held['classifier']['after_refit']:.1f} | "
                f"{100 * held['unigram']['after']:.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
