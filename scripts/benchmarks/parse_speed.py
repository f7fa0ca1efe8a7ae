"""Scene-graph parsing throughput on the Flickr30K captions, side by side in one run.

Rows (captions/s over the same captions):
  * stock spaCy   - ``nlp.pipe`` with the model's full pipeline (BLIS gemm, attribute
                    ruler, lemmatizer; NER excluded) and no graph extraction: the cost of
                    the parse alone, done the default way
  * one by one    - ``SceneGraphParser.parse`` per caption (how sng_parser is used)
  * parse_batch   - ``SceneGraphParser.parse_batch`` in one process
  * parse_batch xN - the same with N forked worker processes

    python scripts/benchmarks/parse_speed.py [--captions FILE ...] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

#: The default captions: the Flickr30K test sample shipped with the tests (pass the full
#: splits, e.g. ../shared/data/flickr30k/{dev,test}_caps.txt, for the published figures).
SAMPLE = Path(__file__).resolve().parents[2] / "tests" / "data" / "flickr30k_test_caps_sample.txt"


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--captions",
        nargs="*",
        default=[str(SAMPLE)],
        help="caption files, one caption a line (default: the 300-caption test sample)",
    )
    ap.add_argument(
        "--num-workers", "--workers", dest="workers", type=int, default=os.cpu_count() or 2
    )
    ap.add_argument("--one-by-one", type=int, default=2000, help="captions for that row")
    args = ap.parse_args()
    missing = [f for f in args.captions if not Path(f).is_file()]
    if missing:
        raise SystemExit(f"parse_speed.py: --captions {missing[0]}: no such file")

    import spacy

    from parsers.nlp import find_model_name
    from parsers.scene_graph_parser import SceneGraphParser

    captions = [
        line.strip()
        for f in args.captions
        for line in Path(f).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    n = len(captions)
    print(
        f"{n} captions from {', '.join(Path(f).name for f in args.captions)}; "
        f"{os.cpu_count()} CPU cores"
    )

    stock = spacy.load(find_model_name(), exclude=["ner"])
    parser = SceneGraphParser()
    parser.parse_batch(captions[:200])  # warm caches and lazy imports alike
    list(stock.pipe(captions[:200]))

    rows = []
    sec = timed(lambda: list(stock.pipe(captions, batch_size=256)))
    rows.append(("stock spaCy nlp.pipe (parse only)", n / sec))
    k = min(args.one_by_one, n)
    sec = timed(lambda: [parser.parse(c) for c in captions[:k]])
    rows.append((f"SceneGraphParser.parse one by one ({k})", k / sec))
    sec = timed(lambda: parser.parse_batch(captions))
    rows.append(("SceneGraphParser.parse_batch, 1 process", n / sec))
    if args.workers > 1:
        sec = timed(lambda: parser.parse_batch(captions, n_process=args.workers))
        rows.append((f"SceneGraphParser.parse_batch, {args.workers} processes", n / sec))

    base = rows[0][1]
    print(f"\n{'':<48}{'captions/s':>12}{'vs stock':>10}")
    for name, rate in rows:
        print(f"{name:<48}{rate:>12.0f}{rate / base:>9.2f}x")


if __name__ == "__main__":
    main()
