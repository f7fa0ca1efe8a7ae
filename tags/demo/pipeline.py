"""The demo pipeline: benchmark -> two trainings -> evaluation -> negatives -> report."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from tags.demo import methods
from tags.demo.budget import BUDGETS, Budget
from tags.demo.evaluate import evaluate
from tags.demo.truth import enable_truth_audit, judge_samples, training_truth

METHODS = ("hardest", "tags-dc")


def benchmark_config(budget: Budget, seed: int) -> Any:
    from tags.benchmark import BenchmarkConfig

    return BenchmarkConfig(
        train=budget.train_images, val=budget.val_images, test=budget.test_images, seed=seed
    )


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The rows of a run's ``metrics.jsonl`` (empty when missing)."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def stage_seconds(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Seconds per training stage (``time/*`` metrics: per-step means of each logged window)
    summed over a run's ``metrics.jsonl`` rows."""
    totals: dict[str, float] = {}
    previous = 0
    for row in rows:
        keys = [k for k in row if k.startswith("time/")]
        if not keys:
            continue
        steps = row["step"] - previous
        previous = row["step"]
        for key in keys:
            totals[key[5:]] = totals.get(key[5:], 0.0) + row[key] * steps
    return totals


def resolved_config(raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` with every default filled in (as JSON), so a cached run made before a default
    changed (e.g. ``tags_dc.woc_init``) no longer matches."""
    from tags.training.config import config_from_dict, to_dict

    return json.loads(json.dumps(to_dict(config_from_dict(raw))))


def _cached(path: Path, config: dict[str, Any]) -> dict[str, Any] | None:
    """A finished run's ``result.json`` (or ``trained.json``) when it was made by exactly
    ``config`` under today's defaults."""
    if not path.is_file():
        return None
    result = json.loads(path.read_text())
    if result.get("config") != config:
        return None
    return result if result.get("resolved_config") == resolved_config(config) else None


def _write_json(path: Path, payload: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=1))
    tmp.replace(path)


TRAINED = "trained.json"


def train_run(raw: dict[str, Any], data: Any) -> dict[str, Any]:
    """Train ``raw`` (a TrainConfig mapping) unless its run directory already holds a model
    made by exactly this config under today's defaults; returns ``{"config",
    "resolved_config", "train_s", "model_dir"}`` (``OUT/trained.json``)."""
    from tags.core.noise import quiet_tied_weights
    from tags.training import training_function
    from tags.training.config import config_from_dict
    from tags.training.rundir import clear_run

    raw = enable_truth_audit(raw, data.scenes)  # no-op without synthetic negatives
    out = Path(raw["output_dir"])
    for name in ("result.json", TRAINED):
        cached = _cached(out / name, raw)
        if cached is not None:
            keys = ("config", "resolved_config", "train_s", "model_dir", "steps_run", "best_step")
            return {k: cached[k] for k in keys if k in cached}
    config = config_from_dict(raw)
    clear_run(out)  # a stale or unfinished run of this demo step (tags train refuses to mix)
    quiet_tied_weights()  # as tags train: Accelerate's note on the decoders tied by design
    t = time.perf_counter()
    trained = training_function(config)
    record = {
        "config": raw,
        "resolved_config": resolved_config(raw),
        "train_s": time.perf_counter() - t,
        "model_dir": str(Path(trained.output_dir) / "model"),
        # the last optimizer step and the best evaluated one (early stopping; 0: no eval)
        "steps_run": trained.state.step,
        "best_step": trained.state.best_step,
    }
    _write_json(out / TRAINED, record)
    return record


def evaluate_run(trained: dict[str, Any], family: str, data: Any, budget: Budget) -> dict[str, Any]:
    """Evaluate a :func:`train_run` model on the test split (and val when the budget has
    one); ``OUT/result.json`` caches the result."""
    from tags.backends.tags_model import load_tags_model

    raw = trained["config"]
    out = Path(raw["output_dir"])
    cached = _cached(out / "result.json", raw)
    if cached is not None:
        return cached
    model, tokenizer = load_tags_model(trained["model_dir"], "cpu")
    t = time.perf_counter()
    metrics = evaluate(model, tokenizer, data, budget.max_text_len, family)
    if budget.val_images:
        metrics["val"] = evaluate(model, tokenizer, data, budget.max_text_len, family, "val")
    truth = training_truth(read_metrics(out / "metrics.jsonl"))
    result = {
        "config": raw,
        "resolved_config": trained["resolved_config"],
        "family": family,
        **metrics,
        **({"truth_audit": truth} if truth else {}),
        "train_s": trained["train_s"],
        **{k: trained[k] for k in ("steps_run", "best_step") if k in trained},
        "evaluate_s": time.perf_counter() - t,
        "model_dir": trained["model_dir"],
    }
    _write_json(out / "result.json", result)
    return result


def train_and_evaluate(
    raw: dict[str, Any], family: str, data: Any, budget: Budget
) -> dict[str, Any]:
    """:func:`train_run` then :func:`evaluate_run`; both steps are cached in the run
    directory, so a re-run with the same config redoes nothing."""
    return evaluate_run(train_run(raw, data), family, data, budget)


def worker_init(threads: int) -> None:
    """Set up a worker process of the demo or the results benchmark."""
    import torch

    torch.set_num_threads(threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


def reference_scores(model_dir: Path, data: Any, budget: Budget, out: Path) -> Path:
    """NDGL's reference: the pre-trained model's dual cosine scores over the training set,
    ``[images, captions]`` in dataset order, saved to ``out`` (reused when present)."""
    if out.is_file():
        return out
    import torch

    from tags.backends.tags_model import load_tags_model
    from tags.data import build_dataset
    from tags.training.config import DataConfig
    from tags.training.retrieval import encode_dataset

    model, tokenizer = load_tags_model(model_dir, "cpu")
    dataset = build_dataset(DataConfig(**methods.data_section(data, budget)), tokenizer)
    images, captions = encode_dataset(model, dataset)
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(images @ captions.t(), out)
    return out


def sample_negatives(
    model: Any,
    tokenizer: Any,
    data: Any,
    budget: Budget,
    seed: int,
    planner_cache: Path | None = None,
) -> list[dict[str, Any]]:
    """TAGS-DC negatives (``tags.negatives``, the trained model's MLM + ITM heads) for the
    first captions of the first test images (``planner_cache``: the TAGS-DC run's parsed
    training scenes, read instead of parsing the training captions again)."""
    from tags.benchmark.scenes import SHAPES
    from tags.negatives import (
        Caption,
        GenerationConfig,
        ImageGroup,
        MLMRefiller,
        TagsMaskedLM,
        TagsPairScorer,
        create_generator,
        open_regions,
    )
    from tags.negatives.pipeline import default_parser
    from tags.training.synthetic import build_planner

    records = json.loads(Path(data.captions).read_text())["images"]
    tests = [r for r in records if r["split"] == "test"][: budget.sample_captions]
    # the substitutes the training recipe's generator draws from: the training captions'
    train = [s["raw"] for r in records if r["split"] == "train" for s in r["sentences"]]
    parser = default_parser()
    groups = [
        ImageGroup(r["imgid"], [Caption(r["imgid"], s["sentid"], s["raw"]) for s in r["sentences"]])
        for r in tests
    ]
    refiller = MLMRefiller(
        TagsMaskedLM(model, tokenizer, "cpu"),
        tokenizer,
        num_samples=budget.num_samples * 2,
        temperature=1.5,
        max_length=budget.max_text_len,
    )
    engine = create_generator(
        GenerationConfig(
            num_copies=budget.num_copies * 2,
            num_samples=budget.num_samples * 2,
            top_m=3,
            seed=seed,
        ),
        refiller=refiller,
        parser=parser,
        scorer=TagsPairScorer(model, tokenizer, "cpu", max_length=budget.max_text_len),
        regions=open_regions(data.features),
        planner=build_planner(parser, train, planner_cache, {"shape": list(SHAPES)}),
    )
    samples: list[dict[str, Any]] = []
    for group in groups:
        # the first caption goes last and the others are skipped: they only serve the
        # false-negative filter as the image's other captions
        first, *others = group.captions
        ordered = ImageGroup(group.image_id, [*others, first])
        resume = others[-1].caption_id if others else None
        for result in engine.generate([ordered], resume_after=resume):
            samples.append(
                {
                    "image_id": group.image_id,
                    "positive": result.caption.text,
                    "negatives": [
                        {
                            "text": r.negative,
                            "score": r.score,
                            "edits": [e.to_dict() for e in r.edits],
                        }
                        for r in result.records
                    ],
                }
            )
    return samples


def build_data(root: Path, budget: Budget, seed: int, log: Callable[[str], None]) -> Any:
    """Build (or reuse) the benchmark under ``root``; returns ``(paths, seconds)``."""
    from tags.benchmark import build_benchmark

    t = time.perf_counter()
    bar = tqdm(desc="benchmark", unit="img", leave=False)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    built = build_benchmark(root, benchmark_config(budget, seed), threads=2, progress=progress)
    bar.close()
    log(f"benchmark: {root} ({'reused' if built.reused else 'built'}, {built.featurizer})")
    return built, time.perf_counter() - t


def _version(root: Path) -> str:
    from tags.benchmark import benchmark_version, read_manifest

    return benchmark_version(read_manifest(root))


def _text_only(root: Path) -> tuple[dict[str, dict[str, float]], float]:
    """The benchmark's text-only baselines (:func:`tags.benchmark.text_only_baselines`) and
    the seconds they took."""
    from tags.benchmark import text_only_baselines

    t = time.perf_counter()
    return text_only_baselines(root), time.perf_counter() - t


def default_jobs() -> int:
    """Runs side by side: 2 on 2+ cores. Each TAGS-DC step is mostly small matrices and
    Python work, so two single-threaded runs beat one run on two threads (docs/demo.md)."""
    return 2 if (os.cpu_count() or 1) >= 2 else 1


def run_demo(
    out: str | Path = "runs/demo",
    budget: str | Budget = "small",
    seed: int = 0,
    data_root: str | Path | None = None,
    log: Callable[[str], None] = print,
    jobs: int | None = None,
) -> dict[str, Any]:
    """Run the whole demo; write ``out/report.md``, ``out/results.json`` and PNG plots.
    The benchmark lives in ``data_root`` (default ``out/data``) and is reused when cached;
    finished runs under ``out/runs`` are reused when their config is unchanged.

    After pre-training, the fine-tunings and the pre-trained model's evaluation run in
    ``jobs`` worker processes (default :func:`default_jobs`, ``cpu_count // jobs`` threads
    each); ``jobs=1`` runs everything in this process."""
    from tags.demo.report import write_report

    budget = BUDGETS[budget] if isinstance(budget, str) else budget
    jobs = default_jobs() if jobs is None else jobs
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    root = Path(data_root) if data_root else out / "data"
    started = time.perf_counter()
    timings: dict[str, float] = {}
    # benchmark, pretrain, the pre-trained evaluation, each method, negatives, report
    stages = tqdm(total=5 + len(METHODS), desc="demo", unit="stage")

    stages.set_postfix_str("benchmark")
    built, timings["benchmark"] = build_data(root, budget, seed, log)
    data = built.paths
    stages.update()

    stages.set_postfix_str("pretrain")
    t = time.perf_counter()
    raw = methods.pretrain_config(budget, data, out / "runs" / "pretrained", seed)
    trained = train_run(raw, data)
    timings["pretrain"] = time.perf_counter() - t
    stages.update()

    # the pre-trained model's evaluation and the fine-tunings, side by side
    t = time.perf_counter()
    stages.set_postfix_str(", ".join(METHODS))
    negatives: dict[str, Any] = {}

    def draw_negatives(record: dict[str, Any]) -> None:  # TAGS-DC trained: its negatives
        start = time.perf_counter()
        samples = _tags_dc_samples(record, data, budget, seed)
        negatives["truth"] = judge_samples(samples, data.scenes)
        negatives["samples"], negatives["seconds"] = samples, time.perf_counter() - start

    results, text_only, timings["text_only"] = _side_by_side(
        trained, data, budget, out, seed, jobs, stages, draw_negatives
    )
    timings["side_by_side"] = time.perf_counter() - t
    timings["pretrained_evaluate"] = results["pretrained"]["evaluate_s"]
    for method in METHODS:
        timings[method] = results[method]["train_s"] + results[method]["evaluate_s"]
    metrics = {
        m: read_metrics(Path(results[m]["config"]["output_dir"]) / "metrics.jsonl") for m in METHODS
    }

    stages.set_postfix_str("negatives")
    if not negatives:  # not drawn while TAGS-DC's evaluation ran (one process, or cached)
        draw_negatives(results["tags-dc"])
    samples, sample_truth = negatives["samples"], negatives["truth"]
    timings["negatives"] = negatives["seconds"]
    stages.update()

    timings["total"] = time.perf_counter() - started
    payload = {
        "budget": budget.to_dict(),
        "seed": seed,
        "featurizer": built.featurizer,
        "benchmark": str(root),
        "benchmark_version": _version(root),
        "methods": _method_results(results),
        "text_only": text_only,
        "timings_s": timings,
        "stage_seconds": {m: stage_seconds(metrics[m]) for m in METHODS},
        "samples": samples,
        "samples_truth": sample_truth,
    }
    report = write_report(out, payload, metrics)
    stages.update()
    stages.close()
    log(f"report: {report}")
    return payload


def _side_by_side(
    trained: dict[str, Any],
    data: Any,
    budget: Budget,
    out: Path,
    seed: int,
    jobs: int,
    stages: Any,
    on_tags_dc: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[dict[str, Any], dict[str, dict[str, float]], float]:
    """The fine-tunings of :data:`METHODS` and the pre-trained model's evaluation, in
    ``jobs`` worker processes (finished runs reused), and the text-only baselines on a core
    a worker left idle: ``(results by run, text-only baselines, their seconds)``. With
    workers, ``on_tags_dc(trained record)`` runs here while TAGS-DC's evaluation runs in
    a worker (the demo's sample negatives: both read the trained model only)."""
    assets = {"pretrained": trained["model_dir"]}
    raws = {
        m: enable_truth_audit(
            methods.method_config(m, budget, data, out / "runs" / m, seed, assets), data.scenes
        )
        for m in METHODS
    }
    tasks: dict[str, tuple[Callable[..., dict[str, Any]], tuple[Any, ...]]] = {
        m: (train_and_evaluate, (raw, "cross", data, budget)) for m, raw in raws.items()
    }
    tasks["pretrained"] = (evaluate_run, (trained, "cross", data, budget))
    results: dict[str, Any] = {}
    for name, raw in [*raws.items(), ("pretrained", trained["config"])]:
        cached = _cached(Path(raw["output_dir"]) / "result.json", raw)
        if cached is not None:  # finished before: nothing to run
            results[name] = cached
            del tasks[name]
            stages.update()
    if len(tasks) <= 1 or jobs <= 1:
        text_only, seconds = _text_only(data.root)
        for name, (fn, args) in tasks.items():
            results[name] = fn(*args)
            stages.update()
        return results, text_only, seconds
    if "tags-dc" in tasks and on_tags_dc is not None:  # train, then evaluate as a new task
        tasks["tags-dc"] = (train_run, (raws["tags-dc"], data))
    workers = min(jobs, len(tasks))
    text_only = None
    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=get_context("spawn"),
        initializer=worker_init,
        initargs=(max(1, (os.cpu_count() or 1) // jobs),),
    ) as pool:
        pending = {pool.submit(fn, *args): name for name, (fn, args) in tasks.items()}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                name, value = pending.pop(future), future.result()
                if name == "tags-dc" and tasks[name][0] is train_run:
                    tasks[name] = (evaluate_run, (value, "cross", data, budget))
                    pending[pool.submit(evaluate_run, *tasks[name][1])] = name
                    on_tags_dc(value)  # while a worker evaluates the trained model
                    continue
                results[name] = value
                stages.update()
            if text_only is None and len(pending) < workers:
                # on a core a worker left idle: not beside the long TAGS-DC run's start
                text_only, seconds = _text_only(data.root)
    if text_only is None:
        text_only, seconds = _text_only(data.root)
    return results, text_only, seconds


def _tags_dc_samples(
    result: dict[str, Any], data: Any, budget: Budget, seed: int
) -> list[dict[str, Any]]:
    """:func:`sample_negatives` of the trained TAGS-DC model (its run's parsed training
    scenes as the planner's counts)."""
    from tags.backends.tags_model import load_tags_model
    from tags.training.recipes.tags_dc import PLANNER_CACHE

    model, tokenizer = load_tags_model(result["model_dir"], "cpu")
    cache = Path(result["config"]["output_dir"]) / PLANNER_CACHE
    return sample_negatives(model, tokenizer, data, budget, seed, cache)


def _method_results(results: dict[str, Any]) -> dict[str, Any]:
    """Each run's label and results for the report (its configs left out)."""
    labels = {"pretrained": "Pre-trained (ITM + MLM + ITC), before fine-tuning"}
    labels |= {m: methods.get_method(m).label for m in METHODS}
    return {
        m: {
            "label": labels[m],
            **{k: v for k, v in results[m].items() if k not in ("config", "resolved_config")},
        }
        for m in ("pretrained", *METHODS)
    }


__all__ = [
    "METHODS",
    "build_data",
    "default_jobs",
    "evaluate_run",
    "reference_scores",
    "resolved_config",
    "run_demo",
    "sample_negatives",
    "stage_seconds",
    "train_and_evaluate",
    "train_run",
    "worker_init",
]
