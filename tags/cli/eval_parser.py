"""``tags eval-parser``: SPICE-style tuple F1 of the parser against FACTUAL gold graphs."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from tags.cli._types import positive_int

#: What a FACTUAL CSV holds (the end of every error about one).
CSV_HINT = "pass a FACTUAL CSV with columns caption and scene_graph (a UTF-8 text file)"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "eval-parser",
        help="score the scene-graph parser on a FACTUAL CSV",
        description="Mean per-caption F1, micro P/R/F1 per tuple type and set match of the "
        "parser's graphs against the gold graphs of a FACTUAL CSV (caption, scene_graph).",
    )
    p.add_argument("csv", help="FACTUAL CSV file")
    p.add_argument(
        "--limit", type=positive_int, default=None, help="score the first N rows only (N >= 1)"
    )
    p.add_argument("--model", default=None, help="spaCy model package (default: auto)")
    p.add_argument("--json", action="store_true", help="print the scores as JSON")
    p.set_defaults(func=run)


def read_gold(path: str, limit: int | None) -> tuple[list[Any], list[Any]]:
    """The first ``limit`` examples of a FACTUAL CSV and their gold graphs; a file that is
    not one (binary, empty, missing columns, a row cut short, a bad scene-graph string) is a
    :class:`~tags.core.errors.CommandError` naming the file and the row."""
    import csv

    from parsers import read_factual, read_factual_csv
    from tags.core.errors import CommandError

    try:
        examples = read_factual_csv(path)[:limit]
    except UnicodeDecodeError as err:
        raise CommandError(f"{path}: not UTF-8 text (byte {err.start}); {CSV_HINT}") from None
    except (csv.Error, ValueError) as err:
        message = str(err) if str(err).startswith(str(path)) else f"{path}: {err}"
        raise CommandError(f"{message}; {CSV_HINT}") from None
    if not examples:
        raise CommandError(f"{path}: no rows after the header; {CSV_HINT}")
    gold = []
    for row, example in enumerate(examples, 1):
        if example.caption is None or example.scene_graph is None:
            raise CommandError(f"{path}: data row {row} has too few columns; {CSV_HINT}")
        try:
            gold.append(read_factual(example.scene_graph, example.caption))
        except ValueError as err:
            raise CommandError(
                f"{path}: data row {row}: {err}; fix the scene_graph or remove the row"
            ) from None
    return examples, gold


def run(args: argparse.Namespace) -> int:
    from parsers.evaluation import score_graphs
    from tags.cli._model import spacy_parser

    examples, gold = read_gold(args.csv, args.limit)
    parser = spacy_parser(args.model)
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
