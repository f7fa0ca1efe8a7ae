"""``tags make-benchmark``: render the compositional shapes benchmark (captions, region
features, minimal pairs); a finished build with the same arguments is reused."""

from __future__ import annotations

import argparse
import sys

from tags.cli._flags import add_out, add_progress, deprecated
from tags.cli._types import non_negative_int, positive_int
from tags.core.errors import CommandError


def register(subparsers: argparse._SubParsersAction) -> None:
    from tags.benchmark.config import FEATURIZERS, PAIR_SAMPLERS, BenchmarkConfig

    d = BenchmarkConfig()
    p = subparsers.add_parser(
        "make-benchmark",
        help="build the compositional shapes benchmark",
        description="Render seeded scenes of coloured shapes, write 5 true captions per "
        "image (Karpathy JSON), region features per image (.npz: one box per object plus "
        "the whole image, features from a frozen CNN on the pixels) and, for the test "
        "split, minimal-pair negative captions (JSONL). Re-running with the same "
        "arguments reuses the output.",
    )
    p.add_argument("output", nargs="?", default=None, help="output directory (or --out)")
    add_out(p, "output directory")
    # split sizes: 0 leaves the split out (not all three 0: the config refuses it)
    p.add_argument("--train", type=non_negative_int, default=d.train, help="training images")
    p.add_argument("--val", type=non_negative_int, default=d.val, help="validation images")
    p.add_argument("--test", type=non_negative_int, default=d.test, help="test images")
    p.add_argument("--seed", type=non_negative_int, default=d.seed)
    p.add_argument(
        "--image-size", type=positive_int, default=d.image_size, help="image side (pixels)"
    )
    p.add_argument(
        "--crop-size", type=positive_int, default=d.crop_size, help="CNN input side (32..224)"
    )
    p.add_argument("--min-objects", type=positive_int, default=d.min_objects)
    p.add_argument("--max-objects", type=positive_int, default=d.max_objects)
    p.add_argument(
        "--pairs-per-type",
        type=positive_int,
        default=d.pairs_per_type,
        help="minimal pairs per type per test caption (default: %(default)s)",
    )
    p.add_argument(
        "--pair-sampler",
        choices=PAIR_SAMPLERS,
        default=d.pair_sampler,
        help="how the false unit of a minimal pair is drawn: balanced (benchmark v2: every "
        "word as often false as true, no text prior) or uniform (v1: uniform among the false "
        "ones, relation words carry a text prior); default: %(default)s",
    )
    p.add_argument(
        "--featurizer",
        choices=FEATURIZERS,
        default=d.featurizer,
        help="auto: EfficientNet-Lite0 when installed, else a seeded random CNN",
    )
    p.add_argument("--no-whole-image", action="store_true", help="object regions only")
    p.add_argument("--save-images", action="store_true", help="also write the PNGs")
    p.add_argument("--threads", type=positive_int, default=None, help="torch CPU threads")
    p.add_argument("--batch-size", type=positive_int, default=256, help="crops per CNN forward")
    p.add_argument(
        "--overwrite", action="store_true", help="rebuild even if a finished build is there"
    )
    deprecated(p, "--force", "--overwrite", "overwrite", const=True)
    add_progress(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tags.benchmark.build import build_benchmark
    from tags.benchmark.config import BenchmarkConfig
    from tags.cli._outputs import dir_problem

    if args.output and args.out and args.output != args.out:
        raise CommandError(f"two outputs: {args.output} and --out {args.out}; give one")
    args.output = args.output or args.out
    if args.output is None:
        raise CommandError("give the output directory (--out DIR)")
    problem = dir_problem(args.output, "output")
    if problem is not None:
        raise CommandError(f"{problem}")

    try:
        config = BenchmarkConfig(
            train=args.train,
            val=args.val,
            test=args.test,
            seed=args.seed,
            image_size=args.image_size,
            crop_size=args.crop_size,
            min_objects=args.min_objects,
            max_objects=args.max_objects,
            pairs_per_type=args.pairs_per_type,
            pair_sampler=args.pair_sampler,
            whole_image=not args.no_whole_image,
            save_images=args.save_images,
            featurizer=args.featurizer,
        )
    except ValueError as err:
        raise CommandError(f"{err}") from err

    def progress(done: int, total: int) -> None:
        if args.progress is not False:
            print(f"\r{done}/{total} images", end="", file=sys.stderr, flush=True)

    try:
        result = build_benchmark(
            args.output,
            config,
            force=args.overwrite,
            threads=args.threads,
            batch_size=args.batch_size,
            progress=progress,
        )
    except ValueError as err:
        raise CommandError(f"{err}") from err
    if args.progress is not False and not result.reused:
        print(file=sys.stderr)
    state = "reused" if result.reused else f"built in {result.seconds:.1f}s"
    counts = ", ".join(f"{k} {v}" for k, v in result.counts.items())
    print(f"{result.paths.root}: {state} ({result.featurizer}; {counts})", file=sys.stderr)
    return 0
