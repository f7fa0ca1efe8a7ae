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

``--sampler uniform`` also scores the same models on the split's minimal pairs drawn by
another pair sampler (``uniform``: benchmark v1's, whose relation words carry a text prior)
and tables both MPs per type: what the change of pairs does to the same models.

    python scripts/benchmarks/role_pairs.py --data runs/ladder/data --results runs/ladder \
        --sampler uniform
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


def score_run(run: Path, data, pairs, relation_pairs=None, other_pairs=None) -> dict:
    """The run's role-pair accuracy (``role``), its test relation MP from ``result.json``
    (``relation``, ``None`` if absent), given ``relation_pairs`` their accuracy by false
    relation word (``by_word``, :func:`accuracy_by_word`), and given ``other_pairs`` their
    minimal-pair accuracy (``other``) beside the run's own (``own``); the model is loaded
    once."""
    from tags.backends.tags_model import load_tags_model
    from tags.benchmark import accuracy_by_word, minimal_pair_accuracy, minimal_pair_wins
    from tags.demo.evaluate import CrossPairScoreFn, DualPairScoreFn

    result = json.loads((run / "result.json").read_text())
    family = result.get("family", "cross")
    max_length = result["config"]["data"]["max_text_len"]
    model, tokenizer = load_tags_model(run / "model", "cpu")
    score_cls = CrossPairScoreFn if family == "cross" else DualPairScoreFn
    score_fn = score_cls(model, tokenizer, data.features, max_length)
    scores = {
        "role": minimal_pair_accuracy(score_fn, pairs)["role"],
        "relation": result.get("minimal_pairs", {}).get("relation"),
    }
    if relation_pairs:
        wins = minimal_pair_wins(score_fn, relation_pairs)
        scores["by_word"] = accuracy_by_word(relation_pairs, wins)
    if other_pairs:
        scores["own"] = result.get("minimal_pairs", {})
        scores["other"] = minimal_pair_accuracy(score_fn, other_pairs)
    return scores


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
    parser.add_argument(
        "--sampler",
        default=None,
        choices=("balanced", "uniform"),
        help="also score the split's minimal pairs drawn by this pair sampler",
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
    relation_pairs = None
    if args.by_word:
        from tags.demo.evaluate import split_pairs

        relation_pairs = [p for p in split_pairs(data, args.split) if p.type == "relation"]
    other_pairs = None
    if args.sampler:
        from tags.benchmark import read_manifest, split_minimal_pairs

        seed = read_manifest(data.root)["config"]["seed"]
        other_pairs = split_minimal_pairs(data.scenes, args.split, seed, sampler=args.sampler)
    table: dict[str, dict[str, dict]] = {}
    for method, by_seed in runs.items():
        for seed, run in sorted(by_seed.items()):
            scores = score_run(run, data, pairs, relation_pairs, other_pairs)
            table.setdefault(method, {})[str(seed)] = scores
            print(f"  {method} seed {seed}: role {100 * scores['role']:.1f}", flush=True)
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
    if relation_pairs:
        _print_by_word(table, len(relation_pairs), args.split)
    if other_pairs:
        _print_other(table, len(other_pairs), args.sampler)
    if args.json:
        Path(args.json).write_text(json.dumps({"pairs": len(pairs), "runs": table}, indent=1))
    return 0


def _print_other(table: dict[str, dict[str, dict]], n_pairs: int, sampler: str) -> None:
    """Each method's MP per type on its own pairs (``result.json``) and on ``sampler``'s."""
    kinds = ("overall", "attribute", "object", "relation")
    print(f"\nMinimal pairs: the run's own (result.json) -> {sampler} ({n_pairs}), mean ± std:\n")
    print("| method | " + " | ".join(kinds) + " |")
    print("|---|" + "---|" * len(kinds))
    for method, by_seed in table.items():
        cells = []
        for kind in kinds:
            own = [v["own"][kind] for v in by_seed.values() if kind in v["own"]]
            other = [v["other"][kind] for v in by_seed.values() if kind in v["other"]]
            cells.append(f"{_mean_std(own)} -> {_mean_std(other)}")
        print(f"| {method} | " + " | ".join(cells) + " |")


def _print_by_word(table: dict[str, dict[str, dict]], n_pairs: int, split: str) -> None:
    """Every method's relation-pair accuracy by false relation word, mean over seeds."""
    per_method = {m: [v["by_word"] for v in by_seed.values()] for m, by_seed in table.items()}
    counts = {w: n for runs in per_method.values() for s in runs for w, (_, n) in s.items()}
    words = sorted(counts)
    print(f"\nRelation pairs ({n_pairs}, {split}) by false relation word, mean over seeds:\n")
    print("| method | " + " | ".join(f"{w} ({counts[w]})" for w in words) + " |")
    print("|---|" + "---:|" * len(words))
    for method, runs in per_method.items():
        cells = [f"{100 * statistics.mean(s[w][0] for s in runs if w in s):.1f}" for w in words]
        print(f"| {method} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    raise SystemExit(main())
