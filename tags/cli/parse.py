"""``tags parse``: captions (one a line) -> scene graphs (FACTUAL strings or JSON lines)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from tags.cli._flags import add_out, add_overwrite, add_progress, deprecated
from tags.cli._types import non_negative_float, positive_int
from tags.core.errors import CommandError
from tags.core.lock import LockError, OutputLock, lock_path
from tags.core.progress import DEFAULT_EVERY, progress, track


@dataclass
class ParseStats:
    lines: int = 0
    empty: int = 0
    undecodable: int = 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "parse",
        help="parse captions into scene graphs",
        description="Parse captions (one per line) into scene graphs. Output line i belongs "
        "to input line i: empty lines give empty graphs, undecodable lines are reported "
        "by line number and give empty graphs (or stop the run with --strict).",
    )
    p.add_argument("input", nargs="?", default="-", help="caption file, or - for stdin")
    add_out(p, "output file (default: stdout)", default="-", short=True, old="--output")
    p.add_argument(
        "--format",
        choices=("factual", "json"),
        default="factual",
        help="factual: 'caption<TAB>graph' lines; json: one SceneGraph object a line",
    )
    p.add_argument("--model", default=None, help="spaCy model package (default: auto)")
    p.add_argument("--batch-size", type=positive_int, default=256)
    p.add_argument("--num-workers", type=positive_int, default=1, help="parser processes (fork)")
    deprecated(p, "--workers", "--num-workers", "num_workers", type=positive_int)
    p.add_argument("--max-chars", type=positive_int, default=None, help="cut longer captions")
    p.add_argument("--strict", action="store_true", help="stop at the first undecodable line")
    add_overwrite(p, "an existing --out")
    add_progress(p)
    p.add_argument(
        "--progress-every",
        type=non_negative_float,
        default=DEFAULT_EVERY,
        metavar="SECONDS",
        help="seconds between progress lines when stderr is not a terminal (0: every update)",
    )
    p.set_defaults(func=run)


def check_paths(args: argparse.Namespace) -> str | None:
    """A one-line error for a bad ``input`` / ``--out``, else ``None``."""
    if args.input != "-":
        source = Path(args.input)
        if source.is_dir():
            return f"input {source} is a directory; pass a caption file (one caption a line)"
        if not source.is_file():
            return f"input {source} not found"
    if args.out != "-":
        sink = Path(args.out)
        if sink.is_dir():
            return f"--out {sink} is a directory; pass a file name"
        if not sink.parent.is_dir():
            return f"--out {sink}: directory {sink.parent} does not exist"
        if sink.exists() and not args.overwrite:
            return f"--out {sink} exists; pass --overwrite to replace it"
        if args.input != "-" and sink.resolve() == Path(args.input).resolve():
            return f"--out {sink} is the input file"
    return None


def read_captions(
    stream: BinaryIO, stats: ParseStats, strict: bool, warn: TextIO, name: str = "input"
) -> Iterator[str]:
    """Decode UTF-8 lines; a bad line is reported with ``name`` and its number and yields ""
    (``strict``: raises a :class:`~tags.core.errors.CommandError` instead)."""
    for number, raw in enumerate(stream, start=1):
        stats.lines += 1
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            stats.undecodable += 1
            message = f"{name} line {number}: not valid UTF-8 ({err.reason} at byte {err.start})"
            if strict:
                raise CommandError(
                    f"{message}; fix the line, or drop --strict to write an empty graph for it"
                ) from None
            print(f"warning: {message}; writing an empty graph", file=warn)
            yield ""
            continue
        text = text.rstrip("\r\n")
        if not text.strip():
            stats.empty += 1
        yield text


def run(args: argparse.Namespace) -> int:
    error = check_paths(args)
    if error is not None:
        raise CommandError(f"{error}")
    from parsers.scene_graph_parser import DEFAULT_MAX_CHARS, SceneGraphParser

    lock = None
    if args.out != "-":
        try:
            lock = OutputLock(lock_path(args.out), f"--out {args.out}").acquire()
        except LockError as err:
            raise CommandError(f"{err}") from err
    try:
        return _parse(args, SceneGraphParser, DEFAULT_MAX_CHARS)
    finally:
        if lock is not None:
            lock.release()


def _parse(args: argparse.Namespace, parser_class: Any, default_max_chars: int) -> int:
    from tags.cli._model import spacy_parser

    parser = spacy_parser(  # a spaCy model that is not installed: one line naming --model
        args.model,
        parser_class,
        batch_size=args.batch_size,
        max_chars=args.max_chars or default_max_chars,
    )
    stats = ParseStats()
    source = sys.stdin.buffer if args.input == "-" else open(args.input, "rb")  # noqa: SIM115
    # --out (a symlink: its target): written to a temporary sibling, moved into place when
    # every line is parsed (a failed run leaves nothing; an earlier output stays until then)
    target = None if args.out == "-" else Path(args.out).resolve()
    tmp = None if target is None else target.with_name(f".{target.name}.tmp")
    sink = sys.stdout if tmp is None else open(tmp, "w", encoding="utf-8")  # noqa: SIM115
    name = "stdin" if args.input == "-" else f"input {args.input}"
    start = time.perf_counter()
    bar = progress(
        desc="parse",
        unit=" captions",
        disable=args.progress is False,
        force=args.progress is True,
        every=args.progress_every,
    )
    done = False
    try:
        captions = read_captions(source, stats, args.strict, sys.stderr, name)
        graphs = parser.pipe(captions, n_process=args.num_workers)
        for graph in track(graphs, bar):
            if args.format == "json":
                sink.write(json.dumps(graph.to_dict(), ensure_ascii=False) + "\n")
            else:
                caption = " ".join(graph.caption.split())
                sink.write(f"{caption}\t{graph.to_factual()}\n")
        done = True
    finally:
        bar.close()
        if source is not sys.stdin.buffer:
            source.close()
        if sink is not sys.stdout:
            sink.close()
        else:
            sink.flush()
        if tmp is not None:
            if done:
                os.replace(tmp, target)
            else:
                tmp.unlink(missing_ok=True)
    seconds = time.perf_counter() - start
    print(
        f"parsed {stats.lines} lines in {seconds:.1f}s "
        f"({stats.empty} empty, {stats.undecodable} undecodable, "
        f"{parser.truncated} truncated to {parser.max_chars} chars)",
        file=sys.stderr,
    )
    return 0
