"""``tags export``: a finished ``tags generate`` output -> NegCLIP CSV, SugarCrepe JSON,
Parquet or a ``datasets`` folder (``tags generate --export`` does the same at the end of a
run). See ``docs/generate.md``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tags.negatives.exports import list_exporters

EXPORT_FORMATS = tuple(list_exporters())


def add_export_options(group: argparse._ArgumentGroup) -> None:
    """The options every export shares (used by ``tags export`` and ``tags generate``)."""
    group.add_argument(
        "--image-root",
        default="",
        help="negclip-csv: prefix of every filepath (the folder the trainer opens images in)",
    )
    group.add_argument(
        "--negatives-per-row",
        type=int,
        default=1,
        metavar="K",
        help="negclip-csv: K negatives per row (neg_caption, or neg_caption_1..K; a caption "
        "with fewer is left out)",
    )
    group.add_argument(
        "--neg-list",
        action="store_true",
        help="negclip-csv: NegCLIP's own layout, neg_caption = a list literal of up to K",
    )
    group.add_argument(
        "--by-type",
        action="store_true",
        help="sugarcrepe: one file per edit kind (replace_obj, swap_att, ...) in a folder",
    )


def export_options(args: argparse.Namespace, captions: str | None, fmt: str | None) -> object:
    from tags.negatives.exports import ExportOptions, image_paths

    return ExportOptions(
        image_root=args.image_root,
        paths=image_paths(captions, fmt) if captions else None,
        negatives_per_row=args.negatives_per_row,
        list_column=args.neg_list,
        by_type=args.by_type,
        allow_outside_root=getattr(args, "allow_outside_root", False),
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "export",
        help="convert `tags generate` output for other trainers and test suites",
        description="Convert a `tags generate` JSON Lines output to NegCLIP / open_clip CSV "
        "(title, filepath, neg_caption), SugarCrepe JSON ({id: {filename, caption, "
        "negative_caption}}), Parquet or a datasets folder.",
    )
    p.add_argument("negatives", help="a `tags generate` .jsonl output")
    p.add_argument("--format", choices=EXPORT_FORMATS, required=True, dest="kind")
    p.add_argument("--out", default=None, help="target (default: next to the input)")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing target (never the input; written to a temporary file first)",
    )
    p.add_argument(
        "--captions",
        default=None,
        help="the caption file the negatives came from: image file names (Karpathy "
        "filepath/filename, JSONL filename); without it the image id is the file name",
    )
    p.add_argument("--caption-format", choices=("karpathy", "precomp", "jsonl"), default=None)
    p.add_argument(
        "--allow-outside-root",
        action="store_true",
        help="image file names that are absolute or hold '..' (outside --image-root) are "
        "refused unless this is given; then written as they are",
    )
    add_export_options(p.add_argument_group("export"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tags.negatives.exports import export_file

    source = Path(args.negatives)
    if not source.is_file():
        print(f"error: {source} not found", file=sys.stderr)
        return 2
    start = time.perf_counter()
    try:
        options = export_options(args, args.captions, args.caption_format)
        written = export_file(source, args.kind, args.out, options, overwrite=args.overwrite)
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for path in written:
        print(f"exported {path}", file=sys.stderr)
    print(f"export: {time.perf_counter() - start:.2f}s", file=sys.stderr)
    return 0
