"""Run under ``python -m torch.distributed.run --nproc_per_node 2`` (gloo, CPU).

Several distributed checks in one launch: torchrun and its two processes (Python, torch,
transformers, ``tags``) start once for all of them instead of once per check.

    jobs.py SPEC.json

SPEC is a JSON list of ``{"name": NAME, "script": PATH, "function": FUNCTION, "args": [...]}``;
every process calls ``FUNCTION(*ARGS)`` of the script at PATH for each job in turn and then
prints ``rank R: OK NAME``. A job that raises prints its traceback and ``rank R: FAILED NAME``
and ends the launch (torchrun stops the other process): the later jobs never report OK.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback
from pathlib import Path

import torch

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))  # the scripts' helpers (_training_utils, _torchrun, ...)


def load(script: str):
    """The module at ``script`` (imported once, under its file name)."""
    name = Path(script).stem
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, script)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def main(spec: Path) -> None:
    rank = int(os.environ["RANK"])
    for job in json.loads(spec.read_text()):
        try:
            getattr(load(job["script"]), job["function"])(*job["args"])
            torch.distributed.barrier()
        except BaseException:
            traceback.print_exc()
            print(f"rank {rank}: FAILED {job['name']}", flush=True)
            sys.stderr.flush()
            os._exit(1)
        print(f"rank {rank}: OK {job['name']}", flush=True)
    # tear gloo down explicitly: exiting with a live process group can abort at shutdown
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
