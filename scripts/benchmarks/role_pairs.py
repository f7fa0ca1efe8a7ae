"""Role-swap pairs: does a model read the layout, or the words?

The benchmark's ``relation`` minimal pairs replace the relation word by a false one, drawn
uniformly among the false ones, so a text-only rule scores ~63 % on them (docs/demo.md,
"Relations stay at chance"). A *role* pair keeps every word and exchanges the two mentions
("a red circle above a blue square" vs "a blue square above a red circle", the swap false of
the scene: ``tags.benchmark.split_role_pairs``), so no text prior separates the captions:
only the image's layout does, and chance is 50 %.

For every finished run of one or more results benchmarks (``OUT/seed{s}/{method}/model``
with its ``result.json``, as ``demo_results.py`` writes them, the pre-trained models
included), the script scores the role pairs of a split with the run's own family (cross: the
ITM logit; dual: the embedding cosine) and prints mean ± sample std over seeds, next to the
run's ``relation`` minimal-pair accuracy from its ``result.json``.

    python scripts/benchmarks/role_pairs.py --data runs/ladder900/data \
        --results runs/ladder900 runs/roles900

``--by-word`` also scores the split's relation minimal pairs and tables their accuracy by the
false relation word (mean over seeds; the pairs per word in brackets): a model that learned
the relation words' frequencies rather than the layout wins on the words that are rarely
true ("next to") and loses on the others.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch


def finished_runs(results: list[Path], methods: list[str] | None) -> dict[str, dict[int, Path]]:
    """``{method: {seed: run dir}}`` of every run with a ``result.json`` and a model."""
    runs: dict[str, dict[int, Path]] = {}
    for root in results:
        for seed_dir in sorted(root.glob("seed*")):
            seed = int(seed_dir.name[4:])
            for run in sorted(seed_dir.iterdir()):
                if not (run / "result.json").is_file() or not (run / "model").is_dir():
                    continue
                if methods is None or run.name in methods:
                    runs.setdefault(run.name, {})[seed] = run
    return runs


def score_run(run: Path, data, pairs) -> tuple[float, float | None]:
    """Role-pair accuracy of the run's model, and its test relation MP (``None`` if absent)."""
    from tags.benchmark import minimal_pair_accuracy
    from tags.demo.evaluate import CrossPairScoreFn, DualPairScoreFn
    from tags.negatives.models import load_tags_model

    result = json.loads((run / "result.json").read_text())
    family = result.get("family", "cross")
    max_length = result["config"]["data"]["max_text_len"]
    model, tokenizer = load_tags_model(run / "model", "cpu")
    score_cls = CrossPairScoreFn if family == "cross" else DualPairScoreFn
    accuracy = minimal_pair_accuracy(score_cls(model, tokenizer, data.features, max_length), pairs)
    relation = result.get("minimal_pairs", {}).get("relation")
    return accuracy["role"], relation


def relation_words(run: Path, data, pairs) -> dict[str, tuple[float, int]]:
    """The run's relation-pair accuracy by false relation word (:func:`accuracy_by_word`)."""
    from tags.benchmark import accuracy_by_word, minimal_pair_wins
    from tags.demo.evaluate import CrossPairScoreFn, DualPairScoreFn
    from tags.negatives.models import load_tags_model

    result = json.loads((run / "result.json").read_text())
    score_cls = CrossPairScoreFn if result.get("family", "cross") == "cross" else DualPairScoreFn
    model, tokenizer = load_tags_model(run / "model", "cpu")
    score_fn = score_cls(model, tokenizer, data.features, result["config"]["data"]["max_text_len"])
    return accuracy_by_word(pairs, minimal_pair_wins(score_fn, pairs))


def _mean_std(values: list[float]) -> str:
    if not values:
        return "-"
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{100 * statistics.mean(values):.1f} ± {100 * std:.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="the benchmark directory")
    parser.add_argument("--results", nargs="+", required=True, help="demo_results.py OUTs")
    parser.add_argument("--methods", nargs="+", default=None, help="default: every run found")
    parser.add_argument("--split", default="test")
    parser.add_argument("--max-pairs", type=int, default=None, help="the first N pairs only")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", default=None, help="also write the scores here")
    parser.add_argument(
        "--by-word", action="store_true", help="relation pairs by false relation word too"
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    from tags.benchmark import split_role_pairs
    from tags.benchmark.build import BenchmarkPaths

    data = BenchmarkPaths.under(Path(args.data), False)
    pairs = split_role_pairs(data.scenes, args.split)[: args.max_pairs]
    runs = finished_runs([Path(r) for r in args.results], args.methods)
    if not runs:
        sys.exit(f"no finished runs under {', '.join(args.results)}")
    print(f"{len(pairs)} role pairs on the {args.split} split of {args.data}")
    table: dict[str, dict[str, dict[str, float | None]]] = {}
    for method, by_seed in runs.items():
        for seed, run in sorted(by_seed.items()):
            role, relation = score_run(run, data, pairs)
            table.setdefault(method, {})[str(seed)] = {"role": role, "relation": relation}
            print(f"  {method} seed {seed}: role {100 * role:.1f}", flush=True)
    print("\n| method | seeds | role pairs | per seed | relation pairs (test MP) |")
    print("|---|---:|---:|---|---:|")
    for method, by_seed in table.items():
        roles = [v["role"] for v in by_seed.values()]
        relations = [v["relation"] for v in by_seed.values() if v["relation"] is not None]
        per_seed = ", ".join(f"{100 * r:.1f}" for r in roles)
        print(
            f"| {method} | {len(roles)} | {_mean_std(roles)} | {per_seed} | "
            f"{_mean_std(relations)} |"
        )
    payload: dict = {"pairs": len(pairs), "runs": table}
    if args.by_word:
        payload["by_word"] = _by_word_table(runs, data, args.split)
    if args.json:
        Path(args.json).write_text(json.dumps(payload, indent=1))
    return 0


def _by_word_table(runs: dict[str, dict[int, Path]], data, split: str) -> dict:
    """Print (and return) every method's relation-pair accuracy by false word."""
    from tags.demo.evaluate import split_pairs

    pairs = [p for p in split_pairs(data, split) if p.type == "relation"]
    scores = {
        method: [relation_words(run, data, pairs) for run in by_seed.values()]
        for method, by_seed in runs.items()
    }
    words = sorted({w for per_seed in scores.values() for s in per_seed for w in s})
    counts = {w: n for per_seed in scores.values() for s in per_seed for w, (_, n) in s.items()}
    print(f"\nRelation pairs ({len(pairs)}, {split}) by false relation word, mean over seeds:\n")
    print("| method | " + " | ".join(f"{w} ({counts[w]})" for w in words) + " |")
    print("|---|" + "---:|" * len(words))
    for method, per_seed in scores.items():
        cells = [f"{100 * statistics.mean(s[w][0] for s in per_seed if w in s):.1f}" for w in words]
        print(f"| {method} | " + " | ".join(cells) + " |")
    return {m: [{w: a for w, (a, _) in s.items()} for s in v] for m, v in scores.items()}


if __name__ == "__main__":
    raise SystemExit(main())
