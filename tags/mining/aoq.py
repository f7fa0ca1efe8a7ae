"""AOQ: adaptive offline quintuplet loss (Chen et al., ECCV 2020; official sunnychencool/AOQ).

Round 1 trains with the hardest-negative triplet; :func:`build_offline_negatives` then ranks the
whole training set once with its dual embeddings; round 2 retrains from scratch with
:class:`AOQMiner` on online and offline negatives (:meth:`OfflineNegatives.sample` draws them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch

from tags.mining.base import Miner, MinerOutput, gather_rows, hinge, masked_max, one_hot_mask
from tags.mining.registry import register_miner

__all__ = ["AOQMiner", "OfflineNegatives", "build_offline_negatives", "running_topk"]


def running_topk(
    values: torch.Tensor,
    index: torch.Tensor,
    chunk_values: torch.Tensor,
    chunk_index: torch.Tensor,
    k: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Merge a chunk's scores into a running top-``k`` (rows independent, descending)."""
    all_v = torch.cat([values, chunk_values], dim=1)
    all_i = torch.cat([index, chunk_index], dim=1)
    k = min(k, all_v.shape[1])
    top_v, pos = all_v.topk(k, dim=1)
    return top_v, all_i.gather(1, pos)


def _rank_chunked(
    queries: torch.Tensor,
    keys: torch.Tensor,
    positive_of: Any,
    k: int,
    chunk_size: int,
    device: torch.device,
    score: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
) -> torch.Tensor:
    """Top-``k`` keys per query by ``score(queries, keys) -> [q, c]`` (default: dot
    product), excluding positives, chunked on both sides.

    ``positive_of(q_idx [q], k_idx [c]) -> bool [q, c]`` marks the excluded (positive) pairs.
    Peak memory is ``chunk_size x (chunk_size + k)`` scores.
    """
    n_q, n_k = queries.shape[0], keys.shape[0]
    out = torch.empty(n_q, k, dtype=torch.long)
    for q0 in range(0, n_q, chunk_size):
        q_idx = torch.arange(q0, min(q0 + chunk_size, n_q), device=device)
        q = queries[q0 : q0 + chunk_size].to(device, torch.float32)
        best_v = torch.empty(q.shape[0], 0, device=device)
        best_i = torch.empty(q.shape[0], 0, dtype=torch.long, device=device)
        for k0 in range(0, n_k, chunk_size):
            k_idx = torch.arange(k0, min(k0 + chunk_size, n_k), device=device)
            chunk = keys[k0 : k0 + chunk_size].to(device, torch.float32)
            sims = q @ chunk.t() if score is None else score(q, chunk)
            sims = sims.masked_fill(positive_of(q_idx, k_idx), float("-inf"))
            take = min(k, sims.shape[1])
            v, i = sims.topk(take, dim=1)
            best_v, best_i = running_topk(best_v, best_i, v, k_idx[i], k)
        if torch.isinf(best_v).any():
            raise ValueError("fewer than k negatives for some query; lower h")
        out[q0 : q0 + q.shape[0]] = best_i.cpu()
    return out


@dataclass
class OfflineNegatives:
    """Offline hard negatives of a training set.

    Attributes:
        i2t: ``[N_img, h]`` caption indices, hardest first, never a caption of the image.
        t2i: ``[N_cap, h_cap]`` image indices, hardest first, never the caption's image.
        caption_to_image: ``[N_cap]`` image index of every caption.
    """

    i2t: torch.Tensor
    t2i: torch.Tensor
    caption_to_image: torch.Tensor

    #: new ranks drawn for a row whose derived pairs are true pairs, before the fallback
    REDRAWS: ClassVar[int] = 10

    def save(self, path: str | Path) -> None:
        torch.save(
            {"i2t": self.i2t, "t2i": self.t2i, "caption_to_image": self.caption_to_image}, path
        )

    @classmethod
    def load(cls, path: str | Path) -> OfflineNegatives:
        state = torch.load(path, map_location="cpu", weights_only=True)
        return cls(state["i2t"], state["t2i"], state["caption_to_image"])

    def captions_of(self, image: int) -> torch.Tensor:
        """Caption indices of ``image``."""
        return torch.nonzero(self.caption_to_image == image).squeeze(1)

    def sample(
        self, caption_index: torch.Tensor, generator: torch.Generator | None = None
    ) -> dict[str, torch.Tensor]:
        """Draw the offline quintuplet members for a batch of positive pairs, as the official
        data loader does: rank ``n ~ U{0..h-1}`` in the image's list gives ``t_off``; rank
        ``n * h_cap // h`` (the official ``n / 5``) in the caption's list gives ``i_off``.

        Returns caption/image indices ``t_off`` (offline negative caption of the image),
        ``i_off`` (offline negative image of the caption), ``i_off2`` (the image of ``t_off``)
        and ``t_off2`` (a uniformly drawn caption of ``i_off``).

        The derived pairs ``(i_off, t_off)`` and ``(i_off2, t_off2)`` are true pairs exactly
        when ``t_off`` is a caption of ``i_off``: such rows are redrawn (a new rank, up to
        ``REDRAWS`` times, then the first image of the caption's list that is not
        ``t_off``'s), so an offline term never pushes a true pair below margin 0. Rows
        without a collision use the random numbers they always did.
        """
        caption_index = torch.as_tensor(caption_index, dtype=torch.long).reshape(-1)
        image_index = self.caption_to_image[caption_index]
        h, h_cap = self.i2t.shape[1], self.t2i.shape[1]
        n = torch.randint(0, h, (caption_index.numel(),), generator=generator)
        t_off = self.i2t[image_index, n]
        i_off = self.t2i[caption_index, n * h_cap // h]
        clash = self.caption_to_image[t_off] == i_off
        for _ in range(self.REDRAWS):
            if not clash.any():
                break
            rows = torch.nonzero(clash).squeeze(1)
            n_new = torch.randint(0, h, (rows.numel(),), generator=generator)
            t_off[rows] = self.i2t[image_index[rows], n_new]
            i_off[rows] = self.t2i[caption_index[rows], n_new * h_cap // h]
            clash = self.caption_to_image[t_off] == i_off
        for row in torch.nonzero(clash).squeeze(1).tolist():
            others = self.t2i[caption_index[row]]
            others = others[others != self.caption_to_image[t_off[row]]]
            if others.numel() == 0:
                raise ValueError(
                    f"AOQ: every offline image of caption {int(caption_index[row])} is the image "
                    "of its offline caption (the derived pairs would be true pairs); raise h"
                )
            i_off[row] = others[0]
        i_off2 = self.caption_to_image[t_off]
        counts = torch.bincount(self.caption_to_image)
        order = torch.argsort(self.caption_to_image, stable=True)
        starts = torch.cumsum(counts, 0) - counts
        pick = (torch.rand(i_off.numel(), generator=generator) * counts[i_off]).long()
        t_off2 = order[starts[i_off] + pick]
        return {"t_off": t_off, "i_off": i_off, "i_off2": i_off2, "t_off2": t_off2}


@torch.no_grad()
def build_offline_negatives(
    image_embeddings: torch.Tensor,
    caption_embeddings: torch.Tensor,
    caption_to_image: torch.Tensor | list[int],
    h: int = 300,
    h_caption: int | None = None,
    chunk_size: int = 1024,
    device: torch.device | str = "cpu",
    similarity: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
    text_similarity: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
) -> OfflineNegatives:
    """Rank the whole training set once with dual embeddings (dot product; pass normalised
    embeddings for cosine, or a backend's ``similarity(images, texts) -> [I, T]`` and
    ``text_similarity(texts, images) -> [T, I]``, e.g. BLIP-2's max over query tokens).

    For every image its top-``h`` negative captions (paper h = 300) and for every caption its
    top-``h_caption`` negative images (default ``h // 5``). Positives are excluded through the
    explicit ``caption_to_image`` index (any number of captions per image). Both sides are
    processed in chunks with a running top-k, so the full ``N_img x N_cap`` matrix is never
    materialised. Embeddings may be CPU tensors or memory-mapped arrays wrapped by
    ``torch.from_numpy``; chunks are moved to ``device``.
    """
    device = torch.device(device)
    c2i = torch.as_tensor(caption_to_image, dtype=torch.long).reshape(-1)
    if c2i.numel() != caption_embeddings.shape[0]:
        raise ValueError("caption_to_image needs one entry per caption")
    h_caption = max(1, h // 5) if h_caption is None else h_caption
    c2i_dev = c2i.to(device)
    i2t = _rank_chunked(
        image_embeddings,
        caption_embeddings,
        lambda q, k: c2i_dev[k][None, :] == q[:, None],
        h,
        chunk_size,
        device,
        similarity,
    )
    t2i = _rank_chunked(
        caption_embeddings,
        image_embeddings,
        lambda q, k: c2i_dev[q][:, None] == k[None, :],
        h_caption,
        chunk_size,
        device,
        text_similarity,
    )
    return OfflineNegatives(i2t=i2t, t2i=t2i, caption_to_image=c2i)


@register_miner("aoq")
class AOQMiner(Miner):
    """Eq. 5 of AOQ, per anchor of one direction.

    Our reading of Eq. 5 (checked against ``ContrastiveLoss`` in the official ``modelAOQ.py``),
    for a positive pair ``(i, t)`` with online hardest negatives ``t_on``/``i_on``, offline hard
    negatives ``t_off`` (of ``i``) and ``i_off`` (of ``t``)::

        L = w_t [m1 + S(i, t_on) - S(i, t)]_+ + w_i [m1 + S(i_on, t) - S(i, t)]_+
          + [m2 + S(i, t_off) - S(i, t)]_+ + [m2 + S(i_off, t) - S(i, t)]_+
          + [m2 + S(i_off, t_off) - S(i, t)]_+ + [m2 + S(i_off', t_off') - S(i, t)]_+
        w_t = beta - (S(i, t_off) - S(i, t_on)) / alpha,  w_i likewise with i_off, i_on

    with ``m1 = 0.2`` (online), ``m2 = 0`` (offline), ``alpha = 0.3``, ``beta = 1.5``;
    ``(i_off, t_off)`` and ``(i_off', t_off')`` are the two derived pairs without a common
    anchor (``i_off'`` = image of ``t_off``, ``t_off'`` = a caption of ``i_off``). The weights
    are not clamped (they turn negative when the offline negative beats the online one by more
    than ``alpha * beta``) and, as in the official code, gradients flow through them
    (``detach_weight=True`` stops that).

    Per direction: ``offline_scores`` [A] = ``S(anchor, its offline negative)`` and
    ``pair_scores`` [A] = the derived pair assigned to this direction (official: i2t gets
    ``S(i_off, t_off)``, t2i gets ``S(i_off', t_off')``). Summing both directions gives Eq. 5.
    """

    def __init__(
        self,
        margin: float = 0.2,
        offline_margin: float = 0.0,
        alpha: float = 0.3,
        beta: float = 1.5,
        detach_weight: bool = False,
    ) -> None:
        super().__init__(margin)
        self.offline_margin = float(offline_margin)
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.detach_weight = bool(detach_weight)

    def forward(
        self,
        scores: torch.Tensor,
        positive: torch.Tensor,
        negative_mask: torch.Tensor,
        offline_scores: torch.Tensor | None = None,
        pair_scores: torch.Tensor | None = None,
        **_: Any,
    ) -> MinerOutput:
        self.check_inputs(scores, positive, negative_mask)
        if offline_scores is None or pair_scores is None:
            raise ValueError("AOQ needs offline_scores and pair_scores ([A] each)")
        _, index, valid = masked_max(scores.detach(), negative_mask)
        online = gather_rows(scores, index)
        weight = self.beta - (offline_scores - online) / self.alpha
        if self.detach_weight:
            weight = weight.detach()
        online_term = hinge(self.margin, online, positive) * weight * valid
        offline_term = hinge(self.offline_margin, offline_scores, positive)
        pair_term = hinge(self.offline_margin, pair_scores, positive)
        return MinerOutput(
            loss=online_term + offline_term + pair_term,
            index=index,
            selected=one_hot_mask(index, scores.shape[1]),
            extras={
                "weight": weight.detach(),
                "online": online_term.detach(),
                "offline": offline_term.detach(),
                "pair": pair_term.detach(),
            },
        )

    def extra_repr(self) -> str:
        return (
            f"margin={self.margin}, offline_margin={self.offline_margin}, alpha={self.alpha}, "
            f"beta={self.beta}, detach_weight={self.detach_weight}"
        )
