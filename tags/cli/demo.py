"""``tags demo``: what each method's negatives teach, on the binding testbed (default), or the
shapes benchmark's pipeline (pre-training, then hardest-negative ITM vs TAGS-DC; the HF
backends)."""

from __future__ import annotations

import argparse

from tags.cli._flags import add_out, deprecated
from tags.cli._types import non_negative_int, positive_int
from tags.core.errors import CommandError
from tags.demo.hf import HF_BACKENDS


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="train plain, oracle, tags-negative and TAGS-DC matchers on the binding testbed "
        "and compare what they learn (or --world shapes: the benchmark pipeline)",
        description="--world binding (default): train the same small cross-encoder four times "
        "on fresh 2-4 object scenes, with no added negative (plain), scene-checked minimal "
        "pairs (oracle), tags generate negatives and TAGS-DC's own refills, and write "
        "OUT/report.md: minimal-pair accuracy per kind, the share of the oracle's lead each "
        "method closes, curves, the text-only check of the negatives. --world shapes: build "
        "the shapes benchmark, pre-train a small model (ITM + MLM + ITC), fine-tune it with a "
        "hardest-negative baseline and with TAGS-DC and evaluate all three (R@K, RSum, "
        "minimal pairs). Finished runs are reused when re-run with the same arguments.",
    )
    add_out(
        p,
        "output directory (default runs/demo; --world shapes: runs/demo-shapes, "
        "runs/demo-BACKEND with an HF --backend)",
    )
    p.add_argument("--world", choices=("binding", "shapes"), default=None,
                   help="binding: the testbed of fresh scenes (default with --backend tags); "
                   "shapes: the shapes benchmark pipeline (the HF backends run there)")  # fmt: skip
    p.add_argument("--backend", choices=("tags", *HF_BACKENDS), default="tags",
                   help="tags: TagsModel on region features (default); clip: a small HF CLIPModel "
                   "pre-trained on the rendered images, plain vs NegCLIP-style fine-tuning with "
                   "tags generate negatives; blip: a small HF BLIP (ITM head) pre-trained there, "
                   "ITM with retrieved hard negatives vs TAGS-DC")  # fmt: skip
    p.add_argument("--budget", choices=("small", "tiny"), default="small",
                   help="small: the measured budget (docs/demo.md gives its time on 2 CPU "
                   "cores); tiny: a smoke run of seconds")  # fmt: skip
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--data", default=None,
                   help="--world shapes: benchmark directory (default OUT/data)")  # fmt: skip
    p.add_argument("--num-workers", type=positive_int, default=None,
                   help="worker processes for the fine-tunings and the pre-trained model's "
                   "evaluation, side by side (default 2 on 2+ cores; 1: all in this process)")  # fmt: skip
    deprecated(p, "--jobs", "--num-workers", "num_workers", type=positive_int)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    world = args.world or ("binding" if args.backend == "tags" else "shapes")
    if world == "binding":
        if args.backend != "tags":
            raise CommandError(f"--backend {args.backend} runs on --world shapes")
        if args.data:
            raise CommandError("--data applies to --world shapes")
        from tags.demo.binding import run_binding_demo

        run_binding_demo(args.out or "runs/demo", args.budget, args.seed, jobs=args.num_workers)
        return 0
    if args.backend != "tags":
        from tags.demo.hf import run_hf_demo

        out = args.out or f"runs/demo-{args.backend}"
        run_hf_demo(out, args.backend, args.budget, args.seed, data_root=args.data,
                    jobs=args.num_workers)  # fmt: skip
        return 0
    from tags.demo.pipeline import run_demo

    run_demo(
        args.out or "runs/demo-shapes",
        args.budget,
        args.seed,
        data_root=args.data,
        jobs=args.num_workers,
    )
    return 0
