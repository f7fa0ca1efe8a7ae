"""``tags counts``: the corpus counts files ``tags generate`` plans from.

- ``merge``: sum the counting pass's parts (``tags generate --count-only --shard I/N``) into
  the one counts file ``tags generate --vocab`` reads;
- ``prune``: drop the rare combinations (:mod:`tags.negatives.pruning`), for less memory;
- ``store``: write the counts as a memory-mapped store (:mod:`tags.negatives.store`) that
  every generation process of a machine shares (``tags generate --vocab STORE``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tags.cli._flags import add_out, add_overwrite, check_output_file
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
    add_out(merge, "the summed counts file", required=True, short=True)
    add_overwrite(merge, "an existing --out")
    merge.set_defaults(func=run_merge)
    prune = actions.add_parser(
        "prune",
        help="drop combinations seen fewer than K times (less memory; changes negatives)",
        description="Drop the entries seen fewer than --min-count times from the combination "
        "tables of a counts file (triples, objects seen together, the names of "
        "one image's captions; the counts of single things stay whole). Generation from the "
        "pruned file (--vocab) needs less memory; its negatives differ (docs/generate.md "
        "gives the measured effect).",
    )
    prune.add_argument("counts", metavar="COUNTS", help="a counts file (OUT.vocab.json)")
    prune.add_argument("--min-count", type=int, required=True, metavar="K", help="keep >= K")
    prune.add_argument(
        "--tables",
        default=None,
        help="comma-separated tables to prune (default: all of "
        "triples, subject_predicate, predicate_object, attribute_object, "
        "cooccurrence, verb_object, codescription, verb_codescription)",
    )
    add_out(prune, "the pruned counts file", required=True, short=True)
    add_overwrite(prune, "an existing --out")
    prune.set_defaults(func=run_prune)
    store = actions.add_parser(
        "store",
        help="write counts as a memory-mapped store that all workers share (less memory)",
        description="Write a counts file as a compact store (integer arrays and the keys' "
        "bytes in one file, memory-mapped read-only): every generation process of a machine "
        "shares one copy through the page cache and opening it reads only its header. It also "
        "keeps the planner's index of the counts and WordNet's answers for their object names, "
        "so no process builds them. Generate from it with --vocab STORE; the negatives are the "
        "same as from the file.",
    )
    store.add_argument("counts", metavar="COUNTS", help="a counts file (OUT.vocab.json)")
    add_out(store, "the store to write", required=True, short=True)
    add_overwrite(store, "an existing --out")
    store.set_defaults(func=run_store)


def run_merge(args: argparse.Namespace) -> int:
    from tags.core.io import InputError
    from tags.negatives.counts import merge_counts

    out = Path(args.out)
    parts = [Path(part) for part in args.parts]
    check_output_file(out, parts, args.overwrite)
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


def run_prune(args: argparse.Namespace) -> int:
    from tags.core.io import InputError
    from tags.negatives.pruning import PRUNABLE, prune_counts
    from tags.negatives.vocabulary import SceneGraphVocabulary

    out, source = Path(args.out), Path(args.counts)
    if args.min_count < 1:
        raise CommandError(f"--min-count must be >= 1, got {args.min_count}")
    tables = PRUNABLE if args.tables is None else [t.strip() for t in args.tables.split(",")]
    check_output_file(out, [source], args.overwrite)
    start = time.perf_counter()
    try:
        pruned, kept = prune_counts(SceneGraphVocabulary.load(source), args.min_count, tables)
        pruned.save(out)
    except (InputError, ValueError) as err:
        raise CommandError(one_line(err)) from err
    before, after = (sum(n[i] for n in kept.values()) for i in (0, 1))
    for name, (had, has) in kept.items():
        print(f"  {name:20s} {had:9d} -> {has:9d}", file=sys.stderr)
    print(
        f"pruned {before - after} of {before} combination entries (kept >= {args.min_count}) "
        f"in {time.perf_counter() - start:.1f}s: {source} "
        f"({source.stat().st_size / 1e6:.1f} MB) -> {out} ({out.stat().st_size / 1e6:.1f} MB)",
        file=sys.stderr,
    )
    return 0


def run_store(args: argparse.Namespace) -> int:
    from tags.core.io import InputError
    from tags.negatives.vocabulary import SceneGraphVocabulary

    out, source = Path(args.out), Path(args.counts)
    check_output_file(out, [source], args.overwrite)
    start = time.perf_counter()
    try:
        size = SceneGraphVocabulary.load(source).save_store(out)
    except (InputError, ValueError) as err:
        raise CommandError(one_line(err)) from err
    print(
        f"stored {source} ({source.stat().st_size / 1e6:.1f} MB) in "
        f"{time.perf_counter() - start:.1f}s: {out} ({size / 1e6:.1f} MB)",
        file=sys.stderr,
    )
    return 0
