"""The demo pipeline: benchmark -> two trainings -> evaluation -> negatives -> report."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from tags.demo.budget import BUDGETS, Budget

METHODS = ("hardest", "tags-dc")
LABELS = {
    "hardest": "Hardest negative (ITM + MLM, VSE++ hardest miner)",
    "tags-dc": "TAGS-DC (NSG -> NSGDC, synthetic negatives, WoD/WoC)",
}


def benchmark_config(budget: Budget, seed: int) -> Any:
    from tags.benchmark import BenchmarkConfig

    return BenchmarkConfig(train=budget.train_images, val=0, test=budget.test_images, seed=seed)


def train_config(method: str, budget: Budget, data: Any, out: Path, seed: int) -> dict[str, Any]:
    """The raw ``TrainConfig`` mapping of one method; both share model, data, steps, batch
    size, learning rate, retrieved negatives and the ITM miner (``hardest``)."""
    model = {
        "source": "scratch",
        "tokenizer": "tiny-mlm",
        "dropout": 0.0,
        "overrides": {
            "hidden_size": budget.hidden_size,
            "num_hidden_layers": budget.layers,
            "num_attention_heads": 4,
            "intermediate_size": 2 * budget.hidden_size,
            "max_position_embeddings": 64,
            "max_regions": budget.max_regions,
        },
    }
    synthetic = {
        "source": "dynamic" if method == "tags-dc" else "none",
        "masking": "unit",
        "num_copies": budget.num_copies,
        "num_samples": budget.num_samples,
        "top_m": budget.top_m,
    }
    base = {"itm": 1.0, "mlm": 0.1}
    if method == "tags-dc":
        nsg = budget.steps - budget.dc_steps
        phases = [
            {"name": "nsg", "steps": nsg, "lr": budget.lr, "weights": {**base, "istm": 1.0}},
            {
                "name": "nsgdc",
                "steps": budget.dc_steps,
                "lr": budget.lr / 2,
                "init": "previous",
                "weights": {**base, "istm": 1.0, "wod": 0.1, "woc": 0.1},
            },
        ]
    else:
        phases = [{"name": "main", "steps": budget.steps, "lr": budget.lr, "weights": base}]
    return {
        "recipe": "tags-dc",
        "seed": seed,
        "output_dir": str(out),
        "cpu": True,
        "batch_size": budget.batch_size,
        "log_every": budget.log_every,
        "keep_checkpoints": 1,
        "tensorboard": False,
        "model": model,
        "data": {
            "captions": str(data.captions),
            "features": str(data.features),
            "split": "train",
            "max_text_len": budget.max_text_len,
            "max_regions": budget.max_regions,
        },
        "tags_dc": {
            "itm_miner": {"name": "hardest", "kwargs": {"margin": 0.2}},
            "istm_miner": {"name": "all", "kwargs": {"margin": 0.2}},
            "retrieval": {
                "mode": "pool",
                "pool_size": budget.pool_size,
                "num_negatives": budget.num_negatives,
                "score_batch_size": 256,
            },
            "synthetic": synthetic,
        },
        "phases": phases,
    }


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The rows of a run's ``metrics.jsonl`` (empty when missing)."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class PairScoreFn:
    """``score_fn(image_ids, captions)`` for :func:`minimal_pair_accuracy` via the ITM head."""

    def __init__(self, model: Any, tokenizer: Any, features: Path, max_length: int):
        from tags.negatives import TagsPairScorer, open_regions

        self.scorer = TagsPairScorer(model, tokenizer, "cpu", max_length=max_length)
        self.regions = open_regions(features)

    def __call__(self, image_ids: Sequence[Any], captions: Sequence[str]) -> list[float]:
        scores = [0.0] * len(captions)
        by_image: dict[Any, list[int]] = {}
        for i, image_id in enumerate(image_ids):
            by_image.setdefault(image_id, []).append(i)
        for image_id, rows in by_image.items():
            values = self.scorer.score([captions[i] for i in rows], self.regions.get(image_id))
            for i, value in zip(rows, values):
                scores[i] = value
        return scores


def evaluate(model: Any, tokenizer: Any, data: Any, budget: Budget) -> dict[str, Any]:
    """R@1/5/10 + RSum (full cross-encoder, test split) and minimal-pair accuracy."""
    from tags.benchmark import minimal_pair_accuracy, read_pairs
    from tags.evaluation import evaluate_retrieval, load_retrieval_split

    images, texts, _ = load_retrieval_split(
        data.captions, data.features, tokenizer, split="test", max_length=budget.max_text_len
    )
    retrieval = evaluate_retrieval(model, images, texts, "full", mode="cross", batch_size=512)
    pairs = read_pairs(data.pairs)
    score_fn = PairScoreFn(model, tokenizer, data.features, budget.max_text_len)
    accuracy = minimal_pair_accuracy(score_fn, pairs)
    return {
        "retrieval": retrieval.metrics,
        "minimal_pairs": accuracy,
        "n_test_images": len(images),
        "n_test_texts": len(texts),
        "n_pairs": len(pairs),
    }


def sample_negatives(
    model: Any, tokenizer: Any, data: Any, budget: Budget, seed: int
) -> list[dict[str, Any]]:
    """TAGS-DC negatives (``tags.negatives``, the trained model's MLM + ITM heads) for the
    first captions of the first test images."""
    from tags.negatives import (
        Caption,
        GenerationConfig,
        ImageGroup,
        MLMRefiller,
        NegativeGenerator,
        TagsMaskedLM,
        TagsPairScorer,
        open_regions,
    )
    from tags.negatives.pipeline import default_parser

    records = json.loads(Path(data.captions).read_text())["images"]
    tests = [r for r in records if r["split"] == "test"][: budget.sample_captions]
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
    engine = NegativeGenerator(
        refiller,
        GenerationConfig(
            num_copies=budget.num_copies * 2,
            num_samples=budget.num_samples * 2,
            top_m=3,
            seed=seed,
        ),
        parser=default_parser(),
        scorer=TagsPairScorer(model, tokenizer, "cpu", max_length=budget.max_text_len),
        regions=open_regions(data.features),
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


def run_demo(
    out: str | Path = "runs/demo",
    budget: str | Budget = "small",
    seed: int = 0,
    data_root: str | Path | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the whole demo; write ``out/report.md``, ``out/results.json`` and PNG plots.
    The benchmark lives in ``data_root`` (default ``out/data``) and is reused when cached."""
    from tags.benchmark import build_benchmark
    from tags.demo.report import write_report
    from tags.training import training_function
    from tags.training.config import config_from_dict
    from tags.training.factory import create_tokenizer

    budget = BUDGETS[budget] if isinstance(budget, str) else budget
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    root = Path(data_root) if data_root else out / "data"
    started = time.perf_counter()
    timings: dict[str, float] = {}
    stages = tqdm(total=2 + 2 * len(METHODS) + 1, desc="demo", unit="stage")

    t = time.perf_counter()
    stages.set_postfix_str("benchmark")
    bar = tqdm(desc="benchmark", unit="img", leave=False)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    built = build_benchmark(root, benchmark_config(budget, seed), threads=2, progress=progress)
    bar.close()
    data = built.paths
    timings["benchmark"] = time.perf_counter() - t
    log(f"benchmark: {root} ({'reused' if built.reused else 'built'}, {built.featurizer})")
    stages.update()

    results: dict[str, Any] = {}
    metrics: dict[str, list[dict[str, Any]]] = {}
    tags_dc_model = tokenizer = None
    for method in METHODS:
        stages.set_postfix_str(f"train {method}")
        t = time.perf_counter()
        raw = train_config(method, budget, data, out / "runs" / method, seed)
        result = training_function(config_from_dict(raw))
        timings[f"train/{method}"] = time.perf_counter() - t
        stages.update()
        stages.set_postfix_str(f"evaluate {method}")
        t = time.perf_counter()
        tokenizer = create_tokenizer(config_from_dict(raw).model)
        model = result.model.cpu().eval()
        results[method] = evaluate(model, tokenizer, data, budget)
        timings[f"evaluate/{method}"] = time.perf_counter() - t
        metrics[method] = read_metrics(Path(result.output_dir) / "metrics.jsonl")
        if method == "tags-dc":
            tags_dc_model = model
        stages.update()

    stages.set_postfix_str("negatives")
    t = time.perf_counter()
    samples = sample_negatives(tags_dc_model, tokenizer, data, budget, seed)
    timings["negatives"] = time.perf_counter() - t
    stages.update()

    timings["total"] = time.perf_counter() - started
    payload = {
        "budget": budget.to_dict(),
        "seed": seed,
        "featurizer": built.featurizer,
        "benchmark": str(root),
        "methods": {m: {"label": LABELS[m], **results[m]} for m in METHODS},
        "timings_s": timings,
        "samples": samples,
    }
    report = write_report(out, payload, metrics)
    stages.update()
    stages.close()
    log(f"report: {report}")
    return payload


__all__ = ["LABELS", "METHODS", "evaluate", "run_demo", "sample_negatives", "train_config"]
