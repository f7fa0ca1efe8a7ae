"""``tags demo`` on the binding testbed: plain, oracle, tags negatives and TAGS-DC side by side.

Every method trains the same cross-encoder from the same weights for the same steps on fresh
2-4 object scenes (:mod:`tags.testbed`); only the added negative differs:

- ``plain``: none (another scene's caption, checked false, is every method's negative);
- ``oracle``: a scene-checked single edit of the caption (the ceiling);
- ``tags``: a negative ``tags generate --balance`` wrote for the caption without seeing any
  scene (made in this process while the other runs train);
- ``tags-dc``: TAGS-DC, the model's own MLM refills of each of the caption's units (4 per
  masked copy, among the unit's word class: ``typed``), the best-scored after the filters,
  with the MLM, WoD and WoC losses.

The report gives, per method, minimal-pair accuracy per kind on 200 held-out scenes, the gap
closed ((method - plain) / (oracle - plain)) on relations and role swaps, the learning
curves, the trained text-only check of the negatives each method added, and a sample of
TAGS-DC's own negatives. Finished runs are reused when re-run with the same settings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

#: the compared methods, in the report's order
DEMO_METHODS: tuple[str, ...] = ("plain", "oracle", "tags", "tags-dc")
#: submitted in this order (the longest first); ``tags`` waits for its negatives
_SCHEDULE: tuple[str, ...] = ("tags-dc", "oracle", "plain")
Log = Callable[[str], None]


@dataclass(frozen=True)
class BindingBudget:
    """What sets the binding demo's cost: steps of ``batch_size`` fresh scenes per method,
    the held-out set's size, the model's size, TAGS-DC's generator (``copies`` units
    masked per caption and step, 0: all; ``refills`` MLM samples each, over the unit's word
    class or the vocabulary: ``refill``) and the learning-rate warm-up (steps)."""

    name: str
    steps: int
    eval_every: int
    eval_scenes: int
    batch_size: int
    hidden: int = 128
    layers: int = 2
    copies: int = 0
    refills: int = 4
    refill: str = "typed"
    warmup: int = 50

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


BINDING_BUDGETS: dict[str, BindingBudget] = {
    # see docs/demo.md for the measured wall clock and figures on 2 CPU cores
    "small": BindingBudget("small", steps=200, eval_every=50, eval_scenes=200, batch_size=64),
    "tiny": BindingBudget("tiny", 6, 3, 12, 8, hidden=32, layers=1, refills=4, warmup=1),
}


def method_config(method: str, budget: BindingBudget, seed: int, tags_negatives: str | None):
    """The :class:`~tags.testbed.TestbedConfig` of one method's run."""
    from tags.testbed import TestbedConfig

    return TestbedConfig(
        negatives=method, seed=seed, steps=budget.steps, eval_every=budget.eval_every,
        eval_scenes=budget.eval_scenes, batch_size=budget.batch_size, hidden=budget.hidden,
        layers=budget.layers, copies=budget.copies, refills=budget.refills, refill=budget.refill,
        device="cpu",
        warmup=budget.warmup,
        tags_negatives=tags_negatives if method == "tags" else None, check_shortcut=True,
    )  # fmt: skip


def run_method(config: dict[str, Any], out: str, threads: int) -> dict[str, Any]:
    """One method's run in a worker process (``threads`` torch threads); its record is
    written to ``out`` and reused when it was made by exactly ``config``."""
    import torch

    from tags.testbed import TestbedConfig, train

    path = Path(out)
    if path.is_file():
        done = json.loads(path.read_text())
        if done.get("config") == TestbedConfig(**config).to_dict():
            return done
    torch.set_num_threads(threads)
    return train(TestbedConfig(**config), out=path, log=None)


def tags_negatives(data: Path, seed: int, budget: BindingBudget, log: Log) -> Path:
    """The training captions of ``seed`` (``data/captions.jsonl``) and the negatives
    ``tags generate --balance`` writes for them (``data/tags_negatives.jsonl``), reused when
    made for the same captions."""
    from tags.testbed import training_captions

    data.mkdir(parents=True, exist_ok=True)
    captions = data / "captions.jsonl"
    negatives = data / "tags_negatives.jsonl"
    texts = training_captions([seed], budget.steps, budget.batch_size)
    lines = "".join(json.dumps({"image_id": i, "caption": t}) + "\n" for i, t in enumerate(texts))
    if captions.is_file() and captions.read_text() == lines and negatives.is_file():
        return negatives
    captions.write_text(lines)
    command = [
        sys.executable, "-m", "tags.cli", "generate", "--captions", str(captions),
        "--out", str(negatives), "--seed", "0", "--balance", "--num-workers", "1", "--overwrite",
    ]  # fmt: skip
    start = time.perf_counter()
    run = subprocess.run(command, capture_output=True, text=True, env={**os.environ})
    if run.returncode != 0:
        raise RuntimeError(f"tags generate failed:\n{run.stderr[-2000:]}")
    log(f"tags negatives: {len(texts)} captions ({time.perf_counter() - start:.0f}s)")
    return negatives


def run_binding_demo(
    out: str | Path = "runs/demo", budget: str | BindingBudget = "small", seed: int = 0,
    jobs: int | None = None, log: Log = print,
) -> dict[str, Any]:  # fmt: skip
    """Run the four methods (``jobs`` worker processes, default 2 on 2+ cores) and write
    ``out/report.md``, ``out/results.json`` and ``out/curves.png``; returns the results."""
    from tags.demo.binding_report import summarize, write_binding_report

    budget = BINDING_BUDGETS[budget] if isinstance(budget, str) else budget
    jobs = (2 if (os.cpu_count() or 1) >= 2 else 1) if jobs is None else jobs
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    out = Path(out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    threads = max(1, (os.cpu_count() or 1) // jobs)
    started = time.perf_counter()
    bar = tqdm(total=len(DEMO_METHODS) + 1, desc="demo", unit="stage")
    futures: dict[str, Future] = {}
    records: dict[str, dict[str, Any]] = {}
    timings: dict[str, float] = {}

    def submit(pool: ProcessPoolExecutor | None, method: str, negatives: str | None) -> None:
        config = asdict(method_config(method, budget, seed, negatives))
        config.pop("extra")
        path = str(out / "runs" / f"{method}.json")
        if pool is None:
            records[method] = run_method(config, path, threads)
            bar.update()
        else:
            futures[method] = pool.submit(run_method, config, path, threads)

    pool = (
        ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) if jobs > 1 else None
    )  # spawn: no torch state forked
    try:
        for method in _SCHEDULE:
            submit(pool, method, None)
        t = time.perf_counter()
        negatives = tags_negatives(out / "data", seed, budget, log)
        timings["tags generate"] = time.perf_counter() - t
        bar.update()
        submit(pool, "tags", str(negatives))
        for method, future in futures.items():
            records[method] = future.result()
            bar.update()
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        bar.close()
    for method, record in records.items():
        timings[method] = record["seconds"]
    timings["total"] = time.perf_counter() - started
    results = summarize({m: records[m] for m in DEMO_METHODS}, budget.to_dict(), seed, timings)
    report = write_binding_report(out, results)
    log(f"report: {report}")
    return results
