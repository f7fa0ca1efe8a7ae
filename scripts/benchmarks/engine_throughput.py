"""Generation throughput per engine on 2 processes: tags generate, datasets, Ray Data.

The same Flickr30K captions go through both passes with each engine, 2 processes each:

  * counting pass - ``tags``: the vocabulary pass of ``tags generate`` (one parse stream,
    2 parser processes: :func:`tags.negatives.counts.count_groups`); ``datasets``:
    ``Dataset.map(CountBatch(), batched=True, num_proc=2)`` + :func:`merge_counts`;
    ``ray``: ``map_batches(CountBatch())`` on a 2-CPU local Ray + :func:`merge_counts`;
  * generation - ``tags``: ``tags generate --num-workers 2 --vocab COUNTS``; ``datasets``:
    ``Dataset.map(GenerateBatch(COUNTS), batched=True, num_proc=2)``; ``ray``:
    ``map_batches(GenerateBatch, concurrency=2)`` (2 actors, counts as a file path).

Each run is a fresh child process, timed from before the engine is called until every
output row is in hand (worker start-up and model loading included; Ray's ``ray.init`` is
reported apart). Every run happens at two sizes (``--sizes``). On a shared machine wall
time follows the other jobs' load, so CPU time (user + system over the child's whole
process tree, sampled every 0.2 s with the peak RSS) is the robust figure: its slope between
the two sizes is the CPU cost per caption without start-up, and ``2 / cost`` the steady
captions/s of two busy processes, which the projection to 12 M and 400 M captions uses.
Peak RSS: per worker (the largest), the driver, and Ray's own processes (GCS, raylet,
agents: summed). The outputs of the three engines are compared
(the same records once sorted by caption id and negative index; the counts files byte for
byte).

    nice -n 19 python scripts/benchmarks/engine_throughput.py --captions test_caps.txt \\
        [--sizes 1000 5000]

While others edit the working tree, run a frozen copy (``PYTHONPATH=COPY python
COPY/scripts/benchmarks/engine_throughput.py --captions ...``): every child imports ``tags``
from ``PYTHONPATH``, and the report names where from.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ENGINES = ("tags", "datasets", "ray")
WORKERS = 2
GEN_BATCH = 50  # images per engine batch (250 captions; tags generate: --batch-size 256)
LOG = Path(tempfile.gettempdir()) / "engine_throughput.log"


# ---------------------------------------------------------------------- child runs
def _rows(captions: Path) -> list[dict]:
    from tags.negatives.columns import caption_columns

    columns = caption_columns(captions)
    return [dict(zip(columns, values)) for values in zip(*columns.values())]


def _ray_init() -> float:
    import ray

    start = time.perf_counter()
    ray.init(num_cpus=WORKERS, include_dashboard=False, log_to_driver=False)
    return time.perf_counter() - start


def child_count(engine: str, captions: Path, out: Path) -> dict:
    from tags.core.io import read_captions
    from tags.negatives.counts import CountBatch, count_groups, merge_counts

    extra: dict = {}
    if engine == "ray":
        extra["ray_init_s"] = _ray_init()
    start = time.perf_counter()
    if engine == "tags":
        vocab = count_groups(read_captions(captions), n_process=WORKERS)
    elif engine == "datasets":
        import datasets

        datasets.disable_progress_bars()
        dataset = datasets.Dataset.from_list(_rows(captions))
        size = math.ceil(len(dataset) / (4 * WORKERS))  # 8 parts: 4 per process
        parts = dataset.map(
            CountBatch(),
            batched=True,
            batch_size=size,
            num_proc=WORKERS,
            remove_columns=dataset.column_names,
        )
        vocab = merge_counts(parts["counts"])
    else:
        import ray

        rows = _rows(captions)
        dataset = ray.data.from_items(rows, override_num_blocks=4 * WORKERS)
        parts = dataset.map_batches(CountBatch(), batch_size=None, batch_format="pyarrow")
        vocab = merge_counts(row["counts"] for row in parts.iter_rows())
    vocab.save(out)
    extra["seconds"] = time.perf_counter() - start
    return extra


def child_generate(engine: str, captions: Path, counts: Path, out: Path) -> dict:
    extra: dict = {}
    if engine == "tags":
        command = [sys.executable, "-m", "tags.cli", "generate", "--captions", str(captions)]
        command += ["--out", str(out), "--vocab", str(counts), "--num-workers", str(WORKERS)]
        command += ["--no-progress", "--overwrite", "--no-balance"]  # the engines' own rows
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        extra["seconds"] = time.perf_counter() - start
        return extra
    from tags.negatives.batch import GenerateBatch

    if engine == "ray":
        extra["ray_init_s"] = _ray_init()
    start = time.perf_counter()
    if engine == "datasets":
        import datasets

        datasets.disable_progress_bars()
        dataset = datasets.Dataset.from_list(_rows(captions))
        result = dataset.map(
            GenerateBatch(counts),
            batched=True,
            batch_size=GEN_BATCH,
            num_proc=WORKERS,
            remove_columns=dataset.column_names,
        )
        records = result.to_list()
    else:
        import pyarrow as pa
        import ray

        dataset = ray.data.from_items(_rows(captions), override_num_blocks=8 * WORKERS)
        result = dataset.map_batches(
            GenerateBatch,
            fn_constructor_kwargs={"counts": str(counts)},
            concurrency=WORKERS,
            batch_size=GEN_BATCH,
            batch_format="pyarrow",
        )
        records = pa.concat_tables(ray.get(result.to_arrow_refs())).to_pylist()
    extra["seconds"] = time.perf_counter() - start
    with open(out, "w", encoding="utf-8") as sink:
        sink.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    return extra


# ---------------------------------------------------------------------- memory sampling
class TreeSampler:
    """Samples a process tree (the process ``pid`` and its children) every ``every`` seconds
    in a thread while the ``with`` block runs; subclasses read each sample in
    :meth:`sample` (the tree's ``psutil`` processes)."""

    def __init__(self, pid: int, every: float) -> None:
        import psutil

        self.root = psutil.Process(pid)
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self, procs: list) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.Error:
                return
            self.sample(procs)
            self._stop.wait(self.every)


class TreeMemory(TreeSampler):
    """Peak RSS and CPU time per process of a process tree, sampled in a thread (a process
    that ends loses at most one interval of its CPU time)."""

    def __init__(self, pid: int, every: float = 0.2, pss: bool = False):
        super().__init__(pid, every)
        self.pss = pss  # also the peak of the tree's summed PSS (a shared page counted once)
        self.peak_pss = 0
        self.peaks: dict[int, tuple[int, str, int]] = {}  # pid -> (rss, command, parent)
        self.cpu: dict[int, float] = {}  # pid -> user + system seconds, last seen

    def sample(self, procs: list) -> None:
        import psutil

        total_pss = 0
        for proc in procs:
            try:
                if self.pss:
                    total_pss += proc.memory_full_info().pss
                rss = proc.memory_info().rss
                name = " ".join(proc.cmdline())[:120] or proc.name()
                parent = proc.ppid()
                times = proc.cpu_times()
            except psutil.Error:
                continue
            self.cpu[proc.pid] = times.user + times.system
            peak = self.peaks.get(proc.pid, (0, name, parent))
            self.peaks[proc.pid] = (max(peak[0], rss), name, parent)
        self.peak_pss = max(self.peak_pss, total_pss)

    def summary(self, engine: str) -> dict:
        """Peak RSS (MiB): the driver, its largest worker, Ray's own processes summed."""
        driver = self.root.pid
        for pid, (_, name, parent) in self.peaks.items():
            if parent == self.root.pid and "tags.cli generate" in name:
                driver = pid  # tags generate: the CLI drives its forked workers
        workers, system = [], []
        for pid, (rss, name, parent) in self.peaks.items():
            if engine == "ray" and pid != self.root.pid:
                (workers if name.startswith("ray::") else system).append(rss)
            elif engine != "ray" and parent == driver:
                workers.append(rss)
        mib = 1 << 20
        return {
            "cpu_s": sum(self.cpu.values()),
            "driver_mib": self.peaks.get(driver, (0,))[0] / mib,
            "worker_mib": max(workers, default=0) / mib,
            "workers": len(workers),
            "system_mib": sum(system) / mib,
        }


# ---------------------------------------------------------------------- parent
def run_child(args: list[str], engine: str) -> dict:
    with tempfile.NamedTemporaryFile("r", suffix=".json") as result:
        command = [sys.executable, __file__, "--child", result.name, *args]
        with open(LOG, "a", encoding="utf-8") as log:  # engines' own logs and bars
            proc = subprocess.Popen(
                command, env={**os.environ, "HF_HUB_OFFLINE": "1"}, stdout=log, stderr=log
            )
        with TreeMemory(proc.pid) as memory:
            if proc.wait():
                raise SystemExit(f"child failed: {' '.join(command)}")
        found = json.loads(Path(result.name).read_text())
    return {**found, **memory.summary(engine), "load": os.getloadavg()[0]}


def subset(source: Path, lines: int, folder: Path) -> Path:
    path = folder / f"caps_{lines}.txt"
    path.write_text("".join(source.read_text().splitlines(keepends=True)[:lines]))
    return path


def records(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return sorted(rows, key=lambda r: (r["caption_id"], r["negative_index"]))


def projection(rate: float, total: float, machines: int) -> str:
    hours = total / (rate * machines) / 3600
    return f"{hours:.1f} h" if hours >= 1 else f"{hours * 60:.0f} min"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--captions",
        default=None,
        help="caption file, SCAN precomp order (the Flickr30K test split's test_caps.txt): at "
        "least the larger of --sizes lines (required)",
    )
    ap.add_argument("--sizes", type=int, nargs=2, default=(1000, 5000), help="captions (x5)")
    ap.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--json", default=None, help="also write the figures here")
    args, rest = ap.parse_known_args()
    if args.child:  # one run: engine phase captions out [counts]
        engine, phase, captions, out, *counts = rest
        if phase == "count":
            found = child_count(engine, Path(captions), Path(out))
        else:
            found = child_generate(engine, Path(captions), Path(counts[0]), Path(out))
        import tags

        found["source"] = str(Path(tags.__file__).parent)  # PYTHONPATH=SNAPSHOT: a frozen copy
        Path(args.child).write_text(json.dumps(found))
        return

    if not args.captions:
        ap.error("--captions FILE is required (e.g. Flickr30K's test_caps.txt)")
    if not Path(args.captions).is_file():
        raise SystemExit(f"--captions {args.captions}: not found")
    sizes = sorted(args.sizes)
    work = Path(tempfile.mkdtemp(prefix="engine_throughput_"))
    LOG.write_text("")
    print(f"work folder {work}, engine logs {LOG}", file=sys.stderr)
    # warm-up, untimed: page cache, the WordNet copy, the parser model
    warm = subset(Path(args.captions), 50, work)
    run_child(["tags", "count", str(warm), str(work / "warm.json")], "tags")
    figures: dict = {"sizes": sizes, "cpus": os.cpu_count(), "load": os.getloadavg()}
    for size in sizes:
        captions = subset(Path(args.captions), size, work)
        for phase in ("count", "generate"):
            for engine in args.engines:
                out = work / f"{phase}_{engine}_{size}.{'json' if phase == 'count' else 'jsonl'}"
                extra = [str(work / f"count_tags_{size}.json")] if phase == "generate" else []
                if phase == "generate" and "tags" not in args.engines:
                    extra = [str(work / f"count_{args.engines[0]}_{size}.json")]
                found = run_child([engine, phase, str(captions), str(out), *extra], engine)
                figures[f"{phase}/{engine}/{size}"] = found
                print(f"{phase:8s} {engine:8s} {size:6d} captions {found['seconds']:7.1f} s",
                      file=sys.stderr, flush=True)  # fmt: skip
        first = args.engines[0]
        same_counts = all(
            (work / f"count_{e}_{size}.json").read_bytes()
            == (work / f"count_{first}_{size}.json").read_bytes()
            for e in args.engines
        )
        reference = records(work / f"generate_{first}_{size}.jsonl")
        same_records = all(
            records(work / f"generate_{e}_{size}.jsonl") == reference for e in args.engines
        )
        figures[f"identical/{size}"] = {
            "counts": same_counts,
            "records": same_records,
            "negatives": len(reference),
        }
    report(figures, args.engines, sizes)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))


def report(figures: dict, engines: list[str], sizes: list[int]) -> None:
    small, large = sizes
    base = engines[0]
    print(
        f"captions: {small} and {large} (Flickr30K test), {WORKERS} processes per engine, "
        f"{figures['cpus']} CPUs, load average at start {figures['load'][0]:.1f}"
    )
    print(
        "wall: seconds from the engine call to the last row (start-up included; ray.init "
        "apart); CPU: user + system seconds of the whole process tree (imports, start-up, "
        "Ray's own processes included); steady: the CPU cost per caption between the two "
        "sizes (start-up cancels out), as captions/s on the CPUs' worth of processes"
    )
    steady: dict[tuple[str, str], float] = {}
    for phase in ("count", "generate"):
        print(f"\n{phase} pass")
        print(
            f"{'engine':9s} {'wall s':>13s} {'cap/s wall':>10s} {'CPU s':>13s} "
            f"{'CPU ms/cap':>10s} {'start CPU s':>11s} {'cap/s steady':>12s} {'ratio':>5s} "
            f"{'driver MiB':>10s} {'worker MiB':>10s} {'Ray sys MiB':>11s} {'ray.init s':>10s} "
            f"{'load':>9s}"
        )
        for engine in engines:
            a, b = figures[f"{phase}/{engine}/{small}"], figures[f"{phase}/{engine}/{large}"]
            per_caption = (b["cpu_s"] - a["cpu_s"]) / (large - small)
            start = a["cpu_s"] - per_caption * small
            steady[(phase, engine)] = WORKERS / per_caption
            ratio = steady[(phase, engine)] / steady[(phase, base)]
            init = f"{b['ray_init_s']:10.1f}" if "ray_init_s" in b else f"{'':>10s}"
            print(
                f"{engine:9s} {a['seconds']:6.1f}/{b['seconds']:6.1f} "
                f"{large / b['seconds']:10.0f} {a['cpu_s']:6.1f}/{b['cpu_s']:6.1f} "
                f"{per_caption * 1000:10.2f} {start:11.1f} {steady[(phase, engine)]:12.0f} "
                f"{ratio:5.2f} {b['driver_mib']:10.0f} {b['worker_mib']:10.0f} "
                f"{b['system_mib']:11.0f} {init} {a['load']:4.1f}/{b['load']:<4.1f}"
            )
    sources = {v["source"] for k, v in figures.items() if isinstance(v, dict) and "source" in v}
    print(f"\ntags imported from: {', '.join(sorted(sources))}")
    for size in sizes:
        same = figures[f"identical/{size}"]
        print(
            f"\n{size} captions: counts files identical across engines: {same['counts']}; "
            f"records identical (sorted by caption id, negative index): {same['records']} "
            f"({same['negatives']} negatives)"
        )
    print(
        f"\nprojection: both passes at the steady rates, machines of {WORKERS} CPUs like this "
        "one, linear in machines (the merge and start-up left out):"
    )
    header = " ".join(f"{f'{c} x{m}':>11s}" for c in ("12M", "400M") for m in (1, 10, 100))
    print(f"{'engine':9s} {'cap/s/machine':>13s} {header}")
    for engine in engines:
        rate = 1 / (1 / steady[("count", engine)] + 1 / steady[("generate", engine)])
        cells = [projection(rate, total, m) for total in (12e6, 400e6) for m in (1, 10, 100)]
        print(f"{engine:9s} {rate:13.0f} " + " ".join(f"{c:>11s}" for c in cells))


if __name__ == "__main__":
    main()
