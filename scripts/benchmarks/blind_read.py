"""Independent blind read of generated negatives: build the reader's file, then score it.

    python scripts/benchmarks/blind_read.py make neg.jsonl --out read/ --key key.json --seed 22
    # give an annotator read/items.md only; they write read/reader_labels.json
    python scripts/benchmarks/blind_read.py score read/ --key key.json

``make`` draws 50 (``--size``) random negatives (any ``negative_index``, one per caption) of a
``tags generate`` JSONL file and adds 10 hidden controls made from other captions of the same
file: 5 broken (a person noun -> "brick", a dropped word, a doubled word, two words swapped, a
last word -> "the of") and 5 still true ("A" <-> "The", "Here, ..."). The 60 pairs are
shuffled into ``items.md``; the key (kinds and edits) goes to ``--key``, outside the folder the
annotator sees. ``--exclude`` lists earlier keys whose captions are left out, so reads do not
share captions.

``score`` reads ``reader_labels.json`` (a list of ``{"id", "grammatical", "plausible",
"false", "note"}`` with "yes"/"no"/"unsure") and prints how many negatives are good (three
yeses), how many controls were caught, and every failure with its edit. See docs/generate.md
("Independent blind reads").
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/: the research package
from research.controls import broken_control, still_true_control

QUESTIONS = ("grammatical", "plausible", "false")


def make(
    negatives: Path, out: Path, key: Path, seed: int, exclude: list[Path], size: int = 50
) -> None:
    rng = random.Random(seed)
    used = {item["reference"] for path in exclude for item in json.loads(path.read_text("utf-8"))}
    records = [json.loads(line) for line in negatives.open(encoding="utf-8") if line.strip()]
    records = [r for r in records if r["positive"] not in used]
    rng.shuffle(records)
    sample, seen = [], set()
    for record in records:
        if record["positive"] not in seen:
            seen.add(record["positive"])
            sample.append(record)
        if len(sample) == size:
            break
    if len(sample) < size:
        raise SystemExit(f"{negatives}: only {len(sample)} captions left to sample")
    others = sorted({r["positive"] for r in records} - seen)
    controls = [c for c in rng.sample(others, min(len(others), 40)) if len(c.split()) >= 5][:10]
    if len(controls) < 10:  # controls come from the file's other captions
        print(
            f"warning: only {len(controls)} hidden controls ({min(len(controls), 5)} broken, "
            f"{max(len(controls) - 5, 0)} still true; 10 wanted): {negatives} has only "
            f"{len(others)} other captions to make them from (5 words or more)",
            file=sys.stderr,
        )
    items = [
        {"kind": "neg", "reference": r["positive"], "candidate": r["negative"], "edits": r["edits"]}
        for r in sample
    ]
    items += [
        {"kind": "ctrl_broken", "reference": c, "candidate": broken_control(c, i)}
        for i, c in enumerate(controls[:5])
    ]
    items += [
        {"kind": "ctrl_true", "reference": c, "candidate": still_true_control(c, i)}
        for i, c in enumerate(controls[5:])
    ]
    rng.shuffle(items)
    for number, item in enumerate(items, 1):
        item["id"] = number
    out.mkdir(parents=True, exist_ok=True)
    key.parent.mkdir(parents=True, exist_ok=True)
    key.write_text(json.dumps(items, indent=1), encoding="utf-8")
    lines = [
        f"{i['id']}. REFERENCE: {i['reference']}\n    CANDIDATE: {i['candidate']}\n" for i in items
    ]
    (out / "items.md").write_text("\n".join(lines), encoding="utf-8")
    print(f"{len(items)} items -> {out / 'items.md'} (key: {key})")


def score(folder: Path, key_path: Path) -> dict:
    key = json.loads(key_path.read_text("utf-8"))
    labels = {x["id"]: x for x in json.loads((folder / "reader_labels.json").read_text("utf-8"))}
    good = caught = negatives = 0
    for item in key:
        label = labels[item["id"]]
        ok = all(label[q] == "yes" for q in QUESTIONS)
        if item["kind"] != "neg":
            caught += not ok
            continue
        negatives += 1
        good += ok
        if not ok:
            edit = item["edits"][0]
            answers = " ".join(label[q][0] for q in QUESTIONS)
            print(
                f"  {edit['type']}: {edit['original']} -> {edit['replacement']} | "
                f"{item['candidate']} | {answers} | {label.get('note', '')}"
            )
    controls = len(key) - negatives
    print(f"good {good} / {negatives}; controls caught {caught} / {controls}")
    return {"good": good, "negatives": negatives, "controls_caught": caught}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    made = commands.add_parser("make", help="items.md and key.json from a negatives file")
    made.add_argument("negatives", type=Path)
    made.add_argument("--out", type=Path, required=True, help="folder of items.md")
    made.add_argument("--key", type=Path, required=True, help="the key (kept from the reader)")
    made.add_argument("--seed", type=int, default=0)
    made.add_argument("--exclude", type=Path, nargs="*", default=[], help="earlier key.json")
    made.add_argument("--size", type=int, default=50, help="negatives to read (one a caption)")
    scored = commands.add_parser("score", help="count a read's reader_labels.json")
    scored.add_argument("folder", type=Path, help="folder of reader_labels.json")
    scored.add_argument("--key", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "make":
        needed = [args.negatives, *args.exclude]
    else:
        needed = [args.folder / "reader_labels.json", args.key]
    for path in needed:
        if not path.is_file():
            raise SystemExit(f"{path}: no such file")
    if args.command == "make":
        make(args.negatives, args.out, args.key, args.seed, args.exclude, args.size)
    else:
        score(args.folder, args.key)


if __name__ == "__main__":
    main()
