"""``tags export``: a finished ``tags generate`` output -> NegCLIP's training TSV, open_clip
CSV, SugarCrepe JSON, or JSON Lines / Parquet / a folder for ``datasets`` (``tags generate
--export`` does the same at the end of a run). See ``docs/generate.md``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tags.cli._flags import add_out
from tags.cli._types import positive_int
from tags.core.errors import CommandError
from tags.negatives.exports import list_exporters

EXPORT_FORMATS = tuple(list_exporters())


def separator(value: str) -> str:
    """``--csv-separator``: one character; ``tab`` / ``\\t`` / ``comma`` spelled out."""
    sep = {"tab": "\t", "\\t": "\t", "comma": ","}.get(value.lower(), value)
    if len(sep) != 1 or sep in '"\r\n':
        raise argparse.ArgumentTypeError(f"one character (or tab, comma), got {value!r}")
    return sep


def add_export_options(group: argparse._ArgumentGroup) -> None:
    """The options every export shares (used by ``tags export`` and ``tags generate``)."""
    group.add_argument(
        "--image-root",
        default="",
        help="negclip, negclip-csv: prefix of every filepath (the folder the trainer opens "
        "images in)",
    )
    group.add_argument(
        "--image-ext",
        default="",
        metavar="EXT",
        help="file name of an image the caption file does not name: its id + EXT (.jpg); "
        "without it negclip, sugarcrepe and the datasets exports refuse such an image",
    )
    group.add_argument(
        "--negatives-per-row",
        type=positive_int,
        default=None,
        metavar="K",
        help="negclip: at most K negatives in neg_caption (default all); negclip-csv: K "
        "negatives per row (neg_caption, or neg_caption_1..K; a caption with fewer is left "
        "out; default 1)",
    )
    group.add_argument(
        "--neg-list",
        action="store_true",
        help="negclip-csv: neg_caption = a list literal of up to K (no neg_image: NegCLIP's "
        "trainer needs --format negclip)",
    )
    group.add_argument(
        "--neg-images",
        type=positive_int,
        default=3,
        metavar="N",
        help="negclip: neg_image lists a caption row of each of the N other images whose "
        "captions are most similar (IDF-weighted shared words; default 3)",
    )
    group.add_argument(
        "--csv-separator",
        type=separator,
        default=None,
        metavar="SEP",
        help="negclip, negclip-csv: the separator (tab, comma or one character; pass the same "
        "to open_clip's --csv-separator); default tab for negclip and .tsv, comma for .csv",
    )
    group.add_argument(
        "--by-type",
        action="store_true",
        help="sugarcrepe: SugarCrepe's seven subset files (add_obj ... swap_att) plus "
        "swap_rel / mixed, in a folder; refused when one of the seven would be empty "
        "(SugarCrepe's main_eval.py stops on it) unless --allow-empty-subsets",
    )
    group.add_argument(
        "--allow-empty-subsets",
        action="store_true",
        help="sugarcrepe --by-type: write a subset no negative falls in as {} (leave it out "
        "of main_eval.py's data_dict)",
    )


def export_options(args: argparse.Namespace, captions: str | None, fmt: str | None) -> object:
    """The :class:`ExportOptions` of the parsed arguments: ``--captions`` gives the image file
    names and every exported record is checked against it; a bare image id is refused for
    the formats that open images by name (``exports.NAMED_IMAGES``)."""
    from tags.core.errors import reading
    from tags.negatives.exports import ExportOptions, caption_index, image_paths

    paths = index = None
    if captions:  # not UTF-8 or not its format: one line naming --captions and the file
        hint = "pass the caption file the negatives came from (Karpathy JSON, JSONL or precomp)"
        with reading(f"--captions {captions}", hint, CommandError):
            paths, index = image_paths(captions, fmt), caption_index(captions, fmt)
    return ExportOptions(
        image_root=args.image_root,
        paths=paths,
        negatives_per_row=args.negatives_per_row,
        list_column=args.neg_list,
        by_type=args.by_type,
        allow_empty=getattr(args, "allow_empty_subsets", False),
        allow_outside_root=getattr(args, "allow_outside_root", False),
        separator=getattr(args, "csv_separator", None),
        image_ext=getattr(args, "image_ext", ""),
        bare_ids=None,
        neg_images=getattr(args, "neg_images", 3),
        captions=index,
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "export",
        help="convert `tags generate` output for other trainers and test suites",
        description="Convert a `tags generate` JSON Lines output to NegCLIP's training TSV "
        "(filepath, title, neg_caption, neg_image), open_clip CSV (title, filepath, "
        "neg_caption), SugarCrepe JSON ({id: {filename, caption, negative_caption}}), or JSON "
        "Lines / Parquet / a folder for `datasets`.",
    )
    p.add_argument("negatives", help="a `tags generate` .jsonl output")
    p.add_argument("--format", choices=EXPORT_FORMATS, required=True, dest="kind")
    add_out(p, "target (default: next to the input)")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing target (never the input; written to a temporary file first)",
    )
    p.add_argument(
        "--captions",
        default=None,
        help="the caption file the negatives came from: image file names (Karpathy "
        "filepath/filename, JSONL filename); every negative's caption id, image id and "
        "positive are checked against it",
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
    from tags.core.errors import as_command_error
    from tags.negatives.exports import export_file

    source = Path(args.negatives)
    if not source.is_file():
        raise CommandError(f"{source} not found")
    start = time.perf_counter()
    try:
        options = export_options(args, args.captions, args.caption_format)
        written = export_file(source, args.kind, args.out, options, overwrite=args.overwrite)
    except (OSError, ValueError) as err:
        raise as_command_error(err) from None  # one line, exit 2 (tags.cli.run_command)
    for path in written:
        print(f"exported {path}", file=sys.stderr)
    print(f"export: {time.perf_counter() - start:.2f}s", file=sys.stderr)
    return 0
