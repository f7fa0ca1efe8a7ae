"""The testbed's dual encoder (``variant="dual"``) and its CLIP / NegCLIP loss.

:class:`DualMatcher` encodes a caption and a scene apart, each to one unit vector: a small
transformer over the caption's tokens (its ``[CLS]`` state), and one over the scene's regions
(a learned image token's state; a region is the sum of its true words' embeddings, the text
encoder's own table, the ``tied`` perception of :class:`~tags.testbed.matcher.Matcher`, plus
its box features). A (caption, scene) row scores ``scale * cosine``, so the held-out pairs
and retrieval (:mod:`tags.testbed.evaluate`) read it as they read the cross-encoder's logit.

:func:`contrastive_loss` is the symmetric InfoNCE of CLIP over the batch's scenes and their
true captions, with the method's added negatives (oracle edits, tags negatives, ...) as extra
text columns of the image-to-text softmax (NegCLIP's hard negatives). Plain training adds
none: its negative, another scene's caption, is already an in-batch column.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tags.modeling.padding import pad_text
from tags.testbed.vocab import VOCAB, tokenize
from tags.testbed.world import Batch

#: the rows of a batch that are not a method's added negative
NOT_ADDED: tuple[str, ...] = ("positive", "random")
#: CLIP's initial temperature and its cap on the logit scale
INIT_TEMPERATURE, MAX_SCALE = 0.07, 100.0


def _encoder(hidden: int, layers: int) -> nn.TransformerEncoder:
    layer = nn.TransformerEncoderLayer(
        hidden, 4, 2 * hidden, dropout=0.0, activation="gelu", batch_first=True
    )
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


def box_features(boxes: torch.Tensor) -> torch.Tensor:
    """``[..., 4]`` boxes ``(x1, y1, x2, y2)`` as the cross-encoder's 7 box features."""
    x1, y1, x2, y2 = boxes.unbind(-1)
    return torch.stack([x1, y1, x2, y2, x2 - x1, y2 - y1, (x2 - x1) * (y2 - y1)], -1)


class DualMatcher(nn.Module):
    """A text and an image encoder, each pooled to a unit vector; a row scores the scaled
    cosine of its caption's and its scene's vectors. Word embeddings are tied: a region's
    feature is the sum of its words' embeddings in the caption encoder's table."""

    def __init__(self, hidden: int = 128, layers: int = 2, max_positions: int = 48) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(len(VOCAB), hidden, padding_idx=0)
        self.positions = nn.Embedding(max_positions, hidden)
        self.text_norm = nn.LayerNorm(hidden)
        self.text_encoder = _encoder(hidden, layers)
        self.text_proj = nn.Linear(hidden, hidden)
        self.box = nn.Linear(7, hidden)
        self.image_token = nn.Parameter(torch.zeros(1, 1, hidden))
        self.image_norm = nn.LayerNorm(hidden)
        self.image_encoder = _encoder(hidden, layers)
        self.image_proj = nn.Linear(hidden, hidden)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / INIT_TEMPERATURE)))
        for table in (self.word_embeddings, self.positions):
            nn.init.normal_(table.weight, std=0.02)
        nn.init.normal_(self.image_token, std=0.02)

    def scale(self) -> torch.Tensor:
        """The logit scale, ``exp(logit_scale)`` capped at 100 as CLIP's."""
        return self.logit_scale.exp().clamp(max=MAX_SCALE)

    def encode_text(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Unit vectors ``[N, hidden]`` of ``[CLS] words [SEP]`` captions (right-padded)."""
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.text_norm(self.word_embeddings(input_ids) + self.positions(positions))
        h = self.text_encoder(x, src_key_padding_mask=~attention_mask.bool())
        return F.normalize(self.text_proj(h[:, 0]), dim=-1)

    def encode_image(
        self, labels: torch.Tensor, boxes: torch.Tensor, region_mask: torch.Tensor
    ) -> torch.Tensor:
        """Unit vectors ``[N, hidden]`` of scenes: their regions' word ids ``[N, R, 3]``,
        boxes ``[N, R, 4]`` and mask ``[N, R]``, pooled by a learned image token."""
        if labels.is_floating_point():
            raise ValueError("the dual encoder reads symbolic regions (word ids)")
        regions = self.word_embeddings(labels).sum(-2) + self.box(box_features(boxes))
        token = self.image_token.expand(regions.shape[0], -1, -1)
        x = self.image_norm(torch.cat([token, regions], 1))
        keep = torch.cat([region_mask.new_ones(region_mask.shape[0], 1), region_mask], 1)
        h = self.image_encoder(x, src_key_padding_mask=~keep.bool())
        return F.normalize(self.image_proj(h[:, 0]), dim=-1)

    def forward(self, input_ids, attention_mask, labels, boxes, region_mask) -> torch.Tensor:
        """The score of each (caption, scene) row, ``[N]``: ``scale * cosine``."""
        text = self.encode_text(input_ids, attention_mask)
        image = self.encode_image(labels, boxes, region_mask)
        return self.scale() * (text * image).sum(-1)


def contrastive_loss(model: DualMatcher, batch: Batch, device) -> torch.Tensor:
    """CLIP's symmetric InfoNCE (of any model with ``encode_text``, ``encode_image`` and
    ``scale``: the dual encoder, :class:`~tags.testbed.hf.HFMatcher` of a CLIP) over the batch's scenes and their true captions (the
    ``positive`` rows), NegCLIP-style: every row a method added (kind not ``positive`` or
    ``random``) is one more text column of the image-to-text softmax, for every scene. Another
    scene's caption identical to a scene's own is left out of both softmaxes (it is true)."""
    rows = zip(batch.texts, batch.scene_index, batch.kinds, strict=True)
    owner = {i: t for t, i, k in rows if k == "positive"}
    scenes = sorted(owner)
    if scenes != list(range(len(scenes))) or len(scenes) != len(batch.region_mask):
        raise ValueError("contrastive loss: every scene of the batch needs one positive row")
    added = [t for t, k in zip(batch.texts, batch.kinds, strict=True) if k not in NOT_ADDED]
    captions = [owner[i] for i in scenes]
    ids, attn = pad_text([tokenize(t) for t in captions + added])
    text = model.encode_text(ids.to(device), attn.to(device))
    image = model.encode_image(
        torch.as_tensor(batch.labels).to(device), torch.as_tensor(batch.boxes).to(device),
        torch.as_tensor(batch.region_mask).to(device),
    )  # fmt: skip
    logits = (model.scale() * image @ text.T).float()  # [S, S + added]
    n = len(scenes)
    same = [[a == b and i != j for j, b in enumerate(captions)] for i, a in enumerate(captions)]
    duplicate = torch.tensor(same, dtype=torch.bool, device=logits.device).reshape(n, n)
    target = torch.arange(n, device=logits.device)
    i2t = logits.clone()
    i2t[:, :n] = i2t[:, :n].masked_fill(duplicate, float("-inf"))
    t2i = logits[:, :n].T.masked_fill(duplicate, float("-inf"))
    return 0.5 * (F.cross_entropy(i2t, target) + F.cross_entropy(t2i, target))


__all__ = ["DualMatcher", "box_features", "contrastive_loss"]
