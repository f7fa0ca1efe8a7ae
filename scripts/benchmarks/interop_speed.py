"""Export / reader speed (rows/s) and `tags explain` latency per caption, side by side.

Exports: a `tags generate`-shaped JSON Lines file of ``--captions`` captions x 3 negatives
(the real Flickr30K sample captions of tests/data, cycled, one word changed per negative) is
converted by every exporter; each export is then read back by the ``data.negatives`` reader
and matched to the training captions. Explain: a tiny random TagsModel (2 layers, 32 wide,
the tests' size) and a MiniLM-sized one (6 x 384), ``explain`` on one caption at a time and
on batches of 32, median of ``--repeats`` runs; WoD/WoC accuracy throughput on the same.

    python scripts/benchmarks/interop_speed.py [--captions 20000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

SAMPLE = Path(__file__).resolve().parents[2] / "tests" / "data" / "flickr30k_test_caps_sample.txt"


def write_records(path: Path, captions: int) -> list:
    from tags.core.types import Caption, ImageGroup

    lines = SAMPLE.read_text().splitlines()
    groups: list = []
    with open(path, "w") as out:
        for n in range(captions):
            text = lines[n % len(lines)]
            image = n // 5
            if n % 5 == 0:
                groups.append(ImageGroup(image, filename=f"{image}.jpg"))
            groups[-1].captions.append(Caption(image, n, text))
            word = text.split()[1]
            start = text.index(word)
            for k, new in enumerate(("dog", "tree", "boat")):
                negative = text[:start] + new + text[start + len(word) :]
                edit = {"type": "object", "original": word, "replacement": new,
                        "start": start, "end": start + len(word), "operation": "replace"}  # fmt: skip
                rec = {"image_id": image, "caption_id": n, "positive": text, "negative": negative,
                       "edits": [edit], "negative_index": k, "num_negatives": 3}  # fmt: skip
                out.write(json.dumps(rec) + "\n")
    return groups


def exports(captions: int) -> None:
    from tags.data.negatives import load_negative_pools, read_negative_rows
    from tags.negatives.exports import ExportOptions, export_file

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "neg.jsonl"
        groups = write_records(src, captions)
        records = 3 * captions
        print(f"exports of {records} records ({captions} captions x 3 negatives)")
        print("| format | export records/s | reader rows/s | reader + matching rows/s |")
        print("|---|---:|---:|---:|")
        settings = [
            ("negclip-csv", "k=1", "k1.csv", ExportOptions(image_root="/data")),
            (
                "negclip-csv",
                "k=3",
                "k3.csv",
                ExportOptions(image_root="/data", negatives_per_row=3),
            ),
            ("sugarcrepe", "", "sc.json", ExportOptions()),
            ("sugarcrepe", "by type", "sc_types", ExportOptions(by_type=True, allow_empty=True)),
            ("parquet", "", "neg.parquet", ExportOptions()),
            ("dataset", "", "neg_dataset", ExportOptions()),
        ]
        for kind, note, name, options in settings:
            target = Path(tmp) / name
            start = time.perf_counter()
            export_file(src, kind, target, options)
            export_s = time.perf_counter() - start
            start = time.perf_counter()
            rows = sum(1 for _ in read_negative_rows(target))
            read_s = time.perf_counter() - start
            start = time.perf_counter()
            load_negative_pools(target, groups)
            match_s = time.perf_counter() - start
            label = f"{kind} {note}".strip()
            print(f"| {label} | {records / export_s:,.0f} | {rows / read_s:,.0f} "
                  f"| {rows / match_s:,.0f} |")  # fmt: skip


def tiny_model(tokenizer, hidden: int, layers: int, heads: int):
    from tags.modeling import TagsConfig, TagsModel

    config = TagsConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=hidden, num_hidden_layers=layers,
        num_attention_heads=heads, intermediate_size=4 * hidden, max_position_embeddings=64,
        region_feature_size=2048, max_regions=36,
    )  # fmt: skip
    return TagsModel(config).eval()


def explain_latency(repeats: int) -> None:
    from tags.backends.masked_lm import load_tokenizer
    from tags.evaluation.explain import explain, label_records, token_accuracy
    from tags.modeling import tiny_mlm_path

    tokenizer = load_tokenizer(tiny_mlm_path())
    captions = SAMPLE.read_text().splitlines()[:32]
    g = torch.Generator().manual_seed(0)
    regions = {
        "region_features": torch.randn(1, 36, 2048, generator=g),
        "region_boxes": torch.tensor([[0.1, 0.1, 0.6, 0.6, 0.5, 0.5, 0.25]]).repeat(1, 36, 1),
    }
    records = []
    for text in captions:
        word = text.split()[1]
        start = text.index(word)
        records.append({"positive": text, "negative": text[:start] + "dog" + text[start + len(word):],
                        "edits": [{"type": "object", "original": word, "replacement": "dog",
                                   "start": start, "end": start + len(word)}]})  # fmt: skip
    print(f"\nexplain latency, 36 regions x 2048-d, fp32, {torch.get_num_threads()} threads")
    print(
        "| model | 1 caption (ms) | batch of 32 (ms per caption) | WoD/WoC accuracy (negatives/s) |"
    )
    print("|---|---:|---:|---:|")
    for name, hidden, layers, heads in (
        ("tiny 2 x 32", 32, 2, 4),
        ("MiniLM-size 6 x 384", 384, 6, 12),
    ):
        model = tiny_model(tokenizer, hidden, layers, heads)
        explain(model, tokenizer, captions[:2], regions)  # warm-up
        one, batch, acc = [], [], []
        for _ in range(repeats):
            start = time.perf_counter()
            for text in captions[:8]:
                explain(model, tokenizer, [text], regions)
            one.append((time.perf_counter() - start) / 8)
            start = time.perf_counter()
            explain(model, tokenizer, captions, regions)
            batch.append((time.perf_counter() - start) / len(captions))
            start = time.perf_counter()
            labelled = label_records(records, tokenizer, 40)
            token_accuracy(model, labelled, regions, tokenizer.pad_token_id)
            acc.append(len(records) / (time.perf_counter() - start))
        print(f"| {name} | {1000 * statistics.median(one):.1f} "
              f"| {1000 * statistics.median(batch):.2f} | {statistics.median(acc):,.0f} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--captions", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    np.random.seed(0)
    exports(args.captions)
    explain_latency(args.repeats)


if __name__ == "__main__":
    main()
