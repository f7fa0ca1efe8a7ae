"""Launch a script under ``torchrun --nproc_per_node N`` on CPU (gloo) for the tests.

``accelerate launch --cpu --num_processes 2`` silently runs one process; torchrun really
starts two. :func:`start_jobs` runs several checks in one background launch (``_dist_scripts/jobs.py``).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(args: tuple[str, ...], nproc: int, **popen: Any) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    env.pop("ACCELERATE_USE_CPU", None)
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
        "--master_addr", "127.0.0.1", "--master_port", str(free_port()), *args,
    ]  # fmt: skip
    return subprocess.Popen(cmd, env=env, cwd=ROOT, text=True, **popen)


def run_torchrun(*args: str, nproc: int = 2, timeout: int = 300) -> str:
    """Run ``python -m torch.distributed.run --nproc_per_node nproc *args``; assert that it
    succeeded and that every rank printed ``rank R: OK``; return its output."""
    with _launch(args, nproc, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    output = out + err
    assert proc.returncode == 0, output[-4000:]
    for rank in range(nproc):
        assert f"rank {rank}: OK" in output, output[-4000:]
    return output


class Launch:
    """One torchrun launch of several jobs (``_dist_scripts/jobs.py``), running in the
    background from :func:`start_jobs` until :meth:`check` (or :meth:`wait`) waits for it."""

    def __init__(self, root: Path, folders: dict[str, Path], nproc: int, timeout: int) -> None:
        self.folders, self.nproc, self.timeout = folders, nproc, timeout
        self.log = root / "output.txt"
        self.started = time.monotonic()
        with self.log.open("w") as log:  # a file, not a pipe: nothing to drain meanwhile
            self.process = _launch(
                (str(ROOT / "tests" / "_dist_scripts" / "jobs.py"), str(root / "jobs.json")),
                nproc,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # stop() ends torchrun and its processes together
            )
        self.output = ""
        self.returncode: int | None = None

    def wait(self) -> None:
        """Wait for the launch to end (killed after ``timeout`` seconds from its start)."""
        if self.returncode is not None:
            return
        left = self.timeout - (time.monotonic() - self.started)
        try:
            self.process.wait(timeout=max(left, 1.0))
        except subprocess.TimeoutExpired:
            self.stop()
        self.returncode = self.process.returncode
        self.output = self.log.read_text(errors="replace")

    def stop(self) -> None:
        """End the launch (all its processes) if it still runs."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def check(self, name: str) -> Path:
        """Assert that every process finished job ``name`` (and that the launch succeeded,
        or ended on another job's failure); return the job's folder."""
        self.wait()
        tail = self.output[-6000:]
        for rank in range(self.nproc):
            assert f"rank {rank}: OK {name}" in self.output, tail
        assert self.returncode == 0 or ": FAILED " in self.output, tail
        return self.folders[name]


def start_jobs(
    root: Path, jobs: list[tuple[str, Path, str, list[str]]], nproc: int = 2, timeout: int = 480
) -> Launch:
    """Start ``(name, script, function, args)`` jobs in one torchrun launch in the background:
    every process calls ``function(*args)`` of each script in turn, where an argument
    ``"{folder}"`` stands for the job's own folder ``root/name`` (made here). Torchrun and its
    processes start once instead of once per job."""
    spec, folders = [], {}
    for name, script, function, args in jobs:
        folders[name] = root / name
        folders[name].mkdir(parents=True)
        args = [str(folders[name]) if a == "{folder}" else str(a) for a in args]
        spec.append({"name": name, "script": str(script), "function": function, "args": args})
    (root / "jobs.json").write_text(json.dumps(spec, indent=1))
    return Launch(root, folders, nproc, timeout)
