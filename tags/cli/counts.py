"""``tags counts merge``: sum the counting pass's parts (``tags generate --count-only
--shard I/N``) into the one counts file ``tags generate --vocab`` reads."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tags.cli._flags import add_overwrite
from tags.core.errors import CommandError, one_line


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "counts",
        help="work with corpus counts files (merge the parts of a sharded counting pass)",
        description="Corpus counts: the vocabulary and scene counts that `tags generate` "
        "plans and refills from (OUT.vocab.json, or --count-only's output).",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    merge = actions.add_parser(
        "merge",
        help="sum counts files into one",
        description="Sum counts files (the shards of `tags generate --count-only --shard "
        "I/N`) into one file, byte-identical to a single counting pass over the whole "
        "corpus whatever the shards and their order; generate from it with --vocab.",
    )
    merge.add_argument("parts", nargs="+", metavar="PART", help="counts files to sum")
    merge.add_argument("--out", "-o", required=True, help="the summed counts file")
    add_overwrite(merge, "an existing --out")
    merge.set_defaults(func=run_merge)


def run_merge(args: argparse.Namespace) -> int:
    from tags.core.io import InputError
    from tags.negatives.counts import merge_counts

    out = Path(args.out)
    parts = [Path(part) for part in args.parts]
    for part in parts:
        if part.is_dir():
            raise CommandError(f"{part} is a directory; pass counts files")
        if not part.is_file():
            raise CommandError(f"{part}: no such counts file")
        if part.resolve() == out.resolve():
            raise CommandError(f"--out {out} is one of the parts; write the sum elsewhere")
    if out.is_dir():
        raise CommandError(f"--out {out} is a directory; pass a file name")
    if not out.parent.is_dir():
        raise CommandError(f"--out {out}: directory {out.parent} does not exist")
    if out.exists() and not args.overwrite:
        raise CommandError(f"--out {out} exists; pass --overwrite to replace it")
    start = time.perf_counter()
    try:
        merge_counts(parts).save(out)
    except (InputError, ValueError) as err:
        raise CommandError(one_line(err)) from err
    print(
        f"merged {len(parts)} counts files in {time.perf_counter() - start:.1f}s: {out}",
        file=sys.stderr,
    )
    return 0
