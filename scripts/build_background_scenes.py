"""Build the planner's built-in background counts from the FACTUAL train captions.

Parses every caption of the FACTUAL *train* split (Visual Genome region captions, MIT
licence) with this project's parser and writes their
:class:`~tags.negatives.scenes.SceneCounts` to
``tags/negatives/data/background_factual.json.gz`` (see :mod:`tags.negatives.background`).
Only the train split is read; dev and the held-out test split stay unseen.

    python scripts/build_background_scenes.py ../shared/data/factual/train.csv
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
from pathlib import Path

from tqdm import tqdm

from tags.negatives.background import BUILTIN
from tags.negatives.pipeline import default_parser
from tags.negatives.scenes import SceneCounts


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cli.add_argument("train_csv", help="FACTUAL train.csv (column 'caption')")
    cli.add_argument("--out", default=str(BUILTIN["factual"]))
    cli.add_argument("--num-workers", "--workers", dest="workers", type=int, default=1)
    args = cli.parse_args()
    if not Path(args.train_csv).is_file():
        raise SystemExit(
            f"{args.train_csv}: not found; pass FACTUAL train.csv, e.g. ../shared/data/factual/train.csv"
        )
    with open(args.train_csv, newline="", encoding="utf-8") as handle:
        texts = [" ".join(row["caption"].split()) for row in csv.DictReader(handle)]
    counts = SceneCounts()
    parser = default_parser()
    for graph in tqdm(parser.pipe(texts, n_process=args.workers), total=len(texts)):
        counts.add_graph(graph)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # mtime=0: the same captions give the same bytes
    with open(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as handle:
        handle.write(json.dumps(counts.to_dict(), ensure_ascii=False).encode("utf-8"))
    print(f"{len(texts)} captions -> {out} ({out.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
