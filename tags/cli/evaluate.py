"""``tags evaluate``: image-text retrieval R@K / RSum of a saved TagsModel on one split.

Runs in one process or under ``torchrun`` / ``accelerate launch`` (each process scores a
shard of the images; the main process prints and writes the results). See
``docs/evaluation.md``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from tags.cli._flags import (
    add_confine_to_root,
    add_device,
    add_out,
    add_overwrite,
    add_progress,
    uses_cpu,
)
from tags.cli._model import model_ref
from tags.cli._outputs import check_out
from tags.cli._retrieval_report import finish
from tags.cli._types import finite_float, non_negative_int, positive_int
from tags.core.errors import CommandError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "evaluate",
        help="retrieval (R@K, RSum) or compositional suites (--suite)",
        description="Image-text retrieval of a saved TagsModel: i2t/t2i R@1/5/10, RSum, median "
        "and mean rank, by full cross-encoder scoring, dual embeddings, or dual top-k + "
        "cross-encoder rerank. With --suite: accuracy on compositional suites (SugarCrepe, "
        "ARO, Winoground, shapes minimal pairs, pair JSONL) for any backend. Prints a table; "
        "--out writes JSON.",
    )
    p.add_argument(
        "--model",
        required=True,
        type=model_ref,
        help="model directory (save_pretrained), or a hub id in the local cache",
    )
    p.add_argument(
        "--tokenizer", default=None, type=model_ref, help="tokenizer directory (default: --model)"
    )
    p.add_argument(
        "--captions", default=None, help="caption file, or a SCAN data dir ({split}_caps.txt)"
    )
    p.add_argument(
        "--format",
        choices=("karpathy", "precomp", "jsonl"),
        default=None,
        help="caption format (default: .json karpathy, .jsonl jsonl, else precomp)",
    )
    p.add_argument(
        "--features",
        default=None,
        help="directory of per-image .npz files, or a precomp {split}_ims.npy (or its dir)",
    )
    # --- issue 12: raw images for BLIP / CLIP / SigLIP directories (tags.cli._backend_evaluate)
    p.add_argument(
        "--images",
        default=None,
        help="image root for raw images (BLIP/CLIP/SigLIP models); instead of --features",
    )
    p.add_argument("--on-bad-image", choices=("error", "skip"), default="error")
    p.add_argument(
        "--num-workers",
        type=non_negative_int,
        default=0,
        help="image decoding workers (0: decode in this process)",
    )
    p.add_argument(
        "--allow-outside-root",
        action="store_true",
        help="image file names from the data that are absolute or hold '..' (outside the image "
        "root) are refused unless this is given",
    )
    add_confine_to_root(p)
    # --- end issue 12
    # --- issue 14: compositional suites (tags.cli._suite_evaluate)
    from tags.cli._suite_evaluate import add_suite_arguments

    add_suite_arguments(p)
    # --- end issue 14
    p.add_argument("--split", default="test", help="split to evaluate (default: test)")
    p.add_argument(
        "--protocol",
        choices=("full", "f30k-1k", "coco-1k", "coco-5k"),
        default="full",
        help="full / f30k-1k / coco-5k: the split at once; coco-1k: mean over 5 folds",
    )
    p.add_argument("--mode", choices=("cross", "dual", "two-stage"), default="cross")
    p.add_argument(
        "--topk",
        type=positive_int,
        default=128,
        help="two-stage: candidates (suites: options) reranked",
    )
    p.add_argument(
        "--fusion",
        type=finite_float,
        default=None,
        help="two-stage: rerank by dual + FUSION * cross score (default: the cross score)",
    )
    p.add_argument(
        "--batch-size", type=positive_int, default=256, help="pairs (or items) per forward"
    )
    p.add_argument(
        "--max-length", type=positive_int, default=None, help="truncate captions (tokens)"
    )
    p.add_argument("--max-images", type=positive_int, default=None, help="only the first N images")
    p.add_argument(
        "--use-scores",
        action="store_true",
        help="rank by sigmoid ITM scores instead of logits (same order unless saturated)",
    )
    add_device(p, cpu_alias=True)
    p.add_argument("--mixed-precision", choices=("no", "fp16", "bf16"), default=None)
    add_out(p, "write the metrics as JSON here")
    add_overwrite(p, "an existing --out")
    add_progress(p)
    p.set_defaults(func=run)


def check_model_dir(path: str | Path) -> None:
    """A saved TagsModel directory (``config.json`` with ``model_type: tags``), else a
    ``ValueError`` that says what ``path`` is instead."""
    path = Path(path)
    if not path.exists():
        from tags.backends.hub import missing_model_message

        raise ValueError(f"--model {missing_model_message(path)}")
    config = path / "config.json"
    if not config.is_file():
        raise ValueError(
            f"--model {path}: not a TagsModel directory (no config.json); pass the folder "
            "that save_pretrained wrote, e.g. OUTPUT_DIR/model of tags train"
        )
    from tags.core.checkpoints import read_config
    from tags.core.errors import CheckpointError

    try:
        model_type = read_config(path).get("model_type")
    except CheckpointError as err:  # config.json not JSON
        raise CommandError(err.labelled(f"--model {path}")) from None
    if model_type != "tags":
        raise ValueError(
            f"--model {path}: config.json has model_type {model_type!r}, not 'tags' "
            "(a TagsModel saved by tags train)"
        )


def run(args: argparse.Namespace) -> int:
    check_out(args.out, overwrite=args.overwrite)  # before any work
    if args.suite:  # issue 14: compositional suites
        from tags.cli._suite_evaluate import run_suite_evaluate

        return run_suite_evaluate(args)
    if args.captions is None:
        raise CommandError("give --captions (retrieval) or --suite (compositional suites)")
    if (args.features is None) == (args.images is None):
        raise CommandError("give exactly one of --features and --images")
    if args.images is not None:  # issue 12: pixel backends
        from tags.cli._backend_evaluate import run_images

        return run_images(args)
    from accelerate import Accelerator
    from transformers import AutoTokenizer

    from tags.core.checkpoints import MODEL_HINT, load_tokenizer_dir
    from tags.core.errors import CheckpointError, reading
    from tags.core.progress import bars
    from tags.evaluation.io import load_retrieval_split
    from tags.evaluation.retrieval import evaluate_retrieval
    from tags.modeling.loading import load_checked

    accelerator = Accelerator(cpu=uses_cpu(args.device), mixed_precision=args.mixed_precision)
    say = accelerator.print
    try:
        check_model_dir(args.model)
        with reading(f"--model {args.model}", MODEL_HINT, CommandError):
            model = load_checked(args.model).to(accelerator.device).eval()
        source = args.tokenizer or args.model
        try:
            tokenizer = load_tokenizer_dir(
                source, lambda: AutoTokenizer.from_pretrained(source, local_files_only=True)
            )
        except CheckpointError as err:  # a damaged tokenizer file, named
            option = "--tokenizer" if args.tokenizer else "--model"
            raise CommandError(err.labelled(f"{option} {source}")) from None
        except (OSError, ValueError, ImportError) as err:
            raise ValueError(
                f"no tokenizer in {source} ({type(err).__name__}): save it next to the model "
                "or pass --tokenizer DIR"
            ) from None
        images, texts, notes = load_retrieval_split(
            args.captions,
            args.features,
            tokenizer,
            fmt=args.format,
            split=args.split,
            max_length=args.max_length or model.config.max_position_embeddings,
            limit_images=args.max_images,
        )
        width, expected = images.features.shape[-1], model.config.region_feature_size
        if width != expected:
            raise CommandError(
                f"--features {args.features}: {width}-d region features, but the model in "
                f"{args.model} takes {expected}-d ones; pass the features it was trained on"
            )
    except (OSError, ValueError) as err:
        from tags.core.errors import as_command_error

        raise as_command_error(err) from None  # one line, exit 2 (tags.cli.run_command)
    for note in notes:
        say(f"note: {note}")
    say(
        f"evaluating {len(images)} images, {len(texts)} captions: protocol {args.protocol}, "
        f"mode {args.mode}"
        + (f" (top-{args.topk})" if args.mode == "two-stage" else "")
        + f", {accelerator.num_processes} process(es)"
    )
    start = time.perf_counter()
    with bars(args.progress, enabled=accelerator.is_main_process):
        result = evaluate_retrieval(
            model,
            images,
            texts,
            args.protocol,
            args.mode,
            topk=args.topk,
            batch_size=args.batch_size,
            accelerator=accelerator,
            use_logits=not args.use_scores,
            fusion=args.fusion,
        )
    sources = {"features": str(args.features)}
    return finish(result, notes, time.perf_counter() - start, accelerator, args, sources)
