"""One testbed run: train a :class:`~tags.testbed.matcher.Matcher` (or a
:class:`~tags.testbed.dual.DualMatcher`, or a Hugging Face CLIP / BLIP through
:class:`~tags.testbed.hf.HFMatcher`) on fresh scenes with a method's negatives, evaluate
the held-out pairs every ``eval_every`` steps, return the curve.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from tags.testbed.config import DUAL, HF_VARIANTS, TestbedConfig
from tags.testbed.dual import DualMatcher, contrastive_loss
from tags.testbed.evaluate import KINDS, EvalSet, eval_set, evaluate, retrieval
from tags.testbed.inputs import autocast
from tags.testbed.itm_pass import itm_pass
from tags.testbed.matcher import Matcher
from tags.testbed.mining import fne_observe, mine, mined_triplet_loss
from tags.testbed.self_negatives import (
    SELF_METHODS,
    SelfNegativeStats,
    self_negative_losses,
    self_negatives,
)
from tags.testbed.tags_pool import TagsPool
from tags.testbed.vocab import MAX_REGIONS
from tags.testbed.world import Batch, NegativeSampler, NegativeSource, make_batch

Log = Callable[[str], None]


def print_flushed(line: str) -> None:
    """The default progress log: a line on stdout, flushed (runs are often redirected)."""
    print(line, flush=True)


def make_sampler(config: TestbedConfig) -> NegativeSource:
    """The negatives' source: the tags pool of ``tags_negatives`` or the oracle's
    scene-checked edits."""
    if config.negatives == "tags":
        return TagsPool.load(config.tags_negatives)
    return NegativeSampler(config.kinds)


def make_miner(config: TestbedConfig):
    """``mined``: the :mod:`tags.mining` miner of ``miner`` (else ``None``)."""
    if config.negatives != "mined":
        return None
    from tags.mining import get_miner

    return get_miner(config.miner)


def make_featurize(config: TestbedConfig) -> Callable | None:
    """Pixel perception: the scenes' object crops (:class:`~tags.testbed.pixels.PixelCrops`);
    for a Hugging Face variant the whole rendered scenes (:class:`~tags.testbed.hf.SceneImages`)."""
    if config.perception != "pixels":
        return None
    if config.variant in HF_VARIANTS:
        from tags.testbed.hf import SceneImages

        return SceneImages(config.image_size)
    from tags.testbed.pixels import PixelCrops

    return PixelCrops(config.crop_size, MAX_REGIONS)


def batches(config: TestbedConfig, sampler: NegativeSource, start: int = 1) -> Iterator[Batch]:
    """The training batches from step ``start``; with ``workers`` built in worker processes
    (each takes every W-th step, so the order stays by step)."""

    featurize = make_featurize(config)
    last = config.stop_after or config.steps

    def build(step: int) -> Batch:
        max_objects = 2 if step <= config.curriculum else 4
        return make_batch(
            step, config.seed, config.batch_size, config.negatives, max_objects, sampler,
            featurize,
        )  # fmt: skip

    if config.workers <= 0:
        for step in range(start, last + 1):
            yield build(step)
        return

    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            for step in range(start + info.id, last + 1, info.num_workers):
                yield build(step)

    loader = torch.utils.data.DataLoader(
        Stream(), batch_size=None, num_workers=config.workers, collate_fn=lambda b: b,
        prefetch_factor=4, persistent_workers=False,
    )  # fmt: skip
    yield from loader


def resolve_device(name: str) -> torch.device:
    """``auto``: CUDA when available, else the CPU."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(name)


def initial_model(config: TestbedConfig) -> Matcher | DualMatcher:
    """The run's model at step 0 (seeded by ``seed``): the cross-encoder, the dual encoder
    (``variant`` ``dual``) or a Hugging Face model (``hf-clip``, ``hf-blip``). TAGS and TAGS-DC start from the same weights as every other
    method, plus the MLM, WoD and WoC heads."""
    torch.manual_seed(config.seed)
    if config.variant == DUAL:
        return DualMatcher(config.hidden, config.layers)
    if config.variant in HF_VARIANTS:
        from tags.testbed.hf import hf_matcher

        return hf_matcher(config)
    pixels = config.featurizer if config.perception == "pixels" else None
    shape = dict(
        variant=config.variant, hidden=config.hidden, layers=config.layers,
        embed=config.embed, pool=config.pool, pixels=pixels,
    )  # fmt: skip
    model = Matcher(**shape)
    if config.negatives not in SELF_METHODS:
        return model
    start = model.state_dict()
    model = Matcher(**shape, heads=True)
    missing, unexpected = model.load_state_dict(start, strict=False)
    if unexpected or not all("_head." in k for k in missing):
        raise RuntimeError(f"heads model does not extend the plain one: {missing} {unexpected}")
    return model


def format_row(row: dict) -> str:
    """One evaluated step as a row of :data:`HEADER`."""
    cells = " | ".join(f"{100 * row[k]:5.1f}" if k in row else "    -" for k in (*KINDS, "overall"))
    loss = f"{row['loss']:.3f}" if row.get("loss") is not None else "  -  "
    return f"| {row['step']:6d} | {row['train_seconds']:7.1f} | {loss} | {cells} |"


HEADER = (
    "|   step | train s | loss  | attr  |  obj  |  rel  | role  |  all  |\n"
    "|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def added_negatives(batch: Batch) -> list[tuple[str, str, str]]:
    """The rows a method added beside plain's: ``(positive, negative, kind)``."""
    return [
        (batch.texts[i], text, kind)
        for text, i, kind in zip(batch.texts, batch.scene_index, batch.kinds, strict=True)
        if kind not in ("positive", "random")
    ]


class _Step:
    """One optimisation step of a run: the method's negatives, the losses, the update."""

    def __init__(self, config: TestbedConfig, model: Matcher, device: torch.device) -> None:
        self.config, self.model, self.device = config, model, device
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.01)
        warmup = max(1, config.warmup)
        self.schedule = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: min(1.0, (s + 1) / warmup)
        )
        self.miner = make_miner(config)
        self.self_stats = SelfNegativeStats()
        self.branches: Counter = Counter()  # per anchor, the rule a SelHN / FNE miner applied
        #: ``check_shortcut``: every negative the method added, ``(positive, negative, kind)``
        self.drawn: list[tuple[str, str, str]] | None = [] if config.check_shortcut else None

    def __call__(self, step: int, batch: Batch) -> float:
        config, model, device, miner = self.config, self.model, self.device, self.miner
        self_made = config.negatives in SELF_METHODS
        if miner is not None and config.mined_loss == "bce":
            batch = mine(model, batch, miner, device, config.bf16)
        words = None
        if self_made:
            batch, chosen, positives, units = self_negatives(
                model, batch, config, step, self.self_stats, device
            )
        if self.drawn is not None:
            self.drawn.extend(added_negatives(batch))
        with autocast(device, config.bf16):
            if config.loss == "contrastive":  # CLIP, the added negatives as extra columns
                loss = contrastive_loss(model, batch, device)
            else:
                dc_on = config.negatives == "tags-dc" and step >= config.dc_start
                # TAGS-DC: WoD and WoC of the chosen negatives (the last rows) from this pass
                row_dc = dc_on and config.istm_loss == "row"
                best = [r for r in chosen if r.rank == 0] if row_dc else []
                logits, words = itm_pass(model, batch, device, best, positives if best else None)
                target = torch.as_tensor(batch.targets, device=device)
                loss = F.binary_cross_entropy_with_logits(logits.float(), target)
            if miner is not None and config.mined_loss == "triplet":
                if config.miner == "fne":
                    fne_observe(model, batch, miner, step, device, config.bf16)
                loss = loss + mined_triplet_loss(
                    model, batch, logits, miner, device, config.bf16, self.branches
                )
            if self_made:
                loss = loss + self_negative_losses(
                    model, batch, chosen, positives, units, config, step, device, words
                )
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        self.optimizer.step()
        self.schedule.step()
        return loss.item()


def train(
    config: TestbedConfig, out: str | Path | None = None, keep: dict | None = None,
    log: Log | None = print_flushed,
) -> dict[str, Any]:  # fmt: skip
    """One run: train, evaluate every ``eval_every`` steps; returns (and writes to ``out``)
    the run record: ``config``, ``curve`` (per evaluated step, the accuracy per kind),
    ``final`` and the method's own statistics. ``keep``, a dict, receives the trained
    ``model``, the ``held_out`` set and the ``device``; ``log`` gets the progress lines."""
    say = log or (lambda _: None)
    device = resolve_device(config.device)
    model = initial_model(config).to(device)
    held_out = eval_set(config.eval_seed, config.eval_scenes)
    crops = make_featurize(config)
    if crops is not None:  # the frozen CNN's features (HF: pixel values), computed once
        from tags.testbed.pixels import pixel_features

        held_out.featurize = lambda scenes: pixel_features(model.cnn, crops(scenes), device)
    curve: list[dict] = []
    started = time.perf_counter()
    clock = {"train": 0.0, "since": 0.0}
    losses: list[float] = []

    def record(step: int) -> None:
        t = time.perf_counter()
        acc = evaluate(model, held_out, device, config.bf16)
        loss = float(np.mean(losses)) if losses else None
        row = {"step": step, "train_seconds": round(clock["train"], 1), "loss": loss, **acc}
        losses.clear()
        curve.append(row)
        say(f"{format_row(row)} (eval {time.perf_counter() - t:.1f}s)")

    say(f"held-out pairs: {held_out.counts()}")
    record(0)
    clock["since"] = time.perf_counter()
    sampler = make_sampler(config)
    update = _Step(config, model, device)
    step = 0
    for step, batch in enumerate(batches(config, sampler), start=1):
        if crops is not None:
            from tags.testbed.pixels import pixel_features

            batch = replace(batch, labels=pixel_features(model.cnn, batch.labels, device))
        losses.append(update(step, batch))
        out_of_time = config.max_seconds and time.perf_counter() - started > config.max_seconds
        last = step in (config.steps, config.stop_after)
        if step % config.eval_every == 0 or last or out_of_time:
            clock["train"] += time.perf_counter() - clock["since"]
            record(step)
            clock["since"] = time.perf_counter()
        if out_of_time or last:
            break
    return _finish(config, out, keep, say, model, held_out, device, update, sampler, curve,
                   step, clock["train"], started)  # fmt: skip


def _finish(
    config: TestbedConfig, out, keep, say: Log, model: Matcher, held_out: EvalSet, device,
    update: _Step, sampler: NegativeSource, curve: list[dict], step: int, train_seconds: float,
    started: float,
) -> dict[str, Any]:  # fmt: skip
    """Retrieval at the last step, the run record, written to ``out``."""
    if config.rsum:
        t = time.perf_counter()
        curve[-1]["retrieval"] = retrieval(model, held_out, device, config.bf16)
        say(f"retrieval at step {step}: {curve[-1]['retrieval']} "
            f"({time.perf_counter() - t:.1f}s)")  # fmt: skip
    result: dict[str, Any] = {
        "config": config.to_dict(),
        "eval_pairs": held_out.counts(),
        "steps_done": step,
        "steps_per_s": round(step / max(train_seconds, 1e-9), 2),
        "seconds": round(time.perf_counter() - started, 1),
        "curve": curve,
        "final": curve[-1],
    }
    if update.branches:
        result["miner_branches"] = {str(k): v for k, v in sorted(update.branches.items())}
        say(f"miner branches: {result['miner_branches']}")
    if config.negatives in SELF_METHODS:
        result["self_negatives"] = update.self_stats.as_dict()
        say(f"self-negatives: {result['self_negatives']}")
    if update.drawn is not None:
        from tags.testbed.shortcut import pair_shortcut

        result["shortcut"] = pair_shortcut(update.drawn)
        say(f"text-only check of the added negatives: {result['shortcut']}")
    if isinstance(sampler, TagsPool) and config.workers <= 0:
        result["tags_pool"] = sampler.stats()
        say(f"tags negatives: {result['tags_pool']}")
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(out).with_suffix(".tmp")
        tmp.write_text(json.dumps(result, indent=1))
        tmp.replace(out)
    if keep is not None:
        keep.update(model=model, held_out=held_out, device=device)
    return result
