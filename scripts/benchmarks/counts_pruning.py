"""What pruning the corpus counts changes: memory against the negatives' quality.

For each corpus and each ``--min-count K`` (1 = unpruned, the default of ``tags generate``)
it runs, as a user would: ``tags generate --count-only`` once, ``tags counts prune`` to K,
and ``tags generate --vocab PRUNED --seed 0 --num-workers 2`` (peak RSS of the driver, the
summed PSS of its processes). Then, against the unpruned run of the same corpus:

- counts file size, and the combination entries kept;
- captions whose negatives changed (any byte of their records), coverage (captions with a
  negative), negatives, the edit-type mix;
- the trained text-only check: a 1-4-gram logistic regression fitted on the (positive,
  negative) pairs of half the captions and scored on the other half, 3 seeded splits
  (``tags.evaluation.text_prior.held_out_pair_accuracy``; 50 %: no shortcut);
- with ``--judge``: the untrained judge's text-only accuracy on the first negative of each
  caption (SmolLM2, ``scripts/research/quality.py``; up to ``--pairs`` pairs).

    python scripts/benchmarks/counts_pruning.py \\
        --corpus flickr30k=../shared/data/flickr30k/test_caps.txt \\
        --corpus factual=../shared/data/factual/dev.csv --min-counts 1 2 3 [--judge]

A ``.csv`` corpus is FACTUAL's (its ``caption`` column, grouped by ``image_id``); other files
are read as ``tags generate`` reads them.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from counts_scale import run


def as_input(path: Path, folder: Path) -> Path:
    """``tags generate``'s input for ``path``: FACTUAL CSVs become JSONL grouped by image."""
    if path.suffix != ".csv":
        return path
    out = folder / f"{path.stem}.jsonl"
    with open(path, newline="", encoding="utf-8") as f, open(out, "w", encoding="utf-8") as w:
        for row in csv.DictReader(f):
            w.write(json.dumps({"image_id": row["image_id"], "caption": row["caption"]}) + "\n")
    return out


def records_by_caption(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        out.setdefault(str(json.loads(line)["caption_id"]), []).append(line)
    return out


def quality(negatives: Path, judge: object, pairs: int) -> dict:
    from tags.evaluation.text_prior import held_out_pair_accuracy

    rows = [json.loads(line) for line in negatives.read_text(encoding="utf-8").splitlines()]
    found = {
        "negatives": len(rows),
        "mix": dict(Counter(e["type"] for r in rows for e in r["edits"]).most_common()),
    }
    if len(rows) >= 20:
        accuracies = held_out_pair_accuracy(
            [(r["positive"], r["negative"]) for r in rows], [str(r["caption_id"]) for r in rows]
        )
        found["text_only"] = statistics.mean(accuracies)
        found["text_only_std"] = statistics.pstdev(accuracies)
    if judge is not None:
        from research.quality import mean_nll

        first = [r for r in rows if r["negative_index"] == 0][:pairs]
        positive = mean_nll(judge, [r["positive"] for r in first])
        negative = mean_nll(judge, [r["negative"] for r in first])
        found["judge"] = sum(p < n for p, n in zip(positive, negative)) / max(len(first), 1)
    return found


def measure(name: str, captions: Path, ks: list[int], folder: Path, judge: object, pairs: int):
    counts = folder / f"{name}.counts.json"
    run(["generate", "--captions", str(captions), "--count-only", "--out", str(counts),
         "--num-workers", "2", "--no-progress", "--overwrite"], folder / f"{name}.count.log")  # fmt: skip
    total = sum(1 for line in captions.read_text(encoding="utf-8").splitlines() if line.strip())
    rows, reference = [], None
    for k in ks:
        vocab = counts
        if k > 1:
            vocab = folder / f"{name}.counts.k{k}.json"
            subprocess.run(
                [sys.executable, "-m", "tags.cli", "counts", "prune", str(counts),
                 "--min-count", str(k), "--out", str(vocab), "--overwrite"],
                check=True, capture_output=True,
            )  # fmt: skip
        out = folder / f"{name}.k{k}.jsonl"
        memory, _ = run(
            ["generate", "--captions", str(captions), "--vocab", str(vocab), "--out", str(out),
             "--seed", "0", "--num-workers", "2", "--no-progress", "--overwrite", "--no-balance"],
            folder / f"{name}.k{k}.log",
        )  # fmt: skip
        by_caption = records_by_caption(out)
        reference = reference if reference is not None else by_caption
        changed = sum(
            by_caption.get(c) != reference.get(c) for c in set(by_caption) | set(reference)
        )
        row = {
            "corpus": name,
            "min_count": k,
            "counts_mb": vocab.stat().st_size / 1e6,
            "driver_mib": memory["driver_mib"],
            "pss_sum_mib": memory["pss_mib"],
            "coverage": len(by_caption) / total,
            "changed": changed / total,
            **quality(out, judge, pairs),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", action="append", required=True, metavar="NAME=PATH")
    ap.add_argument("--min-counts", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--judge", action="store_true", help="also the SmolLM2 judge")
    ap.add_argument("--pairs", type=int, default=1000, help="pairs judged per run")
    ap.add_argument("--out", type=Path, default=None, help="keep the runs' files here")
    args = ap.parse_args()
    if args.min_counts[0] != 1:
        args.min_counts = [1, *args.min_counts]  # the unpruned reference first
    folder = args.out or Path(tempfile.mkdtemp(prefix="counts_pruning_"))
    folder.mkdir(parents=True, exist_ok=True)
    judge = None
    if args.judge:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from research.quality import load_judge

        judge = load_judge(None)
    rows = []
    for spec in args.corpus:
        name, _, path = spec.partition("=")
        captions = as_input(Path(path), folder)
        rows += measure(name, captions, args.min_counts, folder, judge, args.pairs)
    print(
        f"\n{'corpus':10s} {'K':>2s} {'counts MB':>9s} {'driver MiB':>10s} {'PSS MiB':>8s} "
        f"{'coverage':>8s} {'changed':>7s} {'negatives':>9s} {'text-only':>13s} {'judge':>6s}"
    )
    for r in rows:
        text = f"{r.get('text_only', 0):.1%} ±{r.get('text_only_std', 0):.1%}"
        judged = f"{r['judge']:.1%}" if "judge" in r else "-"
        print(
            f"{r['corpus']:10s} {r['min_count']:2d} {r['counts_mb']:9.2f} {r['driver_mib']:10.0f} "
            f"{r['pss_sum_mib']:8.0f} {r['coverage']:8.1%} {r['changed']:7.1%} "
            f"{r['negatives']:9d} {text:>13s} {judged:>6s}"
        )
    (folder / "counts_pruning.json").write_text(json.dumps(rows, indent=1))
    print(f"figures: {folder / 'counts_pruning.json'}")


if __name__ == "__main__":
    main()
