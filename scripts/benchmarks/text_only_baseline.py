"""Text-only baselines of a shapes benchmark build: how many test minimal pairs a model that
never sees the image wins (50 % = no text prior), per pair type, for each pair sampler.

    python scripts/benchmarks/text_only_baseline.py --data runs/results/data
    python scripts/benchmarks/text_only_baseline.py --data DIR --samplers balanced uniform

Two text-only models, fitted on the build's training split (``tags.benchmark.
text_only_baselines``): a Kneser-Ney trigram LM of the training captions, and an n-gram
logistic classifier fitted on the training split's minimal pairs and role pairs. Each
sampler's pairs are drawn from the same test scenes (``uniform`` = benchmark v1's draw,
``balanced`` = v2's). ``role`` pairs (the two mentions exchanged) are the same for both.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

COLUMNS = ("overall", "attribute", "object", "relation", "role")


def main() -> None:
    from tags.benchmark import text_only_baselines
    from tags.benchmark.build import benchmark_version, read_manifest
    from tags.benchmark.config import PAIR_SAMPLERS
    from tags.benchmark.text_baseline import benchmark_test_pairs

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="a tags make-benchmark directory")
    parser.add_argument("--samplers", nargs="+", default=list(PAIR_SAMPLERS), choices=PAIR_SAMPLERS)
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()

    manifest = read_manifest(args.data)
    counts = manifest["counts"]
    print(
        f"{args.data}: benchmark {benchmark_version(manifest)}; {counts['train']} training "
        f"images, {counts['test']} test images\n"
    )
    print("| pairs | text-only model | n | " + " | ".join(COLUMNS) + " |")
    print("|---|---|---|" + "---|" * len(COLUMNS))
    out = {}
    for sampler in args.samplers:
        start = time.perf_counter()
        results = text_only_baselines(args.data, sampler=sampler)
        n = len(benchmark_test_pairs(args.data, sampler))
        for name, accuracy in results.items():
            cells = " | ".join(f"{100 * accuracy[c]:.1f}" for c in COLUMNS)
            print(f"| {sampler} | {name} | {n} | {cells} |")
        out[sampler] = {"pairs": n, "seconds": time.perf_counter() - start, **results}
    print("\npercent of test pairs whose true caption the text-only model scores higher")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
