"""Learn the parser's FACTUAL conventions from the FACTUAL *train* split.

Writes ``parsers/data/lexicon.json`` with two tables, read by the parser:

* ``compound``: what FACTUAL makes of a noun-noun compound "c h": ``merge`` (one object
  "tennis racket"), ``join`` (one word: "cell phone" -> "cellphone"), ``attr`` (h is c: "metal pole"), ``have`` (c have h: "tree branch"),
  ``split`` (two objects) or ``drop`` (only h). Keyed by the pair, with back-off tables by
  modifier and by head.
* ``amod``: ``merge`` ("right leg", "hot dog"), ``attr`` or ``drop`` for an adjective.
* ``prep_subject``: the same keyed by X ("plate of" -> plate, have, Y), the back-off.
* ``objects``: object words FACTUAL uses (>= 3 times), for spelling repair of unknown
  nouns ("bech" -> bench).
* ``prep``: the predicate FACTUAL writes for "X with/in/of Y" given Y ("man with hair" ->
  have, "man in shirt" -> wear), with a direction flag.

Only the train split is read; dev stays for evaluation (the test split is held out).

    python scripts/build_parser_lexicon.py ../shared/data/factual/train.csv
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

from tqdm import tqdm

from parsers import SceneGraphParser, read_factual, read_factual_csv, split_factual
from parsers.evaluation import graph_tuples
from parsers.lexicon import ATTRIBUTE_NORMAL, LearnedLexicon
from parsers.repair import repair_tags
from parsers.rules import NOUN_TAGS

OUT = Path(__file__).resolve().parents[1] / "parsers" / "data" / "lexicon.json"
LEARNED_PREPS = ("with", "in", "of", "on")


def majority(counter: collections.Counter, min_count: int) -> dict[str, list]:
    grouped: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for (key, label), count in counter.items():
        grouped[key][label] += count
    table = {}
    for key, labels in grouped.items():
        total = sum(labels.values())
        label, count = labels.most_common(1)[0]
        if total >= min_count:
            table[key] = [label, count, total]
    return dict(sorted(table.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("train_csv")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    if not Path(args.train_csv).is_file():
        raise SystemExit(
            f"{args.train_csv}: not found; pass FACTUAL train.csv, e.g. ../shared/data/factual/train.csv"
        )

    examples = read_factual_csv(args.train_csv)
    parser = SceneGraphParser()
    lemma = parser.lemmatizer.lemma
    pair, mod, head = collections.Counter(), collections.Counter(), collections.Counter()
    prep, prep_subject = collections.Counter(), collections.Counter()
    amod_pair, amod_mod = collections.Counter(), collections.Counter()
    object_counts = collections.Counter()
    for ex in examples:
        for parts in split_factual(ex.scene_graph):
            for name in (parts[0], parts[2]) if len(parts) == 3 and parts[1] != "is" else parts[:1]:
                if " " not in name and name.isalpha():
                    object_counts[lemma(name, "NOUN")] += 1
    object_vocab = {w: c for w, c in sorted(object_counts.items()) if c >= 3}
    # repairs consult the object vocabulary, as at parse time
    repair_lexicon = LearnedLexicon({"objects": object_vocab})
    docs = parser.nlp.pipe((e.caption for e in examples), batch_size=256)
    for ex, doc in tqdm(zip(examples, docs), total=len(examples), desc="learning"):
        repair_tags(doc, repair_lexicon)
        gold = graph_tuples(read_factual(ex.scene_graph), lemma)
        objects = {o[0] for o in gold["object"]}
        for t in doc:
            if t.tag_ not in NOUN_TAGS:
                continue
            h = lemma(t.text, "NOUN")
            comps = [c for c in t.lefts if c.dep_ in ("compound", "nmod") and c.tag_ in NOUN_TAGS]
            if len(comps) == 1:
                c = comps[0]
                cl = lemma(c.text, "NOUN")
                if f"{c.lower_}{h}" in objects or f"{cl}{h}" in objects:
                    label = "join"  # "cell phone" -> cellphone
                elif f"{c.lower_} {h}" in objects or f"{cl} {h}" in objects:
                    label = "merge"
                elif (cl, "have", h) in gold["relation"]:
                    label = "have"
                elif {(h, c.lower_), (h, ATTRIBUTE_NORMAL.get(c.lower_, c.lower_))} & gold[
                    "attribute"
                ]:
                    label = "attr"
                elif h in objects and cl in objects:
                    label = "split"
                elif h in objects:
                    label = "drop"
                else:
                    label = None
                if label:
                    pair[(f"{cl} {h}", label)] += 1
                    mod[(cl, label)] += 1
                    head[(h, label)] += 1
            for a in t.lefts:
                if a.dep_ != "amod" or a.tag_ not in {"JJ", "JJR", "JJS", "VBN", "VBG"}:
                    continue
                al = a.lower_
                if f"{al} {h}" in objects:
                    label = "merge"
                elif (h, lemma(a.text, "ADJ")) in gold["attribute"] or (h, al) in gold["attribute"]:
                    label = "attr"
                elif h in objects:
                    label = "drop"
                else:
                    continue
                amod_pair[(f"{al} {h}", label)] += 1
                amod_mod[(al, label)] += 1
            for p in t.children:
                if p.dep_ != "prep" or p.lower_ not in LEARNED_PREPS:
                    continue
                y = next((c for c in p.children if c.dep_ == "pobj"), None)
                if y is None or y.tag_ not in NOUN_TAGS:
                    continue
                yl = lemma(y.text, "NOUN")
                for s, r, o in gold["relation"]:
                    if (s, o) == (h, yl):
                        prep[(f"{p.lower_} {yl}", f"{r}>")] += 1
                        prep_subject[(f"{h} {p.lower_}", f"{r}>")] += 1
                    elif (s, o) == (yl, h):
                        prep[(f"{p.lower_} {yl}", f"{r}<")] += 1
                        prep_subject[(f"{h} {p.lower_}", f"{r}<")] += 1
    lexicon = {
        "objects": object_vocab,
        "compound": {
            "pair": majority(pair, 1),
            "mod": majority(mod, 3),
            "head": majority(head, 3),
        },
        "amod": {"pair": majority(amod_pair, 2), "mod": majority(amod_mod, 3)},
        "prep": majority(prep, 2),
        "prep_subject": majority(prep_subject, 3),
    }
    Path(args.out).write_text(json.dumps(lexicon, indent=0, sort_keys=True) + "\n")
    print(
        f"wrote {args.out}: "
        + ", ".join(f"{k} {len(v)}" for k, v in lexicon["compound"].items())
        + f", amod {len(lexicon['amod']['pair'])}, prep {len(lexicon['prep'])}"
        + f", objects {len(lexicon['objects'])}"
    )


if __name__ == "__main__":
    main()
