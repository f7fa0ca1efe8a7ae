"""Run under ``python -m torch.distributed.run --nproc_per_node 2`` (gloo, CPU), alone or
as a job of ``jobs.py`` (its ``run``; the suite's ``two_processes`` launch).

Trains the tiny ``vse`` (SelHN + momentum queue), ``pretrain`` (ITM + MLM + ITC, gathered
InfoNCE) and ``tags-dc`` (real generation engine, NSG -> NSGDC) configs of ``tests/test_training_distributed.py`` and saves the final weights
(rank 0) to ``OUT/{recipe}.pt``; the test compares them with one process on the same global
batches.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _training_utils import tiny_config

from tags.core.distributed import get_world_size
from tags.training import training_function

# Plain SGD: Adam's per-parameter normalisation would hide a wrongly scaled gradient and
# amplify float noise in near-zero gradients (e.g. the ITM bias under a balanced hinge).
DDP_OVERRIDES = {
    "vse": (
        "phases.0.steps=3",
        "phases.0.lr=0.5",
        "optim.optimizer=sgd",
        "vse.miner.name=selhn",
        "vse.queue_size=12",
    ),
    "pretrain": ("phases.0.steps=3", "phases.0.lr=0.5", "optim.optimizer=sgd"),
    "tags-dc": (
        "optim.optimizer=sgd",
        "phases=[{name: nsg, steps: 2, lr: 0.5}, {name: nsgdc, steps: 1, lr: 0.5,"
        " weights: {wod: 1.0e-1, woc: 1.0e-1}}]",
    ),
    # issue 16: FNE draws the retrieved negatives and the ISTM negative (statistics from the
    # pools' right anchors, all-reduced; per-anchor generators); scores spread from the start
    # (5 steps: the statistics are ready and FNE samples in the last one)
    "tags-dc+fne": (
        "optim.optimizer=sgd",
        "phases.0.steps=5",
        "phases.0.lr=0.05",
        "tags_dc.itm_miner={name: fne, kwargs: {min_count: 0}}",
        "tags_dc.istm_miner={name: fne, kwargs: {min_count: 0}}",
        "tags_dc.retrieval.pool_size=2",
        "tags_dc.retrieval.num_negatives=1",
        "model.overrides.initializer_range=0.5",
    ),
}


def recipe_of(key: str) -> str:
    """``"tags-dc+fne"`` -> ``"tags-dc"``: a key names a recipe and, after ``+``, a variant."""
    return key.split("+")[0]


def run(out: Path | str) -> None:
    """Train every config of ``DDP_OVERRIDES``; rank 0 saves ``OUT/{recipe}.pt``."""
    out = Path(out)
    for recipe, overrides in DDP_OVERRIDES.items():
        config = tiny_config(recipe_of(recipe), out / recipe, *overrides)
        result = training_function(config)
        assert get_world_size() == 2, "expected two processes"
        if result.state.step != config.total_steps:
            raise SystemExit(f"{recipe}: stopped at step {result.state.step}")
        if torch.distributed.get_rank() == 0:
            torch.save(result.model.state_dict(), out / f"{recipe}.pt")


def main(out: Path) -> None:
    run(out)
    torch.distributed.barrier()
    print(f"rank {torch.distributed.get_rank()}: OK", flush=True)
    # tear gloo down explicitly: exiting with a live process group can abort at shutdown
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
