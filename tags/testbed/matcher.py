"""The testbed's image-text matcher: the project's TagsModel with a pairwise binding term.

:class:`Matcher` is a :class:`~tags.modeling.TagsModel` cross-encoder over
``[caption ; object regions]`` (a word-level vocabulary of the benchmark's grammar) whose ITM
logit gets one added term, by ``variant``:

- ``tags``: nothing added;
- ``tags-rel``: every ordered pair of region states after the encoder, with pairwise geometry
  features of the two boxes, scored by an MLP that also reads the [CLS] state; pair scores
  pooled by logsumexp (an existential claim holds when some pair satisfies it);
- ``tags-bind`` (default): the pair (i, j) scores how well region i matches the subject words
  and region j the object words (cosine of the tied word and region embeddings through one
  learned map, pooled over the tokens by learned per-role weights read from the encoder's
  text states: ``softmax`` weights or ``gate``, independent sigmoid gates), plus an MLP of
  the relation words' pooled text state and the pair's geometry; logsumexp over pairs.

Which tokens form the subject, the object and the relation is learned, never given.
Perception is given: a region's feature is the sum of its true words' embeddings
(``embed="tied"``), a one-hot through a linear layer (``free``), or a frozen CNN's features
of its crop (``pixels``).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from tags.modeling import TagsConfig, TagsModel
from tags.testbed.vocab import MASK_ID, MAX_REGIONS, VOCAB

VARIANTS: tuple[str, ...] = ("tags", "tags-rel", "tags-bind")
POOLS: tuple[str, ...] = ("softmax", "gate")
#: pairwise geometry features per ordered pair of boxes
GEOMETRY_FEATURES = 10


def geometry(boxes: torch.Tensor) -> torch.Tensor:
    """Pairwise geometry of ``[N, R, 4]`` boxes: ``[N, R, R, 10]`` features of (i, j)."""
    x1, y1, x2, y2 = boxes.unbind(-1)
    cx, cy, r = (x1 + x2) / 2, (y1 + y2) / 2, (x2 - x1) / 2
    i = (slice(None), slice(None), None)  # [N, R, 1]
    j = (slice(None), None, slice(None))  # [N, 1, R]
    min_r = torch.minimum(r[i], r[j]).clamp(min=1e-3)
    v_overlap = (torch.minimum(y2[i], y2[j]) - torch.maximum(y1[i], y1[j])) / (2 * min_r)
    feats = [
        10 * (cx[j] - cx[i]),
        10 * (cy[j] - cy[i]),
        10 * (x1[j] - x2[i]),  # clear gap, i left of j
        10 * (x1[i] - x2[j]),  # i right of j
        10 * (y1[j] - y2[i]),  # i above j
        10 * (y1[i] - y2[j]),  # i below j
        v_overlap,
        (cx[j] - cx[i]).abs() / min_r,
        10 * r[i].expand_as(min_r),
        10 * r[j].expand_as(min_r),
    ]
    return torch.stack(feats, -1)


class Matcher(nn.Module):
    """TagsModel over ``[caption ; object regions]``, optionally with a pair block.

    ``heads``: with the MLM, WoD and WoC heads (TAGS, TAGS-DC); ``pixels``: regions are the
    features of this frozen CNN (``efficientnet``, ``random-conv`` or ``auto``)."""

    def __init__(
        self, variant: str = "tags-bind", hidden: int = 128, layers: int = 2,
        embed: str = "tied", pool: str = "gate", heads: bool = False, pixels: str | None = None,
    ) -> None:  # fmt: skip
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"variant {variant!r}: choose one of {VARIANTS}")
        if pool not in POOLS:
            raise ValueError(f"pool {pool!r}: choose one of {POOLS}")
        self.variant, self.embed, self.pool = variant, embed, pool
        cnn = None
        if pixels:
            from tags.testbed.pixels import FrozenCNN

            cnn = FrozenCNN(pixels)
        region_dim = cnn.dim if cnn is not None else None
        config = TagsConfig(
            vocab_size=len(VOCAB), mask_token_id=MASK_ID, hidden_size=hidden,
            num_hidden_layers=layers, num_attention_heads=4,
            intermediate_size=2 * hidden, max_position_embeddings=48,
            region_feature_size=region_dim or (hidden if embed == "tied" else len(VOCAB)),
            max_regions=MAX_REGIONS, initializer_range=0.02, hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0, use_mlm_head=heads, use_wod_head=heads,
            use_woc_head=heads,
        )  # fmt: skip
        self.tags = TagsModel(config)
        self.cnn = cnn
        if embed == "tied" and not region_dim:  # region feature = its words' embeddings
            with torch.no_grad():
                self.tags.img_embeddings.img_linear.weight.copy_(torch.eye(hidden))
                self.tags.img_embeddings.img_linear.bias.zero_()
        self.pairs = None
        if variant == "tags-bind":  # word-region match, learned role pooling
            self.match = nn.Linear(hidden, hidden, bias=False)
            with torch.no_grad():
                self.match.weight.copy_(torch.eye(hidden))
            self.match_scale = nn.Parameter(torch.tensor(5.0))
            self.roles = nn.Linear(hidden, 3)  # subject, object, relation pooling
        if variant in ("tags-rel", "tags-bind"):
            self.pair_in = nn.ModuleDict(
                {
                    k: nn.Linear(hidden if k != "geo" else GEOMETRY_FEATURES, hidden)
                    for k in ("s", "o", "c", "geo")
                }
            )
            self.pairs = nn.Sequential(
                nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, 1)
            )

    def region_features(self, labels: torch.Tensor) -> torch.Tensor:
        """A region's input feature: pixel features as given, else from its word ids."""
        if labels.is_floating_point():  # pixel features
            return labels
        if self.embed == "tied":
            return self.tags.embeddings.word_embeddings(labels).sum(-2)
        return F.one_hot(labels, len(VOCAB)).sum(-2).float()

    def bound_pairs(self, input_ids, attention_mask, labels, out, geo) -> torch.Tensor:
        """Pair (i, j): how well region i matches the subject words, region j the object
        words (cosine of word and region embeddings, pooled over the tokens by a learned
        attention per role from the text states), plus an MLP of the relation words' pooled
        state and the pair's geometry. ``[N, R, R]``."""
        words = self.match(self.tags.embeddings.word_embeddings(input_ids))
        regions = self.match(self.tags.img_embeddings.img_linear(self.region_features(labels)))
        sim = torch.einsum(
            "ntd,nrd->ntr", F.normalize(words, dim=-1), F.normalize(regions, dim=-1)
        ).float()  # [N, T, R]
        text = out.text_hidden_state
        role_logits = self.roles(text).float().masked_fill(~attention_mask.bool()[..., None], -1e4)
        alpha = role_logits.softmax(1)  # [N, T, 3]
        gates = alpha if self.pool == "softmax" else torch.sigmoid(role_logits)
        subject = torch.einsum("nt,ntr->nr", gates[..., 0], sim)
        obj = torch.einsum("nt,ntr->nr", gates[..., 1], sim)
        relation = torch.einsum("nt,ntd->nd", alpha[..., 2].to(text.dtype), text)
        h = geo + self.pair_in["c"](relation)[:, None, None]
        match = self.match_scale * (subject[:, :, None] + obj[:, None, :])
        return match + self.pairs(h).squeeze(-1).float()

    def encode(self, input_ids, attention_mask, labels, boxes, region_mask, heads, masked=None):
        """The TagsModel's output with ``heads`` over the caption and its regions."""
        x1, y1, x2, y2 = boxes.unbind(-1)
        box7 = torch.stack([x1, y1, x2, y2, x2 - x1, y2 - y1, (x2 - x1) * (y2 - y1)], -1)
        return self.tags(
            input_ids=input_ids, attention_mask=attention_mask,
            region_features=self.region_features(labels), region_boxes=box7,
            region_mask=region_mask, heads=heads, masked_positions=masked,
        )  # fmt: skip

    def forward(self, input_ids, attention_mask, labels, boxes, region_mask) -> torch.Tensor:
        """The ITM logit of each (caption, scene) row, ``[N]``."""
        return self.scored(input_ids, attention_mask, labels, boxes, region_mask)[0]

    def scored(
        self, input_ids, attention_mask, labels, boxes, region_mask, heads=(), masked=None
    ) -> tuple[torch.Tensor, Any]:
        """The ITM logits ``[N]`` and the encoder's output, with ``heads`` (``masked`` their
        positions) from the same pass: TAGS-DC's WoD and WoC on rows the ITM loss scores."""
        out = self.encode(
            input_ids, attention_mask, labels, boxes, region_mask, ("itm", *heads), masked
        )
        return self._itm_logit(out, input_ids, attention_mask, labels, boxes, region_mask), out

    def _itm_logit(self, out, input_ids, attention_mask, labels, boxes, region_mask):
        logit = out.itm_logits.reshape(-1).float()
        if self.pairs is None:
            return logit
        reg, cls = out.region_hidden_state, out.last_hidden_state[:, 0]
        p = self.pair_in
        geo = p["geo"](geometry(boxes).to(reg.dtype))
        if self.variant == "tags-bind":
            scores = self.bound_pairs(input_ids, attention_mask, labels, out, geo)
        else:
            h = p["s"](reg)[:, :, None] + p["o"](reg)[:, None, :] + geo + p["c"](cls)[:, None, None]
            scores = self.pairs(h).squeeze(-1).float()  # [N, R, R]
        m = region_mask.bool()
        eye = torch.eye(m.shape[1], dtype=torch.bool, device=m.device)
        valid = m[:, :, None] & m[:, None, :] & ~eye
        return logit + scores.masked_fill(~valid, -1e4).flatten(1).logsumexp(-1)
