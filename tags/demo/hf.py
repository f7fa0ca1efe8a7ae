"""``tags demo --backend clip|blip``: the shapes benchmark with images -> a small Hugging
Face model pre-trained from scratch (cached) -> two fine-tunings -> ``report.md``.

- ``clip``: a ``CLIPModel``, plain vs NegCLIP-style fine-tuning with ``tags generate``
  negatives (generated in a worker process while the model pre-trains);
- ``blip``: a ``BlipForImageTextRetrieval`` (ITC stage, then ITM + MLM + ITC), ITM with
  retrieved hard negatives vs TAGS-DC (dynamic synthetic negatives from its own MLM head).

One flow for both; what differs is a row of :data:`HF_BACKENDS` (model family, variants,
labels, budgets, the report's method paragraph). The parts are those of
``scripts/benchmarks/hf_finetune.py`` (:mod:`tags.benchmark.hf_models`,
:mod:`tags.benchmark.hf_finetune`) at a budget that runs in minutes; the two fine-tunings
run side by side.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, replace
from multiprocessing import get_context
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class HFBudget:
    """What sets the cost of an HF demo, whatever the backend: the benchmark's size, the
    model (``image_size`` px input, ``patch_size``, width, depth), the pre-training and the
    fine-tunings (same steps, lr, batch for both)."""

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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def model_config(self, family: str, seed: int) -> Any:
        """The :class:`~tags.benchmark.hf_models.HFModelConfig` to pre-train."""
        from tags.benchmark.hf_models import HFModelConfig

        return HFModelConfig(family=family, image_size=self.image_size,
                             patch_size=self.patch_size, hidden_size=self.hidden_size,
                             num_layers=self.layers, num_heads=self.heads,
                             projection_dim=self.projection_dim, seed=seed)  # fmt: skip

    def pretrain_config(self, seed: int) -> Any:
        """The :class:`~tags.benchmark.hf_models.HFTrainConfig` of the pre-training."""
        from tags.benchmark.hf_models import HFTrainConfig

        return HFTrainConfig(steps=self.pretrain_steps, batch_size=self.pretrain_batch_size,
                             lr=self.pretrain_lr, seed=seed)  # fmt: skip

    def pretrain_text(self) -> str:
        return f"{self.pretrain_steps} steps"

    def finetune_settings(self, negatives: str | None) -> dict[str, Any]:
        """Keyword arguments of :func:`~tags.benchmark.hf_finetune.finetune_config`."""
        return {}


@dataclass(frozen=True)
class HFDualBudget(HFBudget):
    """A dual encoder's (CLIP) budget: + the negatives (``top_m`` generated per caption,
    ``per_caption`` used, relation edits first, ``hn_weight``: the hard-negative term)."""

    top_m: int = 8
    per_caption: int = 2
    hn_weight: float = 0.0
    role_swaps: bool = True

    def finetune_settings(self, negatives: str | None) -> dict[str, Any]:
        return {"negatives": negatives, "per_caption": self.per_caption,
                "hn_weight": self.hn_weight}  # fmt: skip


#: the :class:`HFCrossBudget` fields passed to ``finetune_config``
CROSS_SETTINGS: tuple[str, ...] = (
    "pool_size", "num_negatives", "num_copies", "top_m", "istm_weight", "dc_steps", "itm_bce",
    "istm_bce",
)  # fmt: skip


@dataclass(frozen=True)
class HFCrossBudget(HFBudget):
    """A cross encoder's (BLIP) budget: + the pre-training recipe whose ITM head learns
    (``itc_steps`` of ITC alone at ``itc_lr``, init std ``init_std``, ITM negatives drawn
    ``itm_sampling``) and the fine-tunings' settings (:data:`~tags.benchmark.hf_finetune.
    CROSS_DEFAULTS`: retrieval pool and kept negatives, masked copies, synthetic ``top_m``,
    L_ISTM weight, the last ``dc_steps`` as NSGDC, the ITM level terms ``itm_bce`` /
    ``istm_bce``)."""

    init_std: float = 0.08
    itc_steps: int = 400
    itc_lr: float = 2e-3
    itm_sampling: str = "random"
    pool_size: int = 15
    num_negatives: int = 7
    num_copies: int = 4
    top_m: int = 7
    istm_weight: float = 1.0
    dc_steps: int = 50
    itm_bce: float = 0.0
    istm_bce: float = 0.0

    def model_config(self, family: str, seed: int) -> Any:
        return replace(super().model_config(family, seed), init_std=self.init_std)

    def pretrain_config(self, seed: int) -> Any:
        return replace(super().pretrain_config(seed), itc_steps=self.itc_steps,
                       itc_lr=self.itc_lr, itm_sampling=self.itm_sampling)  # fmt: skip

    def pretrain_text(self) -> str:
        return f"{self.itc_steps} steps of ITC, then {self.pretrain_steps} of ITM + MLM + ITC"

    def finetune_settings(self, negatives: str | None) -> dict[str, Any]:
        return {k: getattr(self, k) for k in CROSS_SETTINGS}


@dataclass(frozen=True)
class HFBackend:
    """What the HF demo does with one model family: the ``finetune_config`` variants it
    compares (baseline first) and their row labels, whether ``tags generate`` negatives
    are made beside the pre-training (variants that read a negatives file), how the report
    scores and describes the fine-tunings, the budgets, and the last logged metrics of each
    fine-tuning kept for the report."""

    family: str
    name: str
    methods: tuple[str, ...]
    labels: dict[str, str]
    generates: bool
    scoring: str
    describe: Callable[[dict[str, Any]], list[str]]
    budgets: dict[str, HFBudget]
    report_metrics: tuple[str, ...] = ()


def _describe_negclip(payload: dict[str, Any]) -> list[str]:
    budget = payload["budget"]
    lines = [
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
    return lines


#: last-step metrics of the cross-encoder fine-tunings shown in the report
CROSS_METRICS: tuple[str, ...] = (
    "itm/pos_score", "loss/itm", "loss/itm_bce", "loss/istm", "loss/istm_bce",
    "synthetic/per_caption", "loss/wod", "loss/woc",
)  # fmt: skip


def _trained_metrics(result: dict[str, Any], keys: tuple[str, ...]) -> dict[str, float]:
    """A run's last logged metrics among ``keys``, without the loss terms its phases do not
    weigh (logged as 0)."""
    terms = {t for phase in result["config"]["phases"] for t in phase.get("weights", {})}
    last = result["last_metrics"]
    return {
        k: last[k]
        for k in keys
        if k in last and (not k.startswith("loss/") or k.removeprefix("loss/") in terms)
    }


def _describe_cross(payload: dict[str, Any]) -> list[str]:
    budget = payload["budget"]
    nsg = budget["steps"] - budget["dc_steps"]
    runs = [m for m in payload["methods"].values() if "last_metrics" in m]
    shown = [k for k in CROSS_METRICS if any(k in m["last_metrics"] for m in runs)]
    levels = (
        f" Both add BLIP's ITM cross-entropy on the positives and the retrieved negatives "
        f"(weight {budget['itm_bce']:g}) beside the hinge; TAGS-DC also on its synthetic "
        f"negatives (weight {budget['istm_bce']:g})."
        if budget.get("itm_bce") or budget.get("istm_bce")
        else ""
    )
    lines = [
        "Both fine-tunings are recipe `tags-dc` with the same retrieval: each anchor's "
        f"{budget['num_negatives']} highest-scored of a pool of {budget['pool_size']} other "
        "captions or images (by the current ITM head), the hardest of them in an ITM hinge "
        "(margin 0.2), plus MLM (0.1). TAGS-DC adds dynamic synthetic negatives: scene-graph "
        f"units masked in {budget['num_copies']} copies of each caption, refilled by the "
        f"model's own image-conditioned MLM head, filtered, top {budget['top_m']} by ITM, in "
        f"L_ISTM (weight {budget['istm_weight']:g}) for {nsg} steps (NSG), then "
        f"{budget['dc_steps']} steps adding WoD and WoC (0.1, lr halved; NSGDC).{levels}",
        "",
        "Last logged step of each fine-tuning:",
        "",
        "| model | " + " | ".join(shown) + " |",
        "|---|" + "---:|" * len(shown),
    ]
    for method in runs:
        last = method["last_metrics"]
        cells = [f"{last[k]:.3f}" if k in last else "-" for k in shown]
        lines.append(f"| {method['label']} | " + " | ".join(cells) + " |")
    return lines


HF_BACKENDS: dict[str, HFBackend] = {
    "clip": HFBackend(
        family="clip",
        name="CLIP",
        methods=("plain", "negclip"),
        labels={"plain": "{name} plain", "negclip": "{name} + tags negatives (NegCLIP-style)"},
        generates=True,
        scoring="cosine",
        describe=_describe_negclip,
        budgets={
            # see docs/demo.md for the measured wall clock on 2 CPU cores
            "small": HFDualBudget(
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
            "tiny": HFDualBudget(
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
        },
    ),
    "blip": HFBackend(
        family="blip",
        name="BLIP",
        methods=("itm-hardest", "tags-dc"),
        labels={
            "itm-hardest": "{name} ITM + retrieved hard negatives",
            "tags-dc": "{name} TAGS-DC",
        },
        generates=False,
        scoring="ITM log-odds; RSum ranks by the ITC embeddings",
        describe=_describe_cross,
        report_metrics=CROSS_METRICS,
        budgets={
            # see docs/demo.md for the measured wall clock on 2 CPU cores
            "small": HFCrossBudget(
                name="small",
                train_images=1500,
                test_images=200,
                image_size=48,
                patch_size=8,
                hidden_size=96,
                layers=2,
                heads=4,
                projection_dim=64,
                pretrain_steps=300,
                pretrain_lr=5e-4,
                pretrain_batch_size=32,
                steps=60,
                lr=2e-4,
                batch_size=16,
                itc_steps=400,
                itc_lr=2e-3,
                pool_size=7,
                num_negatives=3,
                num_copies=4,
                top_m=4,
                dc_steps=20,
                itm_bce=1.0,
                istm_bce=1.0,
            ),
            # end-to-end smoke run for the tests
            "tiny": HFCrossBudget(
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
                steps=3,
                lr=1e-3,
                batch_size=4,
                itc_steps=2,
                itc_lr=1e-3,
                pool_size=3,
                num_negatives=2,
                num_copies=2,
                top_m=2,
                dc_steps=1,
                itm_bce=1.0,
                istm_bce=1.0,
            ),
        },
    ),
}
#: backend -> its budgets by name
HF_BUDGETS: dict[str, dict[str, HFBudget]] = {k: b.budgets for k, b in HF_BACKENDS.items()}
PRETRAINED_LABEL = "{name} pre-trained (no fine-tuning)"


def _worker_init(threads: int) -> None:
    import torch

    from tags.core.noise import quiet_tied_weights

    torch.set_num_threads(threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    quiet_tied_weights()  # as tags train: Accelerate's note on the decoders tied by design


def _negatives(root: Path, out: Path, budget: HFDualBudget) -> tuple[str, dict[str, float], float]:
    """Generate (or reuse) and order the training negatives; ``(path, mix, seconds)``."""
    from tags.benchmark.hf_finetune import generate_negatives, negatives_mix, order_negatives

    start = time.perf_counter()
    raw = generate_negatives(root, out, budget.top_m, budget.role_swaps, log=lambda *_: None)
    path = order_negatives(raw, "relation-first")
    return str(path), negatives_mix(path, budget.per_caption), time.perf_counter() - start


def _finetune(
    pretrained: str, root: str, run_dir: str, method: str, family: str, budget: HFBudget,
    seed: int, negatives: str | None,
) -> dict[str, Any]:  # fmt: skip
    from tags.benchmark.hf_finetune import finetune_config, run_finetune
    from tags.benchmark.hf_models import HFTrainConfig, train_config

    train = HFTrainConfig(steps=budget.steps, batch_size=budget.batch_size, lr=budget.lr, seed=seed)
    base = train_config(pretrained, root, Path(run_dir) / "train", family, train)
    base["log_every"] = max(1, budget.steps // 10)
    config = finetune_config(base, method, **budget.finetune_settings(negatives))
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
    backend = HF_BACKENDS[payload["backend"]]
    budget, timings = payload["budget"], payload["timings_s"]
    rows = [_row(m["label"], m["scores"]) for m in payload["methods"].values()]
    pretrained = payload["methods"]["pretrained"]["scores"]
    pretrain = payload.get("pretrain_text", f"{budget['pretrain_steps']} steps")
    lines = [
        f"# tags demo: {payload['backend_name']} on the shapes benchmark",
        "",
        f"Benchmark {payload['benchmark']} (version {payload['benchmark_version']}): "
        f"{budget['train_images']} training images, test {budget['test_images']} images "
        f"({int(pretrained['mp_pairs'])} minimal pairs). Model: a {payload['backend_name']} "
        f"built from a config ({budget['image_size']} px, patch {budget['patch_size']}, width "
        f"{budget['hidden_size']}, {budget['layers']} layers), pre-trained from scratch for "
        f"{pretrain} ({payload['pretrain']}), then fine-tuned "
        f"{budget['steps']} steps x batch {budget['batch_size']} at lr {budget['lr']:g}, seed "
        f"{payload['seed']}, each way.",
        "",
        "| model | RSum | MP | attribute | object | relation |",
        "|---|---:|---:|---:|---:|---:|",
        *rows,
        "",
        f"Chance: RSum {pretrained['chance_rsum']:.1f}, MP 50. Test split; MP: the share of "
        f"minimal pairs whose true caption scores above its one-word edit ({backend.scoring}).",
        "",
        *backend.describe(payload),
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
    """Run the HF demo of ``backend`` (a key of :data:`HF_BACKENDS`) into ``out``
    (``report.md``, ``results.json``); the benchmark (with images) lives in ``data_root``
    (default ``out/data``), the pre-trained model in ``out/pretrained`` and the runs under
    ``out/runs``; each is reused when its arguments are unchanged. ``jobs`` > 1 (default 2
    on 2+ cores): the two fine-tunings side by side, the negatives (a backend that
    generates them) made while the model pre-trains, and the pre-training on half the
    threads."""
    import torch

    from tags.benchmark import BenchmarkConfig, benchmark_version, build_benchmark, read_manifest
    from tags.benchmark.hf_models import pretrain_hf
    from tags.core.noise import quiet_tied_weights

    if backend not in HF_BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(HF_BACKENDS)}, got {backend!r}")
    spec = HF_BACKENDS[backend]
    budget = spec.budgets[budget] if isinstance(budget, str) else budget
    jobs = (2 if (os.cpu_count() or 1) >= 2 else 1) if jobs is None else jobs
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    quiet_tied_weights()
    root = Path(data_root) if data_root else out / "data"
    started = time.perf_counter()
    timings: dict[str, float] = {}

    t = time.perf_counter()
    bench = BenchmarkConfig(train=budget.train_images, val=0, test=budget.test_images,
                            seed=seed, save_images=True, featurizer="random")  # fmt: skip
    built = build_benchmark(root, bench, threads=min(2, os.cpu_count() or 1))
    timings["benchmark"] = time.perf_counter() - t
    log(f"benchmark: {root} ({'reused' if built.reused else 'built'})")

    negatives_dir = out / "negatives"
    negatives: str | None = None
    mix: dict[str, float] = {}
    t = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=get_context("spawn"),
                             initializer=_worker_init, initargs=(1,)) as pool:  # fmt: skip
        generate = spec.generates and jobs > 1
        pending = pool.submit(_negatives, root, negatives_dir, budget) if generate else None
        threads = torch.get_num_threads()
        # half the threads beside a worker: the generator (CLIP) has a core of its own, and
        # the small model gains little from a second thread, on a busy machine it loses much
        torch.set_num_threads(max(1, threads // min(jobs, 2)))
        try:
            pre = pretrain_hf(out / "pretrained", root, budget.model_config(spec.family, seed),
                              budget.pretrain_config(seed), log=lambda *_: None)  # fmt: skip
        finally:
            torch.set_num_threads(threads)
        timings["pretrain"] = time.perf_counter() - t
        log(f"pre-trained: {pre.model_dir} ({'reused' if pre.reused else 'trained'})")
        if spec.generates:
            if pending is None:
                negatives, mix, timings["negatives"] = _negatives(root, negatives_dir, budget)
            else:
                negatives, mix, timings["negatives"] = pending.result()
            log(f"negatives: {negatives}")

        t = time.perf_counter()
        args = {m: (str(pre.model_dir), str(root), str(out / "runs" / m), m, spec.family,
                    budget, seed, negatives) for m in spec.methods}  # fmt: skip
        if jobs > 1:
            futures = {m: pool.submit(_finetune, *a) for m, a in args.items()}
            results = {m: f.result() for m, f in futures.items()}
        else:
            results = {m: _finetune(*a) for m, a in args.items()}
        timings["fine-tunings"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - started

    methods = {"pretrained": {"label": PRETRAINED_LABEL.format(name=spec.name),
                              "scores": pre.manifest["scores"]}}  # fmt: skip
    for m in spec.methods:
        methods[m] = {
            "label": spec.labels[m].format(name=spec.name),
            "scores": results[m]["scores"]["test"],
            "train_seconds": results[m]["train_seconds"],
        }
        if spec.report_metrics:
            methods[m]["last_metrics"] = _trained_metrics(results[m], spec.report_metrics)
    payload = {
        "backend": backend,
        "backend_name": spec.name,
        "budget": budget.to_dict(),
        "seed": seed,
        "benchmark": str(root),
        "benchmark_version": benchmark_version(read_manifest(root)),
        "pretrain": "reused" if pre.reused else f"trained in {pre.manifest['train_seconds']} s",
        "methods": methods,
    }
    if spec.generates:
        payload["negatives_mix"] = mix
        payload["samples"] = _samples(negatives, budget.per_caption)
    if budget.pretrain_text() != HFBudget.pretrain_text(budget):  # a staged pre-training
        payload["pretrain_text"] = budget.pretrain_text()
    payload["timings_s"] = timings
    report = write_hf_report(out, payload)
    log(f"report: {report}")
    return payload


__all__ = [
    "HF_BACKENDS",
    "HF_BUDGETS",
    "HFBackend",
    "HFBudget",
    "HFCrossBudget",
    "HFDualBudget",
    "run_hf_demo",
    "write_hf_report",
]
