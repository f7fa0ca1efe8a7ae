"""``tags balance``: drop negatives until no edited word tells a negative from its caption
(:mod:`tags.negatives.balance`); for the concatenated outputs of ``tags generate --shard``
or of the datasets / Ray engines (``tags generate --balance`` does it for one run)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tags.cli._flags import add_out, add_overwrite, check_output_file
from tags.core.errors import CommandError, one_line


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "balance",
        help="drop negatives until no edited word is more often false than true",
        description="Balance a `tags generate` output (JSON Lines): within each kind of edit, "
        "every edited word (alone, and with the word before or after it) ends up the false "
        "word at most 1.25 x (+3) as often as the true word, and back, so that the words "
        "alone no longer tell a negative from its caption. Negatives are dropped, from "
        "captions that keep another first; the rest are renumbered per caption.",
    )
    p.add_argument("negatives", metavar="NEGATIVES", help="tags generate output (.jsonl)")
    add_out(p, "the balanced output", required=True, short=True)
    add_overwrite(p, "an existing --out")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tags.core.io import InputError, scan_output
    from tags.negatives.balance import balance_file

    source, out = Path(args.negatives), Path(args.out)
    check_output_file(out, [source], args.overwrite)
    start = time.perf_counter()
    try:
        point = scan_output(source)  # a file tags generate wrote, whole
        tail = source.stat().st_size - point.offset
        if tail:
            raise InputError(
                f"ends in an unfinished caption ({tail} bytes): finish the run with tags "
                "generate --resume first"
            )
        stats = balance_file(source, out)
    except (InputError, ValueError, KeyError) as err:
        raise CommandError(f"{source}: {one_line(err)}") from err
    print(f"{stats.summary()} in {time.perf_counter() - start:.1f}s: {out}", file=sys.stderr)
    return 0
