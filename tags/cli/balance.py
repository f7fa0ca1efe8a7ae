"""``tags balance``: drop negatives until no edited word tells a negative from its caption
(:mod:`tags.negatives.balance`); for the outputs of the shards of ``tags generate --shard
I/N`` (balanced together, in shard order) or of the datasets / Ray engines (``tags
generate`` balances one whole run itself)."""

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
        description="Balance a `tags generate` output (JSON Lines), or the outputs of the "
        "shards of one run given in shard order (joined, then balanced as one run's): "
        "within each kind of edit, every edited word (alone, and with the word before or "
        "after it) ends up the false word at most 1.25 x (+3) as often as the true word, "
        "and back, so that the words alone no longer tell a negative from its caption. "
        "Negatives are dropped, from captions that keep another first; the rest are "
        "renumbered per caption.",
    )
    p.add_argument(
        "negatives",
        metavar="NEGATIVES",
        nargs="+",
        help="tags generate output (.jsonl); several: the shards' outputs, in shard order",
    )
    add_out(p, "the balanced output", required=True, short=True)
    add_overwrite(p, "an existing --out")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tags.core.io import InputError
    from tags.negatives.balance import balance_file

    sources, out = [Path(n) for n in args.negatives], Path(args.out)
    check_output_file(out, sources, args.overwrite)
    start = time.perf_counter()
    for source in sources:
        try:
            _check_finished(source)
        except (InputError, ValueError) as err:
            raise CommandError(f"{source}: {one_line(err)}") from err
    error = shard_order_problem(sources)
    if error is not None:
        raise CommandError(error)
    try:
        stats = balance_file(sources, out)
    except (ValueError, KeyError) as err:
        raise CommandError(f"{' '.join(map(str, sources))}: {one_line(err)}") from err
    print(f"{stats.summary()} in {time.perf_counter() - start:.1f}s: {out}", file=sys.stderr)
    return 0


def _check_finished(source: Path) -> None:
    """:class:`~tags.core.io.InputError` unless ``source`` is a whole ``tags generate``
    output."""
    from tags.core.io import InputError, scan_output

    point = scan_output(source)
    tail = source.stat().st_size - point.offset
    if tail:
        raise InputError(
            f"ends in an unfinished caption ({tail} bytes): finish the run with tags "
            "generate --resume first"
        )


def shard_order_problem(sources: list[Path]) -> str | None:
    """A one-line error when ``sources`` are not every shard of one run in shard order, as
    their ``.meta.json`` files say (outputs without a recorded shard are not checked)."""
    from tags.core.io import InputError
    from tags.negatives.resume import read_meta

    metas = {}
    for source in sources:
        meta = source.with_name(source.name + ".meta.json")
        try:
            saved = read_meta(meta) if meta.is_file() else {}
        except InputError:  # not a run's settings: nothing to check the order by
            saved = {}
        if isinstance(saved.get("shard"), str):
            metas[source] = saved
    if len(metas) != len(sources):
        return None
    shards = [tuple(map(int, metas[s]["shard"].split("/"))) for s in sources]
    count = shards[0][1]
    if [s[1] for s in shards] != [count] * len(shards) or len(shards) != count:
        found = " ".join(metas[s]["shard"] for s in sources)
        return f"the outputs are shards {found}: give all {count} shards of one run"
    if [s[0] for s in shards] != list(range(count)):
        order = " ".join(str(s[0]) for s in shards)
        return f"the shards are given in the order {order}: give them in shard order 0..{count - 1}"
    first = {k: v for k, v in metas[sources[0]].items() if k not in ("shard", "balanced")}
    for source in sources[1:]:
        other = {k: v for k, v in metas[source].items() if k not in ("shard", "balanced")}
        if other != first:
            differ = sorted(k for k in first.keys() | other.keys() if first.get(k) != other.get(k))
            return (
                f"{source} is a shard of another run than {sources[0]} (its {', '.join(differ)} "
                "differ): give the shards of one run"
            )
    return None
