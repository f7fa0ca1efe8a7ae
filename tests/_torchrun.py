"""Launch a script under ``torchrun --nproc_per_node N`` on CPU (gloo) for the tests.

``accelerate launch --cpu --num_processes 2`` silently runs one process; torchrun really
starts two.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_torchrun(*args: str, nproc: int = 2, timeout: int = 300) -> str:
    """Run ``python -m torch.distributed.run --nproc_per_node nproc *args``; assert that it
    succeeded and that every rank printed ``rank R: OK``; return its output."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    env.pop("ACCELERATE_USE_CPU", None)
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
        "--master_addr", "127.0.0.1", "--master_port", str(free_port()), *args,
    ]  # fmt: skip
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    for rank in range(nproc):
        assert f"rank {rank}: OK" in output, output[-4000:]
    return output
