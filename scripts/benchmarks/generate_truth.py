"""Truth audit of ``tags generate`` on the shapes benchmark's captions.

Runs ``tags generate`` on one split of a benchmark (default: test) in a few settings and
judges every negative against the true scene of its image
(``tags.benchmark.oracle.TruthOracle``): the share that is actually *true* of the image (a
false negative that the caption-based filter missed) and the share that is *ungrammatical*
(outside the benchmark's grammar).

    python scripts/benchmarks/generate_truth.py --data runs/demo/data \
        --model runs/demo/runs/tags-dc/model
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

SETTINGS: dict[str, list[str]] = {
    "vocab, minimal (default)": [],
    "vocab, multi-unit preset": ["--preset", "multi-unit"],
    "vocab, unconstrained": ["--unconstrained"],
}
MODEL_SETTINGS: dict[str, list[str]] = {
    "--model, minimal": [],
    "--model, multi-unit preset, no swaps (as in training)": [
        "--preset",
        "multi-unit",
        "--no-swaps",
    ],
    "--model, unconstrained (any MLM word piece)": ["--unconstrained"],
}


def audit(path: Path, oracle) -> dict[str, float]:
    from tags.benchmark.truth import truth_shares

    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    shares = truth_shares(oracle.judge(r["image_id"], r["negative"]) for r in rows)
    shares["captions"] = float(len({r["caption_id"] for r in rows}))
    return shares


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="a `tags make-benchmark` directory")
    parser.add_argument("--split", default="test")
    parser.add_argument("--model", default=None, help="TagsModel directory (MLM + ITM)")
    parser.add_argument("--top-m", type=int, default=3)
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()
    from tags.benchmark.oracle import TruthOracle
    from tags.cli import main as cli_main

    data = Path(args.data)
    oracle = TruthOracle.from_path(data)
    settings = {name: ["--refill", "vocab", *extra] for name, extra in SETTINGS.items()}
    if args.model:
        settings |= {n: ["--model", args.model, *e] for n, e in MODEL_SETTINGS.items()}
    table = {}
    with tempfile.TemporaryDirectory() as tmp:
        for index, (name, extra) in enumerate(settings.items()):
            out = Path(tmp) / f"{index}.jsonl"
            argv = [
                "generate", "--captions", str(data / "dataset_shapes.json"),
                "--split", args.split, "--features", str(data / "features"), "--out", str(out),
                "--top-m", str(args.top_m), "--no-progress", "--no-balance", *extra,
            ]  # fmt: skip
            if cli_main(argv) != 0:
                raise SystemExit(f"tags generate failed: {' '.join(argv)}")
            table[name] = audit(out, oracle)
    model = f", --model {args.model}" if args.model else ""
    print(f"`tags generate` on the {args.split} captions of {data}, top-m {args.top_m}{model}\n")
    print("| setting | negatives | true % | false % | ungrammatical % |")
    print("|---|---:|---:|---:|---:|")
    for name, s in table.items():
        print(
            f"| {name} | {int(s['n'])} | {100 * s['true']:.1f} | {100 * s['false']:.1f} | "
            f"{100 * s['ungrammatical']:.1f} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
