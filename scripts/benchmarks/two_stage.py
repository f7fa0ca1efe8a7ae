"""Two-stage retrieval vs full cross-encoder and dual encoder on the shapes test split.

For each model of a finished demo (``OUT/runs/{pretrained,hardest,tags-dc}/model``): RSum of
the full cross-encoder ranking (every image-text pair through the ITM head), of the dual
encoder (cosine of the embeddings), and of two-stage retrieval for each ``k`` (dual top-k per
query, then the cross-encoder on those pairs only: ``tags.evaluation.rerank_topk``), with the
pair forwards it runs and the factor saved against the full cross ranking.

Two rerankings: ``cross`` (the top-k ordered by the ITM logit alone, as ``tags evaluate
--mode two-stage``) and ``fused`` (``dual + w * ITM logit``, ``--fusion w``). ``w`` is picked
per model and k on the first ``--select-images`` *training* images (never on test), from
``--weights``.

    python scripts/benchmarks/two_stage.py --demo runs/demo --ks 4 8 16 32
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

DEFAULT_WEIGHTS = (0.0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)


def _rsum(i2t: torch.Tensor, t2i: torch.Tensor, txt2img: torch.Tensor) -> float:
    from tags.evaluation import retrieval_metrics

    return float(retrieval_metrics(i2t, txt2img, t2i_sims=t2i)["rsum"])


def _rerank(dual: torch.Tensor, cross: torch.Tensor, k: int, weight: float | None):
    """Two-stage matrices from a full cross matrix (selection only: no forwards)."""
    from tags.evaluation.scoring import topk_masks

    rows, cols = topk_masks(dual, k)
    pairs = rows | cols
    top = cross if weight is None else dual + weight * cross
    below = dual - dual.max() + top[pairs].min() - 1.0
    return torch.where(rows, top, below), torch.where(cols, top, below)


def pick_weight(model, tokenizer, data, max_length, k, weights, n_images) -> float:
    """The fusion weight with the best two-stage RSum on the first training images."""
    from tags.evaluation import load_retrieval_split
    from tags.evaluation.scoring import score_matrix_cross, score_matrix_dual

    images, texts, _ = load_retrieval_split(
        data.captions, data.features, tokenizer, split="train", max_length=max_length,
        limit_images=n_images,
    )  # fmt: skip
    key = (id(model), n_images)
    if key not in _TRAIN_CACHE:
        _TRAIN_CACHE.clear()
        dual = score_matrix_dual(model, images, texts, 512)
        _TRAIN_CACHE[key] = (dual, score_matrix_cross(model, images, texts, 512))
    dual, cross = _TRAIN_CACHE[key]
    scores = {w: _rsum(*_rerank(dual, cross, k, w), texts.txt2img) for w in weights}
    return max(weights, key=lambda w: (scores[w], -w))


_TRAIN_CACHE: dict = {}


def measure(model_dir: Path, data, max_length: int, ks, weights, n_select) -> list[dict]:
    from tags.backends.tags_model import load_tags_model
    from tags.evaluation import load_retrieval_split
    from tags.evaluation.scoring import (
        rerank_topk,
        score_matrix_cross,
        score_matrix_dual,
        topk_masks,
    )

    model, tokenizer = load_tags_model(model_dir, "cpu")
    model.eval()
    images, texts, _ = load_retrieval_split(
        data.captions, data.features, tokenizer, split="test", max_length=max_length
    )
    dual = score_matrix_dual(model, images, texts, 512)
    cross = score_matrix_cross(model, images, texts, 512)
    cross_rsum = _rsum(cross, cross, texts.txt2img)
    dual_rsum = _rsum(dual, dual, texts.txt2img)
    full = len(images) * len(texts)
    rows = []
    for k in ks:
        top_rows, top_cols = topk_masks(dual, k)
        pairs = int((top_rows | top_cols).sum())
        plain = _rsum(*rerank_topk(model, images, texts, dual, k, 512), texts.txt2img)
        weight = pick_weight(model, tokenizer, data, max_length, k, weights, n_select)
        fused = _rsum(
            *rerank_topk(model, images, texts, dual, k, 512, fusion=weight), texts.txt2img
        )
        rows.append(
            {
                "k": k,
                "pairs": pairs,
                "full_pairs": full,
                "saved": full / pairs,
                "cross": cross_rsum,
                "dual": dual_rsum,
                "two_stage": plain,
                "weight": weight,
                "fused": fused,
            }
        )
        print(f"{model_dir.parent.name} k={k}: {rows[-1]}", file=sys.stderr, flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--demo", required=True, help="a finished `tags demo` OUT")
    parser.add_argument("--models", nargs="+", default=["pretrained", "hardest", "tags-dc"])
    parser.add_argument("--ks", nargs="+", type=int, default=[4, 8, 16, 32])
    parser.add_argument("--weights", nargs="+", type=float, default=list(DEFAULT_WEIGHTS))
    parser.add_argument("--select-images", type=int, default=100, help="training images")
    parser.add_argument("--data", default=None, help="benchmark dir (default OUT/data)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", default=None, help="also write the rows here")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    from tags.benchmark.build import BenchmarkPaths

    demo = Path(args.demo)
    data = BenchmarkPaths.under(Path(args.data) if args.data else demo / "data", False)
    table = {}
    for name in args.models:
        run = demo / "runs" / name
        if not (run / "result.json").is_file():
            sys.exit(f"{run}: no finished run (run `tags demo --out {demo}` first)")
        max_length = json.loads((run / "result.json").read_text())["config"]["data"]["max_text_len"]
        table[name] = measure(
            run / "model", data, max_length, args.ks, args.weights, args.select_images
        )
    print(
        "| model | k | pair forwards | fewer | cross | dual | two-stage | Δ best | w | fused | Δ best |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, rows in table.items():
        for r in rows:
            best = max(r["cross"], r["dual"])
            print(
                f"| {name} | {r['k']} | {r['pairs']} / {r['full_pairs']} | {r['saved']:.1f}x | "
                f"{r['cross']:.1f} | {r['dual']:.1f} | {r['two_stage']:.1f} | "
                f"{r['two_stage'] - best:+.1f} | {r['weight']:g} | {r['fused']:.1f} | "
                f"{r['fused'] - best:+.1f} |"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
