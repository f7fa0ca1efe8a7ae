"""``tags eval-parser``: SPICE-style tuple F1 of the parser against FACTUAL gold graphs."""

from __future__ import annotations

import argparse
import json
import time


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "eval-parser",
        help="score the scene-graph parser on a FACTUAL CSV",
        description="Mean per-caption F1, micro P/R/F1 per tuple type and set match of the "
        "parser's graphs against the gold graphs of a FACTUAL CSV (caption, scene_graph).",
    )
    p.add_argument("csv", help="FACTUAL CSV file")
    p.add_argument("--limit", type=int, default=None, help="score the first N rows only")
    p.add_argument("--model", default=None, help="spaCy model package (default: auto)")
    p.add_argument("--json", action="store_true", help="print the scores as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from parsers import read_factual, read_factual_csv
    from parsers.evaluation import score_graphs
    from parsers.scene_graph_parser import SceneGraphParser

    examples = read_factual_csv(args.csv)[: args.limit]
    gold = [read_factual(e.scene_graph, e.caption) for e in examples]
    parser = SceneGraphParser(args.model)
    start = time.perf_counter()
    predicted = parser.parse_batch([e.caption for e in examples])
    seconds = time.perf_counter() - start
    scores = score_graphs(predicted, gold, parser.lemmatizer.lemma)
    if args.json:
        print(json.dumps(scores.to_dict(), indent=2))
    else:
        print(scores.format())
        print(f"parsed {len(examples)} captions in {seconds:.2f}s")
    return 0
