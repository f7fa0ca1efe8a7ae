"""Scene truth of the retrieved negatives a TAGS-DC step selects (shapes benchmark).

On the shapes benchmark every image's scene is known, so a retrieved "negative" can be
checked: a caption of another image is often true of the anchor image too ("a red circle"
holds wherever there is a red circle). :class:`RetrievalTruthAudit` judges every candidate of
a step's retrieved pools with :func:`tags.benchmark.truth.caption_truth`'s rules:

- i2t: a pool caption (of another image) against the anchor image's scene;
- t2i: the anchor caption against the scene of each pool image.

A candidate that is ``true`` of the scene is a false negative. Per step and direction it logs
the false-negative rate of the whole pool, of the top-1 (what the hardest miner takes), of the
top-k (UNITER's 31 of 399) and of the candidates that entered the ITM loss (the configured
miner: all / hardest / SelHN / the FNE draw), plus counts for exact aggregation and, with an
FNE miner whose statistics are ready, the counts behind its posterior's precision and recall
(prediction: posterior > 0.5). Built only when ``tags_dc.truth_scenes`` is set: with it off
the recipe holds no scenes and computes nothing. :func:`summarize_truth` reduces a run's
``metrics.jsonl`` rows to rates.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import torch

from tags.benchmark.captions import Claim, holds
from tags.benchmark.scenes import Scene
from tags.benchmark.truth import parse_claim

__all__ = [
    "DIRECTIONS",
    "RetrievalTruthAudit",
    "load_scenes",
    "retrieval_audit",
    "summarize_truth",
]

DIRECTIONS = ("itm_i2t", "itm_t2i")
_RATES = ("fn_pool", "fn_top1", "fn_topk", "fn_selected")
_COUNTS = ("n_selected", "n_selected_fn", "fne_tp", "fne_predicted", "fne_true")


def load_scenes(path: str | Path) -> dict[int, Scene]:
    """``image_id -> Scene`` from a benchmark's ``scenes.jsonl`` (or its directory)."""
    from tags.benchmark.oracle import TruthOracle

    scenes = TruthOracle.from_path(path).scenes
    if not scenes:
        raise ValueError(f"{path}: no scenes")
    return scenes


def _share(flags: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    n = keep.sum()
    return (flags & keep).sum().float() / n.clamp(min=1).float()


class RetrievalTruthAudit:
    """Judges retrieved candidates against the scenes of a shapes-benchmark training set.

    Args:
        dataset: the training :class:`~tags.data.ImageTextDataset` (its groups' image ids are
            the benchmark's image ids).
        scenes: a ``scenes.jsonl`` path or a loaded ``image_id -> Scene`` mapping.
        threshold: posterior above which FNE "predicts" a false negative (0.5).
    """

    def __init__(
        self, dataset: Any, scenes: str | Path | dict[int, Scene], threshold: float = 0.5
    ) -> None:
        by_id = load_scenes(scenes) if isinstance(scenes, str | Path) else scenes
        missing = [g.image_id for g in dataset.groups if int(g.image_id) not in by_id]
        if missing:
            raise ValueError(f"truth scenes: {len(missing)} training images have no scene")
        self.dataset = dataset
        self.scenes = [by_id[int(g.image_id)] for g in dataset.groups]  # dense image index
        self.threshold = float(threshold)
        self._claims: dict[int, Claim | None] = {}

    def claim(self, caption: int) -> Claim | None:
        """The parsed claim of a dataset caption (cached)."""
        if caption not in self._claims:
            self._claims[caption] = parse_claim(self.dataset.text(caption))
        return self._claims[caption]

    def is_true(self, caption: int, image: int) -> bool:
        """Whether dataset caption ``caption`` holds in the scene of dense image ``image``."""
        claim = self.claim(caption)
        return claim is not None and holds(claim, self.scenes[image])

    def pool_truth(
        self, anchor_captions: Sequence[int], anchor_images: Sequence[int], pools: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(i2t [B, P], t2i [B, Q])`` bool: the candidate is true of the anchor (padding
        False)."""
        cap = pools.captions.tolist()
        img = pools.images.tolist()
        i2t = torch.zeros(pools.caption_mask.shape, dtype=torch.bool)
        t2i = torch.zeros(pools.image_mask.shape, dtype=torch.bool)
        cap_mask, img_mask = pools.caption_mask.tolist(), pools.image_mask.tolist()
        for a, (caption, image) in enumerate(zip(anchor_captions, anchor_images)):
            for j, (c, ok) in enumerate(zip(cap[a], cap_mask[a])):
                i2t[a, j] = ok and self.is_true(c, image)
            for j, (i, ok) in enumerate(zip(img[a], img_mask[a])):
                t2i[a, j] = ok and self.is_true(caption, i)
        return i2t.to(pools.caption_mask.device), t2i.to(pools.image_mask.device)

    def direction_metrics(
        self,
        prefix: str,
        truth: torch.Tensor,
        scores: torch.Tensor,
        mask: torch.Tensor,
        columns: torch.Tensor,
        selected: torch.Tensor,
        posterior: torch.Tensor | None,
        fne: bool = False,
    ) -> dict[str, torch.Tensor]:
        """One direction's rates and counts.

        Args:
            truth, scores, mask: ``[B, P]`` over the pool.
            columns: ``[B, k]`` pool column of each retrieved negative (``-1`` = none).
            selected: ``[B, k]`` bool, the retrieved negatives that entered the loss.
            posterior: ``[B, P]`` FNE posterior, or ``None`` (no FNE, or not ready).
            fne: an FNE miner is configured: its counts are logged (zeros while not ready),
                so every step has the same keys.
        """
        from tags.mining.fne_pool import top_m

        def on_pool(cols: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
            out = torch.zeros_like(mask)
            rows = torch.arange(cols.shape[0], device=cols.device)[:, None].expand_as(cols)
            keep = keep & (cols >= 0)
            out[rows[keep], cols[keep]] = True
            return out

        chosen = on_pool(columns, selected)
        top1 = on_pool(top_m(scores, mask, 1), torch.ones_like(mask[:, :1]))
        topk_cols = top_m(scores, mask, columns.shape[1])
        topk = on_pool(topk_cols, torch.ones_like(topk_cols, dtype=torch.bool))
        out = {
            f"truth/{prefix}/fn_pool": _share(truth, mask),
            f"truth/{prefix}/fn_top1": _share(truth, top1),
            f"truth/{prefix}/fn_topk": _share(truth, topk),
            f"truth/{prefix}/fn_selected": _share(truth, chosen),
            f"truth/{prefix}/n_selected": chosen.sum().float(),
            f"truth/{prefix}/n_selected_fn": (chosen & truth).sum().float(),
        }
        if posterior is not None or fne:  # zeros while FNE's statistics are not ready
            ready = posterior is not None
            predicted = (posterior > self.threshold) & mask if ready else torch.zeros_like(mask)
            actual = truth & mask if ready else torch.zeros_like(mask)
            out[f"truth/{prefix}/fne_tp"] = (predicted & actual).sum().float()
            out[f"truth/{prefix}/fne_predicted"] = predicted.sum().float()
            out[f"truth/{prefix}/fne_true"] = actual.sum().float()
        return out


def summarize_truth(rows: Iterable[dict[str, Any]]) -> dict[str, float]:
    """A run's truth figures from its ``metrics.jsonl`` rows: per direction the mean of the
    per-step rates, the false-negative rate of the selected negatives from the summed counts
    (``fn_selected``) and FNE's posterior precision / recall (summed counts; absent when FNE
    never predicted / no false negative was seen). Empty without audit metrics."""
    rows = list(rows)
    summary: dict[str, float] = {}
    for prefix in DIRECTIONS:
        head = f"truth/{prefix}/"
        mine = [r for r in rows if f"{head}fn_pool" in r]
        if not mine:
            continue
        short = prefix.removeprefix("itm_")
        for key in _RATES:
            summary[f"{short}_{key}_step_mean"] = sum(r[head + key] for r in mine) / len(mine)
        sums = {key: sum(r.get(head + key, 0.0) for r in mine) for key in _COUNTS}
        if sums["n_selected"] > 0:
            summary[f"{short}_fn_selected"] = sums["n_selected_fn"] / sums["n_selected"]
        if sums["fne_predicted"] > 0:
            summary[f"{short}_fne_precision"] = sums["fne_tp"] / sums["fne_predicted"]
        if sums["fne_true"] > 0:
            summary[f"{short}_fne_recall"] = sums["fne_tp"] / sums["fne_true"]
    return summary


def retrieval_audit(path: str | Path, dataset: Any) -> RetrievalTruthAudit:
    """The ``retrieval`` truth audit plug-in (``tags.training.audits``)."""
    return RetrievalTruthAudit(dataset, path)
