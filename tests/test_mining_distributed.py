"""Two CPU processes (torchrun, gloo, Accelerator(cpu=True)) vs one process on the
concatenated batch: per-anchor losses, gradients, FNE statistics and queue contents."""

import pytest


@pytest.mark.slow
@pytest.mark.distributed
def test_two_processes_match_single_process(two_processes):
    two_processes.check("mining")  # _dist_scripts/mining_dist.py, in the session's launch
