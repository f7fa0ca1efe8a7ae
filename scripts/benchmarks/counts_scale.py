"""How the corpus counts, and the memory of generating from them, grow with the corpus.

Builds the largest real caption corpus available offline: Flickr30K dev + test (five
captions an image) and FACTUAL train + dev (Visual Genome region captions, grouped by image),
about 49k captions, images shuffled with a fixed seed. At each size (prefixes of whole
images) it runs, as a user would, each command in a fresh process:

1. ``tags generate --count-only`` (the counting pass, 2 parser processes): seconds, peak RSS;
2. ``tags generate --vocab COUNTS --num-workers 2`` (generation from those counts): the
   captions/s it prints, the peak RSS of its driver and of its largest worker, and the peak
   of the summed PSS of all its processes (a page the forked workers share with the driver
   counts once).

With ``--store``, each size also writes the counts as a memory-mapped store (``tags counts
store``) and generates from it (``--vocab STORE``) the same way: the store's size, the same
memory figures and captions/s side by side, and whether the negatives are byte-identical to
those from the JSON counts. The summed PSS is then fitted as ``fixed + slope x size`` for
each: the store's goal is a slope of at most 1.5 (MiB of PSS per MiB of store).
``--reuse-counts`` skips the counting pass where ``OUT/counts_SIZE.json`` exists.
``--generate N`` generates for the first N captions only, whatever the size of the counts:
the work (and what its lookups remember) is then the same at every size, and the memory
that grows is the counts'.

Then it fits power laws (size of the counts file and memory against captions) and projects
them to COCO (590k captions), CC3M (3.3M), 12M and 400M, labelled as projections.

    python scripts/benchmarks/counts_scale.py [--sizes 3000 6000 12000 24000 0] [--out DIR] \
        [--store] [--reuse-counts]

``0`` stands for the whole corpus. The figures are written to ``OUT/counts_scale.json``.
On a shared machine the captions/s follow the other jobs' load (the load average at each
run's start is printed); the memory figures do not.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_throughput import TreeMemory

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
MIB = 1 << 20
PROJECT_TO = {"COCO": 590_000, "CC3M": 3_300_000, "CC12M": 12_000_000, "LAION-400M": 400_000_000}


def build_corpus(shared: Path, out: Path, seed: int = 0) -> tuple[int, int]:
    """Write the combined corpus as JSONL (image_id, caption); (images, captions)."""
    images: list[tuple[str, list[str]]] = []
    for split in ("dev", "test"):
        lines = (shared / "flickr30k" / f"{split}_caps.txt").read_text().splitlines()
        for i in range(0, len(lines) - len(lines) % 5, 5):
            images.append((f"flickr-{split}-{i // 5}", lines[i : i + 5]))
    for split in ("train", "dev"):
        grouped: dict[str, list[str]] = {}
        with open(shared / "factual" / f"{split}.csv", newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                grouped.setdefault(f"vg-{row['image_id']}", []).append(row["caption"].strip())
        images.extend(grouped.items())
    random.Random(seed).shuffle(images)
    with open(out, "w", encoding="utf-8") as f:
        for image_id, captions in images:
            for caption in captions:
                f.write(json.dumps({"image_id": image_id, "caption": caption}) + "\n")
    return len(images), sum(len(c) for _, c in images)


def prefix(corpus: Path, captions: int, out: Path) -> int:
    """The first whole images of ``corpus`` holding at least ``captions`` captions (0: all)."""
    lines = corpus.read_text(encoding="utf-8").splitlines(keepends=True)
    if captions <= 0 or captions >= len(lines):
        out.write_text("".join(lines), encoding="utf-8")
        return len(lines)
    stop = captions
    last = json.loads(lines[stop - 1])["image_id"]
    while stop < len(lines) and json.loads(lines[stop])["image_id"] == last:
        stop += 1
    out.write_text("".join(lines[:stop]), encoding="utf-8")
    return stop


def run(argv: list[str], log: Path) -> tuple[dict, str]:
    """``tags ARGV`` in a fresh process: its memory figures and its stderr."""
    load = os.getloadavg()[0]
    start = time.perf_counter()
    with open(log, "w", encoding="utf-8") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tags.cli", *argv],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        with TreeMemory(proc.pid, every=0.25, pss=True) as memory:
            code = proc.wait()
    text = log.read_text(encoding="utf-8")
    if code:
        raise SystemExit(f"tags {' '.join(argv)} failed ({code}):\n{text[-2000:]}")
    driver = memory.peaks.get(proc.pid, (0,))[0]
    workers = [rss for pid, (rss, _, parent) in memory.peaks.items() if parent == proc.pid]
    return {
        "seconds": time.perf_counter() - start,
        "load": load,
        "driver_mib": driver / MIB,
        "worker_mib": max(workers, default=0) / MIB,
        "pss_mib": memory.peak_pss / MIB,
    }, text


def generate(sub: Path, vocab: Path, out: Path, log: Path) -> dict:
    """``tags generate --vocab VOCAB --num-workers 2`` in a fresh process: its figures."""
    generated, text = run(
        ["generate", "--captions", str(sub), "--vocab", str(vocab), "--out", str(out),
         "--num-workers", "2", "--seed", "0", "--no-progress", "--overwrite"],
        log,
    )  # fmt: skip
    rate = re.search(r"time: [\d.]+s \(([\d.]+) captions/s\)", text)
    return {
        "generate_captions_per_s": float(rate.group(1)) if rate else math.nan,
        "generate_wall_s": generated["seconds"],
        "driver_mib": generated["driver_mib"],
        "worker_mib": generated["worker_mib"],
        "pss_sum_mib": generated["pss_mib"],
        "load": generated["load"],
    }


def measure(
    corpus: Path,
    size: int,
    folder: Path,
    store: bool = False,
    reuse: bool = False,
    first: int = 0,
) -> dict:
    sub = folder / f"caps_{size}.jsonl"
    captions = prefix(corpus, size, sub)
    targets = sub
    if first:
        targets = folder / f"targets_{first}.jsonl"
        prefix(corpus, first, targets)
    counts = folder / f"counts_{size}.json"
    counted = {"seconds": math.nan, "driver_mib": math.nan, "worker_mib": math.nan}
    if not (reuse and counts.is_file()):
        counted, _ = run(
            ["generate", "--captions", str(sub), "--count-only", "--out", str(counts),
             "--num-workers", "2", "--no-progress", "--overwrite"],
            folder / f"count_{size}.log",
        )  # fmt: skip
    out = folder / f"negatives_{size}.jsonl"
    row = {
        "captions": captions,
        "counts_mb": counts.stat().st_size / 1e6,
        "count_s": counted["seconds"],
        "count_peak_mib": max(counted["driver_mib"], counted["worker_mib"]),
        "generated": targets.read_text(encoding="utf-8").count("\n"),
        **generate(targets, counts, out, folder / f"generate_{size}.log"),
    }
    if store:
        path = folder / f"counts_{size}.store"
        run(["counts", "store", str(counts), "--out", str(path), "--overwrite"],
            folder / f"store_{size}.log")  # fmt: skip
        stored = folder / f"negatives_{size}_store.jsonl"
        figures = generate(targets, path, stored, folder / f"generate_{size}_store.log")
        row["store_mib"] = path.stat().st_size / MIB
        row["store"] = figures
        row["identical"] = stored.read_bytes() == out.read_bytes()
    return row


def power_law(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """``y = a * x ** b`` fitted by least squares in log-log: (a, b)."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    b = sum((x - mx) * (y - my) for x, y in zip(lx, ly)) / sum((x - mx) ** 2 for x in lx)
    return math.exp(my - b * mx), b


def report(rows: list[dict]) -> dict:
    print(
        f"{'captions':>8s} {'counts MB':>9s} {'count s':>7s} {'count MiB':>9s} "
        f"{'gen cap/s':>9s} {'driver MiB':>10s} {'worker MiB':>10s} {'PSS sum MiB':>11s} "
        f"{'load':>5s}"
    )
    for r in rows:
        print(
            f"{r['captions']:8d} {r['counts_mb']:9.1f} {r['count_s']:7.1f} "
            f"{r['count_peak_mib']:9.0f} {r['generate_captions_per_s']:9.0f} "
            f"{r['driver_mib']:10.0f} {r['worker_mib']:10.0f} {r['pss_sum_mib']:11.0f} "
            f"{r['load']:5.2f}"
        )
    xs = [r["captions"] for r in rows]
    fits = {}
    for key in ("counts_mb", "driver_mib", "pss_sum_mib"):
        fits[key] = power_law(xs, [r[key] for r in rows])
    # memory above the fixed start-up cost (the smallest run's driver, minus its counts'
    # share) grows with the counts: fitted as driver = base + k * counts_mb
    n = len(rows)
    mx = sum(r["counts_mb"] for r in rows) / n
    my = sum(r["driver_mib"] for r in rows) / n
    k = sum((r["counts_mb"] - mx) * (r["driver_mib"] - my) for r in rows) / sum(
        (r["counts_mb"] - mx) ** 2 for r in rows
    )
    base = my - k * mx
    print(
        f"\nfits: counts MB = {fits['counts_mb'][0]:.3g} * captions^{fits['counts_mb'][1]:.2f}; "
        f"driver MiB = {base:.0f} + {k:.1f} * counts MB"
    )
    print("PROJECTION (power law of the counts file, linear memory in it; not measured):")
    projections = {}
    for name, captions in PROJECT_TO.items():
        a, b = fits["counts_mb"]
        mb = a * captions**b
        projections[name] = {"counts_mb": mb, "driver_mib": base + k * mb}
        print(
            f"  {name:>10s} ({captions:>11,d} captions): counts ~{mb:,.0f} MB, "
            f"~{(base + k * mb) / 1024:,.1f} GiB per generation process"
        )
    return {"fits": fits, "driver_vs_counts": [base, k], "projections": projections}


def linear(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """``y = a + b * x`` by least squares: (a, b)."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def report_store(rows: list[dict]) -> dict:
    """JSON counts against the store, side by side; PSS fitted as fixed + slope x size."""
    print(
        f"\n{'captions':>8s} {'JSON MiB':>8s} {'store MiB':>9s} | {'PSS JSON':>8s} "
        f"{'PSS store':>9s} | {'driver J':>8s} {'driver S':>8s} | {'worker J':>8s} "
        f"{'worker S':>8s} | {'cap/s J':>7s} {'cap/s S':>7s} | identical"
    )
    for r in rows:
        s = r["store"]
        print(
            f"{r['captions']:8d} {r['counts_mb'] * 1e6 / MIB:8.2f} {r['store_mib']:9.2f} | "
            f"{r['pss_sum_mib']:8.0f} {s['pss_sum_mib']:9.0f} | {r['driver_mib']:8.0f} "
            f"{s['driver_mib']:8.0f} | {r['worker_mib']:8.0f} {s['worker_mib']:8.0f} | "
            f"{r['generate_captions_per_s']:7.0f} {s['generate_captions_per_s']:7.0f} | "
            f"{r['identical']}"
        )
    out = {}
    if len(rows) >= 2:
        sizes = [r["store_mib"] for r in rows]
        json_fit = linear(sizes, [r["pss_sum_mib"] for r in rows])
        store_fit = linear(sizes, [r["store"]["pss_sum_mib"] for r in rows])
        processes = 1 + 2  # the driver and 2 workers
        for name, (fixed, slope) in (("JSON", json_fit), ("store", store_fit)):
            print(
                f"{name:>5s}: PSS of 3 processes = {fixed:.0f} MiB ({fixed / processes:.0f} per "
                f"process) + {slope:.2f} x store MiB"
            )
        goal = store_fit[1] <= 1.5
        print(f"goal (PSS slope <= 1.5 x store size): {'met' if goal else 'NOT met'}")
        out = {"pss_fit_json": json_fit, "pss_fit_store": store_fit, "goal_met": goal}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[3000, 6000, 12000, 24000, 0])
    ap.add_argument("--shared", type=Path, default=SHARED, help="the shared data folder")
    ap.add_argument("--out", type=Path, default=None, help="keep the runs' files here")
    ap.add_argument("--store", action="store_true", help="also generate from a counts store")
    ap.add_argument(
        "--generate", type=int, default=0, metavar="N", help="generate for the first N captions"
    )
    ap.add_argument(
        "--reuse-counts", action="store_true", help="skip counting where OUT/counts_SIZE.json is"
    )
    args = ap.parse_args()
    for needed in ("flickr30k/dev_caps.txt", "flickr30k/test_caps.txt", "factual/train.csv"):
        if not (args.shared / needed).is_file():
            raise SystemExit(f"{args.shared / needed} not found: pass --shared DIR")
    folder = args.out or Path(tempfile.mkdtemp(prefix="counts_scale_"))
    folder.mkdir(parents=True, exist_ok=True)
    corpus = folder / "corpus.jsonl"
    images, captions = build_corpus(args.shared, corpus)
    print(f"corpus: {captions} captions of {images} images ({corpus})", flush=True)
    rows = []
    for size in args.sizes:
        rows.append(measure(corpus, size, folder, args.store, args.reuse_counts, args.generate))
        print(json.dumps(rows[-1]), flush=True)
    figures = {"rows": rows, **report(rows)}
    if args.store:
        figures["store"] = report_store(rows)
    (folder / "counts_scale.json").write_text(json.dumps(figures, indent=1))
    print(f"figures: {folder / 'counts_scale.json'}")


if __name__ == "__main__":
    main()
