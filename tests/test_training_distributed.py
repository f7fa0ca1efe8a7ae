"""Two CPU processes (torchrun, gloo, ``Accelerator(cpu=True)``) end a few training steps
with the same parameters as one process on the combined (global) batches, for every recipe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from _dist_scripts.train_ddp import DDP_OVERRIDES, recipe_of
from _training_utils import tiny_config
from accelerate.utils import set_seed

from tags.training import training_function
from tags.training.factory import create_model, create_tokenizer


@pytest.fixture(scope="module")
def ddp_run(two_processes) -> Path:
    """``_dist_scripts/train_ddp.py``'s folder, trained in the session's launch."""
    return two_processes.check("train")


@pytest.mark.slow
@pytest.mark.distributed
@pytest.mark.parametrize("recipe", sorted(DDP_OVERRIDES))
def test_two_processes_equal_one(ddp_run, recipe, tmp_path):
    single = training_function(
        tiny_config(recipe_of(recipe), tmp_path / recipe, *DDP_OVERRIDES[recipe])
    )
    ddp = torch.load(ddp_run / f"{recipe}.pt")
    ref = single.model.state_dict()
    assert ddp.keys() == ref.keys()
    for key, value in ref.items():
        torch.testing.assert_close(ddp[key], value, atol=1e-5, rtol=1e-4, msg=key)
    # the weights really moved from the (seeded) initial model, so equality is not trivial
    config = tiny_config(recipe_of(recipe), tmp_path / "init", *DDP_OVERRIDES[recipe])
    set_seed(config.seed)
    initial = create_model(config.model, create_tokenizer(config.model), 16).state_dict()
    moved = max((ref[k] - initial[k]).abs().max().item() for k in ref)
    assert moved > 1e-3
    ddp_rows = [
        json.loads(x) for x in (ddp_run / recipe / "metrics.jsonl").read_text().splitlines()
    ]
    rows = [json.loads(x) for x in (tmp_path / recipe / "metrics.jsonl").read_text().splitlines()]
    steps = list(range(1, config.total_steps + 1))
    assert [r["step"] for r in ddp_rows] == [r["step"] for r in rows] == steps
    for a, b in zip(rows, ddp_rows):
        assert a["loss/total"] == pytest.approx(b["loss/total"], abs=1e-5)
    if recipe == "tags-dc+fne":  # the same statistics, and FNE really sampled
        for a, b in zip(rows, ddp_rows):
            for key in ("fne/pos_count", "fne/neg_mean", "itm_i2t/fne_sampled_share"):
                assert a[key] == pytest.approx(b[key], abs=1e-5), key  # float32 scores
        assert rows[-1]["itm_i2t/fne_sampled_share"] > 0 and rows[-1]["fne/pos_count"] >= 2
    assert rows[0]["loss/total"] != pytest.approx(rows[-1]["loss/total"], abs=1e-6)
