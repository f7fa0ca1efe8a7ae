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
import os
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tqdm import tqdm

from tags.cli._generate_options import (
    add_options,
    apply_preset,
    generation_config,
    noun_classes,
    resume_settings,
)
from tags.cli.export import export_options
from tags.core.errors import CommandError, one_line
from tags.core.progress import progress, track
from tags.negatives.config import PRESETS


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "generate",
        help="generate hard negative captions",
        description="Generate hard negative captions with labelled edits (TAGS-DC: mask "
        "scene-graph units, refill, filter false negatives, select). Writes JSON Lines, one "
        "negative a line; --resume continues an interrupted run, --shard I/N takes one part.",
    )
    add_options(p)
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
    ``--background``), ``--max-surprise`` without its LM, or worker processes next to a
    model (which workers do not serve), before anything is written or loaded."""
    from tags.negatives.config import background_problem

    if args.max_surprise is not None and not args.plausibility_lm:
        return "--max-surprise needs --plausibility-lm"
    loaded = [f for f, v in (("--model", args.model), ("--mlm", args.mlm),
                             ("--plausibility-lm", args.plausibility_lm)) if v]  # fmt: skip
    if loaded and (args.num_workers or 1) > 1:
        return (
            f"--num-workers {args.num_workers}: worker processes serve the weight-free refill "
            f"only; a {loaded[0]} run takes one process"
        )
    try:
        noun_classes(args.noun_classes)
    except CommandError as err:
        return str(err)
    return background_problem(args.background, "--background")


def _policy(args: argparse.Namespace) -> Any:
    from tags.core.io import ErrorPolicy

    return ErrorPolicy(args.on_error)


def _reader(args: argparse.Namespace, policy: Any) -> Iterator[Any]:
    from tags.core.io import read_captions

    return read_captions(args.captions, args.format, on_error=policy, split=args.split)


def _count(args: argparse.Namespace) -> tuple[int, int]:
    """(image groups, captions) of the whole input; bad lines raise only with --on-error stop,
    a caption id given twice always (one line naming it)."""
    from tags.core.io import check_precomp_lines, detect_format
    from tags.negatives.resume import count_unique

    fmt = args.format or detect_format(args.captions)
    if fmt == "precomp":  # 5 lines per image, as train and evaluate check
        check_precomp_lines(args.captions)
    return count_unique(_reader(args, _policy(args)), args.captions, fmt)


def _vocabulary(args: argparse.Namespace, parser: Any, path: Path, state: Any) -> Any:
    """Load the vocabulary from ``path`` or build it from the whole corpus and save it there."""
    from tags.core.io import ErrorPolicy
    from tags.negatives.counts import corpus_vocabulary
    from tags.negatives.vocabulary import SceneGraphVocabulary

    def bar(graphs: Iterable[Any]) -> Iterable[Any]:
        disable = None if args.progress is None else not args.progress
        return tqdm(graphs, desc="vocabulary", unit=" captions", disable=disable, file=sys.stderr)

    def build() -> SceneGraphVocabulary:
        return corpus_vocabulary(
            path,
            lambda: _reader(args, ErrorPolicy(args.on_error)),
            reuse=bool(args.vocab or args.resume),
            parser=parser,
            n_process=_workers(args, state),
            progress=bar,
            warn=lambda message: print(message, file=sys.stderr),
        )

    if state is None:
        return build()
    with state.main_process_first():
        return build() if state.is_main_process else SceneGraphVocabulary.load(path)


def _components(args: argparse.Namespace, parser: Any, out: Path, state: Any) -> dict[str, Any]:
    """The refill source (a refiller, else the vocabulary), scorer, regions, label tokenizer,
    planner and plausibility filter: :func:`~tags.negatives.factory.create_generator`'s
    arguments for the chosen refill source."""
    if getattr(args, "images", None):  # issue 12: pixel backends on raw images
        from tags.cli._backend_generate import backend_components

        return backend_components(args, parser, out, state, _planning)
    device = args.device
    if state is not None and device is None:
        device = state.device
    regions = _regions(args)
    tokenizer = _label_tokenizer(args)
    if args.features and not args.model:
        print("warning: --features is only used with --model (a TagsModel)", file=sys.stderr)
    refiller = scorer = None
    if args.model or args.mlm:
        refiller, scorer, tokenizer = _masked_lm(args, device, regions, tokenizer)
    vocabulary, planner = _planning(args, parser, out, state, needs_vocab=refiller is None)
    return {
        "refiller": refiller,
        "vocabulary": vocabulary,
        "scorer": scorer,
        "regions": regions,
        "label_tokenizer": tokenizer,
        "planner": planner,
        "plausibility": _plausibility(args, device),
    }


def _regions(args: argparse.Namespace) -> Any:
    """The region features of ``--features`` (``None`` without), checked against the
    captions."""
    if not args.features:
        return None
    from tags.core.io import detect_format
    from tags.core.regions import open_regions
    from tags.data.captions import check_alignment

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
    # 5 caption lines per array row, as train and evaluate check (names both counts)
    check_alignment(args.captions, fmt, regions)
    return regions


def _label_tokenizer(args: argparse.Namespace) -> Any:
    """The ``--tokenizer`` for WoD/WoC labels (``None`` without)."""
    if not args.tokenizer:
        return None
    from tags.backends.masked_lm import load_tokenizer
    from tags.core.errors import reading

    hint = "pass a folder a tokenizer was saved to (tokenizer.json)"
    with reading(f"--tokenizer {args.tokenizer}", hint, CommandError):
        return load_tokenizer(args.tokenizer)


def _masked_lm(
    args: argparse.Namespace, device: Any, regions: Any, tokenizer: Any
) -> tuple[Any, Any, Any]:
    """``(refiller, scorer, label tokenizer)`` of ``--model`` (a TagsModel: MLM refills,
    ITM ranking on ``regions``) or ``--mlm`` (text-only refills)."""
    from tags.backends.masked_lm import HFMaskedLM, TagsMaskedLM, TagsPairScorer
    from tags.backends.tags_model import load_tags_model
    from tags.negatives.refill import MLMRefiller

    mlm_options = {"num_samples": args.l, "temperature": args.temperature}
    if args.mlm:
        mlm, mlm_tokenizer = HFMaskedLM.from_pretrained(args.mlm, device)
        return MLMRefiller(mlm, mlm_tokenizer, **mlm_options), None, tokenizer or mlm_tokenizer
    heads = ("mlm", "itm") if regions is not None else ("mlm",)  # ITM ranks on features
    model, model_tokenizer = load_tags_model(args.model, device, args.tokenizer, heads)
    mlm = TagsMaskedLM(model, model_tokenizer, device, use_image=regions is not None)
    refiller = MLMRefiller(mlm, model_tokenizer, **mlm_options)
    scorer = None
    if regions is not None:
        scorer = TagsPairScorer(model, model_tokenizer, device)
    else:
        print(
            "warning: no --features: text-only refills and a seeded sample instead of "
            "ITM selection",
            file=sys.stderr,
        )
    return refiller, scorer, tokenizer or model_tokenizer


def _plausibility(args: argparse.Namespace, device: Any) -> Any:
    """The optional causal-LM plausibility filter (``--plausibility-lm``), else ``None``."""
    if args.max_surprise is not None and not args.plausibility_lm:
        raise CommandError("--max-surprise needs --plausibility-lm")
    if not args.plausibility_lm:
        return None
    from tags.negatives.factory import plausibility_filter

    try:
        return plausibility_filter(args.plausibility_lm, args.max_surprise, device)
    except (FileNotFoundError, OSError, ValueError) as err:
        raise CommandError(f"--plausibility-lm: {one_line(err)}") from None


def _planning(
    args: argparse.Namespace, parser: Any, out: Path, state: Any, needs_vocab: bool
) -> tuple[Any, Any]:
    """The corpus vocabulary (when the refill or the planner needs it) and the edit planner
    over its counts plus ``--background`` (``None`` with ``--unconstrained`` or word
    masking)."""
    from tags.negatives.factory import edit_planner

    config = generation_config(args)
    vocabulary = planner = None
    if needs_vocab or not config.unconstrained:
        vocab_path = Path(args.vocab) if args.vocab else out.with_name(out.name + ".vocab.json")
        vocabulary = _vocabulary(args, parser, vocab_path, state)
    if config.planned:
        try:
            planner = edit_planner(config, vocabulary)
        except ValueError as err:
            raise CommandError(f"--background: {one_line(err)}") from None
    return vocabulary, planner


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


# ---------------------------------------------------------------------- the command
def run(args: argparse.Namespace) -> int:
    from tags.core.io import parse_shard

    out = Path(args.out)
    try:
        apply_preset(args)
        shard = parse_shard(args.shard) if args.shard else (0, 1)
        if args.resume_changed_input and not args.resume:
            raise ValueError("--resume-changed-input goes with --resume")
    except ValueError as err:
        raise CommandError(f"{err}") from err
    error = check_paths(args) or _option_files_problem(args) or _count_only_problem(args)
    if error is None and args.balance and shard[1] > 1:
        error = (
            "--balance weighs the whole output, not one shard: generate the shards, then "
            "`tags balance SHARD0 SHARD1 ... --out OUT` balances them together"
        )
    if error is not None:
        raise CommandError(f"{error}")
    _resolve_balance(args, shard)
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
    existed = {p for p in _own_files(out, args) if p.exists()}
    try:
        if args.count_only:
            return _count_only(args, out, shard)
        return _run_locked(args, out, shard, state, existed)
    finally:  # the main process merges the parts after every process is done, then unlocks
        if lock is not None:
            lock.release()


def _caption_bar(args: argparse.Namespace, shard: tuple[int, int], total: int, stage: str) -> Any:
    """The progress bar of a pass over the captions: their count unsharded, else none known."""
    whole = shard[1] == 1
    return progress(
        total=total if whole else None,
        desc=stage if whole else f"{stage} shard {shard[0]}/{shard[1]}",
        unit=" captions",
        disable=args.progress is False,
        force=args.progress is True,
        every=args.progress_every,
    )


def _resolve_balance(args: argparse.Namespace, shard: tuple[int, int]) -> None:
    """``--balance`` when neither it nor ``--no-balance`` was given: on for a whole output;
    off for one shard of several (:func:`_shard_note` says how to balance them together),
    for the counting pass and for ``--preset paper`` (the paper keeps every negative)."""
    args.balance_pending = args.balance is None and shard[1] > 1 and not args.count_only
    if args.balance is None:
        unconstrained = PRESETS[args.preset].unconstrained
        args.balance = shard[1] == 1 and not args.count_only and not unconstrained
    args.shard = f"{shard[0]}/{shard[1]}" if shard[1] > 1 else None


def _shard_note(args: argparse.Namespace, out: Path) -> None:
    """Tell a shard's run how its output gets balanced (once every shard is done)."""
    if args.balance_pending:
        index, count = args.shard.split("/")
        print(
            f"note: shard {index}/{count} is not balanced alone (balancing weighs the whole "
            f"output): when the {count} shards are done, `tags balance` with their outputs in "
            f"shard order and --out balances them together (--no-balance: no note)",
            file=sys.stderr,
        )


def _count_only_problem(args: argparse.Namespace) -> str | None:
    """A one-line error for options that do not go with ``--count-only``."""
    if not args.count_only:
        return None
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        return "--count-only runs as one process a shard: start one command per --shard I/N"
    conflicts = [
        flag
        for flag, on in (
            ("--balance", args.balance),
            ("--resume", args.resume),
            ("--vocab", args.vocab),
            ("--export", args.export),
            ("--report-skipped", args.report_skipped),
        )
        if on
    ]
    if conflicts:
        return f"--count-only writes only the counts to --out; drop {', '.join(conflicts)}"
    return None


def _count_only(args: argparse.Namespace, out: Path, shard: tuple[int, int]) -> int:
    """``--count-only``: the counting pass over the groups of ``shard``, saved to ``out`` (the
    file ``tags generate`` would write as ``OUT.vocab.json`` for that part of the corpus)."""
    from tags.core.io import ErrorPolicy, InputError, shard_bounds, take_shard
    from tags.negatives.counts import count_groups
    from tags.negatives.pipeline import default_parser
    from tags.negatives.resume import no_captions

    start = time.perf_counter()
    policy = ErrorPolicy(args.on_error, warn=lambda m: tqdm.write(f"warning: {m}", file=sys.stderr))
    try:
        total_groups, total_captions = _count(args)
        if total_captions == 0:
            raise InputError(no_captions(args.captions, args.format, args.split))
        first, stop = shard_bounds(total_groups, *shard)
        bar = _caption_bar(args, shard, total_captions, "count")

        counted = 0

        def tracked(graphs: Iterable[Any]) -> Iterator[Any]:
            nonlocal counted
            with bar:
                for graph in track(graphs, bar):
                    counted += 1
                    yield graph

        vocab = count_groups(
            take_shard(_reader(args, policy), first, stop),
            parser=default_parser(),
            n_process=_workers(args, None),
            progress=tracked,
        )
        vocab.save(out)
    except (InputError, FileNotFoundError, ValueError) as err:
        raise CommandError(f"{one_line(err)}") from err
    part = f" (images {first}-{stop - 1}, shard {shard[0]}/{shard[1]})" if shard[1] > 1 else ""
    print(
        f"counted {counted} captions{part} in {time.perf_counter() - start:.1f}s; bad input "
        f"lines skipped: {policy.count}; counts: {out}"
        + ("; sum the shards with `tags counts merge`" if shard[1] > 1 else ""),
        file=sys.stderr,
    )
    return 0


def _lock_output(out: Path, state: Any) -> tuple[Any, str | None]:
    """The main process locks ``OUT.lock`` (of the resolved ``OUT``: a symlink shares its
    target's lock) for the run; every process gets the same error."""
    from tags.core.lock import LockError, OutputLock, lock_path

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


def _own_files(out: Path, args: argparse.Namespace) -> list[Path]:
    """The files a run on ``out`` writes: ``OUT``, its ``.meta.json`` and (without
    ``--vocab``) its ``.vocab.json``."""
    sidecars = [".meta.json"] + ([] if args.vocab else [".vocab.json"])
    return [out, *(out.with_name(out.name + side) for side in sidecars)]


def _nothing_to_export(args: argparse.Namespace, out: Path, stats: Any, existed: set) -> None:
    """A run with ``--export`` that generated no negative at all: its summary (why), then a
    one-line error; the empty output and the sidecars this run created are removed, so the
    same command runs again once the input is fixed (``--report-skipped`` is kept)."""
    if not out.is_file() or out.stat().st_size > 0:
        return
    print(stats.summary(), file=sys.stderr)
    for path in _own_files(out, args):
        if path == out or path not in existed:
            path.unlink(missing_ok=True)
    skipped = (
        f"; why each caption was skipped: {args.report_skipped}" if args.report_skipped else ""
    )
    raise CommandError(
        f"--export {', '.join(args.export)}: no negatives were generated from --captions "
        f"{args.captions} (see the summary above{skipped}): nothing to export; {out} "
        "was not kept"
    )


def _run_locked(
    args: argparse.Namespace, out: Path, shard: tuple[int, int], state: Any, existed: set
) -> int:
    from parsers.forking import WorkerDiedError
    from tags.core.io import ErrorPolicy, InputError
    from tags.core.regions import MissingFeaturesError
    from tags.negatives.parts import merge_all, part_path

    target = out
    if state is not None:  # every process takes a sub-shard of the requested shard
        procs = state.num_processes
        shard = (shard[0] * procs + state.process_index, shard[1] * procs)
        target = part_path(out, state.process_index, procs)
    policy = ErrorPolicy(args.on_error, warn=lambda m: tqdm.write(f"warning: {m}", file=sys.stderr))
    start = time.perf_counter()
    if args.resume and _balanced_before(out):  # the run had finished: only its balancing
        try:  # ... with the settings and input it ran with
            _check_resume(args, out, resume=True)
        except InputError as err:
            raise CommandError(one_line(err)) from err
        if state is None or state.is_main_process:
            _balance(out, args.report_skipped)
        return 0
    try:
        stats, point = _generate(args, out, target, shard, state, policy)
    except (InputError, MissingFeaturesError, FileNotFoundError, ValueError) as err:
        raise CommandError(f"{one_line(err)}") from err
    except WorkerDiedError as err:  # e.g. out of memory: the finished captions stay
        raise CommandError(
            f"{one_line(err)} (--num-workers {_workers(args, state)}); the finished captions "
            "are kept: run again with --resume"
        ) from err
    except OSError as err:  # e.g. no space left: the finished captions stay, --resume goes on
        where = err.filename or target
        raise CommandError(
            f"{where}: {err.strerror or one_line(err)}; fix that and run again with "
            "--resume (the finished captions are kept)"
        ) from err
    if state is not None:
        state.wait_for_everyone()
        if state.is_main_process:
            merge_all(out, state.num_processes)
            if args.report_skipped:
                merge_all(Path(args.report_skipped), state.num_processes)
    print(stats.summary(), file=sys.stderr)  # what was generated; the balance then says
    if args.balance and (state is None or state.is_main_process):  # what it kept
        _balance(out, args.report_skipped)
    if args.export and (state is None or state.is_main_process):
        _nothing_to_export(args, out, stats, existed)
        try:
            for kind in args.export:
                for path in export_paths(out, kind, args):
                    print(f"exported {path}", file=sys.stderr)
        except (OSError, ValueError) as err:
            raise CommandError(f"export: {one_line(err)}") from err
    if state is None or state.is_main_process:
        _shard_note(args, out)
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


def _check_resume(args: argparse.Namespace, target: Path, resume: bool) -> dict[str, Any]:
    """Refuse a resume of ``target`` with other settings or input than its run had
    (:func:`tags.negatives.resume.check_resume`); the input's fingerprint for its meta. A
    finished, balanced run is checked as an unfinished one (``--resume --no-balance``)."""
    from tags.negatives.resume import check_resume

    return check_resume(
        target.with_name(target.name + ".meta.json"),
        target,
        resume_settings(args),
        args.captions,
        lambda: _reader(args, _policy(args)),
        resume=resume,
        changed_input=args.resume_changed_input,
        warn=lambda message: print(message, file=sys.stderr),
    )


def _balanced_before(out: Path) -> bool:
    """Whether ``--resume`` finds a finished run that began balancing ``out``."""
    from tags.negatives.resume import balance_state

    return balance_state(out.with_name(out.name + ".meta.json")) is not None


def _balance(out: Path, report: str | None = None) -> None:
    """``--balance``: balance the finished ``out`` in place (the meta records it first, so
    a resume after a kill balances again instead of generating); the captions it leaves
    without a negative join the ``--report-skipped`` file (reason ``balance``)."""
    from tags.negatives.balance import balance_file
    from tags.negatives.resume import mark_balance
    from tags.negatives.skipped import SkipReport

    meta = out.with_name(out.name + ".meta.json")
    mark_balance(meta, "started")
    try:
        stats = balance_file(out, out)
    except ValueError as err:  # a file cut outside tags generate: not JSON Lines
        raise CommandError(f"{out}: cannot balance it ({one_line(err)})") from err
    mark_balance(meta, "done")
    added = ""
    if report:
        with SkipReport(report, resume=True) as skipped:
            for image_id, caption_id, caption in stats.emptied:
                skipped.add(image_id, caption_id, caption, "balance")
        added = f"; {sum(skipped.reasons.values())} added to {report} (reason balance)"
    print(stats.summary() + added, file=sys.stderr)


def _check_resumable(out: Path) -> str | None:
    """A one-line error when ``--resume`` would cut a file that is not ``tags generate``
    output (:func:`~tags.core.io.scan_output`), before anything is written."""
    from tags.core.io import InputError, scan_output

    try:
        scan_output(out)
    except InputError as err:
        return str(err)
    return None


def _check_exports(out: Path, args: argparse.Namespace) -> str | None:
    """A one-line error, before generating, for an ``--export`` target that is ``--out`` or
    exists (replaced only with ``--overwrite`` / ``--resume``: this run's own exports)."""
    from tags.core.io import detect_format
    from tags.negatives.exports import NEEDS_NAMES, check_target, default_target

    named = [kind for kind in args.export or () if kind in NEEDS_NAMES]
    fmt = args.format or detect_format(args.captions)
    if named and not args.image_ext and fmt in ("precomp", "lines"):
        return (
            f"--export {named[0]}: --captions {args.captions} names no image files ({fmt} "
            "captions), so every exported row would be a bare image id; pass --image-ext "
            "(e.g. .jpg) or captions with file names (Karpathy JSON, JSONL filename)"
        )
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


def _generate(
    args: argparse.Namespace,
    out: Path,
    target: Path,
    shard: tuple[int, int],
    state: Any,
    policy: Any,
) -> tuple[Any, Any]:
    """Write ``target``; returns the run's statistics and the resume point used."""
    from tags.core.io import InputError, JsonlWriter, shard_bounds, take_shard
    from tags.negatives.factory import create_generator
    from tags.negatives.parses import ParseCache
    from tags.negatives.pipeline import default_parser
    from tags.negatives.resume import no_captions, write_meta

    config = generation_config(args)
    total_groups, total_captions = _count(args)
    if total_captions == 0:
        raise InputError(no_captions(args.captions, args.format, args.split))
    first, stop = shard_bounds(total_groups, *shard)
    meta = target.with_name(target.name + ".meta.json")
    input_print = _check_resume(args, target, args.resume)  # before the vocabulary
    # the counting pass's parses serve generation too (one parse per caption, bounded)
    parser = ParseCache(default_parser())
    generator = create_generator(
        config,
        parser=parser,
        processes=_workers(args, state),
        explain_skipped=bool(args.report_skipped),
        **_components(args, parser, out, state),
    )
    write_meta(meta, resume_settings(args), input_print)
    writer = JsonlWriter(target)
    point = writer.open(resume=args.resume)
    if point.dropped_bytes:
        print(
            f"resume: dropped {point.dropped_bytes} bytes of an unfinished caption", file=sys.stderr
        )
    bar = _caption_bar(args, shard, total_captions, "generate")
    groups = take_shard(_reader(args, policy), first, stop)
    report = _skip_report(args, out, target)
    with writer, bar, report or contextlib.nullcontext():
        for done, result in enumerate(generator.generate(groups, point.last_caption_id), 1):
            writer.write(record.to_dict() for record in result.records)
            if report is not None:
                report.write(result)
            bar.update(generator.stats.skipped + done - bar.n)
    if report is not None:
        print(report.summary(), file=sys.stderr)
    return generator.stats, point


def _skip_report(args: argparse.Namespace, out: Path, target: Path) -> Any:
    """The ``--report-skipped`` writer (of this process's part when ``target`` is one),
    else ``None``."""
    if not args.report_skipped:
        return None
    from tags.negatives.skipped import SkipReport

    path = Path(args.report_skipped)
    if target != out:  # a process's part, merged by the main process
        path = path.with_name(path.name + target.name[len(out.name) :])
    return SkipReport(path, resume=args.resume)
