"""Per-stage cost of the demo's fine-tuning, two code versions side by side.

Runs ``--steps`` steps of each demo method (budget ``small`` otherwise; ``pretrain``: the
shared pre-training from scratch, the others fine-tune the same pre-trained checkpoint),
once with the code of ``--baseline`` (a git revision, default: where this branch left
``main``; exported to a temporary directory) and once with the working tree, alternating
(``--repeat``: ABBA..., the fastest run per stage kept), each in its own process with
``--threads`` torch threads. Stages are timed from the outside
(wrappers around the functions both versions share), so the baseline needs no timers:

- ``planner``: building the edit planner over the training captions (once per run);
- ``retrieval``: scoring the retrieval pools and taking the top negatives;
- ``synthetic``: generating, filtering and selecting the synthetic negatives;
- ``forward``: the rest of the training step (rows, one forward, losses);
- ``backward``: backward pass and optimizer step;
- ``other``: the rest (data loading, logging, checkpoints, model set-up);
- ``evaluate``: the demo's test evaluation of the trained model.

It also checks that both versions logged the same losses (exact changes) or says how
far apart they are. Timings are only comparable within one run of this script.

    python scripts/benchmarks/demo_profile.py --demo runs/demo --steps 12
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STAGES = ("planner", "retrieval", "synthetic", "forward", "backward", "other", "evaluate")

# run inside the child process (either code version): times the stages of one method
CHILD = r"""
import dataclasses, json, sys, time
from pathlib import Path
import torch
torch.set_num_threads(int(sys.argv[5]))
import accelerate
from tags.benchmark.build import BenchmarkPaths
from tags.demo import methods
from tags.demo.budget import BUDGETS
from tags.demo.evaluate import evaluate
from tags.training import training_function
from tags.training import synthetic
from tags.training.config import config_from_dict
from tags.training.factory import create_tokenizer
from tags.training.recipes import pretrain, tags_dc

demo, method, steps, out = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
seconds = dict.fromkeys(["planner", "retrieval", "synthetic", "step", "backward"], 0.0)

clock = time.process_time if sys.argv[9] == "cpu" else time.perf_counter

def timed(owner, name, stage):
    inner = getattr(owner, name, None)
    if inner is None:  # a name of another code version
        return
    def wrapper(*args, **kwargs):
        start = clock()
        try:
            return inner(*args, **kwargs)
        finally:
            seconds[stage] += clock() - start
    setattr(owner, name, wrapper)

timed(synthetic, "build_planner", "planner")
timed(tags_dc, "retrieve_negatives", "retrieval")
timed(tags_dc, "score_pools", "retrieval")
timed(tags_dc, "select_from_pools", "retrieval")
timed(synthetic.EngineSource, "__call__", "synthetic")
timed(tags_dc, "label_negatives", "synthetic")
timed(tags_dc.TagsDCRecipe, "training_step", "step")
timed(pretrain.PretrainRecipe, "training_step", "step")
timed(accelerate.Accelerator, "backward", "backward")

budget = dataclasses.replace(BUDGETS["small"], steps=steps, dc_steps=max(1, steps // 3))
data = BenchmarkPaths.under(sys.argv[8] or demo / "data", False)
pretrained = sys.argv[6] or json.loads(
    (demo / "runs" / "pretrained" / "result.json").read_text())["model_dir"]
if method == "pretrain":  # the shared pre-training, from scratch
    budget = dataclasses.replace(budget, pretrain_steps=steps)
    raw = methods.pretrain_config(budget, data, out, 0)
else:
    raw = methods.method_config(method, budget, data, out, 0, {"pretrained": pretrained})
raw["log_every"] = 1
raw["progress_bar"] = False
start = clock()
trained = training_function(config_from_dict(raw))
train = clock() - start
start = clock()
result = {"retrieval": {"rsum": float("nan")}, "minimal_pairs": {"overall": float("nan")}}
if sys.argv[7] == "1":
    result = evaluate(trained.model, create_tokenizer(config_from_dict(raw).model), data,
                      budget.max_text_len, "cross")
rows = [json.loads(l) for l in (out / "metrics.jsonl").read_text().splitlines() if l.strip()]
print(json.dumps({
    "train": train, "evaluate": clock() - start, **seconds,
    "losses": [r.get("loss/total") for r in rows if "loss/total" in r],
    "rsum": result["retrieval"]["rsum"], "mp": result["minimal_pairs"]["overall"],
}))
"""


def export(revision: str, target: Path) -> Path:
    """``git archive`` of ``revision`` unpacked under ``target``."""
    target.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def merge_base() -> str:
    """The commit this branch left ``main`` at (the code before the branch's changes)."""
    done = subprocess.run(
        ["git", "-C", str(ROOT), "merge-base", "HEAD", "main"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout.strip()


def run_child(tree: Path, demo: Path, method: str, out: Path, args: argparse.Namespace) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
    env["OMP_NUM_THREADS"] = str(args.threads)
    args = [
        sys.executable, "-c", CHILD, str(demo), method, str(args.steps), str(out),
        str(args.threads), args.pretrained or "", "0" if args.skip_evaluate else "1",
        args.data or "", args.clock,
    ]  # fmt: skip
    done = subprocess.run(args, env=env, capture_output=True, text=True, cwd=tree)
    if done.returncode:
        sys.exit(f"{method} in {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def stages(result: dict) -> dict[str, float]:
    step = result["step"] - result["retrieval"] - result["synthetic"]
    other = result["train"] - result["step"] - result["backward"] - result["planner"]
    return {
        "planner": result["planner"],
        "retrieval": result["retrieval"],
        "synthetic": result["synthetic"],
        "forward": step,
        "backward": result["backward"],
        "other": other,
        "evaluate": result["evaluate"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--demo", required=True, help="a finished demo OUT (data + pretrained)")
    parser.add_argument(
        "--baseline", default=None, help="git revision of the old code (default: merge-base "
        "of HEAD and main)",
    )  # fmt: skip
    parser.add_argument("--repeat", type=int, default=1, help="runs per version (min kept)")
    parser.add_argument("--methods", nargs="+", default=["pretrain", "hardest", "tags-dc"])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--pretrained", default=None, help="model dir (default: the demo's)")
    parser.add_argument("--data", default=None, help="benchmark dir (default: OUT/data)")
    parser.add_argument(
        "--clock", choices=("cpu", "wall"), default="cpu",
        help="cpu: process CPU seconds (robust on a shared machine; with one thread close to "
        "the wall clock of an idle one); wall: elapsed seconds",
    )  # fmt: skip
    parser.add_argument("--skip-evaluate", action="store_true", help="no test evaluation")
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()
    demo = Path(args.demo).resolve()
    table: dict[str, dict[str, dict]] = {}
    baseline = args.baseline or merge_base()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"baseline": export(baseline, Path(tmp) / "baseline"), "current": ROOT}
        for method in args.methods:
            table[method] = {}
            for repeat in range(args.repeat):
                order = list(trees) if repeat % 2 == 0 else list(trees)[::-1]  # ABBA...
                for name in order:
                    print(f"{method}: {name} ({repeat + 1})", file=sys.stderr, flush=True)
                    out = Path(tmp) / f"{method}-{name}-{repeat}"
                    run = run_child(trees[name], demo, method, out, args)
                    best = table[method].setdefault(name, run)
                    for key, value in run.items():  # the fastest of the repeats per stage
                        if isinstance(value, float) and key not in ("rsum", "mp"):
                            best[key] = min(best[key], value)
    print(
        f"baseline {baseline[:10]}; {args.steps} steps per method, {args.threads} thread(s), "
        f"fastest of {args.repeat} run(s) per stage; {args.clock} seconds\n"
    )
    print("| method | stage | baseline | current | ratio |")
    print("|---|---|---:|---:|---:|")
    for method, runs in table.items():
        old, new = stages(runs["baseline"]), stages(runs["current"])
        old["total"], new["total"] = sum(old.values()), sum(new.values())
        for stage in (*STAGES, "total"):
            ratio = old[stage] / new[stage] if new[stage] > 1e-3 else float("nan")
            print(f"| {method} | {stage} | {old[stage]:.1f} | {new[stage]:.1f} | {ratio:.2f}x |")
    print("\n| method | same losses | max loss diff | RSum base / current | MP base / current |")
    print("|---|---|---:|---|---|")
    for method, runs in table.items():
        a, b = runs["baseline"], runs["current"]
        diff = max((abs(x - y) for x, y in zip(a["losses"], b["losses"])), default=0.0)
        print(
            f"| {method} | {a['losses'] == b['losses']} | {diff:.2e} | "
            f"{a['rsum']:.1f} / {b['rsum']:.1f} | {100 * a['mp']:.1f} / {100 * b['mp']:.1f} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
