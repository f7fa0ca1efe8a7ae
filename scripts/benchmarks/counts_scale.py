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

With ``--synthetic-store-mib 50 150 400`` it measures instead how the memory of generating
from a store grows with the store's size, far beyond the run-to-run noise of the PSS peaks
(20 to 50 MiB), which the real corpus's stores (3.5 to 28 MiB) cannot: the whole corpus's
counts (``OUT/counts_0.json``, counted where missing) are written as a store as they are
and, for each size asked, with K renamed copies of every entry of every table added
(:func:`synthetic_vocabulary`: each word of every string of a key gets a letters-only
suffix of the copy, relation tag shapes kept), K chosen so the store is about that many
MiB (``--synthetic-words digits``: ``manxq1``, names the planner never takes as
substitutes). A copy has the real counts' structure (the same groups, sizes and counts) and
a vocabulary of its own that WordNet does not know, so the planner's tables, index groups,
hashes and pools are K + 1 times the real ones, and generation of the same captions
(``--generate N`` of ``--targets``, by default the first 2,000 Flickr30K test captions)
still looks up the real words in those large tables. No copy's word was seen in a negative
(both spellings give the same negatives), but the sums over whole tables the copies add
change a few percent of the negatives: ``same_as_real`` says whether they equal the real
store's. Each size is generated ``--repeats``
times (sizes interleaved), 2 workers, each in a fresh process; besides the summed PSS it
records the store's own part of it (the ``Pss`` of the store's mapping summed over the
processes: every page of the store that any of them touched, counted once) and the largest
``Rss`` of that mapping in one process. The summed PSS is fitted as ``fixed + slope x store
MiB`` over every run (the slope's standard error given) and per repeat (mean +- std).

    python scripts/benchmarks/counts_scale.py --out DIR --reuse-counts \
        --synthetic-store-mib 50 150 400 --repeats 3 --generate 2000

``0`` stands for the whole corpus. The figures are written to ``OUT/counts_scale.json``
(``OUT/synthetic_store.json`` with ``--synthetic-store-mib``).
On a shared machine the captions/s follow the other jobs' load (the load average at each
run's start is printed); the memory figures do not.
"""

from __future__ import annotations

import argparse
import contextlib
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
from engine_throughput import TreeMemory, TreeSampler

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


class MappedFile(TreeSampler):
    """How much of one file a process tree maps, sampled in a thread from
    ``/proc/PID/smaps``: the peak over samples of the ``Pss`` of the file's mappings summed
    over the tree's processes (the pages any of them touched, a page counted once: the
    file's part of the summed PSS) and the largest ``Rss`` of them in one process."""

    def __init__(self, pid: int, path: Path, every: float = 0.5):
        super().__init__(pid, every)
        self.path = str(Path(path).resolve())
        self.peak_pss = 0  # bytes
        self.peak_rss = 0  # bytes, one process

    def _sample(self, pid: int) -> tuple[int, int]:
        pss = rss = 0
        inside = False
        try:
            with open(f"/proc/{pid}/smaps", encoding="utf-8", errors="replace") as f:
                for line in f:
                    if not line[0].isupper() or line.startswith("VmFlags"):
                        if not line.startswith("VmFlags"):  # a mapping's first line
                            inside = line.rstrip("\n").endswith(self.path)
                        continue
                    if inside and line.startswith(("Pss:", "Rss:")):
                        kib = int(line.split()[1]) << 10
                        if line[0] == "P":
                            pss += kib
                        else:
                            rss += kib
        except OSError:
            pass
        return pss, rss

    def sample(self, procs: list) -> None:
        samples = [self._sample(proc.pid) for proc in procs]
        self.peak_pss = max(self.peak_pss, sum(p for p, _ in samples))
        self.peak_rss = max(self.peak_rss, max((r for _, r in samples), default=0))


def run(argv: list[str], log: Path, mapped: Path | None = None) -> tuple[dict, str]:
    """``tags ARGV`` in a fresh process: its memory figures and its stderr (with
    ``mapped``, also how much of that file its processes map: :class:`MappedFile`)."""
    load = os.getloadavg()[0]
    start = time.perf_counter()
    with open(log, "w", encoding="utf-8") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tags.cli", *argv],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        with contextlib.ExitStack() as stack:
            memory = stack.enter_context(TreeMemory(proc.pid, every=0.25, pss=True))
            touched = stack.enter_context(MappedFile(proc.pid, mapped)) if mapped else None
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
        **(
            {"mapped_pss_mib": touched.peak_pss / MIB, "mapped_rss_mib": touched.peak_rss / MIB}
            if touched
            else {}
        ),
    }, text


def generate(sub: Path, vocab: Path, out: Path, log: Path, mapped: bool = False) -> dict:
    """``tags generate --vocab VOCAB --num-workers 2`` in a fresh process: its figures
    (with ``mapped``, also how much of VOCAB, a store, its processes map)."""
    generated, text = run(
        ["generate", "--captions", str(sub), "--vocab", str(vocab), "--out", str(out),
         "--num-workers", "2", "--seed", "0", "--no-progress", "--overwrite",
         "--no-balance"],  # generation's own memory and speed
        log,
        vocab if mapped else None,
    )  # fmt: skip
    rate = re.search(r"time: [\d.]+s \(([\d.]+) captions/s\)", text)
    return {
        "generate_captions_per_s": float(rate.group(1)) if rate else math.nan,
        "generate_wall_s": generated["seconds"],
        "driver_mib": generated["driver_mib"],
        "worker_mib": generated["worker_mib"],
        "pss_sum_mib": generated["pss_mib"],
        "load": generated["load"],
        **{k: v for k, v in generated.items() if k.startswith("mapped_")},
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
    if len({r["captions"] for r in rows}) < 2:
        return {}  # one size: nothing to fit
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


# ---------------------------------------------------------------- synthetic stores
def copy_suffix(copy: int, digits: bool = False) -> str:
    """The letters-only suffix of the words of synthetic copy ``copy`` (1, 2, ...):
    ``xq`` and the copy's number in letters ("manxqb"), a word WordNet does not know; with
    ``digits``, ``xq`` and the number ("manxq1"): a name the planner never takes as a
    substitute (not all letters)."""
    if digits:
        return f"xq{copy}"
    letters = ""
    while True:
        copy, digit = divmod(copy, 26)
        letters = chr(ord("a") + digit) + letters
        if not copy:
            return "xq" + letters


def renamed(key: object, suffix: str) -> object:
    """``key`` with ``suffix`` added to every word of every string in it (tuples kept,
    numbers and booleans as they are; empty strings stay empty)."""
    if isinstance(key, str):
        return " ".join(w + suffix if w else w for w in key.split(" "))
    if isinstance(key, tuple):
        return tuple(renamed(k, suffix) for k in key)
    return key


def synthetic_vocabulary(counts: Path, copies: int, digits: bool = False):
    """The vocabulary of ``counts`` with ``copies`` renamed copies of every entry of every
    table added (:func:`renamed`; a relation's tag shape is kept), after the real entries:
    a corpus ``copies + 1`` times as large whose copies share no word with it
    (:func:`copy_suffix`: ``digits`` for names the planner refuses as substitutes)."""
    from tags.negatives.vocabulary import SceneGraphVocabulary

    vocab = SceneGraphVocabulary.load(counts)
    suffixes = [copy_suffix(c, digits) for c in range(1, copies + 1)]
    tables = [(f"counts/{k}", t) for k, t in vocab.counts.items()]
    tables += [(f"scenes/{n}", getattr(vocab.scenes, n)) for n in type(vocab.scenes)._FIELDS]
    for name, table in tables:
        real = list(table.items())
        for suffix in suffixes:
            for key, count in real:
                if name == "scenes/relations":  # (predicate, surface, tag shape)
                    new = (renamed(key[0], suffix), renamed(key[1], suffix), key[2])
                else:
                    new = renamed(key, suffix)
                table[new] = count
    vocab.scenes._index = None
    return vocab


def synthetic_stores(
    counts: Path, targets_mib: list[float], folder: Path, digits: bool = False
) -> list[dict]:
    """The real store of ``counts`` and, per size asked, a synthetic one of about that many
    MiB (copies = round(size / real size) - 1, at least 1): [{copies, path, store_mib}]."""
    from tags.negatives.vocabulary import SceneGraphVocabulary

    real = folder / "synthetic_0.store"
    if not real.is_file():
        SceneGraphVocabulary.load(counts).save_store(real)
    real_mib = real.stat().st_size / MIB
    stores = [{"copies": 0, "path": real, "store_mib": real_mib}]
    for target in targets_mib:
        copies = max(1, round(target / real_mib) - 1)
        path = folder / f"synthetic_{'d' if digits else ''}{copies}.store"
        if not path.is_file():
            start = time.perf_counter()
            synthetic_vocabulary(counts, copies, digits).save_store(path)
            print(
                f"synthetic store: {copies} copies, {path.stat().st_size / MIB:.1f} MiB, "
                f"written in {time.perf_counter() - start:.0f} s",
                flush=True,
            )
        if all(s["copies"] != copies for s in stores):
            stores.append({"copies": copies, "path": path, "store_mib": path.stat().st_size / MIB})
    return stores


def fit_with_error(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    """``y = a + b * x`` by least squares: (a, b, the standard error of b)."""
    a, b = linear(xs, ys)
    n = len(xs)
    mx = sum(xs) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    residual = sum((y - a - b * x) ** 2 for x, y in zip(xs, ys))
    return a, b, math.sqrt(residual / (n - 2) / sxx) if n > 2 else math.nan


def measure_synthetic(args: argparse.Namespace, folder: Path, corpus: Path) -> dict:
    """Generate the same captions from stores of every size, ``--repeats`` times."""
    counts = folder / "counts_0.json"
    if not (args.reuse_counts and counts.is_file()):
        sub = folder / "caps_0.jsonl"
        prefix(corpus, 0, sub)
        run(["generate", "--captions", str(sub), "--count-only", "--out", str(counts),
             "--num-workers", "2", "--no-progress", "--overwrite"],
            folder / "count_0.log")  # fmt: skip
    digits = args.synthetic_words == "digits"
    stores = synthetic_stores(counts, args.synthetic_store_mib, folder, digits)
    lines = Path(args.targets).read_text(encoding="utf-8").splitlines(keepends=True)
    targets = folder / f"targets_{args.generate or 2000}.txt"
    targets.write_text("".join(lines[: args.generate or 2000]), encoding="utf-8")
    runs = []
    for repeat in range(args.repeats):
        for store in stores:
            name = store["path"].stem  # synthetic_0, synthetic_4, synthetic_d4
            out = folder / f"negatives_{name}.jsonl"
            figures = generate(targets, store["path"], out, folder / f"generate_{name}.log",
                               mapped=True)  # fmt: skip
            reference = folder / "negatives_synthetic_0.jsonl"
            row = {"repeat": repeat, "copies": store["copies"], "store_mib": store["store_mib"],
                   **figures, "same_as_real": out.read_bytes() == reference.read_bytes(),
                   "records": out.read_bytes().count(b"\n")}  # fmt: skip
            runs.append(row)
            print(json.dumps(row), flush=True)
    return {"targets": len(lines[: args.generate or 2000]), "runs": runs,
            **report_synthetic(runs)}  # fmt: skip


def report_synthetic(runs: list[dict]) -> dict:
    """The per-size table and the fits of the summed PSS against the store's size."""
    print(
        f"\n{'copies':>6s} {'store MiB':>9s} | {'PSS sum MiB (each repeat)':>28s} | "
        f"{'store part':>10s} {'touched':>7s} | {'driver':>6s} {'worker':>6s} | "
        f"{'cap/s':>5s} | same negatives"
    )
    sizes = sorted({r["copies"] for r in runs})
    for copies in sizes:
        rows = [r for r in runs if r["copies"] == copies]
        size = rows[0]["store_mib"]
        mapped = max(r["mapped_pss_mib"] for r in rows)
        peaks = " / ".join(f"{r['pss_sum_mib']:.0f}" for r in rows)
        print(
            f"{copies:6d} {size:9.1f} | {peaks:>28s} "
            f"| {mapped:10.1f} {100 * mapped / size:6.1f}% | "
            f"{max(r['driver_mib'] for r in rows):6.0f} {max(r['worker_mib'] for r in rows):6.0f} "
            f"| {sum(r['generate_captions_per_s'] for r in rows) / len(rows):5.0f} | "
            f"{all(r['same_as_real'] for r in rows)}"
        )
    xs = [r["store_mib"] for r in runs]
    fixed, slope, error = fit_with_error(xs, [r["pss_sum_mib"] for r in runs])
    _, rest, rest_error = fit_with_error(xs, [r["pss_sum_mib"] - r["mapped_pss_mib"] for r in runs])
    per_repeat = []
    for repeat in sorted({r["repeat"] for r in runs}):
        rows = [r for r in runs if r["repeat"] == repeat]
        if len(rows) >= 2:
            per_repeat.append(linear([r["store_mib"] for r in rows],
                                     [r["pss_sum_mib"] for r in rows])[1])  # fmt: skip
    mean = sum(per_repeat) / len(per_repeat) if per_repeat else math.nan
    std = (
        math.sqrt(sum((b - mean) ** 2 for b in per_repeat) / (len(per_repeat) - 1))
        if len(per_repeat) > 1
        else math.nan
    )
    print(
        f"summed PSS = {fixed:.0f} + {slope:.3f} x store MiB (slope's standard error "
        f"{error:.3f}; {len(runs)} runs); per repeat: "
        f"{', '.join(f'{b:.3f}' for b in per_repeat)} (mean {mean:.3f} +- {std:.3f})\n"
        f"summed PSS less the store's mapped pages: slope {rest:.3f} +- {rest_error:.3f}\n"
        f"goal (slope <= 1.5): {'met' if slope + 2 * error <= 1.5 else 'NOT shown'} "
        "(slope + 2 standard errors)"
    )
    return {
        "fit": [fixed, slope, error],
        "fit_without_mapped": [rest, rest_error],
        "per_repeat_slopes": per_repeat,
        "per_repeat_mean_std": [mean, std],
    }


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
    ap.add_argument(
        "--synthetic-store-mib",
        type=float,
        nargs="+",
        metavar="MIB",
        help="measure generation from synthetic stores of about these sizes (see above)",
    )
    ap.add_argument("--repeats", type=int, default=3, help="runs per synthetic store")
    ap.add_argument(
        "--synthetic-words",
        choices=("letters", "digits"),
        default="letters",
        help="the copies' words: letters only, or with digits (names the planner never "
        "takes as substitutes)",
    )
    ap.add_argument(
        "--targets",
        type=Path,
        default=SHARED / "flickr30k" / "test_caps.txt",
        help="captions generated from the synthetic stores (the first --generate N, 2,000)",
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
    digits = args.synthetic_words == "digits"
    if args.synthetic_store_mib:
        figures = measure_synthetic(args, folder, corpus)
        name = "synthetic_store" + ("_digits" if digits else "")
        (folder / f"{name}.json").write_text(json.dumps(figures, indent=1, default=str))
        print(f"figures: {folder / name}.json")
        return
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
