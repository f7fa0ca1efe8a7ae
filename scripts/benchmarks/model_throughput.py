"""Pair-scoring throughput and peak memory of TagsModel, SDPA vs eager attention.

Scores batches of (caption, image) pairs with the ITM head on UNITER-like inputs: 40 text
positions (30-40 real tokens, right-padded) and 36 regions of 2048-d features per pair. Two
encoder sizes: base (12 layers, 768) and MiniLM (6 layers, 384). fp32 on CPU, bf16 on CUDA.

SDPA and eager run on the same weights in the same process, alternating batch by batch, so a
noisy neighbour slows both alike; throughput is batch size over the median batch time. Peak
memory is sampled while each case runs: CUDA's allocator peak, or on CPU the process RSS
(glibc is told to return large blocks on free, so each case's peak is its own).

    python scripts/benchmarks/model_throughput.py                     # a few minutes on 2 cores
    python scripts/benchmarks/model_throughput.py --iters 5 --batch-sizes 32,128,256
"""

from __future__ import annotations

import argparse
import ctypes
import multiprocessing as mp
import platform
import statistics
import threading
import time
from collections import defaultdict

SIZES = {
    "base": dict(
        num_hidden_layers=12, hidden_size=768, num_attention_heads=12, intermediate_size=3072
    ),
    "minilm": dict(
        num_hidden_layers=6, hidden_size=384, num_attention_heads=12, intermediate_size=1536
    ),
}
PAGE_MIB = 4096 / 2**20


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="base,minilm", help="comma list of: " + ", ".join(SIZES))
    parser.add_argument("--batch-sizes", default="32,128")
    parser.add_argument("--attention", default="sdpa,eager")
    parser.add_argument("--text-len", type=int, default=40)
    parser.add_argument("--regions", type=int, default=36)
    parser.add_argument("--feature-size", type=int, default=2048)
    parser.add_argument("--iters", type=int, default=2, help="timed batches per case (median)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed batches per case")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")
    return parser.parse_args()


def _rss_mib() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * PAGE_MIB


class PeakRSS:
    """Sample the process RSS every millisecond while the block runs."""

    def __init__(self):
        self.peak = 0.0
        self._stop = threading.Event()

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss_mib())
            time.sleep(0.001)

    def __enter__(self) -> PeakRSS:
        self.peak = _rss_mib()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_mib())


def _return_freed_memory() -> bool:
    """glibc: serve blocks >= 64 KiB with mmap so that freeing them lowers the RSS."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(-3, 1 << 16)) and bool(libc.mallopt(-1, 1 << 16))
    except OSError:
        return False


def make_inputs(batch_size: int, args: argparse.Namespace, device, dtype) -> dict:
    import torch

    generator = torch.Generator().manual_seed(batch_size)
    input_ids = torch.randint(1000, 30000, (batch_size, args.text_len), generator=generator)
    lengths = torch.randint(
        args.text_len * 3 // 4, args.text_len + 1, (batch_size,), generator=generator
    )
    attention_mask = (torch.arange(args.text_len) < lengths[:, None]).long()
    input_ids[:, 0] = 101
    corners = torch.rand(batch_size, args.regions, 2, 2, generator=generator).sort(dim=-2).values
    features = torch.randn(batch_size, args.regions, args.feature_size, generator=generator)
    return dict(
        input_ids=input_ids.to(device),
        attention_mask=attention_mask.to(device),
        region_features=features.to(device, dtype),
        region_boxes=torch.cat([corners[..., 0, :], corners[..., 1, :]], dim=-1).to(device, dtype),
    )


def measure(model, inputs: dict, attention: str, device) -> tuple[float, float, float]:
    """Score one batch: seconds, peak memory and memory before it (MiB)."""
    import torch

    cuda = device.type == "cuda"
    model.set_attn_implementation(attention)
    if cuda:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device) / 2**20
    else:
        before = _rss_mib()
    with torch.inference_mode(), PeakRSS() as rss:
        start = time.perf_counter()
        scores = model.score_pairs(**inputs).scores
        if cuda:
            torch.cuda.synchronize(device)
        elapsed = time.perf_counter() - start
    if not torch.isfinite(scores.float()).all():
        raise RuntimeError(f"non-finite scores with {attention} attention")
    peak = torch.cuda.max_memory_allocated(device) / 2**20 if cuda else rss.peak
    return elapsed, peak, before


def run_size(size: str, args: argparse.Namespace, queue: mp.Queue) -> None:
    """Time one model size, alternating the attention implementations batch by batch."""
    import torch

    from tags.modeling import TagsConfig, TagsModel

    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    if not cuda:
        _return_freed_memory()
    dtype = torch.bfloat16 if cuda else torch.float32
    torch.manual_seed(0)
    config = TagsConfig(
        **SIZES[size],
        region_feature_size=args.feature_size,
        use_mlm_head=False,
        use_wod_head=False,
        use_woc_head=False,
    )
    model = TagsModel(config).to(device=device, dtype=dtype).eval()
    attentions = args.attention.split(",")
    for batch_size in sorted(int(b) for b in args.batch_sizes.split(",")):
        inputs = make_inputs(batch_size, args, device, dtype)
        times, peaks, before = defaultdict(list), defaultdict(float), {}
        schedule = [False] * args.warmup + [True] * args.iters
        for timed in schedule:
            for attention in attentions:
                elapsed, peak, base = measure(model, inputs, attention, device)
                peaks[attention] = max(peaks[attention], peak)
                before.setdefault(attention, base)
                if timed:
                    times[attention].append(elapsed)
        for attention in attentions:
            median = statistics.median(times[attention])
            queue.put(
                dict(
                    size=size,
                    attention=attention,
                    batch=batch_size,
                    pairs_per_s=batch_size / median,
                    ms_per_batch=1000 * median,
                    peak_mib=peaks[attention],
                    extra_mib=peaks[attention] - before[attention],
                )
            )


def main() -> None:
    args = parse_args()
    import torch

    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    cuda = args.device == "cuda"
    if not cuda and not _return_freed_memory():
        print("(mallopt unavailable: CPU peaks may include memory kept from earlier cases)")
    threads = args.threads or torch.get_num_threads()
    attentions, sizes = args.attention.split(","), args.sizes.split(",")
    batches = sorted(int(b) for b in args.batch_sizes.split(","))
    print(
        f"# TagsModel pair scoring (ITM head): {args.text_len} text positions + {args.regions} "
        f"regions x {args.feature_size}-d, {'bf16' if cuda else 'fp32'} on {args.device} "
        f"({platform.machine()}, {threads} threads), torch {torch.__version__}; "
        f"{args.warmup} warm-up + median of {args.iters} timed batches per case"
    )
    memory = "peak GPU alloc MiB" if cuda else "peak RSS MiB"
    print(f"\n| size | attention | batch | pairs/s | ms/batch | {memory} | over model+inputs MiB |")
    print("|---|---|---:|---:|---:|---:|---:|")
    context = mp.get_context("spawn")
    results = {}
    for size in sizes:
        queue = context.Queue()
        process = context.Process(target=run_size, args=(size, args, queue))
        process.start()
        for _ in range(len(batches) * len(attentions)):
            row = queue.get()
            results[(row["size"], row["attention"], row["batch"])] = row
            print(
                f"| {row['size']} | {row['attention']} | {row['batch']} | "
                f"{row['pairs_per_s']:.1f} | {row['ms_per_batch']:.0f} | {row['peak_mib']:.0f} | "
                f"{row['extra_mib']:.0f} |",
                flush=True,
            )
        process.join()
        if process.exitcode:
            raise SystemExit(f"{size} failed (exit code {process.exitcode})")
    if {"sdpa", "eager"} <= set(attentions):
        print("\n| size | batch | SDPA / eager throughput | SDPA / eager peak |")
        print("|---|---:|---:|---:|")
        for size in sizes:
            for batch in batches:
                sdpa, eager = results[(size, "sdpa", batch)], results[(size, "eager", batch)]
                print(
                    f"| {size} | {batch} | {sdpa['pairs_per_s'] / eager['pairs_per_s']:.2f}x | "
                    f"{sdpa['extra_mib'] / max(eager['extra_mib'], 1e-9):.2f}x |"
                )


if __name__ == "__main__":
    main()
