"""Pre-train a small HF CLIP (or BLIP) from scratch on the shapes benchmark, offline, and
print its test retrieval (RSum vs chance) and minimal-pair accuracy.

    tags make-benchmark runs/hf/shapes --train 5000 --val 500 --test 500 --save-images \
        --featurizer random
    python scripts/benchmarks/hf_pretrain.py --data runs/hf/shapes --out runs/hf/clip
    python scripts/benchmarks/hf_pretrain.py --data runs/hf/shapes --out runs/hf/blip \
        --family blip
    # NegCLIP-style from the first step (tags negatives of hf_finetune.py's --out)
    python scripts/benchmarks/hf_pretrain.py --data runs/hf/shapes --out runs/hf/clip_neg \
        --negatives runs/hf/finetune/negatives_top8_roles.jsonl --per-caption 2 --hn-weight 1

The model is built from a config (``tags.benchmark.hf_models``), trained with ``tags train``
(``vse`` + InfoNCE for CLIP, ``pretrain`` ITM + MLM + ITC for BLIP) and saved as a plain
transformers directory ``OUT/model``. A second run with the same arguments reuses it
(``OUT/manifest.json``: arguments, benchmark hash, model hash, scores).
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    from tags.benchmark.hf_models import FAMILIES, HFModelConfig, HFTrainConfig, pretrain_hf

    model_defaults, train_defaults = HFModelConfig(), HFTrainConfig()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="a make-benchmark --save-images directory")
    parser.add_argument("--out", required=True, help="output directory (OUT/model)")
    parser.add_argument("--family", choices=FAMILIES, default="clip")
    m = model_defaults
    parser.add_argument("--image-size", type=int, default=m.image_size)
    parser.add_argument("--patch-size", type=int, default=m.patch_size)
    parser.add_argument("--hidden-size", type=int, default=m.hidden_size)
    parser.add_argument("--num-layers", type=int, default=m.num_layers)
    parser.add_argument("--num-heads", type=int, default=m.num_heads)
    parser.add_argument("--projection-dim", type=int, default=m.projection_dim)
    parser.add_argument("--seed", type=int, default=m.seed)
    parser.add_argument("--init-std", type=float, default=0.0,
                        help="std of the random init (0: transformers' 0.02)")  # fmt: skip
    parser.add_argument("--steps", type=int, default=train_defaults.steps)
    parser.add_argument("--batch-size", type=int, default=train_defaults.batch_size)
    parser.add_argument("--lr", type=float, default=train_defaults.lr)
    parser.add_argument("--num-workers", type=int, default=train_defaults.num_workers)
    parser.add_argument("--itc-steps", type=int, default=0,
                        help="BLIP: steps of ITC alone (recipe vse) before ITM + MLM + ITC")  # fmt: skip
    parser.add_argument("--itc-lr", type=float, default=0.0, help="lr of the ITC stage (0: --lr)")
    parser.add_argument("--itm-sampling", choices=("itc", "random"), default="itc",
                        help="BLIP: ITM negatives by ITC similarity (BLIP) or at random")  # fmt: skip
    parser.add_argument("--negatives", default=None,
                        help="CLIP: NegCLIP-style from the first step with this tags generate "
                        "JSONL of the training captions (hf_finetune.py writes one to its --out)")  # fmt: skip
    parser.add_argument("--per-caption", type=int, default=train_defaults.negatives_per_caption,
                        help="negatives per caption used as extra text columns")  # fmt: skip
    parser.add_argument("--order", choices=("generated", "relation-first"), default="relation-first",
                        help="which negatives of a caption come first (hf_finetune.py --order)")  # fmt: skip
    parser.add_argument("--hn-weight", type=float, default=0.0,
                        help="weight of the vse hard-negative term (with --negatives)")  # fmt: skip
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--force", action="store_true", help="retrain even if cached")
    args = parser.parse_args()

    negatives = None
    if args.negatives:
        from tags.benchmark.hf_finetune import order_negatives

        if not os.path.isfile(args.negatives):
            parser.error(f"--negatives {args.negatives}: no such file (a tags generate JSONL)")
        negatives = str(order_negatives(args.negatives, args.order))
    elif args.hn_weight:
        parser.error("--hn-weight needs --negatives")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    model = HFModelConfig(
        family=args.family,
        image_size=args.image_size,
        patch_size=args.patch_size,
        hidden_size=args.hidden_size,
        num_layers=args.num_layers,
        num_heads=args.num_heads,
        projection_dim=args.projection_dim,
        seed=args.seed,
        init_std=args.init_std,
    )
    train = HFTrainConfig(
        steps=args.steps,
        batch_size=args.batch_size,
        lr=args.lr,
        seed=args.seed,
        num_workers=args.num_workers,
        itc_steps=args.itc_steps,
        itc_lr=args.itc_lr,
        itm_sampling=args.itm_sampling,
        negatives=negatives,
        negatives_per_caption=args.per_caption,
        hard_negative=args.hn_weight,
    )
    result = pretrain_hf(args.out, args.data, model, train, force=args.force)
    manifest = result.manifest
    state = "reused" if result.reused else "trained"
    print(f"{result.model_dir}: {state} ({manifest.get('parameters')} parameters, "
          f"training {manifest['train_seconds']}s, {manifest['steps']} steps)")  # fmt: skip
    scores = manifest.get("scores", {})
    if scores:
        print(
            f"test: RSum {scores['rsum']:.1f} (chance {scores['chance_rsum']:.1f}), "
            f"MP {100 * scores['mp']:.1f} (attribute {100 * scores.get('mp_attribute', 0):.1f}, "
            f"object {100 * scores.get('mp_object', 0):.1f}, "
            f"relation {100 * scores.get('mp_relation', 0):.1f})"
        )
        print(json.dumps(scores, indent=1))


if __name__ == "__main__":
    main()
