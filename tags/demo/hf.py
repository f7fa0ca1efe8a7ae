"""``tags demo --backend clip``: the shapes benchmark with images -> a small HF CLIP
pre-trained from scratch (cached) -> plain vs NegCLIP-style fine-tuning with ``tags
generate`` negatives -> ``report.md``.

The same parts as ``scripts/benchmarks/hf_finetune.py`` (:mod:`tags.benchmark.hf_models`,
:mod:`tags.benchmark.hf_finetune`) at a budget that runs in minutes: the negatives are
generated while the model pre-trains, and the two fine-tunings run side by side.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

HF_BACKENDS: tuple[str, ...] = ("clip",)
METHODS: tuple[str, ...] = ("plain", "negclip")
LABELS = {
    "pretrained": "{name} pre-trained (no fine-tuning)",
    "plain": "{name} plain",
    "negclip": "{name} + tags negatives (NegCLIP-style)",
}
NAMES = {"clip": "CLIP"}


@dataclass(frozen=True)
class HFBudget:
    """Everything that sets the cost of the HF demo: the benchmark's size, the model
    (``image_size`` px input, ``patch_size``, width, depth), the pre-training, the
    fine-tunings (same steps, lr, batch for both) and the negatives (``top_m`` generated per
    caption, ``per_caption`` used, relation edits first, ``hn_weight``: the hard-negative
    term)."""

    name: str
    train_images: int
    test_images: int
    image_size: int
    patch_size: int
    hidden_size: int
    layers: int
    heads: int
    projection_dim: int
    pretrain_steps: int
    pretrain_lr: float
    pretrain_batch_size: int
    steps: int
    lr: float
    batch_size: int
    top_m: int = 8
    per_caption: int = 2
    hn_weight: float = 0.0
    role_swaps: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


HF_BUDGETS: dict[str, HFBudget] = {
    # see docs/backends.md for the measured wall clock on 2 CPU cores
    "small": HFBudget(
        name="small",
        train_images=1500,
        test_images=200,
        image_size=48,
        patch_size=8,
        hidden_size=96,
        layers=2,
        heads=4,
        projection_dim=64,
        pretrain_steps=400,
        pretrain_lr=2e-3,
        pretrain_batch_size=32,
        steps=100,
        lr=2e-4,
        batch_size=32,
    ),
    # end-to-end smoke run for the tests
    "tiny": HFBudget(
        name="tiny",
        train_images=6,
        test_images=3,
        image_size=32,
        patch_size=8,
        hidden_size=32,
        layers=1,
        heads=4,
        projection_dim=16,
        pretrain_steps=2,
        pretrain_lr=1e-3,
        pretrain_batch_size=4,
        steps=2,
        lr=1e-3,
        batch_size=4,
        top_m=2,
    ),
}


def _worker_init(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _negatives(root: Path, out: Path, budget: HFBudget) -> tuple[str, dict[str, float], float]:
    """Generate (or reuse) and order the training negatives; ``(path, mix, seconds)``."""
    from tags.benchmark.hf_finetune import generate_negatives, negatives_mix, order_negatives

    start = time.perf_counter()
    raw = generate_negatives(root, out, budget.top_m, budget.role_swaps, log=lambda *_: None)
    path = order_negatives(raw, "relation-first")
    return str(path), negatives_mix(path, budget.per_caption), time.perf_counter() - start


def _finetune(
    pretrained: str, root: str, run_dir: str, method: str, budget: HFBudget, seed: int,
    negatives: str,
) -> dict[str, Any]:  # fmt: skip
    from tags.benchmark.hf_finetune import finetune_config, run_finetune
    from tags.benchmark.hf_models import HFTrainConfig, train_config

    train = HFTrainConfig(steps=budget.steps, batch_size=budget.batch_size, lr=budget.lr, seed=seed)
    base = train_config(pretrained, root, Path(run_dir) / "train", "clip", train)
    base["log_every"] = max(1, budget.steps // 10)
    config = finetune_config(base, method, negatives, budget.per_caption, budget.hn_weight)
    return run_finetune(config, run_dir, root)


def _samples(path: str, per_caption: int, count: int = 3) -> list[dict[str, Any]]:
    """The first ``count`` captions' training negatives as used (the first ``per_caption``
    of each, relation edits first)."""
    samples: dict[Any, dict[str, Any]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            key = (row.get("image_id"), row["caption_id"])
            if key not in samples and len(samples) == count:
                break
            entry = samples.setdefault(key, {"positive": row["positive"], "negatives": []})
            if len(entry["negatives"]) == per_caption:
                continue
            types = "+".join(sorted({e["type"] for e in row.get("edits", [])}))
            entry["negatives"].append({"text": row["negative"], "type": types})
    return list(samples.values())


def _row(label: str, s: dict[str, float]) -> str:
    cells = [f"{s['rsum']:.1f}"] + [
        f"{100 * s[k]:.1f}" for k in ("mp", "mp_attribute", "mp_object", "mp_relation")
    ]
    return f"| {label} | " + " | ".join(cells) + " |"


def write_hf_report(out: Path, payload: dict[str, Any]) -> Path:
    """``OUT/report.md`` and ``OUT/results.json`` of an HF demo run."""
    budget, timings = payload["budget"], payload["timings_s"]
    rows = [_row(m["label"], m["scores"]) for m in payload["methods"].values()]
    pretrained = payload["methods"]["pretrained"]["scores"]
    lines = [
        f"# tags demo: {payload['backend_name']} on the shapes benchmark",
        "",
        f"Benchmark {payload['benchmark']} (version {payload['benchmark_version']}): "
        f"{budget['train_images']} training images, test {budget['test_images']} images "
        f"({int(pretrained['mp_pairs'])} minimal pairs). Model: a {payload['backend_name']} "
        f"built from a config ({budget['image_size']} px, patch {budget['patch_size']}, width "
        f"{budget['hidden_size']}, {budget['layers']} layers), pre-trained from scratch for "
        f"{budget['pretrain_steps']} steps ({payload['pretrain']}), then fine-tuned "
        f"{budget['steps']} steps x batch {budget['batch_size']} at lr {budget['lr']:g}, seed "
        f"{payload['seed']}, each way.",
        "",
        "| model | RSum | MP | attribute | object | relation |",
        "|---|---:|---:|---:|---:|---:|",
        *rows,
        "",
        f"Chance: RSum {pretrained['chance_rsum']:.1f}, MP 50. Test split; MP: the share of "
        "minimal pairs whose true caption scores above its one-word edit (cosine).",
        "",
        f"tags negatives: `tags generate` weight-free (vocabulary refills of the edit planner"
        f"{', role swaps' if budget['role_swaps'] else ''}), top {budget['top_m']} per "
        f"training caption, {budget['per_caption']} used per caption as extra text columns "
        f"(relation edits first; edit mix of those used: {payload['negatives_mix']}), "
        f"hard-negative term weight {budget['hn_weight']:g}. The negatives used for the first "
        "training captions:",
        "",
    ]
    for sample in payload["samples"]:
        lines.append(f"- {sample['positive']}")
        lines += [f"  - ({n['type']}) {n['text']}" for n in sample["negatives"]]
    lines += [
        "",
        "One seed at a demo budget: differences of a point or two are noise. The 3-seed "
        "comparison (settings chosen on val) is `scripts/benchmarks/hf_finetune.py`.",
        "",
        "Timings (s): " + ", ".join(f"{k} {v:.0f}" for k, v in timings.items()),
        "",
    ]
    report = out / "report.md"
    report.write_text("\n".join(lines))
    (out / "results.json").write_text(json.dumps(payload, indent=1) + "\n")
    return report


def run_hf_demo(
    out: str | Path,
    backend: str = "clip",
    budget: str | HFBudget = "small",
    seed: int = 0,
    data_root: str | Path | None = None,
    log: Callable[[str], None] = print,
    jobs: int | None = None,
) -> dict[str, Any]:
    """Run the HF demo into ``out`` (``report.md``, ``results.json``); the benchmark (with
    images) lives in ``data_root`` (default ``out/data``), the pre-trained model in
    ``out/pretrained`` and the runs under ``out/runs``; each is reused when its arguments
    are unchanged. ``jobs`` > 1 (default 2 on 2+ cores): negatives generated while the model
    pre-trains, the two fine-tunings side by side."""
    import torch

    from tags.benchmark import BenchmarkConfig, benchmark_version, build_benchmark, read_manifest
    from tags.benchmark.hf_models import HFModelConfig, HFTrainConfig, pretrain_hf

    if backend not in HF_BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(HF_BACKENDS)}, got {backend!r}")
    budget = HF_BUDGETS[budget] if isinstance(budget, str) else budget
    jobs = (2 if (os.cpu_count() or 1) >= 2 else 1) if jobs is None else jobs
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    root = Path(data_root) if data_root else out / "data"
    started = time.perf_counter()
    timings: dict[str, float] = {}

    t = time.perf_counter()
    bench = BenchmarkConfig(train=budget.train_images, val=0, test=budget.test_images,
                            seed=seed, save_images=True, featurizer="random")  # fmt: skip
    built = build_benchmark(root, bench, threads=min(2, os.cpu_count() or 1))
    timings["benchmark"] = time.perf_counter() - t
    log(f"benchmark: {root} ({'reused' if built.reused else 'built'})")

    model = HFModelConfig(family=backend, image_size=budget.image_size,
                          patch_size=budget.patch_size, hidden_size=budget.hidden_size,
                          num_layers=budget.layers, num_heads=budget.heads,
                          projection_dim=budget.projection_dim, seed=seed)  # fmt: skip
    train = HFTrainConfig(steps=budget.pretrain_steps,
                          batch_size=budget.pretrain_batch_size, lr=budget.pretrain_lr,
                          seed=seed)  # fmt: skip
    negatives_dir = out / "negatives"
    t = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=get_context("spawn"),
                             initializer=_worker_init, initargs=(1,)) as pool:  # fmt: skip
        pending = pool.submit(_negatives, root, negatives_dir, budget) if jobs > 1 else None
        threads = torch.get_num_threads()
        if pending is not None:  # the generator has a core of its own
            torch.set_num_threads(max(1, threads // 2))
        try:
            pre = pretrain_hf(out / "pretrained", root, model, train, log=lambda *_: None)
        finally:
            torch.set_num_threads(threads)
        timings["pretrain"] = time.perf_counter() - t
        log(f"pre-trained: {pre.model_dir} ({'reused' if pre.reused else 'trained'})")
        if pending is None:
            negatives, mix, timings["negatives"] = _negatives(root, negatives_dir, budget)
        else:
            negatives, mix, timings["negatives"] = pending.result()
        log(f"negatives: {negatives}")

        t = time.perf_counter()
        args = {m: (str(pre.model_dir), str(root), str(out / "runs" / m), m, budget, seed,
                    negatives) for m in METHODS}  # fmt: skip
        if jobs > 1:
            futures = {m: pool.submit(_finetune, *a) for m, a in args.items()}
            results = {m: f.result() for m, f in futures.items()}
        else:
            results = {m: _finetune(*a) for m, a in args.items()}
        timings["fine-tunings"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - started

    name = NAMES[backend]
    methods = {"pretrained": {"label": LABELS["pretrained"].format(name=name),
                              "scores": pre.manifest["scores"]}}  # fmt: skip
    for m in METHODS:
        methods[m] = {
            "label": LABELS[m].format(name=name),
            "scores": results[m]["scores"]["test"],
            "train_seconds": results[m]["train_seconds"],
        }
    payload = {
        "backend": backend,
        "backend_name": name,
        "budget": budget.to_dict(),
        "seed": seed,
        "benchmark": str(root),
        "benchmark_version": benchmark_version(read_manifest(root)),
        "pretrain": "reused" if pre.reused else f"trained in {pre.manifest['train_seconds']} s",
        "methods": methods,
        "negatives_mix": mix,
        "samples": _samples(negatives, budget.per_caption),
        "timings_s": timings,
    }
    report = write_hf_report(out, payload)
    log(f"report: {report}")
    return payload


__all__ = ["HF_BACKENDS", "HF_BUDGETS", "HFBudget", "run_hf_demo", "write_hf_report"]
