"""The text shortcut of generated negatives, before and after ``--balance``.

For each ``tags generate`` output given (``NAME=PATH[:CAPTIONS]``, CAPTIONS the number of
input captions, for coverage), it reports the trained text-only check: a 1-4-gram logistic
regression fitted on the (caption, negative) pairs of half the captions and scored on the
pairs of the other half, mean of 3 seeded splits (``held_out_pair_accuracy``; 50 %: the
words alone tell nothing), overall and per kind of edit (object, attribute, relation; a kind
with fewer than ``--min-pairs`` pairs is left out), for:

- ``plain``: the output as generated, all its pairs;
- ``plain@n``: a seeded sample of it with as many pairs as the balanced set (the check finds
  more with more pairs, so compare at equal counts);
- ``balanced``: :func:`tags.negatives.balance.balance_records` of it (what ``--balance``
  keeps), with the coverage it costs.

    python scripts/benchmarks/text_shortcut.py flickr30k=runs/test.jsonl:5000 \\
        factual=runs/factual.jsonl:1000
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/: the research package
from research.quality import KINDS, shortcut_figures


def main() -> None:
    from tags.negatives.balance import balance_records

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "outputs",
        nargs="+",
        metavar="NAME=PATH[:CAPTIONS]",
        help="a tags generate output and the number of captions it was made from (coverage)",
    )
    ap.add_argument("--min-pairs", type=int, default=100)
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args()
    table = []
    for spec in args.outputs:
        name, _, rest = spec.partition("=")
        path, _, total = rest.partition(":")
        if not name or not Path(path).is_file():
            raise SystemExit(
                f"{spec}: expected NAME=PATH[:CAPTIONS] with PATH a tags generate output"
            )
        if total and not total.isdigit():
            raise SystemExit(f"{spec}: CAPTIONS is the number of input captions, got {total!r}")
        rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]
        keep = balance_records(rows)
        kept = [r for r, k in zip(rows, keep) if k]
        sample = random.Random(0).sample(rows, len(kept))
        captions = int(total) if total else None
        for label, subset in (("plain", rows), ("plain@n", sample), ("balanced", kept)):
            row = {"corpus": name, "set": label, **shortcut_figures(subset, args.min_pairs)}
            covered = len({r["caption_id"] for r in subset})
            row["coverage"] = covered / captions if captions else None
            table.append(row)
            print(json.dumps(row), flush=True)
    print(f"\n{'corpus':12s} {'set':9s} {'pairs':>6s} {'coverage':>8s} {'overall':>7s} "
          + " ".join(f"{k:>9s}" for k in KINDS))  # fmt: skip
    for r in table:
        coverage = f"{r['coverage']:.1%}" if r["coverage"] is not None else "-"
        kinds = " ".join(f"{r[k]:9.1%}" if k in r else f"{'-':>9s}" for k in KINDS)
        print(f"{r['corpus']:12s} {r['set']:9s} {r['pairs']:6d} {coverage:>8s} "
              f"{r['overall']:7.1%} {kinds}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
