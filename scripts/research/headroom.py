"""Research driver of the binding testbed (:mod:`tags.testbed`): runs, gates, sweeps, verdicts.

    python scripts/research/headroom.py --negatives oracle --variant tags-bind --pool gate \
        --steps 600 --eval-every 50 --out oracle.json
    python scripts/research/headroom.py --gate --variant tags-bind --pool gate --steps 600 \
        --eval-every 50 --device cuda --workers 12 --sweep-seconds 240 --out gate/
    python scripts/research/headroom.py --sweep --steps 1500 --device cuda --workers 12 \
        --sweep-seconds 420 --out sweep/
    python scripts/research/headroom.py --judge runs/

A run (:func:`tags.testbed.training.train`) trains the testbed's matcher with binary ITM on
**fresh procedural scenes every step** and scores a fixed held-out set of 2-4 object scenes
every ``--eval-every`` steps: per kind (attribute, object, relation, role), the share of
minimal pairs whose true caption gets the higher ITM logit. The world, the model variants
(``--variant``), the perception (``--perception``, ``--embed``) and the methods
(``--negatives``: plain, oracle, tags, mined, istm = TAGS, tags-dc = TAGS-DC) are the
library's; see :mod:`tags.testbed` and :class:`tags.testbed.TestbedConfig`. This script
adds what research needs around them:

- ``--curriculum N``: 2-object scenes for the first N steps, then 2-4;
- ``--gate``: oracle and plain (and ``--methods``) for seeds 0-2 of one configuration, the
  mean per kind at the end and at every evaluated step, the verdict (oracle >= 90 % on
  attribute, relation, role; plain <= 60 % on relation, role) and each other method's gap
  closed, (method - plain) / (oracle - plain), per kind;
- ``--sweep``: the grid :data:`SWEEP_GRID` (one seed). Gate and sweep run one run after
  another, each stopping at ``--steps`` or its share of ``--sweep-seconds``, and write a
  curve per run, ``summary.json`` (and ``gate.json``) under ``--out``;
- ``--judge FOLDER``: the same verdict over single runs made side by side (``--label``
  names a run's method);
- ``--write-captions FILE``: the training captions of ``--seeds`` for ``tags generate``
  (the ``tags`` method's ``--tags-negatives``); ``--shortcut N``: the trained text-only
  check of the tags negatives training would draw;
- ``--variant hf-clip|hf-blip --perception pixels [--hf-model PATH]``: a Hugging Face CLIP
  (InfoNCE, the added negatives as extra text columns) or BLIP (binary ITM) on the rendered
  whole scene (:mod:`tags.testbed.hf`), built at random unless ``--hf-model`` names a local
  directory;
- ``--workers N`` builds the batches in N processes (for a GPU; the step order is kept).
  The GPU pixel ladder: ``scripts/research/pixel_ladder.sh``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from tags.testbed.config import (
    DUAL,
    HF_VARIANTS,
    ISTM_LOSSES,
    LOSSES,
    METHODS,
    MINERS,
    PERCEPTIONS,
    REFILLS,
    TestbedConfig,
)
from tags.testbed.evaluate import KINDS
from tags.testbed.matcher import POOLS, VARIANTS
from tags.testbed.tags_pool import TagsPool, drawn_shortcut
from tags.testbed.training import HEADER
from tags.testbed.training import train as train_run
from tags.testbed.verdict import GATE_SEEDS, gap_closed, gate_passes, mean_std
from tags.testbed.world import TRAIN_SEED_BASE, training_captions


def run_config(args: argparse.Namespace) -> TestbedConfig:
    """The library config of a run's arguments (the warm-up is at most a tenth of
    ``--steps``; the flags that are not settings are kept in the record)."""
    values = {**vars(args), "warmup": min(args.warmup, args.steps // 10)}
    return TestbedConfig.from_mapping(
        {k: v for k, v in values.items() if k not in ("sweep", "out")}
    )


def train(args: argparse.Namespace, keep: dict | None = None) -> dict:
    """One run of ``args``: :func:`tags.testbed.training.train`, written to ``--out``."""
    return train_run(run_config(args), out=args.out, keep=keep)


#: ``--steps``, lr); 8 runs, each ``--sweep-seconds`` / 8 at most
SWEEP_GRID: tuple[tuple[str, str, str, float, float], ...] = (
    ("oracle", "tags-bind", "softmax", 0.0, 1e-3),
    ("oracle", "tags-bind", "gate", 0.0, 1e-3),
    ("oracle", "tags-bind", "gate", 0.0, 3e-3),
    ("oracle", "tags-bind", "gate", 0.3, 1e-3),
    ("oracle", "tags-rel", "softmax", 0.0, 1e-3),
    ("oracle", "tags", "softmax", 0.0, 1e-3),
    ("plain", "tags-bind", "gate", 0.0, 1e-3),
    ("plain", "tags-bind", "gate", 0.3, 1e-3),
)


def _runs(args, plan: Sequence[tuple[str, str, str, str, float, float, int]]) -> list[dict]:
    """Train every ``(name, negatives, variant, pool, curriculum share, lr, seed)`` of ``plan``
    one after another, each with ``--steps`` and its share of ``--sweep-seconds`` at most."""
    out = Path(args.out or "headroom_sweep")
    out.mkdir(parents=True, exist_ok=True)
    share = args.sweep_seconds / len(plan)
    summary = []
    for name, negatives, variant, pool, curriculum, lr, seed in plan:
        run = argparse.Namespace(**vars(args))
        run.negatives, run.variant, run.pool, run.lr, run.seed = negatives, variant, pool, lr, seed
        run.curriculum = int(curriculum * args.steps)
        run.max_seconds = max(share - 15, 5)  # start-up and the final evaluation
        run.out = str(out / f"{name}.json")
        print(f"\n### {name}\n{HEADER}", flush=True)
        result = train(run)
        keys = ("steps_done", "steps_per_s", "seconds", "final", "curve")
        summary.append({"name": name, "negatives": negatives, **{k: result[k] for k in keys}})
    print(
        "\n| run | steps | steps/s | s | attr | obj | rel | role |\n|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    for s in summary:
        cells = " | ".join(f"{100 * s['final'].get(k, float('nan')):.1f}" for k in KINDS)
        print(
            f"| {s['name']} | {s['steps_done']} | {s['steps_per_s']} | {s['seconds']} | {cells} |"
        )
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def sweep(args) -> list[dict]:
    """Every configuration of :data:`SWEEP_GRID` (seed ``--seed``); prints and writes a
    summary (``OUT/summary.json``, a curve per run)."""
    plan = []
    for n, v, p, c, lr in SWEEP_GRID:
        name = f"{n}-{v}{'-' + p if v == 'tags-bind' else ''}-c{c:g}-lr{lr:g}"
        plan.append((name, n, v, p, c, lr, args.seed))
    return _runs(args, plan)


def gate(args) -> dict:
    """The headroom gate for the configuration of ``args``: each of ``--methods`` (oracle and
    plain, and e.g. ``tags``) for each of ``--seeds``, the mean and sample std per kind, whether
    the gate passes, and every other method's gap closed per kind (at the end and by step)."""
    share = args.curriculum / args.steps
    methods = list(dict.fromkeys(["oracle", "plain", *args.methods]))
    plan = [
        (f"{n}-seed{s}", n, args.variant, args.pool, share, args.lr, s)
        for n in methods
        for s in args.seeds
    ]
    return judge(_runs(args, plan), methods, Path(args.out or "headroom_sweep"))


def judge(summary: Sequence[dict], methods: Sequence[str], out: Path) -> dict:
    """The gate's verdict over the runs of ``summary`` (mean ± std per method and kind, the
    pass, the gap closed, by step); printed and written to ``out/gate.json``."""
    verdict: dict = {}
    columns = [*KINDS, "overall"]
    print(
        "\n| negatives | " + " | ".join(columns) + " | RSum |\n|---|" + "---:|" * (len(columns) + 1)
    )
    for negatives in methods:
        finals = [s["final"] for s in summary if s["negatives"] == negatives]
        stats = {k: mean_std([f[k] for f in finals]) for k in KINDS}
        verdict[negatives] = stats
        overall = mean_std([f["overall"] for f in finals])
        rsums = [f["retrieval"]["rsum"] for f in finals if "retrieval" in f]
        rsum = mean_std(rsums) if len(rsums) == len(finals) else None
        verdict.setdefault("overall", {})[negatives] = overall
        verdict.setdefault("rsum", {})[negatives] = rsum
        cells = [f"{100 * m:.1f} ± {100 * sd:.1f}" for m, sd in [*stats.values(), overall]]
        cells.append(f"{rsum[0]:.1f} ± {rsum[1]:.1f}" if rsum else "-")
        print(f"| {negatives} | " + " | ".join(cells) + " |")
    passed = gate_passes(
        {k: v[0] for k, v in verdict["oracle"].items()},
        {k: v[0] for k, v in verdict["plain"].items()},
    )
    verdict["passed"] = passed
    verdict["gap_closed"] = {
        n: gap_closed(verdict[n], verdict["oracle"], verdict["plain"])
        for n in methods
        if n not in ("oracle", "plain")
    }
    for n, gaps in verdict["gap_closed"].items():
        print(f"gap closed by {n}: " + ", ".join(f"{k} {g:.2f}" for k, g in gaps.items()))
    verdict["by_step"] = gate_by_step(summary, methods)
    print(
        f"gate {'PASSED' if passed else 'not passed'}: oracle >= 90 on attribute, relation, role; plain <= 60 on relation, role"
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "gate.json").write_text(json.dumps(verdict, indent=1))
    return verdict


def judge_folder(folder: Path) -> dict:
    """:func:`judge` over the single runs' curve files in ``folder`` (``--out`` of runs made
    one by one, e.g. side by side): every method found, oracle and plain required."""
    summary = []
    for path in sorted(folder.glob("*.json")):
        run = json.loads(path.read_text())
        if not isinstance(run, dict) or "curve" not in run or "config" not in run:
            continue
        negatives = run["config"].get("label") or run["config"]["negatives"]
        name = f"{negatives}-seed{run['config']['seed']}"
        summary.append({"name": name, "negatives": negatives, **run})
    methods = list(dict.fromkeys(["oracle", "plain", *sorted({s["negatives"] for s in summary})]))
    missing = [m for m in ("oracle", "plain") if not any(s["negatives"] == m for s in summary)]
    if missing:
        raise SystemExit(f"{folder}: no curve of {', '.join(missing)}")
    return judge(summary, methods, folder)


def gate_by_step(
    summary: Sequence[dict], methods: Sequence[str] = ("oracle", "plain")
) -> list[dict]:
    """The gate at every evaluated step that all runs reached: the mean over seeds of every
    method per kind, whether the gate passes, and the other methods' relation and role gap
    closed; printed."""
    common = set.intersection(*({row["step"] for row in s["curve"]} for s in summary))
    others = [m for m in methods if m not in ("oracle", "plain")]
    rows = []
    head = ["oracle attr", "oracle rel", "oracle role", "plain rel", "plain role"]
    for m in others:
        head += [f"{m} rel", f"{m} role", f"{m} gap rel", f"{m} gap role"]
    print("\n| step | " + " | ".join(head) + " | gate |")
    print("|---:|" + "---:|" * len(head) + "---|")
    for step in sorted(common):
        means = {}
        for negatives in methods:
            at = [
                r
                for s in summary
                if s["negatives"] == negatives
                for r in s["curve"]
                if r["step"] == step
            ]
            means[negatives] = {k: float(np.mean([r[k] for r in at])) for k in KINDS}
        passed = gate_passes(means["oracle"], means["plain"])
        o, p = means["oracle"], means["plain"]
        cells = [o["attribute"], o["relation"], o["role"], p["relation"], p["role"]]
        text = [f"{100 * c:.1f}" for c in cells]
        row = {"step": step, **means, "passed": passed}
        for m in others:
            gaps = gap_closed(means[m], o, p)
            row[f"{m}_gap_closed"] = gaps
            text += [f"{100 * means[m]['relation']:.1f}", f"{100 * means[m]['role']:.1f}"]
            text += [f"{gaps['relation']:.2f}", f"{gaps['role']:.2f}"]
        rows.append(row)
        print(f"| {step} | " + " | ".join(text) + f" | {'pass' if passed else '-'} |")
    return rows


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--negatives", choices=METHODS, default="oracle",
        help="istm: TAGS, tags-dc: TAGS-DC (the model's own MLM refills; tags.testbed.self_negatives)",
    )  # fmt: skip
    parser.add_argument(
        "--refills", type=int, default=20, help="istm, tags-dc: refills per masked copy (L)"
    )
    parser.add_argument(
        "--temperature", type=float, default=1.5, help="istm, tags-dc: refill temperature"
    )
    parser.add_argument(
        "--refill", choices=REFILLS, default="free",
        help="istm, tags-dc: refills from the whole vocabulary (free, the paper) or the MLM's "
        "choice among the masked unit's word class (typed)",
    )  # fmt: skip
    parser.add_argument(
        "--copies", type=int, default=0,
        help="istm, tags-dc: units masked per caption and step (0: every unit, the paper)",
    )  # fmt: skip
    parser.add_argument(
        "--mlm-weight", type=float, default=0.1, help="istm, tags-dc: l_MLM (paper 0.1)"
    )
    parser.add_argument(
        "--dc-weight", type=float, default=1e-3, help="tags-dc: l_WoD = l_WoC (paper 1e-3)"
    )
    parser.add_argument(
        "--dc-start", type=int, default=0, metavar="STEP",
        help="tags-dc: WoD/WoC from this step (the paper's NSG -> NSGDC phases; 0: all along)",
    )  # fmt: skip
    parser.add_argument(
        "--istm-loss", choices=ISTM_LOSSES, default="row",
        help="istm, tags-dc: the best refill as one more ITM row (row), or the paper's L_ISTM, "
        "the mean hinge (margin 0.2) of the positive over the --top-m best refills (triplet)",
    )  # fmt: skip
    parser.add_argument(
        "--top-m", type=int, default=31, help="--istm-loss triplet: refills per caption (m)"
    )
    parser.add_argument(
        "--istm-weight", type=float, default=1e-3, help="--istm-loss triplet: l_ISTM (paper 1e-3)"
    )
    parser.add_argument(
        "--rsum",
        action="store_true",
        help="at the last step, also image-text retrieval over the held-out scenes' captions",
    )
    parser.add_argument(
        "--check-shortcut", action="store_true",
        help="at the end, the trained text-only check of every negative the method added",
    )  # fmt: skip
    parser.add_argument(
        "--stop-after", type=int, default=0, metavar="STEP",
        help="stop at this step (the schedule stays that of --steps)",
    )  # fmt: skip
    parser.add_argument(
        "--miner",
        choices=MINERS,
        default="hardest",
        help="--negatives mined: the rule choosing among the candidates (tags.mining)",
    )
    parser.add_argument(
        "--mined-loss",
        choices=("bce", "triplet"),
        default="bce",
        help="--negatives mined: the chosen candidate as one more ITM row (bce), or the "
        "miner's own triplet loss over every candidate's ITM score (triplet; selhn needs it)",
    )
    parser.add_argument(
        "--tags-negatives",
        default=None,
        help="--negatives tags: a tags generate output over the --write-captions file",
    )
    parser.add_argument(
        "--write-captions",
        default=None,
        metavar="FILE",
        help="write the training captions of --seeds (steps 1..--steps) for tags generate, as "
        "JSON Lines (one image each); exit",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=list(GATE_SEEDS))
    parser.add_argument(
        "--label", default=None, help="the method's name for --judge (default: --negatives)"
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        choices=METHODS,
        default=["oracle", "plain"],
        help="--gate: the methods run (oracle and plain always)",
    )
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument(
        "--variant", choices=(*VARIANTS, DUAL, *HF_VARIANTS), default="tags-bind",
        help=f"{DUAL}: a dual encoder (tags.testbed.dual); hf-clip / hf-blip: a Hugging Face "
        "CLIP / BLIP on the rendered scene (tags.testbed.hf; with --perception pixels); else "
        "the cross-encoder's variant",
    )  # fmt: skip
    parser.add_argument(
        "--loss", choices=LOSSES, default=None,
        help="itm (binary ITM) or contrastive (CLIP InfoNCE, the method's negatives as extra "
        f"text columns: NegCLIP); default: contrastive for --variant {DUAL} and hf-clip, "
        "else itm",
    )  # fmt: skip
    parser.add_argument("--embed", choices=("tied", "free"), default="tied")
    parser.add_argument(
        "--pool",
        choices=POOLS,
        default="gate",
        help="tags-bind: a role's word matches pooled by softmax weights or summed by sigmoid gates",
    )
    parser.add_argument(
        "--perception", choices=PERCEPTIONS, default="symbolic",
        help="regions as their words' embeddings (symbolic) or a frozen CNN's features of "
        "each object's crop of the rendered scene (pixels)",
    )  # fmt: skip
    parser.add_argument(
        "--featurizer", choices=("auto", "efficientnet", "random-conv"), default="auto",
        help="--perception pixels: the frozen CNN (auto: EfficientNet-Lite0 when installed)",
    )  # fmt: skip
    parser.add_argument("--crop-size", type=int, default=64, help="--perception pixels")
    parser.add_argument(
        "--hf-model", default=None, metavar="PATH",
        help="--variant hf-clip / hf-blip: a local model directory (default: built at random "
        "from --hidden, --layers, --image-size, --patch-size)",
    )  # fmt: skip
    parser.add_argument(
        "--image-size", type=int, default=64, help="hf-clip / hf-blip: the rendered scene's side"
    )
    parser.add_argument(
        "--patch-size", type=int, default=8, help="hf-clip / hf-blip built at random: ViT patch"
    )
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--curriculum", type=int, default=0, help="2-object scenes for N steps")
    parser.add_argument("--batch-size", type=int, default=64, help="scenes (captions) a step")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-seed", type=int, default=0)
    parser.add_argument("--eval-scenes", type=int, default=200)
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--max-seconds", type=float, default=0.0, help="stop a run after this")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast (cuda only)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--workers", type=int, default=0, help="batch-building processes")
    parser.add_argument("--out", default=None, help="the curve JSON (sweep: a folder)")
    parser.add_argument("--sweep", action="store_true", help="run the grid (SWEEP_GRID)")
    parser.add_argument(
        "--gate", action="store_true", help="oracle and plain, 3 seeds, this configuration"
    )
    parser.add_argument("--sweep-seconds", type=float, default=420.0)
    parser.add_argument(
        "--shortcut",
        type=int,
        default=0,
        metavar="N",
        help="the trained text-only check of --tags-negatives drawn for the first N training "
        "captions of --seeds; exit",
    )
    parser.add_argument(
        "--judge",
        default=None,
        metavar="FOLDER",
        help="the gate's verdict over the single runs' curve files in FOLDER; exit",
    )
    args = parser.parse_args(argv)
    if (
        args.negatives == "mined"
        and args.miner in ("selhn", "fne")
        and args.mined_loss != "triplet"
    ):
        parser.error(f"--miner {args.miner}'s rule is its loss: add --mined-loss triplet")
    if args.variant in HF_VARIANTS and args.perception != "pixels":
        parser.error(f"--variant {args.variant} reads rendered images: add --perception pixels")
    if args.hf_model and args.variant not in HF_VARIANTS:
        parser.error("--hf-model needs --variant hf-clip or hf-blip")
    if args.negatives == "plain" and "--kinds" in (argv or sys.argv):
        parser.error("--kinds applies to --negatives oracle")
    uses_tags = args.negatives == "tags" or (args.gate and "tags" in args.methods) or args.shortcut
    if uses_tags and not args.write_captions:
        if not args.tags_negatives:
            parser.error("--negatives tags needs --tags-negatives (a tags generate output)")
        if not Path(args.tags_negatives).is_file():
            parser.error(f"--tags-negatives {args.tags_negatives} not found")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    import torch

    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.write_captions:
        texts = training_captions(
            args.seeds, args.steps, args.batch_size, args.curriculum, TRAIN_SEED_BASE
        )
        lines = (json.dumps({"image_id": i, "caption": t}) for i, t in enumerate(texts))
        Path(args.write_captions).write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{len(texts)} captions of seeds {args.seeds} -> {args.write_captions}")
        return 0
    if args.shortcut:
        pool = TagsPool.load(args.tags_negatives)
        texts = training_captions(
            args.seeds, args.steps, args.batch_size, args.curriculum, TRAIN_SEED_BASE
        )
        print(json.dumps(drawn_shortcut(pool, texts[: args.shortcut]), indent=1))
        return 0
    if args.judge:
        judge_folder(Path(args.judge))
        return 0
    if args.sweep or args.gate:
        (sweep if args.sweep else gate)(args)
        return 0
    print(HEADER, flush=True)
    result = train(args)
    print(f"steps/s {result['steps_per_s']}, {result['seconds']} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
