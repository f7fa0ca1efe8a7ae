"""``tags evaluate --images``: retrieval on raw images with any pixel backend.

Kept apart from :mod:`tags.cli.evaluate` (region features and ``TagsModel``); that module
hands over when ``--images`` is given, and both end in :mod:`tags.cli._retrieval_report`.
"""

from __future__ import annotations

import argparse
import time


def run_images(args: argparse.Namespace) -> int:
    from accelerate import Accelerator

    from tags.backends import BackendError, load_backend
    from tags.cli._flags import uses_cpu
    from tags.core.progress import bars
    from tags.data.images import ImageError
    from tags.evaluation.images import load_image_retrieval_split
    from tags.evaluation.retrieval import evaluate_retrieval

    accelerator = Accelerator(cpu=uses_cpu(args.device), mixed_precision=args.mixed_precision)
    say = accelerator.print
    try:
        backend = load_backend(args.model)
        if backend.image_kind != "pixels":
            raise BackendError(
                f"{args.model}: a {backend.name} model reads region features; give --features "
                "instead of --images"
            )
        backend.model.to(accelerator.device).eval()
        images, texts, notes = load_image_retrieval_split(
            args.captions,
            args.images,
            backend,
            fmt=args.format,
            split=args.split,
            max_length=args.max_length,
            limit_images=args.max_images,
            on_bad_image=args.on_bad_image,
            num_workers=args.num_workers,
            allow_outside_root=args.allow_outside_root,
            confine_to_root=args.confine_to_root,
        )
    except (OSError, ValueError, BackendError, ImageError) as err:
        from tags.core.errors import as_command_error

        raise as_command_error(err) from None  # one line, exit 2 (tags.cli.run_command)
    mode = args.mode
    if mode != "dual" and not backend.supports("itm"):
        notes.append(
            f"the {backend.name} backend has no cross-encoder: {mode} scores are its scaled "
            "dual similarity, ranking as --mode dual does"
        )
    for note in notes:
        say(f"note: {note}")
    say(
        f"evaluating {len(images)} images, {len(texts)} captions with the {backend.name} "
        f"backend: protocol {args.protocol}, mode {mode}"
        + (f" (top-{args.topk})" if mode == "two-stage" else "")
        + f", {accelerator.num_processes} process(es)"
    )
    start = time.perf_counter()
    with bars(args.progress, enabled=accelerator.is_main_process):
        result = evaluate_retrieval(
            backend,
            images,
            texts,
            args.protocol,
            mode,
            topk=args.topk,
            batch_size=args.batch_size,
            accelerator=accelerator,
            use_logits=not args.use_scores,
            fusion=args.fusion,
        )
    from tags.cli._retrieval_report import finish

    sources = {"backend": backend.name, "images": str(args.images)}
    return finish(result, notes, time.perf_counter() - start, accelerator, args, sources)
