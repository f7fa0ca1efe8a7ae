"""Two CPU processes (torchrun, gloo, ``Accelerator(cpu=True)``) end a few training steps
with the same parameters as one process on the combined (global) batches, for both recipes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from _dist_scripts.train_ddp import DDP_OVERRIDES
from _training_utils import tiny_config
from accelerate.utils import set_seed

from tags.training import training_function
from tags.training.factory import create_model, create_tokenizer

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "_dist_scripts" / "train_ddp.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ddp")
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    env.pop("ACCELERATE_USE_CPU", None)
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
        "--master_addr", "127.0.0.1", "--master_port", str(_free_port()), str(SCRIPT), str(out),
    ]  # fmt: skip
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    assert "rank 0: OK" in output and "rank 1: OK" in output, output[-4000:]
    return out


@pytest.mark.distributed
@pytest.mark.parametrize("recipe", sorted(DDP_OVERRIDES))
def test_two_processes_equal_one(ddp_run, recipe, tmp_path):
    single = training_function(tiny_config(recipe, tmp_path / recipe, *DDP_OVERRIDES[recipe]))
    ddp = torch.load(ddp_run / f"{recipe}.pt")
    ref = single.model.state_dict()
    assert ddp.keys() == ref.keys()
    for key, value in ref.items():
        torch.testing.assert_close(ddp[key], value, atol=1e-5, rtol=1e-4, msg=key)
    # the weights really moved from the (seeded) initial model, so equality is not trivial
    config = tiny_config(recipe, tmp_path / "init", *DDP_OVERRIDES[recipe])
    set_seed(config.seed)
    initial = create_model(config.model, create_tokenizer(config.model), 16).state_dict()
    moved = max((ref[k] - initial[k]).abs().max().item() for k in ref)
    assert moved > 1e-3
    ddp_rows = [
        json.loads(x) for x in (ddp_run / recipe / "metrics.jsonl").read_text().splitlines()
    ]
    rows = [json.loads(x) for x in (tmp_path / recipe / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in ddp_rows] == [r["step"] for r in rows] == [1, 2, 3]
    for a, b in zip(rows, ddp_rows):
        assert a["loss/total"] == pytest.approx(b["loss/total"], abs=1e-5)
    assert rows[0]["loss/total"] != pytest.approx(rows[-1]["loss/total"], abs=1e-6)
