"""``pretrain``: UNITER-style pre-training of the shared backbone before fine-tuning.

TAGS-DC and the mining baselines fine-tune a *pre-trained* vision-language model. Where no
pre-trained weights exist (the shapes benchmark, a new feature extractor), this recipe
makes one from scratch. Per step, for the local batch of positive pairs:

- **L_ITM**: binary cross-entropy of the ITM head on the positives and on random negatives
  (``pretrain.itm_negatives``: a random caption of another image for each image, a random
  other image for each caption, or both), as in UNITER's ITM pre-training;
- **L_MLM**: BERT masking of the positives, predicted with the image (UNITER's MLM);
- **L_ITC**: in-batch InfoNCE between the dual-mode embeddings (``encode_image`` /
  ``encode_text``) of every process (``gather_with_grad``), both directions, the other
  captions of an anchor's image masked out. Aligning the modalities before fusion (ALBEF)
  is what lets a small scratch cross-encoder leave the ITM plateau in a few hundred steps
  (measured in docs/demo.md).

All three terms come from one forward of :class:`PretrainModule` (one DDP call), through
the model's backend (:mod:`tags.backends`): TagsModel on region features, or a pixel backend
with a cross-encoder (BLIP, BLIP-2: ITM head, an MLM head on the image-grounded text states
tied to the word embeddings and saved beside the model, ITC). The recipe asks the backend
for the capabilities its weighted terms need (``itm``, ``mlm``, ``itc``, and token states
for the MLM head) and names what is missing (CLIP/SigLIP have no ITM and no MLM).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from tags.backends import as_backend
from tags.core.distributed import all_gather_no_grad, gather_sizes, gather_with_grad, get_rank
from tags.data import pad_text
from tags.training.losses import IGNORE_INDEX, TokenCrossEntropy, global_mean
from tags.training.recipes.base import (
    Recipe,
    StepContext,
    StepOutput,
    register_recipe,
    to_device,
)
from tags.training.recipes.tags_dc import mask_tokens

#: backend capability each loss term needs
TERM_CAPABILITY = {"itm": "itm", "mlm": "mlm", "itc": "itc"}
TERM_PURPOSE = {
    "itm": "L_ITM scores (image, caption) pairs with a cross-encoder",
    "mlm": "L_MLM predicts masked words from the image-grounded text",
    "itc": "L_ITC aligns text and image embeddings",
}


class PretrainModule(nn.Module):
    """One ``forward`` gives the joint outputs (ITM logits, MLM logits) of a backend's
    trainable module (TagsModel itself, or an HF model with its TAGS heads) and the
    dual-mode embeddings of the batch."""

    def __init__(self, model: nn.Module, backend: Any = None) -> None:
        super().__init__()
        self.backend = backend if backend is not None else as_backend(model)
        self.model = self.backend.trainable_module(("mlm",))  # TagsModel: the model itself

    def forward(
        self,
        joint: dict[str, torch.Tensor],
        masked_positions: torch.Tensor,
        dual_text: dict[str, torch.Tensor] | None,
        dual_image: dict[str, torch.Tensor] | None,
    ) -> tuple[Any, torch.Tensor | None, torch.Tensor | None]:
        out = self.model(**joint, heads=("itm", "mlm"), masked_positions=masked_positions)
        if dual_text is None or dual_image is None:
            return out, None, None
        return out, self.backend.encode_image(dual_image), self.backend.encode_text(dual_text)


def sample_by_similarity(
    scores: torch.Tensor, anchor_ids: torch.Tensor, generator: torch.Generator
) -> list[int]:
    """ALBEF's ITM hard negatives: for each anchor row of ``[A, C]`` similarity logits, one
    column drawn with probability ``softmax(row)`` over the candidates of other images
    (``anchor_ids`` are the image ids of both the anchors and the candidates)."""
    same = anchor_ids[:, None] == anchor_ids[None, :]
    if bool(same.all(1).any()):
        raise ValueError(
            "pretrain.itm_sampling=itc needs captions of at least two images in every batch"
        )
    logits = scores.detach().float().cpu().masked_fill(same.cpu(), float("-inf"))
    probs = torch.softmax(logits, dim=1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(1).tolist()


def sample_other(n: int, exclude: set[int], generator: torch.Generator, what: str = "item") -> int:
    """A uniform draw from ``range(n)`` outside ``exclude`` (rejection, then a scan)."""
    if len(exclude) >= n:
        raise ValueError(f"no {what} left to sample a negative from (all {n} excluded)")
    for _ in range(64):
        pick = int(torch.randint(n, (1,), generator=generator))
        if pick not in exclude:
            return pick
    allowed = [i for i in range(n) if i not in exclude]
    return allowed[int(torch.randint(len(allowed), (1,), generator=generator))]


def info_nce(
    scores: torch.Tensor, own: torch.Tensor, anchor_ids: torch.Tensor, candidate_ids: torch.Tensor
) -> torch.Tensor:
    """Summed InfoNCE of ``[A, C]`` scaled similarities; anchor ``a``'s positive is column
    ``own[a]``, and the other candidates of its own image are not negatives."""
    same = anchor_ids[:, None] == candidate_ids[None, :]
    rows = torch.arange(scores.shape[0], device=scores.device)
    same[rows, own] = False
    logits = scores.float().masked_fill(same, torch.finfo(torch.float32).min)
    return F.cross_entropy(logits, own, reduction="sum")


@register_recipe("pretrain")
class PretrainRecipe(Recipe):
    loss_terms = ("itm", "mlm", "itc")
    default_weights: ClassVar[dict[str, float]] = {"itm": 1.0, "mlm": 1.0, "itc": 1.0}
    head_terms: ClassVar[dict[str, tuple[str, ...]]] = {"itm": ("itm",), "mlm": ("mlm",)}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """As :class:`Recipe` (``config, accelerator, model, tokenizer, dataset, backend``)."""
        super().__init__(*args, **kwargs)
        self._check_capabilities(self.config)
        self.wrapper = PretrainModule(self.model, self.backend)
        self.token_loss = TokenCrossEntropy()

    def _check_capabilities(self, config: Any) -> None:
        """Every weighted term's capability, with the MLM head created where the backend can
        carry one (BLIP: on its image-grounded token states); else an error naming it."""
        backend = self.backend
        backend.require("itm", f"pretrain: {TERM_PURPOSE['itm']}")  # the joint forward's head
        backend.require("token_states", f"pretrain: {TERM_PURPOSE['mlm']}")
        backend.ensure_heads(("mlm",))  # BLIP: an MLM head tied to the word embeddings
        used = {t for phase in config.phases for t, w in self.weights(phase).items() if w > 0}
        for term in sorted(used):
            backend.require(TERM_CAPABILITY[term], f"pretrain: {TERM_PURPOSE[term]}")

    @classmethod
    def validate(cls, config: Any) -> None:
        from tags.core.errors import ConfigError

        super().validate(config)
        if config.pretrain.itc_temperature <= 0:
            raise ConfigError("pretrain.itc_temperature must be > 0")
        if not 0.0 < config.pretrain.mlm_probability < 1.0:
            raise ConfigError("pretrain.mlm_probability must lie in (0, 1)")

    @property
    def module(self) -> nn.Module:
        return self.wrapper

    def tags_model(self, module: nn.Module) -> nn.Module:
        """The unwrapped model (a backend's HF model, not the module with its heads)."""
        inner = self.accelerator.unwrap_model(module).model
        return getattr(inner, "hf_model", inner)

    # ------------------------------------------------------------------ step
    def _negatives(self, batch: dict[str, Any], ctx: StepContext) -> tuple[list[int], list[int]]:
        """Random negative caption indices (for the images) and image indices (for the
        captions), each a pure function of (seed, step, anchor)."""
        mode = self.config.pretrain.itm_negatives
        ds = self.dataset
        captions: list[int] = []
        images: list[int] = []
        for index, image in zip(batch["index"].tolist(), batch["image_ids"].tolist()):
            g = ctx.generator(40, index)
            if mode in ("caption", "both"):
                captions.append(self._other_caption(image, g))
            if mode in ("image", "both"):
                images.append(sample_other(ds.num_images, {image}, g, "image"))
        return captions, images

    @torch.no_grad()
    def _itc_negatives(
        self, batch: dict[str, Any], ctx: StepContext
    ) -> tuple[list[int], list[int]]:
        """ITM negatives from the local batch by ITC similarity (ALBEF/BLIP): the batch rows
        of the negative captions (one per image) and of the negative images (one per
        caption), drawn from the softmax of the current (detached) dual-mode similarities."""
        backend = self.backend
        mode = self.config.pretrain.itm_negatives
        text = {k: batch[k] for k in ("input_ids", "attention_mask")}
        image_emb = backend.encode_image(backend.image_batch(batch))
        text_emb = backend.encode_text(text)
        scores = backend.similarity(image_emb, text_emb) / self.config.pretrain.itc_temperature
        ids = batch["image_ids"]
        g = ctx.generator(41)
        captions = sample_by_similarity(scores, ids, g) if mode in ("caption", "both") else []
        images = sample_by_similarity(scores.t(), ids, g) if mode in ("image", "both") else []
        return captions, images

    def _other_caption(self, image: int, generator: torch.Generator) -> int:
        image_of = self.dataset.image_of
        for _ in range(64):
            pick = int(torch.randint(len(image_of), (1,), generator=generator))
            if int(image_of[pick]) != image:
                return pick
        others = (image_of != image).nonzero().flatten()
        if others.numel() == 0:
            raise ValueError("pretrain ITM needs captions of at least two images")
        return int(others[torch.randint(others.numel(), (1,), generator=generator)])

    def training_step(
        self, module: nn.Module, batch: dict[str, Any], ctx: StepContext
    ) -> StepOutput:
        cfg = self.config.pretrain
        backend = self.backend
        device = batch["input_ids"].device
        w = ctx.weights
        b = batch["input_ids"].shape[0]
        index = batch["index"].tolist()
        pad_id = self.tokenizer.pad_token_id or 0
        pos_text = [r[: int(m.sum())] for r, m in zip(batch["input_ids"], batch["attention_mask"])]
        masked_ids, mlm_labels = mask_tokens(
            batch["input_ids"],
            batch["attention_mask"],
            [ctx.generator(20, i) for i in index],
            cfg.mlm_probability,
            backend.mask_token_id,
            backend.vocab_size,
        )
        # rows: positives, (image, negative caption), (negative image, caption), masked
        # positives; negatives drawn at random from the dataset, or by ITC from the batch
        if cfg.itm_sampling == "itc":
            caption_rows, image_rows = self._itc_negatives(batch, ctx)
            neg_texts = [pos_text[j] for j in caption_rows]
            neg_image_rows, extra_images = image_rows, []
        else:
            neg_caps, extra_images = self._negatives(batch, ctx)
            neg_texts = [torch.tensor(self.dataset.tokens(c), device=device) for c in neg_caps]
            neg_image_rows = [b + j for j in range(len(extra_images))]
        texts = pos_text + neg_texts + (list(pos_text) if neg_image_rows else [])
        mlm_start = len(texts)
        texts += [r[: int(m.sum())] for r, m in zip(masked_ids, batch["attention_mask"])]
        region_rows = list(range(b)) + (list(range(b)) if neg_texts else [])
        region_rows += list(neg_image_rows) + list(range(b))

        input_ids, attention = pad_text(texts, pad_id)
        # image bank: the batch's images, then the negative images; row r shows region_rows[r]
        bank = backend.image_items(batch) + [
            to_device(self.dataset.image(i), device) for i in extra_images
        ]
        joint = {
            "input_ids": input_ids.to(device),
            "attention_mask": attention.to(device),
            **{k: v.to(device) for k, v in backend.row_images(bank, region_rows).items()},
        }
        labels = torch.full(input_ids.shape, IGNORE_INDEX, dtype=torch.long, device=device)
        labels[mlm_start:, : mlm_labels.shape[1]] = mlm_labels.to(device)
        masked_positions = labels != IGNORE_INDEX
        use_itc = w["itc"] > 0
        dual_text = dual_image = None
        if use_itc:
            dual_text = {k: batch[k] for k in ("input_ids", "attention_mask")}
            dual_image = backend.image_batch(batch)
        out, image_emb, text_emb = module(joint, masked_positions, dual_text, dual_image)

        # L_ITM: binary cross-entropy over positives and negatives
        logits = out.itm_logits.reshape(-1)[:mlm_start].float()
        target = torch.zeros_like(logits)
        target[:b] = 1.0
        bce = F.binary_cross_entropy_with_logits(logits, target, reduction="sum")
        l_itm = global_mean(bce, logits.numel())
        # L_MLM
        l_mlm = self.token_loss(out.mlm_logits, labels[masked_positions])
        # L_ITC
        zero = logits.sum() * 0.0
        l_itc = zero
        metrics: dict[str, torch.Tensor] = {}
        if use_itc:
            ids = batch["image_ids"].to(device)
            all_ids = all_gather_no_grad(ids)
            offset = sum(gather_sizes(b, device)[: get_rank()])
            own = offset + torch.arange(b, device=device)
            scale = 1.0 / cfg.itc_temperature
            i2t = backend.similarity(image_emb, gather_with_grad(text_emb)) * scale
            t2i = backend.text_similarity(text_emb, gather_with_grad(image_emb)) * scale
            total = info_nce(i2t, own, ids, all_ids) + info_nce(t2i, own, ids, all_ids)
            l_itc = global_mean(total / 2, b)
            with torch.no_grad():
                metrics["itc/i2t_acc"] = (i2t.argmax(1) == own).float().mean()
        with torch.no_grad():
            pos, neg = logits[:b], logits[b:]
            metrics["itm/pos_score"] = torch.sigmoid(pos).mean()
            metrics["itm/neg_score"] = torch.sigmoid(neg).mean() if neg.numel() else zero
            metrics["itm/accuracy"] = ((logits > 0).float() == target).float().mean()
        losses = {"itm": l_itm, "mlm": l_mlm, "itc": l_itc}
        loss = sum(w[name] * value for name, value in losses.items())
        metrics |= {f"loss/{name}": value.detach().float() for name, value in losses.items()}
        return StepOutput(loss=loss, metrics=metrics)


__all__ = [
    "PretrainModule",
    "PretrainRecipe",
    "info_nce",
    "sample_by_similarity",
    "sample_other",
]
