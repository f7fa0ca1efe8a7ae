"""Fine-tuning a pre-trained HF dual encoder (:mod:`tags.benchmark.hf_models`) on the shapes
benchmark: plain in-batch InfoNCE, NegCLIP-style with ``tags generate`` negatives, or the
hardest in-batch negative; used by ``scripts/benchmarks/hf_finetune.py`` and ``tags demo
--backend clip``.

- :func:`generate_negatives`: weight-free ``tags generate`` negatives of the training
  captions (vocabulary refills of the edit planner, the shapes one noun class);
- :func:`order_negatives`: each caption's negatives relation edits first (the trainer uses
  the first ``vse.synthetic_negatives`` of each caption);
- :func:`finetune_config` / :func:`run_finetune`: one ``tags train`` run (recipe ``vse``)
  and its evaluation (:func:`~tags.benchmark.hf_models.evaluate_hf`), cached in its
  directory's ``result.json``.

Nothing here branches on the model family: the backend adapters do (``tags.backends``).
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

VARIANTS: tuple[str, ...] = ("plain", "negclip", "hardest")
# a caption's negatives in this order of edit type (a negative of several types ranks by
# its first type in this order)
TYPE_ORDER = {"relation": 0, "object": 1, "attribute": 2}
ORDERS: tuple[str, ...] = ("generated", "relation-first")
RESULT_FILE = "result.json"


def generate_negatives(
    data: str | Path, out: str | Path, top_m: int, role_swaps: bool, log: Any = print
) -> Path:
    """``tags generate`` on the benchmark's training captions, weight-free (planner refills
    from the captions' own vocabulary, no background corpus, the six shapes one noun class),
    generation seed 0; ``OUT/negatives_top<M>[_roles].jsonl``, reused when present."""
    from tags.benchmark.scenes import SHAPES
    from tags.cli import main as cli_main

    data, out = Path(data), Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"negatives_top{top_m}{'_roles' if role_swaps else ''}.jsonl"
    if path.is_file() and path.stat().st_size and not path.with_suffix(".jsonl.lock").exists():
        return path
    classes = out / "noun_classes.json"
    classes.write_text(json.dumps({"shape": list(SHAPES)}))
    argv = [
        "generate", "--captions", str(data / "dataset_shapes.json"), "--split", "train",
        "--out", str(path), "--refill", "vocab", "--background", "none",
        "--noun-classes", str(classes), "--top-m", str(top_m), "--seed", "0",
        "--no-progress", "--overwrite", *(["--role-swaps"] if role_swaps else []),
    ]  # fmt: skip
    start = time.perf_counter()
    if cli_main(argv) != 0:
        raise RuntimeError(f"tags generate failed: {' '.join(argv)}")
    log(f"negatives: {path} ({time.perf_counter() - start:.0f}s)")
    return path


def _groups(path: Path) -> dict[tuple[Any, Any], list[dict[str, Any]]]:
    groups: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                groups.setdefault((row.get("image_id"), row["caption_id"]), []).append(row)
    return groups


def _rank(row: dict[str, Any]) -> int:
    ranks = [TYPE_ORDER.get(e.get("type"), len(TYPE_ORDER)) for e in row.get("edits", [])]
    return min(ranks, default=len(TYPE_ORDER))


def order_negatives(path: str | Path, order: str) -> Path:
    """``path`` itself (``generated``) or a copy ``<stem>.relation-first.jsonl`` whose rows
    are, per caption, sorted by edit type (relation, object, attribute; stable)."""
    path = Path(path)
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    if order == "generated":
        return path
    target = path.with_name(f"{path.stem}.{order}.jsonl")
    if target.is_file() and target.stat().st_mtime >= path.stat().st_mtime:
        return target
    tmp = target.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for rows in _groups(path).values():
            for row in sorted(rows, key=_rank):
                f.write(json.dumps(row) + "\n")
    tmp.replace(target)
    return target


def negatives_mix(path: str | Path, per_caption: int) -> dict[str, float]:
    """Edit-type shares (percent of edits) of the negatives the trainer uses (the first
    ``per_caption`` of each caption) and the share of captions with a relation negative."""
    groups = _groups(Path(path))
    counts = {"attribute": 0, "object": 0, "relation": 0}
    with_relation = 0
    for rows in groups.values():
        types = [{e.get("type") for e in r.get("edits", [])} for r in rows[:per_caption]]
        with_relation += any("relation" in t for t in types)
        for kinds in types:
            for kind in kinds & set(counts):
                counts[kind] += 1
    total = sum(counts.values()) or 1
    mix = {k: round(100 * v / total, 1) for k, v in counts.items()}
    mix["captions_with_relation"] = round(100 * with_relation / max(1, len(groups)), 1)
    return mix


def finetune_config(
    base: dict[str, Any],
    variant: str,
    negatives: str | Path | None = None,
    per_caption: int = 1,
    hn_weight: float = 0.0,
) -> dict[str, Any]:
    """The ``tags train`` mapping of one variant from a ``vse`` base
    (:func:`~tags.benchmark.hf_models.train_config`): ``plain`` (the model's InfoNCE),
    ``negclip`` (+ ``per_caption`` synthetic columns from ``negatives`` and the
    ``hard_negative`` term at ``hn_weight``), ``hardest`` (VSE++ hinge, margin 0.2)."""
    config = copy.deepcopy(base)
    if variant == "plain":
        config["vse"] = {"loss": "contrastive"}
    elif variant == "negclip":
        if negatives is None:
            raise ValueError("variant negclip needs a negatives file")
        config["vse"] = {"loss": "contrastive", "synthetic_negatives": per_caption}
        config["data"]["negatives"] = str(negatives)
        if hn_weight:
            for phase in config["phases"]:
                phase["weights"] = {**phase.get("weights", {}), "hard_negative": hn_weight}
    elif variant == "hardest":
        config["vse"] = {"loss": "miner", "miner": {"name": "hardest", "kwargs": {"margin": 0.2}}}
    else:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    return config


def run_finetune(
    config: dict[str, Any],
    run_dir: str | Path,
    data: str | Path,
    splits: tuple[str, ...] = ("test",),
    pairs: dict[str, list[Any]] | None = None,
    role_pairs: dict[str, list[Any]] | None = None,
) -> dict[str, Any]:
    """Train ``config`` (its ``output_dir`` is ``RUN/train``) unless ``RUN/result.json``
    holds the same config and the model exists, then evaluate each of ``splits`` not scored
    yet (``pairs`` / ``role_pairs``: per split, see
    :func:`~tags.benchmark.hf_models.evaluate_hf`); returns ``{"config", "train_seconds", "last_metrics", "scores": {split: ...}}``."""
    from tags.benchmark.hf_models import evaluate_hf
    from tags.training import training_function
    from tags.training.config import config_from_dict
    from tags.training.rundir import clear_run

    run_dir = Path(run_dir)
    result_path = run_dir / RESULT_FILE
    model_dir = Path(config["output_dir"]) / "model"
    record: dict[str, Any] | None = None
    if result_path.is_file():
        cached = json.loads(result_path.read_text())
        if cached.get("config") == config and model_dir.is_dir():
            record = cached
    if record is None:
        clear_run(Path(config["output_dir"]))
        start = time.perf_counter()
        result = training_function(config_from_dict(config))
        record = {
            "config": config,
            "train_seconds": round(time.perf_counter() - start, 1),
            "last_metrics": {k: float(v) for k, v in result.last_metrics.items()},
            "scores": {},
        }
    for split in splits:
        roles = (role_pairs or {}).get(split)
        scored = record["scores"].get(split)
        if scored is None or (roles and "mp_role" not in scored):
            start = time.perf_counter()
            chosen = (pairs or {}).get(split)
            record["scores"][split] = evaluate_hf(
                model_dir, data, split, pairs=chosen, role_pairs=roles
            )
            record.setdefault("eval_seconds", {})[split] = round(time.perf_counter() - start, 1)
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = result_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.replace(result_path)
    return record


def negatives_accuracy(
    model_dir: str | Path,
    data: str | Path,
    negatives: str | Path,
    per_caption: int,
    limit_images: int = 300,
) -> dict[str, float]:
    """How often the model scores a training caption above each of its used negatives (the
    first ``per_caption``), on the first ``limit_images`` training images: ``overall`` and
    per kind (``attribute``, ``object``, ``relation`` (flips and replacements), ``role``
    (role swaps)), with ``pairs``. What the fine-tuning was asked to learn, measured on the
    pairs it was trained on."""
    import torch

    from tags.backends import load_backend
    from tags.benchmark.hf_models import _pair_scorer, _quiet
    from tags.benchmark.minimal_pairs import MinimalPair, minimal_pair_accuracy
    from tags.evaluation.images import load_image_retrieval_split

    _quiet()
    data = Path(data)
    backend = load_backend(str(model_dir))
    backend.model.eval()
    images, _, _ = load_image_retrieval_split(
        data / "dataset_shapes.json", data / "images", backend, split="train",
        limit_images=limit_images,
    )  # fmt: skip
    kept = set(images.ids)
    pairs = []
    for (image_id, _), rows in _groups(Path(negatives)).items():
        if image_id not in kept:
            continue
        for row in rows[:per_caption]:
            edits = row.get("edits", [])
            kind = edits[0]["type"] if edits else "word"
            if kind == "relation" and edits[0].get("operation") == "swap":
                kind = "role"
            pairs.append(MinimalPair(image_id, row["positive"], row["negative"], kind, "", ""))
    with torch.no_grad():
        accuracy = minimal_pair_accuracy(_pair_scorer(backend, images), pairs)
    accuracy["pairs"] = len(pairs)
    return accuracy


# benchmark pair type -> SugarCrepe file
SUGARCREPE_FILES = {"attribute": "replace_att", "object": "replace_obj", "relation": "replace_rel"}


def export_pairs_sugarcrepe(pairs: list[Any], out: str | Path) -> Path:
    """The minimal pairs as SugarCrepe files in ``out`` (``replace_att.json``,
    ``replace_obj.json``, ``replace_rel.json``: ``{id: {filename, caption,
    negative_caption}}``, ``filename`` the benchmark's ``<image_id>.png``), for ``tags
    evaluate --suite sugarcrepe=OUT --images BENCH/images`` or SugarCrepe's own evaluator."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, dict[str, Any]] = {name: {} for name in SUGARCREPE_FILES.values()}
    for n, pair in enumerate(pairs):
        if pair.type in SUGARCREPE_FILES:
            files[SUGARCREPE_FILES[pair.type]][str(n)] = {
                "filename": f"{pair.image_id}.png",
                "caption": pair.caption,
                "negative_caption": pair.negative,
            }
    for name, items in files.items():
        (out / f"{name}.json").write_text(json.dumps(items, indent=0) + "\n")
    return out


def sugarcrepe_accuracy(model_dir: str | Path, suite: str | Path, images: str | Path) -> dict:
    """``tags evaluate --suite sugarcrepe=SUITE --images IMAGES --mode dual`` on ``model_dir``:
    ``{subset: accuracy, "overall": accuracy}`` (percent)."""
    import tempfile

    from tags.cli import main as cli_main

    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "suite.json"
        argv = ["evaluate", "--model", str(model_dir), "--suite", f"sugarcrepe={suite}",
                "--images", str(images), "--mode", "dual", "--out", str(report), "--quiet"]  # fmt: skip
        if cli_main(argv) != 0:
            raise RuntimeError(f"tags {' '.join(argv)} failed")
        result = json.loads(report.read_text())["suites"]["sugarcrepe"]
    scores = {name: r["accuracy"] for name, r in result["subsets"].items()}
    scores["overall"] = result["overall"]["accuracy"]
    return scores


__all__ = [
    "ORDERS",
    "SUGARCREPE_FILES",
    "TYPE_ORDER",
    "VARIANTS",
    "export_pairs_sugarcrepe",
    "finetune_config",
    "generate_negatives",
    "negatives_accuracy",
    "negatives_mix",
    "order_negatives",
    "run_finetune",
    "sugarcrepe_accuracy",
]
