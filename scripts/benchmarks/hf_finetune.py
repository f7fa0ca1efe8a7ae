"""Fine-tune the pre-trained shapes CLIP three ways and compare them on the benchmark's test
split: retrieval RSum and minimal-pair accuracy (overall, attribute, object, relation).

    python scripts/benchmarks/hf_pretrain.py --data runs/hf/shapes --out runs/hf/clip
    python scripts/benchmarks/hf_finetune.py --data runs/hf/shapes --pretrained runs/hf/clip \
        --out runs/hf/finetune --steps 400 --seed 0

Variants (``tags train``, recipe ``vse``, same steps, batch, lr and seed):

- ``plain``: the model's in-batch InfoNCE (``vse.loss: contrastive``);
- ``negclip``: the same with ``tags generate`` negatives of the training captions as extra
  text columns (NegCLIP-style: ``data.negatives`` + ``vse.synthetic_negatives``), generated
  weight-free (vocabulary refills of the edit planner, shapes as one noun class);
- ``hardest``: VSE++'s hardest in-batch negative, hinge on the cosine (``vse.loss: miner``).

Each run lives in ``OUT/<variant>`` and is reused when ``OUT/<variant>/result.json`` holds the
same arguments; the table goes to ``OUT/results.md`` (and ``results.json``).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
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


def generate_negatives(data: Path, out: Path, top_m: int, seed: int) -> Path:
    """``tags generate`` on the benchmark's training captions, weight-free (planner refills
    from the captions' own vocabulary, the six shapes one noun class); reused if present."""
    from tags.benchmark.scenes import SHAPES
    from tags.cli import main as cli_main

    path = out / f"negatives_top{top_m}_seed{seed}.jsonl"
    if path.is_file() and path.stat().st_size:
        return path
    classes = out / "noun_classes.json"
    classes.write_text(json.dumps({"shape": list(SHAPES)}))
    argv = [
        "generate", "--captions", str(data / "dataset_shapes.json"), "--split", "train",
        "--out", str(path), "--refill", "vocab", "--background", "none",
        "--noun-classes", str(classes), "--top-m", str(top_m), "--seed", str(seed),
        "--no-progress", "--overwrite",
    ]  # fmt: skip
    start = time.perf_counter()
    if cli_main(argv) != 0:
        raise SystemExit(f"tags generate failed: {' '.join(argv)}")
    print(f"negatives: {path} ({time.perf_counter() - start:.0f}s)")
    return path


def variant_config(base: dict[str, Any], variant: str, negatives: Path | None, per_caption: int):
    """The ``tags train`` mapping of one variant, from the shared base."""
    config = copy.deepcopy(base)
    if variant == "plain":
        config["vse"] = {"loss": "contrastive"}
    elif variant == "negclip":
        config["vse"] = {"loss": "contrastive", "synthetic_negatives": per_caption}
        config["data"]["negatives"] = str(negatives)
    elif variant == "hardest":
        config["vse"] = {"loss": "miner", "miner": {"name": "hardest", "kwargs": {"margin": 0.2}}}
    else:
        raise ValueError(f"unknown variant {variant!r}")
    return config


def run_variant(name: str, config: dict[str, Any], out: Path, data: Path) -> dict[str, Any]:
    """Train (unless ``result.json`` has the same config) and evaluate one variant."""
    from tags.benchmark.hf_models import evaluate_hf
    from tags.training import training_function
    from tags.training.config import config_from_dict

    result_path = out / "result.json"
    if result_path.is_file():
        cached = json.loads(result_path.read_text())
        if cached.get("config") == config:
            print(f"{name}: reused {result_path}")
            return cached
    start = time.perf_counter()
    result = training_function(config_from_dict(config))
    seconds = time.perf_counter() - start
    scores = evaluate_hf(Path(result.output_dir) / "model", data)
    record = {"config": config, "train_seconds": round(seconds, 1), "scores": scores,
              "last_metrics": {k: float(v) for k, v in result.last_metrics.items()}}  # fmt: skip
    result_path.write_text(json.dumps(record, indent=1) + "\n")
    return record


def table(results: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| model | RSum | MP | attr | obj | rel | train s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for key, record in results.items():
        s = record["scores"]
        cells = [f"{s['rsum']:.1f}"] + [
            f"{100 * s[k]:.1f}" for k in ("mp", "mp_attribute", "mp_object", "mp_relation")
        ]
        seconds = record.get("train_seconds")
        lines.append(f"| {ROWS[key]} | " + " | ".join(cells) + f" | {seconds or '-'} |")
    return "\n".join(lines)


def main() -> None:
    from tags.benchmark.hf_models import MODEL_DIR, HFTrainConfig, evaluate_hf, train_config

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="a make-benchmark --save-images directory")
    parser.add_argument("--pretrained", required=True, help="an hf_pretrain.py --out directory")
    parser.add_argument("--out", required=True)
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--top-m", type=int, default=3, help="negatives generated per caption")
    parser.add_argument("--per-caption", type=int, default=1, help="NegCLIP columns per caption")
    args = parser.parse_args()

    data, out = Path(args.data), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pretrained = Path(args.pretrained) / MODEL_DIR
    manifest = json.loads((Path(args.pretrained) / "manifest.json").read_text())
    results: dict[str, dict[str, Any]] = {}
    scores = manifest.get("scores") or evaluate_hf(pretrained, data)
    results["pretrained"] = {"scores": scores}
    negatives = None
    if "negclip" in args.variants:
        negatives = generate_negatives(data, out, args.top_m, args.seed)
    train = HFTrainConfig(steps=args.steps, batch_size=args.batch_size, lr=args.lr, seed=args.seed)
    for variant in args.variants:
        run_dir = out / f"{variant}_seed{args.seed}"
        base = train_config(pretrained, data, run_dir / "train", "clip", train)
        base["log_every"] = 25
        config = variant_config(base, variant, negatives, args.per_caption)
        results[variant] = run_variant(variant, config, run_dir, data)
        s = results[variant]["scores"]
        print(f"{ROWS[variant]}: RSum {s['rsum']:.1f}, MP {100 * s['mp']:.1f}")
    text = (
        f"Shapes benchmark {data} (test split, {scores.get('mp_pairs')} minimal pairs), "
        f"seed {args.seed}, {args.steps} steps x batch {args.batch_size}, lr {args.lr}; "
        f"chance RSum {scores['chance_rsum']:.1f}, MP chance 50.\n\n" + table(results) + "\n"
    )
    (out / f"results_seed{args.seed}.md").write_text(text)
    (out / f"results_seed{args.seed}.json").write_text(json.dumps(results, indent=1) + "\n")
    print(text)


if __name__ == "__main__":
    main()
