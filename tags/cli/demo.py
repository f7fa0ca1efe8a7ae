"""``tags demo``: pre-train once, then hardest-negative baseline vs TAGS-DC on the shapes
benchmark, with a report."""

from __future__ import annotations

import argparse

from tags.cli._flags import add_out, deprecated
from tags.cli._types import non_negative_int, positive_int
from tags.demo.hf import HF_BACKENDS


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="pre-train, fine-tune hardest-negative ITM and TAGS-DC on the shapes benchmark, "
        "write a report",
        description="Build (or reuse) the shapes benchmark, pre-train a small model (ITM + MLM "
        "+ ITC), fine-tune it with a hardest-negative baseline and with TAGS-DC, evaluate all "
        "three (R@K, RSum, minimal pairs) and write OUT/report.md. Finished runs are reused "
        "when re-run with the same arguments.",
    )
    add_out(p, "output directory (default runs/demo, runs/demo-BACKEND with an HF --backend)")
    p.add_argument("--backend", choices=("tags", *HF_BACKENDS), default="tags",
                   help="tags: TagsModel on region features (default); clip: a small HF CLIPModel "
                   "pre-trained on the rendered images, plain vs NegCLIP-style fine-tuning with "
                   "tags generate negatives; blip: a small HF BLIP (ITM head) pre-trained there, "
                   "ITM with retrieved hard negatives vs TAGS-DC")  # fmt: skip
    p.add_argument("--budget", choices=("small", "tiny"), default="small",
                   help="small: 4-5 min on 2 CPU cores; tiny: ~20 s smoke run")  # fmt: skip
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--data", default=None, help="benchmark directory (default OUT/data)")
    p.add_argument("--num-workers", type=positive_int, default=None,
                   help="worker processes for the fine-tunings and the pre-trained model's "
                   "evaluation, side by side (default 2 on 2+ cores; 1: all in this process)")  # fmt: skip
    deprecated(p, "--jobs", "--num-workers", "num_workers", type=positive_int)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.backend != "tags":
        from tags.demo.hf import run_hf_demo

        out = args.out or f"runs/demo-{args.backend}"
        run_hf_demo(out, args.backend, args.budget, args.seed, data_root=args.data,
                    jobs=args.num_workers)  # fmt: skip
        return 0
    from tags.demo.pipeline import run_demo

    run_demo(
        args.out or "runs/demo", args.budget, args.seed, data_root=args.data, jobs=args.num_workers
    )
    return 0
