"""The HF fine-tuning comparison's extra scores (``scripts/benchmarks/hf_finetune.py
--check-negatives / --sugarcrepe``):

- :func:`negatives_accuracy`: how often a model scores a training caption above the
  negatives it was fine-tuned on, by kind;
- :func:`export_pairs_sugarcrepe` / :func:`sugarcrepe_accuracy`: the benchmark's minimal
  pairs as SugarCrepe files, scored by ``tags evaluate --suite sugarcrepe``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# benchmark pair type -> SugarCrepe file
SUGARCREPE_FILES = {"attribute": "replace_att", "object": "replace_obj", "relation": "replace_rel"}


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
    from tags.benchmark.hf_finetune import negatives_by_caption
    from tags.benchmark.hf_models import pair_scorer, quiet_transformers
    from tags.benchmark.minimal_pairs import MinimalPair, minimal_pair_accuracy
    from tags.evaluation.images import load_image_retrieval_split

    quiet_transformers()
    data = Path(data)
    backend = load_backend(str(model_dir))
    backend.model.eval()
    images, _, _ = load_image_retrieval_split(
        data / "dataset_shapes.json", data / "images", backend, split="train",
        limit_images=limit_images,
    )  # fmt: skip
    kept = set(images.ids)
    pairs = []
    for (image_id, _), rows in negatives_by_caption(negatives).items():
        if image_id not in kept:
            continue
        for row in rows[:per_caption]:
            edits = row.get("edits", [])
            kind = edits[0]["type"] if edits else "word"
            if kind == "relation" and edits[0].get("operation") == "swap":
                kind = "role"
            pairs.append(MinimalPair(image_id, row["positive"], row["negative"], kind, "", ""))
    with torch.no_grad():
        accuracy = minimal_pair_accuracy(pair_scorer(backend, images), pairs)
    accuracy["pairs"] = len(pairs)
    return accuracy


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
    "SUGARCREPE_FILES",
    "export_pairs_sugarcrepe",
    "negatives_accuracy",
    "sugarcrepe_accuracy",
]
