"""Our parser against sng_parser (vacancy/SceneGraphParser) on one FACTUAL CSV, one run.

Both parsers run on the same spaCy model and are scored with the same metric
(:mod:`parsers.evaluation`); speed is captions/s, sng_parser one caption at a time (its
API), ours one by one and with ``parse_batch``.

sng_parser is not a dependency; install it anywhere and point PYTHONPATH at it:

    pip install --no-deps --target /tmp/sng SceneGraphParser
    PYTHONPATH=/tmp/sng python scripts/benchmarks/parser_baselines.py ../shared/data/factual/dev.csv
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from parsers import Attribute, Entity, Relation, SceneGraph, read_factual, read_factual_csv
from parsers.evaluation import score_graphs
from parsers.lexicon import NUMBER_WORDS
from parsers.nlp import find_model_name
from parsers.scene_graph_parser import SceneGraphParser


def sng_to_graph(caption: str, parsed: dict) -> SceneGraph:
    """sng_parser's output as a SceneGraph: entity lemma heads (with compounds), amod
    modifiers as attributes, nummod as counts, lemmatized relations."""
    graph = SceneGraph(caption=caption)
    for ent in parsed["entities"]:
        quantity = None
        for mod in ent["modifiers"]:
            word = mod["span"].lower()
            if mod["dep"] == "nummod":
                quantity = int(word) if word.isdigit() else NUMBER_WORDS.get(word)
        graph.entities.append(Entity(name=ent["lemma_head"].lower(), quantity=quantity))
        index = len(graph.entities) - 1
        graph.attributes.extend(
            Attribute(index, mod["lemma_span"].lower())
            for mod in ent["modifiers"]
            if mod["dep"] == "amod"
        )
    graph.relations.extend(
        Relation(r["subject"], r["lemma_relation"].lower(), r["object"])
        for r in parsed["relations"]
    )
    return graph


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    args = ap.parse_args()
    if not Path(args.csv).is_file():
        raise SystemExit(
            f"{args.csv}: not found; pass a FACTUAL CSV (caption, scene_graph), e.g. ../shared/data/factual/dev.csv"
        )

    examples = read_factual_csv(args.csv)
    captions = [e.caption for e in examples]
    gold = [read_factual(e.scene_graph, e.caption) for e in examples]
    ours = SceneGraphParser()
    lemma = ours.lemmatizer.lemma
    ours.parse_batch(captions[:50])

    rows = []
    start = time.perf_counter()
    predicted = ours.parse_batch(captions)
    batch_rate = len(captions) / (time.perf_counter() - start)
    start = time.perf_counter()
    one_by_one = [ours.parse(c) for c in captions]
    single_rate = len(captions) / (time.perf_counter() - start)
    assert [g.to_dict() for g in one_by_one] == [g.to_dict() for g in predicted]
    rows.append(
        ("tags SceneGraphParser (parse_batch)", score_graphs(predicted, gold, lemma), batch_rate)
    )
    rows.append(("tags SceneGraphParser (one by one)", rows[0][1], single_rate))

    try:
        import sng_parser
    except ImportError:
        print("sng_parser not importable: only our parser is reported")
    else:
        sng = sng_parser.Parser("spacy", model=find_model_name())
        sng.parse(captions[0])
        start = time.perf_counter()
        parsed = [sng.parse(c) for c in captions]
        rate = len(captions) / (time.perf_counter() - start)
        graphs = [sng_to_graph(c, p) for c, p in zip(captions, parsed)]
        rows.append(("sng_parser (one by one)", score_graphs(graphs, gold, lemma), rate))

    print(f"{len(captions)} captions from {args.csv}\n")
    head = f"{'parser':<38}{'mean F1':>8}{'set':>7}{'obj F1':>8}{'attr F1':>8}{'rel F1':>8}{'capt/s':>9}"
    print(head)
    for name, s, rate in rows:
        print(
            f"{name:<38}{s.mean_f1:8.1f}{s.set_match:7.1f}{s.micro['object']['f1']:8.1f}"
            f"{s.micro['attribute']['f1']:8.1f}{s.micro['relation']['f1']:8.1f}{rate:9.0f}"
        )


if __name__ == "__main__":
    main()
