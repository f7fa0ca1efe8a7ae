"""Fine-tune the pre-trained shapes CLIP three ways, over seeds, and compare them on one
split of the benchmark: retrieval RSum and minimal-pair accuracy (overall, attribute,
object, relation), mean +- std over seeds.

    python scripts/benchmarks/hf_pretrain.py --data runs/hf/shapes --out runs/hf/clip
    # choose settings on val (one seed), then the comparison on test (three seeds)
    python scripts/benchmarks/hf_finetune.py --data runs/hf/shapes --pretrained runs/hf/clip \\
        --out runs/hf/finetune --split val --seeds 0 --variants negclip --hn-weight 1
    python scripts/benchmarks/hf_finetune.py --data runs/hf/shapes --pretrained runs/hf/clip \\
        --out runs/hf/finetune --split test --seeds 0 1 2 --hn-weight 1 \\
        --results runs/hf/results.md

Variants (``tags train``, recipe ``vse``, same steps, batch, lr and seed):

- ``plain``: the model's in-batch InfoNCE (``vse.loss: contrastive``);
- ``negclip``: the same with ``tags generate`` negatives of the training captions as extra
  text columns (NegCLIP-style: ``data.negatives`` + ``vse.synthetic_negatives`` columns per
  caption), generated weight-free (vocabulary refills of the edit planner, the six shapes as
  one noun class, ``--role-swaps`` optional), each caption's negatives ordered relation
  edits first, then object, then attribute (``--order``), plus an optional hard-negative
  term (``--hn-weight``: cross-entropy of each image over its caption and that caption's
  negatives only, the ``vse`` recipe's ``hard_negative`` loss weight);
- ``hardest``: VSE++'s hardest in-batch negative, hinge on the cosine (``vse.loss: miner``).

The negatives are generated once (generation seed 0) and shared by every training seed.
Each run lives in ``OUT/<variant>_<settings>_seed<S>`` and is reused when its
``result.json`` holds the same config; scores are kept per split. Minimal pairs of ``val``
are drawn like the test pairs (same sampler) from the val scenes. The table (markdown) goes
to ``OUT/results_<split>.md`` (and ``--results``), with ``results_<split>.json``.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROWS = {
    "pretrained": "CLIP pre-trained (no fine-tuning)",
    "plain": "CLIP plain",
    "negclip": "CLIP + tags negatives (NegCLIP-style)",
    "hardest": "CLIP hardest",
}
VARIANTS = ("plain", "negclip", "hardest")
# each caption's negatives in this order of edit type (a negative of mixed types ranks by
# its first type in this order)
TYPE_ORDER = {"relation": 0, "object": 1, "attribute": 2}
METRICS = ("rsum", "mp", "mp_attribute", "mp_object", "mp_relation")


def generate_negatives(data: Path, out: Path, top_m: int, role_swaps: bool) -> Path:
    """``tags generate`` on the benchmark's training captions, weight-free (planner refills
    from the captions' own vocabulary, the six shapes one noun class), generation seed 0;
    reused if present."""
    from tags.benchmark.scenes import SHAPES
    from tags.cli import main as cli_main

    path = out / f"negatives_top{top_m}{'_roles' if role_swaps else ''}.jsonl"
    if path.is_file() and path.stat().st_size:
        return path
    classes = out / "noun_classes.json"
    classes.write_text(json.dumps({"shape": list(SHAPES)}))
    argv = [
        "generate", "--captions", str(data / "dataset_shapes.json"), "--split", "train",
        "--out", str(path), "--refill", "vocab", "--background", "none",
        "--noun-classes", str(classes), "--top-m", str(top_m), "--seed", "0",
        "--no-progress", "--overwrite", *(["--role-swaps"] if role_swaps else []),
    ]  # fmt: skip
    start = time.perf_counter()
    if cli_main(argv) != 0:
        raise SystemExit(f"tags generate failed: {' '.join(argv)}")
    print(f"negatives: {path} ({time.perf_counter() - start:.0f}s)")
    return path


def _rank(row: dict[str, Any]) -> int:
    return min((TYPE_ORDER.get(e["type"], len(TYPE_ORDER)) for e in row["edits"]), default=9)


def order_negatives(path: Path, order: str) -> Path:
    """``path`` itself (``generated``) or a copy whose rows are, per caption, sorted by edit
    type (``relation-first``: relation, object, attribute; stable): the trainer takes each
    caption's first ``vse.synthetic_negatives`` rows."""
    if order == "generated":
        return path
    target = path.with_name(path.stem + f".{order}.jsonl")
    if target.is_file() and target.stat().st_mtime >= path.stat().st_mtime:
        return target
    groups: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            groups.setdefault((row["image_id"], row["caption_id"]), []).append(row)
    with open(target, "w", encoding="utf-8") as f:
        for rows in groups.values():
            for row in sorted(rows, key=_rank):
                f.write(json.dumps(row) + "\n")
    return target


def negatives_mix(path: Path, per_caption: int) -> dict[str, float]:
    """Edit-type shares (percent) of the negatives the trainer uses (first ``per_caption``
    rows of each caption) and the share of captions with at least one relation negative."""
    groups: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            groups.setdefault((row["image_id"], row["caption_id"]), []).append(row)
    counts = {"attribute": 0, "object": 0, "relation": 0}
    with_relation = 0
    for rows in groups.values():
        used = rows[:per_caption]
        types = [{e["type"] for e in r["edits"]} for r in used]
        with_relation += any("relation" in t for t in types)
        for t in types:
            for kind in t & set(counts):
                counts[kind] += 1
    total = sum(counts.values()) or 1
    mix = {k: round(100 * v / total, 1) for k, v in counts.items()}
    mix["captions_with_relation"] = round(100 * with_relation / max(1, len(groups)), 1)
    return mix


def variant_config(
    base: dict[str, Any], variant: str, negatives: Path | None, per_caption: int, hn: float
) -> dict[str, Any]:
    """The ``tags train`` mapping of one variant, from the shared base."""
    config = copy.deepcopy(base)
    if variant == "plain":
        config["vse"] = {"loss": "contrastive"}
    elif variant == "negclip":
        config["vse"] = {"loss": "contrastive", "synthetic_negatives": per_caption}
        config["data"]["negatives"] = str(negatives)
        if hn:
            config["phases"][0]["weights"] = {"hard_negative": hn}
    elif variant == "hardest":
        config["vse"] = {"loss": "miner", "miner": {"name": "hardest", "kwargs": {"margin": 0.2}}}
    else:
        raise ValueError(f"unknown variant {variant!r}")
    return config


def run_variant(
    name: str, config: dict[str, Any], out: Path, data: Path, split: str, pairs: list[Any]
) -> dict[str, Any]:
    """Train (unless ``result.json`` has the same config) and evaluate one run on
    ``split`` (scores kept per split)."""
    from tags.benchmark.hf_models import evaluate_hf
    from tags.training import training_function
    from tags.training.config import config_from_dict

    result_path = out / "result.json"
    record: dict[str, Any] | None = None
    if result_path.is_file():
        cached = json.loads(result_path.read_text())
        if cached.get("config") == config and (out / "train" / "model").is_dir():
            record = cached
            print(f"{name}: reused {result_path}")
    if record is None:
        start = time.perf_counter()
        result = training_function(config_from_dict(config))
        record = {
            "config": config,
            "train_seconds": round(time.perf_counter() - start, 1),
            "last_metrics": {k: float(v) for k, v in result.last_metrics.items()},
            "scores": {},
        }
    if split not in record["scores"]:
        record["scores"][split] = evaluate_hf(out / "train" / "model", data, split, pairs=pairs)
        result_path.write_text(json.dumps(record, indent=1) + "\n")
    return record


def summarize(records: list[dict[str, Any]], split: str) -> dict[str, Any]:
    """Mean and sample std (over seeds) of each metric; train seconds' mean."""
    summary: dict[str, Any] = {"seeds": len(records)}
    for key in METRICS:
        values = [r["scores"][split][key] * (1 if key == "rsum" else 100) for r in records]
        summary[key] = statistics.fmean(values)
        summary[key + "_std"] = statistics.stdev(values) if len(values) > 1 else 0.0
    seconds = [r["train_seconds"] for r in records if r.get("train_seconds")]
    summary["train_seconds"] = statistics.fmean(seconds) if seconds else None
    return summary


def table(summaries: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| model | seeds | RSum | MP | attribute | object | relation | train s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key, s in summaries.items():
        cells = [
            f"{s[m]:.1f} ± {s[m + '_std']:.1f}" if s["seeds"] > 1 else f"{s[m]:.1f}"
            for m in METRICS
        ]
        seconds = f"{s['train_seconds']:.0f}" if s.get("train_seconds") else "-"
        lines.append(f"| {ROWS[key]} | {s['seeds']} | " + " | ".join(cells) + f" | {seconds} |")
    return "\n".join(lines)


def goal_line(summaries: dict[str, dict[str, Any]]) -> str:
    """The issue's goal, checked: NegCLIP-style MP >= plain + 5 points, the gap larger than
    either row's std, and RSum not more than 1 % below plain."""
    if "plain" not in summaries or "negclip" not in summaries:
        return ""
    p, n = summaries["plain"], summaries["negclip"]
    gain = n["mp"] - p["mp"]
    spread = max(p["mp_std"], n["mp_std"])
    rsum_change = 100 * (n["rsum"] - p["rsum"]) / p["rsum"]
    reached = gain >= 5 and gain > spread and rsum_change >= -1
    return (
        f"NegCLIP-style vs plain: MP {gain:+.1f} points (largest std {spread:.1f}), relation MP "
        f"{n['mp_relation'] - p['mp_relation']:+.1f}, object {n['mp_object'] - p['mp_object']:+.1f}"
        f", attribute {n['mp_attribute'] - p['mp_attribute']:+.1f}; RSum {rsum_change:+.1f} %. "
        f"Goal (MP >= +5, outside one std, RSum >= -1 %): {'reached' if reached else 'not reached'}."
    )


def run_name(variant: str, args: argparse.Namespace) -> str:
    if variant != "negclip":
        return variant
    roles = "r" if args.role_swaps else ""
    return f"negclip_m{args.top_m}{roles}_k{args.per_caption}_{args.order}_hn{args.hn_weight:g}"


def main() -> None:
    from tags.benchmark.hf_models import (
        MODEL_DIR,
        HFTrainConfig,
        evaluate_hf,
        split_minimal_pairs,
        train_config,
    )

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="a make-benchmark --save-images directory")
    parser.add_argument("--pretrained", required=True, help="an hf_pretrain.py --out directory")
    parser.add_argument("--out", required=True)
    parser.add_argument("--split", choices=("val", "test"), default="test", help="evaluated on")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--top-m", type=int, default=8, help="negatives generated per caption")
    parser.add_argument("--role-swaps", action="store_true", help="tags generate --role-swaps")
    parser.add_argument("--per-caption", type=int, default=3, help="NegCLIP columns per caption")
    parser.add_argument("--order", choices=("generated", "relation-first"),
                        default="relation-first", help="which negatives of a caption are used")  # fmt: skip
    parser.add_argument("--hn-weight", type=float, default=0.0,
                        help="hard-negative term weight (vse hard_negative)")  # fmt: skip
    parser.add_argument("--results", help="also write the markdown table here")
    args = parser.parse_args()

    data, out = Path(args.data), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pretrained = Path(args.pretrained) / MODEL_DIR
    pairs = split_minimal_pairs(data, args.split)
    cache = out / f"pretrained_{args.split}.json"
    if cache.is_file():
        scores = json.loads(cache.read_text())
    else:
        scores = evaluate_hf(pretrained, data, args.split, pairs=pairs)
        cache.write_text(json.dumps(scores, indent=1) + "\n")
    records: dict[str, list[dict[str, Any]]] = {"pretrained": [{"scores": {args.split: scores}}]}
    negatives, mix = None, None
    if "negclip" in args.variants:
        negatives = order_negatives(
            generate_negatives(data, out, args.top_m, args.role_swaps), args.order
        )
        mix = negatives_mix(negatives, args.per_caption)
        print(f"negatives used: {mix}")
    for seed in args.seeds:
        train = HFTrainConfig(steps=args.steps, batch_size=args.batch_size, lr=args.lr, seed=seed)
        for variant in args.variants:
            run_dir = out / f"{run_name(variant, args)}_seed{seed}"
            base = train_config(pretrained, data, run_dir / "train", "clip", train)
            base["log_every"] = 25
            config = variant_config(base, variant, negatives, args.per_caption, args.hn_weight)
            record = run_variant(variant, config, run_dir, data, args.split, pairs)
            records.setdefault(variant, []).append(record)
            s = record["scores"][args.split]
            print(f"{ROWS[variant]} seed {seed}: RSum {s['rsum']:.1f}, MP {100 * s['mp']:.1f} "
                  f"(relation {100 * s['mp_relation']:.1f})", flush=True)  # fmt: skip
    summaries = {key: summarize(recs, args.split) for key, recs in records.items()}
    settings = (
        f"{args.steps} steps x batch {args.batch_size}, lr {args.lr}, seeds "
        f"{', '.join(map(str, args.seeds))}"
    )
    if negatives is not None:
        settings += (
            f"; tags negatives: top-m {args.top_m}{' with role swaps' if args.role_swaps else ''}"
            f", {args.per_caption} per caption ({args.order}; used: {mix}), hard-negative "
            f"weight {args.hn_weight:g}"
        )
    text = (
        f"Shapes benchmark ({args.split} split: {scores['mp_pairs']} minimal pairs), {settings}; "
        f"chance RSum {scores['chance_rsum']:.1f}, MP chance 50; mean ± sample std over seeds."
        "\n\n" + table(summaries) + "\n\n" + goal_line(summaries) + "\n"
    )
    (out / f"results_{args.split}.md").write_text(text)
    (out / f"results_{args.split}.json").write_text(json.dumps(summaries, indent=1) + "\n")
    if args.results:
        Path(args.results).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
