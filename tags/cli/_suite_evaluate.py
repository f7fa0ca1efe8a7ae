"""``tags evaluate --suite``: compositional suites (SugarCrepe, ARO, Winoground, shapes
minimal pairs, pair JSONL) for any backend; shared with ``tags report``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tags.cli._flags import resolve_device
from tags.cli._model import typed_name
from tags.core.errors import CommandError


def add_suite_arguments(p: argparse.ArgumentParser) -> None:
    """``--suite`` and ``--suite-images`` (the image options are the command's own)."""
    p.add_argument(
        "--suite",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="compositional suite (repeatable, or a comma list): sugarcrepe, vg-relation, "
        "vg-attribution, coco-order, flickr-order, winoground, shapes, pairs; PATH is its "
        "file or folder (see docs/evaluation.md)",
    )
    p.add_argument(
        "--suite-images",
        action="append",
        default=[],
        metavar="LABEL=ROOT",
        help="image root (or features dir) of one suite, over the reader's default and "
        "--images/--features",
    )
    p.add_argument(
        "--text-baseline",
        metavar="CAPTIONS",
        default=None,
        help="also score every suite with a text-only model (a Kneser-Ney trigram LM fitted on "
        "CAPTIONS: a Karpathy JSON's train+restval, a JSONL, or one caption per line) and "
        "print its accuracy beside the model's: what the captions alone give away",
    )


def load_model(path: str, tokenizer: str | None, device: Any) -> Any:
    """The backend of a model directory on ``device`` (``tokenizer`` overrides its own)."""
    from tags.backends import load_backend

    backend = load_backend(path)
    if tokenizer is not None:
        from transformers import AutoTokenizer

        from tags.core.checkpoints import load_tokenizer_dir
        from tags.core.errors import reading

        hint = "pass a folder a tokenizer was saved to (tokenizer.json)"
        with reading(f"--tokenizer {tokenizer}", hint, CommandError):
            backend.tokenizer = load_tokenizer_dir(
                tokenizer, lambda: AutoTokenizer.from_pretrained(tokenizer, local_files_only=True)
            )
    backend.model.to(device).eval()
    return backend


def suite_options(args: argparse.Namespace) -> Any:
    from tags.evaluation.suites.runner import SuiteOptions, parse_roots

    return SuiteOptions(
        images=Path(args.images) if args.images else None,
        features=Path(args.features) if args.features else None,
        suite_images=parse_roots(args.suite_images),
        mode=args.mode,
        topk=args.topk,
        batch_size=args.batch_size,
        max_length=args.max_length,
        num_workers=args.num_workers,
        use_logits=not args.use_scores,
        allow_outside_root=getattr(args, "allow_outside_root", False),
        confine_to_root=getattr(args, "confine_to_root", False),
        text_score=text_baseline(args.text_baseline),
        progress=getattr(args, "progress", None),
    )


def text_baseline(captions: str | None) -> Any:
    """``score(caption)`` of a trigram LM fitted on ``captions`` (None without a file)."""
    if captions is None:
        return None
    from tags.evaluation.text_prior import NgramLM, training_captions

    return NgramLM().fit(training_captions(captions)).score


def suite_errors() -> tuple[type[Exception], ...]:
    """Errors reported as one line (bad files, models, images)."""
    from tags.backends import BackendError
    from tags.core.regions import MissingFeaturesError
    from tags.data.images import ImageError
    from tags.evaluation.suites.base import SuiteError

    return (OSError, ValueError, SuiteError, BackendError, ImageError, MissingFeaturesError)


def check_specs(specs: list[Any]) -> None:
    """Every ``--suite NAME=PATH`` names a known suite and an existing path (``SuiteError``)."""
    from tags.evaluation.suites.base import SuiteError
    from tags.evaluation.suites.readers import list_suites

    known = list_suites()
    for spec in specs:
        if spec.name not in known:
            raise SuiteError(f"--suite {spec.name}: unknown suite; known: {', '.join(known)}")
        if not Path(spec.path).exists():
            raise SuiteError(f"--suite {spec.name}={spec.path}: not found")


def run_suite_evaluate(args: argparse.Namespace) -> int:

    from tags.evaluation.suites.base import SuiteSpec
    from tags.evaluation.suites.runner import run_suites

    if args.captions is not None:
        raise CommandError(
            "--suite evaluates suites only; `tags report` runs retrieval and suites together"
        )
    device = resolve_device(args.device)
    try:
        specs = SuiteSpec.parse_many(args.suite)
        check_specs(specs)  # names and paths before the model loads
        options = suite_options(args)  # bad option files fail before the model loads
        backend = load_model(args.model, args.tokenizer, device)
        results = run_suites(backend, specs, options)
    except suite_errors() as err:
        from tags.core.errors import as_command_error

        raise as_command_error(err) from None  # one line, exit 2 (tags.cli.run_command)
    if args.out:
        suites = {k: {f: v for f, v in r.items() if f != "outcomes"} for k, r in results.items()}
        report = {"model": typed_name(args.model), "backend": backend.name, "mode": args.mode,
                  "suites": suites}  # fmt: skip
        from tags.cli._outputs import write_json

        write_json(args.out, report)  # atomic: never half written
    return 0


__all__ = ["add_suite_arguments", "load_model", "run_suite_evaluate", "suite_options"]
