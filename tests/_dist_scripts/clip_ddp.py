"""Run under ``python -m torch.distributed.run --nproc_per_node 2`` (gloo, CPU), alone or
as a job of ``jobs.py`` (its ``run``; the suite's ``two_processes`` launch).

Trains the tiny CLIP ``vse`` config (the model's InfoNCE, synthetic negatives as extra text
columns, raw images) with the overrides of ``tests/test_training_backends.py`` and saves the
final weights (rank 0) to ``OUT/clip.pt``.

    clip_ddp.py OUT MODEL_DIR CAPTIONS IMAGES NEGATIVES
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tags.core.distributed import get_world_size  # noqa: E402
from tags.training import load_config, training_function  # noqa: E402

CONFIG = ROOT / "scripts" / "configs" / "tiny_clip_vse_cpu.yaml"
# plain SGD: Adam would hide a wrongly scaled gradient (see train_ddp.py)
OVERRIDES = (
    "phases.0.steps=3",
    "phases.0.lr=0.5",
    "optim.optimizer=sgd",
    "optim.warmup_ratio=0.0",
    "vse.synthetic_negatives=1",
    "progress_bar=false",
    "tensorboard=false",
)


def config(out: Path, model: str, captions: str, images: str, negatives: str):
    return load_config(
        CONFIG,
        [
            f"model.path={model}",
            f"data.captions={captions}",
            f"data.images={images}",
            f"data.negatives={negatives}",
            f"output_dir={out}",
            *OVERRIDES,
        ],
    )


def run(out: Path | str, *paths: str) -> None:
    """Train the config on two processes; rank 0 saves ``OUT/clip.pt``."""
    out = Path(out)
    result = training_function(config(out / "clip", *paths))
    assert get_world_size() == 2, "expected two processes"
    if result.state.step != 3:
        raise SystemExit(f"stopped at step {result.state.step}")
    if torch.distributed.get_rank() == 0:
        torch.save(result.model.state_dict(), out / "clip.pt")


def main(out: Path, *paths: str) -> None:
    run(out, *paths)
    torch.distributed.barrier()
    print(f"rank {torch.distributed.get_rank()}: OK", flush=True)
    # tear gloo down explicitly: exiting with a live process group can abort at shutdown
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(Path(sys.argv[1]), *sys.argv[2:])
