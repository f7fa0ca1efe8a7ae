"""Step-time overhead of FNE inside TAGS-DC against the ``all`` ITM miner on the same pool.

    python scripts/benchmarks/fne_overhead.py                       # CPU, ~2 min
    python scripts/benchmarks/fne_overhead.py --pool 399 --k 31 --steps 6

One model and one dataset (the synthetic corpus), two ``tags-dc`` recipes that differ only in
``tags_dc.itm_miner`` (``all``: top-k of the scored pool + mean hinge; ``fne``: positives
scored too, right-anchor statistics all-reduced, FNE weights and ``k`` draws per anchor and
direction, then the same mean hinge). FNE's statistics are filled beforehand so that every
anchor samples (the costly branch). Steps alternate between the two (forward + backward of
``training_step``, same batches), so both see the same machine load; prints the mean step
time of each and the ratio, in wall-clock and in process CPU time (``time.process_time``,
the figure to trust on a shared machine; run it with one thread: ``OMP_NUM_THREADS=1``),
plus the CPU time of FNE's own work alone (statistics, weights, draws) on the same pool
shape. No synthetic negatives (``synthetic.source: none``), so the
retrieval and ITM work dominates the step.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def build(miner: str, args: argparse.Namespace, out: str):
    from tags.training import config_from_dict

    raw = {
        "recipe": "tags-dc",
        "seed": 0,
        "output_dir": out,
        "cpu": True,
        "batch_size": args.batch,
        "model": {
            "source": "scratch",
            "tokenizer": "tiny-mlm",
            "dropout": 0.0,
            "overrides": {
                "hidden_size": args.hidden,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "intermediate_size": 2 * args.hidden,
                "max_position_embeddings": 64,
                "max_regions": 8,
            },
        },
        "data": {"captions": "synthetic", "synthetic_images": args.images, "max_text_len": 24},
        "tags_dc": {
            "itm_miner": {"name": miner, "kwargs": {"margin": 0.2}},
            "retrieval": {"pool_size": args.pool, "num_negatives": args.k},
            "synthetic": {"source": "none"},
        },
        "phases": [{"name": "main", "steps": 1, "lr": 1e-4, "weights": {"mlm": 0.0}}],
    }
    return config_from_dict(raw)


def fne_only_ms(args: argparse.Namespace, repeat: int = 100) -> float:
    """CPU milliseconds per step of FNE's statistics update and both directions' draws."""
    import torch

    from tags.mining import get_miner
    from tags.mining.fne_pool import draw_from_pool, observe_pool

    miner = get_miner("fne", min_count=0)
    miner.stats.update(0.5 + 0.01 * torch.randn(64), 0.45 + 0.01 * torch.randn(64))
    scores = 0.45 + 0.1 * torch.rand(args.batch, args.pool)
    mask = torch.ones_like(scores, dtype=torch.bool)
    pos = torch.full((args.batch,), 0.5)
    start = time.process_time()
    for i in range(repeat):
        observe_pool(miner, pos, scores, mask, scores, mask)
        for _ in range(2):
            gens = [torch.Generator().manual_seed(i * 1000 + j) for j in range(args.batch)]
            draw_from_pool(miner, scores, pos, mask, args.k, gens)
    return (time.process_time() - start) / repeat * 1000


def main() -> None:
    import torch
    from accelerate import Accelerator

    from tags.data import PairCollator, build_dataset
    from tags.training.factory import create_model, create_tokenizer
    from tags.training.loop import _materialize_data
    from tags.training.recipes import get_recipe
    from tags.training.recipes.base import StepContext

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pool", type=int, default=127)
    parser.add_argument("--k", type=int, default=15)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per miner")
    args = parser.parse_args()

    torch.manual_seed(0)
    out = tempfile.mkdtemp(prefix="fne_overhead_")
    accelerator = Accelerator(cpu=True)
    configs = {name: build(name, args, out) for name in ("all", "fne")}
    tokenizer = create_tokenizer(configs["all"].model)
    dataset = build_dataset(_materialize_data(configs["all"], True), tokenizer)
    model = create_model(configs["all"].model, tokenizer, dataset.feature_size)
    recipes = {
        name: get_recipe("tags-dc")(config, accelerator, model, tokenizer, dataset)
        for name, config in configs.items()
    }
    fne = recipes["fne"].itm_loss.miner
    fne.min_count = 0
    # scores of this untrained model lie around 0.5: statistics under which every candidate
    # gets a positive weight, so every anchor takes the sampling branch
    fne.stats.update(0.5 + 0.01 * torch.randn(64), 0.45 + 0.01 * torch.randn(64))
    collate = PairCollator(tokenizer.pad_token_id or 0)
    g = torch.Generator().manual_seed(0)
    order = torch.randperm(len(dataset), generator=g).tolist()
    n_batches = 2 + args.steps
    batches = [
        collate([dataset[i] for i in order[j * args.batch : (j + 1) * args.batch]])
        for j in range(n_batches)
    ]
    phase = configs["all"].phases[0]
    times: dict[str, list[float]] = {"all": [], "fne": []}
    cpu: dict[str, list[float]] = {"all": [], "fne": []}
    sampled: list[float] = []
    for step, batch in enumerate(batches):
        for name in ("all", "fne") if step % 2 == 0 else ("fne", "all"):
            recipe = recipes[name]
            ctx = StepContext(step, 0, phase, recipe.weights(phase), 0)
            model.zero_grad(set_to_none=True)
            start, start_cpu = time.perf_counter(), time.process_time()
            result = recipe.training_step(recipe.module, batch, ctx)
            result.loss.backward()
            elapsed, elapsed_cpu = time.perf_counter() - start, time.process_time() - start_cpu
            if step >= 2:  # the first two are warm-up
                times[name].append(elapsed)
                cpu[name].append(elapsed_cpu)
                if name == "fne":
                    sampled.append(float(result.metrics["itm_i2t/fne_sampled_share"]))
    mean = {name: statistics.mean(v) for name, v in times.items()}
    mean_cpu = {name: statistics.mean(v) for name, v in cpu.items()}
    print(
        f"pool {args.pool} -> k {args.k}, batch {args.batch}, hidden {args.hidden}, "
        f"{args.steps} timed steps each (alternating), torch threads {torch.get_num_threads()}"
    )
    for name in ("all", "fne"):
        print(
            f"  {name:>4}: wall {mean[name] * 1000:8.1f} ms/step "
            f"(sd {statistics.pstdev(times[name]) * 1000:.1f}), "
            f"cpu {mean_cpu[name] * 1000:8.1f} ms/step (sd {statistics.pstdev(cpu[name]) * 1000:.1f})"
        )
    print(
        f"  fne / all: wall {mean['fne'] / mean['all']:.3f}x, cpu {mean_cpu['fne'] / mean_cpu['all']:.3f}x (goal <= 1.1x)"
    )
    print(f"  FNE's own work (observe + 2 draws): {fne_only_ms(args):.2f} ms cpu/step")
    print(f"  fne sampled-branch share (i2t): {statistics.mean(sampled):.2f}")


if __name__ == "__main__":
    main()
