"""Fine-tune the pre-trained shapes CLIP (or BLIP) three ways, over seeds, and compare them on one
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

With ``--family blip`` (a ``hf_pretrain.py --family blip`` model; recipe ``tags-dc``, ITM
scored by the model's ITM head, the hinge of the demo's cross-encoder methods):

- ``itm-hardest``: ITM on the hardest of ``--num-negatives`` negatives retrieved from a
  ``--pool-size`` pool, no synthetic negatives;
- ``tags``: the same + L_ISTM (``--istm-weight``) on dynamic synthetic negatives (MLM
  refills limited to the edit planner's substitutes, ``--synthetic-top-m`` per caption);
- ``tags-dc``: ``tags`` then, for the last ``--dc-steps``, NSGDC (+ WoD/WoC 0.1, half lr).

``--itm-bce`` / ``--istm-bce`` add BLIP's own ITM objective (class-balanced cross-entropy of
the match logit on the positives and the retrieved / synthetic negatives, the ``tags-dc``
weights ``itm_bce`` / ``istm_bce``) beside the hinge, which alone lets the positives' score sink.

    python scripts/benchmarks/hf_finetune.py --family blip --data runs/hf/shapes \\
        --pretrained runs/hf/blip_v2 --out runs/hf/blip2/test --split test --seeds 0 1 2 \\
        --steps 50 --batch-size 32 --pool-size 8 --num-negatives 3 --dc-steps 12 --lr 2e-4 \\
        --itm-bce 1

The negatives are generated once (generation seed 0) and shared by every training seed.
Each run lives in ``OUT/<variant>_<settings>_seed<S>`` and is reused when its
``result.json`` holds the same config; a folder holding another config (other steps, lr, ...)
is refused, naming what differs, so a finished run is never replaced: give another ``--out``.
Scores are kept per split. Minimal pairs of ``val``
are drawn like the test pairs (same sampler) from the val scenes. The table (markdown) goes
to ``OUT/results_<split>.md`` (and ``--results``), with ``results_<split>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/: the research package

from research.finetune_table import (
    LABELS,
    goal_lines,
    readme_table,
    splice_block,
    summarize,
    table,
)

ROWS = {key: f"CLIP {label}" for key, label in LABELS.items()}  # set by --family in main()


def check_negatives(
    args: argparse.Namespace, pretrained: Path, data: Path, out: Path, negatives: Path
) -> str:
    """A table: the share of the used training negatives (first ``--check-negatives``
    training images) each model scores below their caption, by kind; cached in OUT."""
    from research.finetune_probes import negatives_accuracy

    models = {"pretrained": pretrained}
    models |= {v: out / f"{run_name(v, args)}_seed0" / "train" / "model" for v in args.variants}
    cache_path = out / "negatives_accuracy.json"
    cache = json.loads(cache_path.read_text()) if cache_path.is_file() else {}
    lines = [
        f"Training negatives ranked below their caption (first {args.check_negatives} training "
        f"images, {args.per_caption} used negatives per caption, seed-0 models), percent:",
        "",
        "| model | pairs | all | attribute | object | relation (flip) | role swap |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for key, model in models.items():
        tag = f"{model}|{negatives}|{args.per_caption}|{args.check_negatives}"
        if tag not in cache:
            cache[tag] = negatives_accuracy(
                model, data, negatives, args.per_caption, args.check_negatives
            )
            cache_path.write_text(json.dumps(cache, indent=1) + "\n")
        r = cache[tag]
        cells = [f"{100 * r[k]:.1f}" if k in r else "-"
                 for k in ("overall", "attribute", "object", "relation", "role")]  # fmt: skip
        lines.append(f"| {ROWS[key]} | {r['pairs']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sugarcrepe_table(
    args: argparse.Namespace, pretrained: Path, data: Path, out: Path, pairs: list[Any]
) -> str:
    """The split's pairs exported as SugarCrepe files and scored by ``tags evaluate --suite
    sugarcrepe`` (pre-trained and seed-0 models); cached in OUT."""
    from research.finetune_probes import export_pairs_sugarcrepe, sugarcrepe_accuracy

    suite = export_pairs_sugarcrepe(pairs, out / f"sugarcrepe_{args.split}")
    models = {"pretrained": pretrained}
    models |= {v: out / f"{run_name(v, args)}_seed0" / "train" / "model" for v in args.variants}
    cache_path = out / "sugarcrepe_accuracy.json"
    cache = json.loads(cache_path.read_text()) if cache_path.is_file() else {}
    lines = [
        f"SugarCrepe-format export of the {args.split} pairs ({suite}), scored by `tags evaluate "
        "--suite sugarcrepe=DIR --images BENCH/images --mode dual` (seed-0 models), percent:",
        "",
        "| model | overall | replace_att | replace_obj | replace_rel |",
        "|---|---:|---:|---:|---:|",
    ]
    for key, model in models.items():
        if str(model) not in cache:
            cache[str(model)] = sugarcrepe_accuracy(model, suite, data / "images")
            cache_path.write_text(json.dumps(cache, indent=1) + "\n")
        r = cache[str(model)]
        cells = [f"{r[k]:.1f}" for k in ("overall", "replace_att", "replace_obj", "replace_rel")]
        lines.append(f"| {ROWS[key]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_name(variant: str, args: argparse.Namespace) -> str:
    if variant in ("itm-hardest", "tags", "tags-dc"):  # BLIP: level terms in the name
        istm = args.istm_bce if variant != "itm-hardest" else 0.0
        return variant + (f"_bce{args.itm_bce:g}-{istm:g}" if args.itm_bce or istm else "")
    if variant != "negclip":
        return variant
    roles = "r" if args.role_swaps else ""
    return f"negclip_m{args.top_m}{roles}_k{args.per_caption}_{args.order}_hn{args.hn_weight:g}"


def write_readme(path: Path, family: str, block: str) -> None:
    """Splice ``block`` into ``path``'s ``hf_finetune.py FAMILY`` block (atomically)."""
    try:
        text = splice_block(path.read_text(), f"hf_finetune.py {family}", block)
    except (OSError, ValueError) as err:
        raise SystemExit(f"hf_finetune.py: --readme {path}: {err}") from None
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    temporary.replace(path)
    print(f"wrote the {family.upper()} rows into {path}")


def main() -> None:
    from tags.benchmark.hf_finetune import (
        CROSS_DEFAULTS,
        ORDERS,
        VARIANT_BUILDERS,
        VARIANTS,
        SettingsChangedError,
        finetune_config,
        generate_negatives,
        negatives_mix,
        order_negatives,
        run_finetune,
    )
    from tags.benchmark.hf_models import (
        FAMILIES,
        MODEL_DIR,
        HFTrainConfig,
        evaluate_hf,
        split_minimal_pairs,
        train_config,
    )
    from tags.benchmark.oracle_negatives import split_role_pairs

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="a make-benchmark --save-images directory")
    parser.add_argument("--pretrained", required=True, help="an hf_pretrain.py --out directory")
    parser.add_argument("--out", required=True)
    parser.add_argument("--split", choices=("val", "test"), default="test", help="evaluated on")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--family", choices=FAMILIES, default="clip",
                        help="the pre-trained model's family (hf_pretrain.py --family)")  # fmt: skip
    parser.add_argument("--variants", nargs="+", choices=VARIANTS,
                        help="default: every variant of the family's base recipe")  # fmt: skip
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--top-m", type=int, default=8, help="negatives generated per caption")
    parser.add_argument("--role-swaps", action="store_true", help="tags generate --role-swaps")
    parser.add_argument("--per-caption", type=int, default=3, help="NegCLIP columns per caption")
    parser.add_argument("--order", choices=ORDERS,
                        default="relation-first", help="which negatives of a caption are used")  # fmt: skip
    parser.add_argument("--hn-weight", type=float, default=0.0,
                        help="hard-negative term weight (vse hard_negative)")  # fmt: skip
    parser.add_argument("--results", help="also write the markdown table here")
    parser.add_argument(
        "--readme",
        metavar="FILE",
        help="rewrite the table between FILE's '<!-- hf_finetune.py FAMILY: begin -->' and "
        "'... end -->' lines (the README's fine-tuning table) with this run's rows",
    )
    parser.add_argument("--sugarcrepe", action="store_true",
                        help="also export the split's pairs as SugarCrepe files (OUT/sugarcrepe_"
                        "<split>) and score the pre-trained and each seed-0 model on them with "
                        "tags evaluate --suite sugarcrepe")  # fmt: skip
    parser.add_argument("--check-negatives", type=int, default=0, metavar="N",
                        help="also score the used training negatives of the first N training "
                        "images with the pre-trained and each seed-0 model (by kind)")  # fmt: skip
    blip = parser.add_argument_group("BLIP variants (recipe tags-dc)")
    blip.add_argument(
        "--pool-size",
        type=int,
        default=CROSS_DEFAULTS["pool_size"],
        help="retrieval pool per anchor (tags_dc.retrieval.pool_size)",
    )
    blip.add_argument(
        "--num-negatives",
        type=int,
        default=CROSS_DEFAULTS["num_negatives"],
        help="retrieved negatives the ITM miner sees",
    )
    blip.add_argument(
        "--num-copies",
        type=int,
        default=CROSS_DEFAULTS["num_copies"],
        help="masked copies (and samples) per caption of the synthetic generator",
    )
    blip.add_argument(
        "--synthetic-top-m",
        type=int,
        default=CROSS_DEFAULTS["top_m"],
        help="synthetic negatives kept per caption (tags_dc.synthetic.top_m)",
    )
    blip.add_argument(
        "--istm-weight",
        type=float,
        default=CROSS_DEFAULTS["istm_weight"],
        help="L_ISTM weight (tags, tags-dc)",
    )
    blip.add_argument("--dc-steps", type=int, default=CROSS_DEFAULTS["dc_steps"],
                      help="tags-dc: the last N steps are NSGDC (+ WoD/WoC)")  # fmt: skip
    blip.add_argument(
        "--itm-bce",
        type=float,
        default=CROSS_DEFAULTS["itm_bce"],
        help="weight of BLIP's ITM cross-entropy on the positives and the retrieved negatives "
        "(tags-dc weight itm_bce; keeps the positives' ITM level), 0: hinge only",
    )
    blip.add_argument(
        "--istm-bce",
        type=float,
        default=CROSS_DEFAULTS["istm_bce"],
        help="the same on the synthetic negatives (tags, tags-dc; weight istm_bce)",
    )
    args = parser.parse_args()

    ROWS.update({key: f"{args.family.upper()} {label}" for key, label in LABELS.items()})
    base_recipe = train_config(args.pretrained, args.data, args.out, args.family,
                               HFTrainConfig())["recipe"]  # fmt: skip
    args.variants = args.variants or [
        v for v, (recipe, _) in VARIANT_BUILDERS.items() if recipe == base_recipe
    ]
    cross = {key: getattr(args, "synthetic_top_m" if key == "top_m" else key)
             for key in CROSS_DEFAULTS}  # fmt: skip
    data, out = Path(args.data), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pretrained = Path(args.pretrained) / MODEL_DIR
    pairs = split_minimal_pairs(data, args.split)
    roles = split_role_pairs(data / "scenes.jsonl", args.split)
    cache = out / f"pretrained_{args.split}.json"
    scores = json.loads(cache.read_text()) if cache.is_file() else {}
    if "mp_role" not in scores:
        scores = evaluate_hf(pretrained, data, args.split, pairs=pairs, role_pairs=roles)
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
            base = train_config(pretrained, data, run_dir / "train", args.family, train)
            base["log_every"] = 25
            config = finetune_config(
                base, variant, negatives, args.per_caption, args.hn_weight,
                **(cross if base_recipe != "vse" else {}),
            )  # fmt: skip
            try:
                record = run_finetune(
                    config, run_dir, data, (args.split,), {args.split: pairs},
                    {args.split: roles}, replace_other_settings=False,
                )  # fmt: skip
            except SettingsChangedError as err:
                raise SystemExit(f"hf_finetune.py: {err}") from None
            records.setdefault(variant, []).append(record)
            s = record["scores"][args.split]
            print(f"{ROWS[variant]} seed {seed}: RSum {s['rsum']:.1f}, MP {100 * s['mp']:.1f} "
                  f"(relation {100 * s['mp_relation']:.1f})", flush=True)  # fmt: skip
    summaries = {key: summarize(recs, args.split) for key, recs in records.items()}
    settings = (
        f"{args.steps} steps x batch {args.batch_size}, lr {args.lr}, seeds "
        f"{', '.join(map(str, args.seeds))}"
    )
    if base_recipe != "vse":
        settings += f"; tags_dc: {cross}"
    if negatives is not None:
        settings += (
            f"; tags negatives: top-m {args.top_m}{' with role swaps' if args.role_swaps else ''}"
            f", {args.per_caption} per caption ({args.order}; used: {mix}), hard-negative "
            f"weight {args.hn_weight:g}"
        )
    text = (
        f"Shapes benchmark ({args.split} split: {scores['mp_pairs']} minimal pairs, "
        f"{scores['mp_role_pairs']} role swaps scored apart), {settings}; "
        f"chance RSum {scores['chance_rsum']:.1f}, MP chance 50; mean ± sample std over seeds."
        "\n\n"
        + table(summaries, args.family)
        + "\n\n"
        + "\n".join(goal_lines(summaries, args.family))
        + "\n"
    )
    if args.sugarcrepe:
        text += "\n" + sugarcrepe_table(args, pretrained, data, out, pairs) + "\n"
    if args.check_negatives and negatives is not None:
        text += "\n" + check_negatives(args, pretrained, data, out, negatives) + "\n"
    (out / f"results_{args.split}.md").write_text(text)
    (out / f"results_{args.split}.json").write_text(json.dumps(summaries, indent=1) + "\n")
    if args.results:
        Path(args.results).write_text(text)
    if args.readme:
        write_readme(Path(args.readme), args.family, readme_table(summaries, args.family))
    print(text)


if __name__ == "__main__":
    main()
