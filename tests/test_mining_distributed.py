"""Two CPU processes (torchrun, gloo, Accelerator(cpu=True)) vs one process on the
concatenated batch: per-anchor losses, gradients, FNE statistics and queue contents."""

from pathlib import Path

import pytest
from _torchrun import run_torchrun

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "_dist_scripts" / "mining_dist.py"


@pytest.mark.slow
@pytest.mark.distributed
def test_two_processes_match_single_process():
    run_torchrun(str(SCRIPT))
