"""Launch a script under ``torchrun --nproc_per_node N`` on CPU (gloo) for the tests.

``accelerate launch --cpu --num_processes 2`` silently runs one process; torchrun really
starts two. :func:`run_jobs` runs several checks in one launch (``_dist_scripts/jobs.py``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(args: tuple[str, ...], nproc: int, timeout: int) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    env.pop("ACCELERATE_USE_CPU", None)
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
        "--master_addr", "127.0.0.1", "--master_port", str(free_port()), *args,
    ]  # fmt: skip
    return subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def run_torchrun(*args: str, nproc: int = 2, timeout: int = 300) -> str:
    """Run ``python -m torch.distributed.run --nproc_per_node nproc *args``; assert that it
    succeeded and that every rank printed ``rank R: OK``; return its output."""
    proc = _launch(args, nproc, timeout)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    for rank in range(nproc):
        assert f"rank {rank}: OK" in output, output[-4000:]
    return output


@dataclass
class Launch:
    """What one :func:`run_jobs` launch printed, and each job's folder."""

    output: str = field(repr=False)
    returncode: int
    nproc: int
    folders: dict[str, Path]

    def check(self, name: str) -> Path:
        """Assert that every process finished job ``name`` (and that the launch succeeded,
        or ended on another job's failure); return the job's folder."""
        tail = self.output[-6000:]
        for rank in range(self.nproc):
            assert f"rank {rank}: OK {name}" in self.output, tail
        assert self.returncode == 0 or ": FAILED " in self.output, tail
        return self.folders[name]


def run_jobs(
    root: Path, jobs: list[tuple[str, Path, str, list[str]]], nproc: int = 2, timeout: int = 480
) -> Launch:
    """Run ``(name, script, function, args)`` jobs in one torchrun launch: every process calls
    ``function(*args)`` of each script in turn, where an argument ``"{folder}"`` stands for
    the job's own folder ``root/name`` (made here). Torchrun and its processes start once
    instead of once per job."""
    spec, folders = [], {}
    for name, script, function, args in jobs:
        folders[name] = root / name
        folders[name].mkdir(parents=True)
        args = [str(folders[name]) if a == "{folder}" else str(a) for a in args]
        spec.append({"name": name, "script": str(script), "function": function, "args": args})
    (root / "jobs.json").write_text(json.dumps(spec, indent=1))
    script = ROOT / "tests" / "_dist_scripts" / "jobs.py"
    proc = _launch((str(script), str(root / "jobs.json")), nproc, timeout)
    return Launch(proc.stdout + proc.stderr, proc.returncode, nproc, folders)
