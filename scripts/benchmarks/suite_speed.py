"""Suite-reader speed next to the scoring cost, side by side in one run.

The shapes benchmark's minimal pairs are read by their own reader and, written out again in
SugarCrepe's JSON and a pair JSONL (same pairs), by those readers; then a TagsModel scores
the same suite in cross, dual and two-stage mode (region features). Rows are pairs/s over
the suite's (image, caption) pairs (best of ``--repeats`` for reading, one pass for
scoring; each distinct pair is scored once, so a positive shared by three negatives is
scored once).

    python scripts/benchmarks/suite_speed.py --data DIR --model DIR [--batch-size 256]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def best_of(repeats: int, fn) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def write_formats(pairs: list, folder: Path) -> dict[str, Path]:
    """The same pairs as SugarCrepe JSON (one subset per type) and as a pair JSONL."""
    sugar = folder / "sugar"
    sugar.mkdir()
    names = {"attribute": "replace_att", "object": "replace_obj", "relation": "replace_rel"}
    files: dict[str, dict] = {v: {} for v in names.values()}
    for n, p in enumerate(pairs):
        files[names[p.type]][str(n)] = {
            "filename": f"{p.image_id}.png", "caption": p.caption, "negative_caption": p.negative,
        }  # fmt: skip
    for name, data in files.items():
        (sugar / f"{name}.json").write_text(json.dumps(data))
    jsonl = folder / "pairs.jsonl"
    jsonl.write_text(
        "".join(
            json.dumps({"image_id": p.image_id, "positive": p.caption, "negative": p.negative,
                        "type": p.type}) + "\n"
            for p in pairs
        )
    )  # fmt: skip
    return {"sugarcrepe": sugar, "pairs": jsonl}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="tags make-benchmark folder")
    ap.add_argument("--model", required=True, help="TagsModel directory")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    import torch

    from tags.backends import load_backend
    from tags.benchmark import read_pairs
    from tags.evaluation.suites import read_suite
    from tags.evaluation.suites.base import SuiteSpec
    from tags.evaluation.suites.runner import SuiteOptions, run_suite

    data = Path(args.data)
    pairs = read_pairs(data / "test_minimal_pairs.jsonl")
    print(f"{len(pairs)} minimal pairs, {len({p.image_id for p in pairs})} images; "
          f"torch threads {torch.get_num_threads()}")  # fmt: skip
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = {"shapes": data, **write_formats(pairs, Path(tmp))}
        for name, path in paths.items():
            seconds, suite = best_of(args.repeats, lambda n=name, p=path: read_suite(n, p))
            rows.append((f"read {name}", suite.num_pairs, seconds))
    backend = load_backend(args.model)
    backend.model.eval()
    spec = SuiteSpec("shapes", data)
    for mode in ("cross", "dual", "two-stage"):
        options = SuiteOptions(mode=mode, topk=1, batch_size=args.batch_size, progress=False)
        result = run_suite(backend, spec, "shapes", options)
        rows.append(
            (
                f"score {mode}" + (" (k=1)" if mode == "two-stage" else ""),
                result.n_pairs,
                result.seconds["score"],
                result.overall["accuracy"],
            )
        )
    print(f"\n{'step':<22}{'pairs':>8}{'seconds':>10}{'pairs/s':>12}{'accuracy':>10}")
    for row in rows:
        name, n, seconds = row[:3]
        acc = f"{row[3]:>10.2f}" if len(row) > 3 else ""
        print(f"{name:<22}{n:>8}{seconds:>10.3f}{n / seconds:>12.0f}{acc}")


if __name__ == "__main__":
    main()
