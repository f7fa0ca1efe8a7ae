"""``tags-dc``: TAGS-DC (Fan et al. 2022, Algorithm 1) on the single-stream backbone.

Per step, for the local batch of positive pairs:

1. retrieved negatives for both directions (:mod:`tags.training.retrieval`, no_grad): the
   top ``num_negatives`` of each scored pool or, with ``itm_miner: fne``, a draw from the pool
   by FNE's weights (:mod:`tags.training.pool_selection`, :mod:`tags.mining.fne_pool`);
2. synthetic negatives from a :class:`~tags.training.synthetic.SyntheticSource` (dynamic:
   the shared MLM head refills masked scene-graph units, filtered, top-m by ITM), tokenized
   with WoD labels / WoC targets;
3. masking of the positives for L_MLM: BERT-style (``mlm_masking: bert``) or whole
   scene-graph units as for refilling (``unit``, Algorithm 1 line 5; :mod:`..unit_masking`);
4. one forward of the prepared model over every row (positives, retrieved pairs, synthetic
   pairs, masked positives) with the heads the phase needs;
5. ``L = l_ITM L_ITM + l_MLM L_MLM + l_ISTM L_ISTM + l_WoD L_WoD + l_WoC L_WoC``. L_ITM: the
   ITM miner (default: the paper's mean hinge, margin 0.2) on the retrieved negatives, both
   directions summed; L_ISTM: the ISTM miner on each caption's synthetic pool (default: mean
   triplet over the pool); L_MLM / L_WoD / L_WoC: token cross-entropies. Optional level
   terms (weights ``itm_bce`` / ``istm_bce``, default 0: off): BLIP's own ITM objective,
   the class-balanced binary cross-entropy of the fp32 match logit on the positives and on
   the retrieved (``itm_bce``) or synthetic (``istm_bce``) negatives, :func:`match_bce`. A
   hinge only orders scores; this keeps the positives' level (matched pairs stay "match").

Phases: ``NSG`` (itm, mlm, istm) then ``NSGDC`` (all five) from NSG's saved weights.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from tags.data import pad_text
from tags.data.negatives import pools_for
from tags.mining import FNEMiner
from tags.training.audits import build_audit
from tags.training.losses import IGNORE_INDEX, PoolTripletLoss, TokenCrossEntropy, global_mean
from tags.training.metrics import fne_draw_metrics, fne_summary, mining_metrics
from tags.training.pool_selection import PoolSelection, select_from_pools
from tags.training.recipes.base import (
    Recipe,
    StepContext,
    StepOutput,
    register_recipe,
    to_device,
)
from tags.training.retrieval import score_pools, take
from tags.training.synthetic import (
    EngineSource,
    FixedPoolSource,
    SyntheticRequest,
    SyntheticSource,
    label_negatives,
)
from tags.training.timing import StageTimer

#: The training captions' scene counts for the edit planner (written once per output dir).
PLANNER_CACHE = "planner_scenes.json"


def mask_tokens(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    generators: list[torch.Generator],
    probability: float,
    mask_token_id: int,
    vocab_size: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT masking of each row (80% [MASK], 10% random, 10% kept) over the tokens between
    ``[CLS]`` and the last ``[SEP]``, at least one per row; labels -100 elsewhere."""
    masked = input_ids.clone()
    labels = torch.full_like(input_ids, IGNORE_INDEX)
    for row, g in enumerate(generators):
        length = int(attention_mask[row].sum())
        candidates = torch.arange(1, max(length - 1, 2))
        if length <= 2:
            continue
        pick = torch.rand(candidates.numel(), generator=g) < probability
        if not pick.any():
            pick[torch.randint(candidates.numel(), (1,), generator=g)] = True
        positions = candidates[pick]
        action = torch.rand(positions.numel(), generator=g)
        random_ids = torch.randint(vocab_size, (positions.numel(),), generator=g)
        labels[row, positions] = input_ids[row, positions]
        new = input_ids[row, positions].cpu().clone()
        new = torch.where(action < 0.8, torch.full_like(new, mask_token_id), new)
        new = torch.where((action >= 0.8) & (action < 0.9), random_ids, new)
        masked[row, positions] = new.to(masked.device)
    return masked, labels


def match_bce(
    positive_logits: torch.Tensor,
    negative_logits: torch.Tensor,
    negative_mask: torch.Tensor,
) -> torch.Tensor:
    """Class-balanced binary cross-entropy of match logits (BLIP's 2-way ITM cross-entropy
    on the logit difference): ``(mean_p softplus(-z_p) + mean_n softplus(z_n)) / 2`` over
    the positives ``[B]`` and the valid entries of ``negative_logits`` ``[B, K]``
    (``negative_mask``), in fp32; means global over processes."""
    pos = positive_logits.float().reshape(-1)
    neg = negative_logits.float()
    positive_term = global_mean(nn.functional.softplus(-pos).sum(), pos.numel())
    negative_sum = (nn.functional.softplus(neg) * negative_mask).sum()
    return (positive_term + global_mean(negative_sum, negative_mask.sum())) / 2


@dataclass
class _Retrieved:
    """A step's retrieved negatives: the scored pools, the selection, and the ``k`` chosen
    captions (i2t) and images (t2i) per anchor (``[B, k]`` ids with validity masks)."""

    pools: Any
    selection: PoolSelection
    k: int
    caps: torch.Tensor
    cap_valid: torch.Tensor
    imgs: torch.Tensor
    img_valid: torch.Tensor


@dataclass
class _Rows:
    """The rows of a step's one forward, in order: ``b`` positives, ``b*k`` i2t and ``b*k``
    t2i pairs, ``n_syn`` synthetic pairs from ``syn_start``, masked positives from
    ``mlm_start``; ``images``: each row's image inputs."""

    input_ids: torch.Tensor
    attention: torch.Tensor
    images: dict[str, torch.Tensor]
    b: int
    n_syn: int
    syn_start: int
    mlm_start: int


@register_recipe("tags-dc")
class TagsDCRecipe(Recipe):
    loss_terms = ("itm", "mlm", "istm", "wod", "woc", "itm_bce", "istm_bce")
    default_weights: ClassVar[dict[str, float]] = {
        "itm": 1.0,
        "mlm": 0.1,
        "istm": 1e-3,
        "wod": 0.0,
        "woc": 0.0,
        "itm_bce": 0.0,  # level terms (match_bce), off by default
        "istm_bce": 0.0,
    }
    head_terms: ClassVar[dict[str, tuple[str, ...]]] = {
        "itm": ("itm",), "istm": ("itm",), "mlm": ("mlm",), "wod": ("wod",), "woc": ("woc",),
        "itm_bce": ("itm",), "istm_bce": ("itm",),
    }  # fmt: skip

    def __init__(self, *args: Any, source: SyntheticSource | None = None, **kwargs: Any) -> None:
        """As :class:`Recipe`; ``source``: the synthetic negatives (default: from the config)."""
        super().__init__(*args, **kwargs)
        config, tokenizer = self.config, self.tokenizer
        cfg = config.tags_dc
        # issue 12: every model call goes through self.backend (TagsModel: the model itself,
        # BLIP: ITM + TAGS heads on the image-grounded text encoder, saved beside it)
        self.trainable = self.backend.trainable_module()
        self.itm_loss = PoolTripletLoss(cfg.itm_miner.name, **cfg.itm_miner.kwargs)
        self.istm_loss = PoolTripletLoss(cfg.istm_miner.name, **cfg.istm_miner.kwargs)
        # FNE (issue 16): statistics from the retrieved pools' right anchors; as the ITM miner
        # it draws the retrieved negatives, and the loss over the draw is `fne_itm_loss`
        self.fne_miners = [
            m for m in (self.itm_loss.miner, self.istm_loss.miner) if isinstance(m, FNEMiner)
        ]
        self.itm_draw_loss = None
        if isinstance(self.itm_loss.miner, FNEMiner):
            margin = self.itm_loss.miner.margin
            self.itm_draw_loss = PoolTripletLoss(cfg.fne_itm_loss, margin=margin)
        # the texts and scenes are held only when asked for
        self.audit = build_audit("retrieval", cfg.truth_scenes, self.dataset)
        self.token_loss = TokenCrossEntropy()
        self.wod_loss = TokenCrossEntropy(cfg.wod_class_weights)
        self.unit_masker = None
        if cfg.mlm_masking == "unit":
            from tags.training.unit_masking import UnitMLMMasker

            self.unit_masker = UnitMLMMasker(tokenizer, cfg.synthetic.mask_ratio)
        self.source = source if source is not None else self._default_source()
        self.timer = StageTimer()  # time/retrieval, time/synthetic, time/forward
        self.truth = build_audit("synthetic", cfg.synthetic.truth_audit, self.dataset)

    @classmethod
    def validate(cls, config: Any) -> None:
        from tags.core.errors import ConfigError

        super().validate(config)
        syn = config.tags_dc.synthetic
        if syn.source == "fixed" and not config.data.negatives:
            raise ConfigError("tags_dc.synthetic.source=fixed needs data.negatives")
        if syn.source == "static" and not syn.static_generator:
            raise ConfigError("tags_dc.synthetic.source=static needs static_generator (a dir)")
        for key in ("itm_miner", "istm_miner"):
            name = getattr(config.tags_dc, key).name
            if name in ("aoq", "ndgl"):
                raise ConfigError(
                    f"tags_dc.{key}: {name!r} needs extra inputs (offline negatives or "
                    "reference scores); use it with the vse recipe"
                )
        for i, phase in enumerate(config.phases):
            for term in ("itm_bce", "istm_bce"):
                weight = phase.weights.get(term, 0.0)
                if weight < 0:
                    raise ConfigError(f"phases.{i}.weights.{term} must be >= 0, got {weight}")
            if phase.weights.get("istm_bce", 0.0) > 0 and syn.source == "none":
                raise ConfigError(
                    f"phases.{i}.weights.istm_bce scores the synthetic negatives: set "
                    "tags_dc.synthetic.source (dynamic, static or fixed), or use itm_bce"
                )
        from tags.mining import list_miners

        loss = config.tags_dc.fne_itm_loss
        if loss in ("aoq", "ndgl", "fne") or loss not in list_miners():
            raise ConfigError(
                "tags_dc.fne_itm_loss: the loss over FNE's drawn negatives must be a plain "
                "miner (all, hardest, semi_hard, topk, selhn)"
            )

    def _default_source(self) -> SyntheticSource | None:
        syn = self.config.tags_dc.synthetic
        max_len = self.config.data.max_text_len
        if syn.source == "none":
            return None
        if syn.source == "fixed":
            return FixedPoolSource(pools_for(self.config.data, self.dataset), syn.top_m)
        static = None
        if syn.source == "static":
            from tags.modeling import StaticMLMGenerator

            static = StaticMLMGenerator.from_pretrained(syn.static_generator)
            static.to(self.accelerator.device)
        if not (syn.planner and syn.masking == "unit" and self.dataset is not None):
            return EngineSource(self.tokenizer, syn, max_len, static)
        corpus = [self.dataset.text(i) for i in range(len(self.dataset))]
        cache = Path(self.config.output_dir) / PLANNER_CACHE
        # the main process parses the captions once; the others (and a resume) read its file
        with self.accelerator.main_process_first():
            return EngineSource(
                self.tokenizer, syn, max_len, static, corpus=corpus, planner_cache=cache
            )

    def stateful(self) -> list[Any]:
        return [self.itm_loss.miner, self.istm_loss.miner]

    def start_epoch(self, epoch: int) -> None:
        for miner in self.fne_miners:  # statistics per epoch, as the official FNE
            miner.start_epoch()

    @property
    def module(self) -> nn.Module:
        return self.trainable

    def tags_model(self, module: nn.Module) -> nn.Module:
        """The unwrapped model (a backend's HF model, not the module with its heads)."""
        unwrapped = self.accelerator.unwrap_model(module)
        return getattr(unwrapped, "hf_model", unwrapped)

    def phase_weights_ready(self, index: int, phase: Any, module: nn.Module) -> None:
        """``tags_dc.woc_init: mlm``: the first phase that trains WoC starts it from MLM."""
        if self.config.tags_dc.woc_init != "mlm" or self.weights(phase).get("woc", 0) <= 0:
            return
        if any(self.weights(p).get("woc", 0) > 0 for p in self.config.phases[:index]):
            return  # WoC was trained already: keep it
        self.accelerator.unwrap_model(module).init_woc_from_mlm()

    # ------------------------------------------------------------------ step
    def training_step(
        self, module: nn.Module, batch: dict[str, Any], ctx: StepContext
    ) -> StepOutput:
        """One micro-batch of Algorithm 1: retrieved and synthetic negatives, masked
        positives, one forward over every row, the weighted loss terms."""
        w = ctx.weights
        index = batch["index"].tolist()
        found = self._retrieve(batch, ctx, index)
        use_syn = self.source is not None and any(
            w[name] > 0 for name in ("istm", "wod", "woc", "istm_bce")
        )
        labelled = audited = None
        started = time.perf_counter()
        if use_syn:
            labelled, audited = self._synthesize(batch, ctx, index)
            self.timer.add("synthetic", time.perf_counter() - started)
            started = time.perf_counter()
        masked = self._mask_positives(batch, ctx, index) if w["mlm"] > 0 else None
        rows = self._rows(batch, found, labelled, masked)
        out, labels, wod_labels, positions = self._forward(module, rows, labelled, masked, w)
        loss, metrics = self._losses(
            batch, ctx, found, labelled, rows, out, labels, wod_labels, positions
        )
        if use_syn and self.truth is not None:
            metrics |= audited
        self.timer.add("forward", time.perf_counter() - started)  # rows, heads and losses
        metrics |= self.timer.metrics()
        return StepOutput(loss=loss, metrics=metrics)

    def _retrieve(self, batch: dict[str, Any], ctx: StepContext, index: list[int]) -> _Retrieved:
        """Retrieved negatives (no_grad): the top-k of each scored pool, or FNE's draw."""
        cfg = self.config.tags_dc
        gens = [ctx.generator(10, i) for i in index]
        with self.timer("retrieval"):
            pools = score_pools(
                self.backend,
                self.dataset,
                batch,
                gens,
                cfg.retrieval,
                self.accelerator.autocast,
                positives=bool(self.fne_miners),
            )
            k = cfg.retrieval.num_negatives
            selection = select_from_pools(
                pools, k, self.fne_miners, self.itm_draw_loss is not None, ctx, index
            )
            caps, cap_valid = take(pools.captions, selection.i2t, k)
            imgs, img_valid = take(pools.images, selection.t2i, k)
        return _Retrieved(pools, selection, k, caps, cap_valid, imgs, img_valid)

    def _synthesize(
        self, batch: dict[str, Any], ctx: StepContext, index: list[int]
    ) -> tuple[Any, Any]:
        """Synthetic negatives (no_grad) from the source, tokenized with WoD / WoC labels;
        and their scene-truth audit (``None`` when off)."""
        request = SyntheticRequest(
            texts=list(batch["texts"]),
            caption_ids=list(batch["caption_ids"]),
            other_captions=[self.dataset.other_captions(i) for i in index],
            region_features=batch.get("region_features"),
            region_boxes=batch.get("region_boxes"),
            region_mask=batch.get("region_mask"),
            seed=ctx.generator(30).initial_seed(),
            pixel_values=batch.get("pixel_values"),
        )
        with self.accelerator.autocast():
            negatives = self.source(self.backend, request)
        labelled = label_negatives(
            request.texts, negatives, self.tokenizer, self.config.data.max_text_len
        )
        audited = None
        if self.truth is not None:
            audited = self.truth(
                batch["image_ids"].tolist(),
                [[t for t, _ in p] for p in negatives],
                [[e for _, e in p] for p in negatives],
            )
        return labelled, audited

    def _mask_positives(
        self, batch: dict[str, Any], ctx: StepContext, index: list[int]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The positives masked for L_MLM (BERT-style, or scene-graph units) and their labels."""
        cfg = self.config.tags_dc
        masked_ids, mlm_labels = mask_tokens(
            batch["input_ids"],
            batch["attention_mask"],
            [ctx.generator(20, i) for i in index],
            cfg.mlm_probability,
            self.backend.mask_token_id,
            self.backend.vocab_size,
        )
        if self.unit_masker is not None:  # Algorithm 1, line 5: scene-graph units
            unit_ids, unit_labels, empty = self.unit_masker(
                batch["input_ids"],
                list(batch["texts"]),
                [ctx.generator(21, i).initial_seed() for i in index],
                self.config.data.max_text_len,
                self.backend.mask_token_id,
            )
            b = batch["input_ids"].shape[0]
            rows = [r for r in range(b) if r not in set(empty)]  # others: BERT masking
            masked_ids[rows], mlm_labels[rows] = unit_ids[rows], unit_labels[rows]
        return masked_ids, mlm_labels

    def _rows(
        self,
        batch: dict[str, Any],
        found: _Retrieved,
        labelled: Any,
        masked: tuple[torch.Tensor, torch.Tensor] | None,
    ) -> _Rows:
        """The rows of one forward: texts (padded) and the image each row shows."""
        device = batch["input_ids"].device
        b, k = batch["input_ids"].shape[0], found.k
        pos_text = [r[: int(m.sum())] for r, m in zip(batch["input_ids"], batch["attention_mask"])]
        texts: list[torch.Tensor] = list(pos_text)  # positives
        region_rows: list[int] = list(range(b))
        texts += [
            torch.tensor(self.dataset.tokens(int(c)), device=device) for c in found.caps.reshape(-1)
        ]
        region_rows += [a for a in range(b) for _ in range(k)]  # i2t: anchor image
        texts += [pos_text[a] for a in range(b) for _ in range(k)]  # t2i: anchor caption
        region_rows += [b + j for j in range(b * k)]
        n_syn = len(labelled.owner) if labelled else 0
        syn_start = len(texts)
        if n_syn:
            texts += [torch.tensor(ids, device=device) for ids in labelled.input_ids]
            region_rows += labelled.owner
        mlm_start = len(texts)
        if masked is not None:
            texts += [r[: int(m.sum())] for r, m in zip(masked[0], batch["attention_mask"])]
            region_rows += list(range(b))
        input_ids, attention = pad_text(texts, self.tokenizer.pad_token_id or 0)
        input_ids, attention = input_ids.to(device), attention.to(device)

        # image bank: the batch's images, then the retrieved images; row r shows region_rows[r]
        bank = self.backend.image_items(batch) + [
            to_device(self.dataset.image(i), device) for i in found.imgs.reshape(-1).tolist()
        ]
        row_images = {
            k: v.to(device) for k, v in self.backend.row_images(bank, region_rows).items()
        }
        return _Rows(input_ids, attention, row_images, b, n_syn, syn_start, mlm_start)

    def _forward(
        self,
        module: nn.Module,
        rows: _Rows,
        labelled: Any,
        masked: tuple[torch.Tensor, torch.Tensor] | None,
        w: dict[str, float],
    ) -> tuple[Any, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        """The rows' token labels (WoC, WoD, MLM) and one forward with the heads the phase
        needs: ``(out, labels, wod_labels, positions)``."""
        device = rows.input_ids.device
        syn_start, mlm_start = rows.syn_start, rows.mlm_start
        size = (rows.input_ids.shape[0], rows.input_ids.shape[1])
        labels = torch.full(size, IGNORE_INDEX, dtype=torch.long, device=device)
        wod_labels = torch.full_like(labels, IGNORE_INDEX)
        if rows.n_syn:
            edited_only = self.config.tags_dc.woc_positions == "edited"
            for n in range(rows.n_syn):
                woc = torch.tensor(labelled.woc_labels[n], device=device)
                if edited_only:  # the official forward_gd: the refilled positions only
                    inside = torch.tensor(labelled.edited[n], dtype=torch.bool, device=device)
                    woc = woc.masked_fill(~inside, IGNORE_INDEX)
                labels[syn_start + n, : woc.numel()] = woc
                wod = torch.tensor(labelled.wod_labels[n], device=device)
                wod_labels[syn_start + n, : wod.numel()] = wod
        use_mlm = masked is not None
        if use_mlm:
            mlm_labels = masked[1]
            labels[mlm_start:, : mlm_labels.shape[1]] = mlm_labels.to(device)
        heads = ["itm"]
        use_wod = w["wod"] > 0 and labelled is not None
        use_woc = w["woc"] > 0 and labelled is not None
        if use_mlm:
            heads.append("mlm")
        if use_wod:
            heads.append("wod")
        if use_woc:
            heads.append("woc")
        # each vocabulary head reads only its own rows' labelled positions: L_MLM the masked
        # positives, L_WoC the synthetic negatives (30k-way logits are most of NSGDC's cost)
        labelled_positions = labels != IGNORE_INDEX
        positions: dict[str, torch.Tensor] = {}
        if use_mlm:
            positions["mlm"] = labelled_positions.clone()
            positions["mlm"][:mlm_start] = False
        if use_woc:
            positions["woc"] = labelled_positions.clone()
            positions["woc"][:syn_start] = False
            positions["woc"][mlm_start:] = False
        out = module(
            input_ids=rows.input_ids,
            attention_mask=rows.attention,
            **rows.images,
            heads=tuple(heads),
            masked_positions=positions or None,
        )
        return out, labels, wod_labels, positions

    def _losses(
        self,
        batch: dict[str, Any],
        ctx: StepContext,
        found: _Retrieved,
        labelled: Any,
        rows: _Rows,
        out: Any,
        labels: torch.Tensor,
        wod_labels: torch.Tensor,
        positions: dict[str, torch.Tensor],
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """``L = sum_t l_t L_t`` over the terms (in their fixed order) and the step's metrics."""
        w, b, device = ctx.weights, rows.b, rows.input_ids.device
        scores = out.itm_scores.reshape(-1)
        s_pos, losses, metrics = self._itm_terms(batch, scores, found, b)
        syn_scores, syn_mask, where = self._synthetic_scores(scores, labelled, rows)
        if labelled is not None:  # synthetic negatives were made: L_ISTM over their pools
            extra = {}
            if isinstance(self.istm_loss.miner, FNEMiner):  # one number per caption (resume)
                u = [
                    torch.rand((), generator=ctx.generator(31, i), dtype=torch.float64)
                    for i in batch["index"].tolist()
                ]
                extra["uniforms"] = torch.stack(u).to(device)
            losses["istm"], o_syn = self.istm_loss(s_pos, syn_scores, syn_mask, **extra)
            metrics |= mining_metrics(
                "istm", self.istm_loss.miner, o_syn, syn_scores, s_pos, syn_mask
            )
        metrics["synthetic/per_caption"] = torch.tensor(rows.n_syn / max(b, 1), device=device)

        if w["itm_bce"] > 0 or w["istm_bce"] > 0:  # level terms, on fp32 logits
            logits = out.itm_logits.float().reshape(-1)
            if w["itm_bce"] > 0:
                retrieved = logits[b : b + 2 * b * found.k].reshape(2 * b, found.k)
                losses["itm_bce"] = match_bce(
                    logits[:b], retrieved, torch.cat([found.cap_valid, found.img_valid]).bool()
                )
            if w["istm_bce"] > 0:
                syn_logits = torch.zeros_like(syn_scores, dtype=logits.dtype)
                if rows.n_syn:
                    syn_logits = syn_logits.index_put(
                        where, logits[rows.syn_start : rows.mlm_start]
                    )
                losses["istm_bce"] = match_bce(logits[:b], syn_logits, syn_mask)
        if "mlm" in positions:
            losses["mlm"] = self.token_loss(out.mlm_logits, labels[positions["mlm"]])
        if "woc" in positions:
            losses["woc"] = self.token_loss(out.woc_logits, labels[positions["woc"]])
        if w["wod"] > 0 and labelled is not None:
            losses["wod"] = self.wod_loss(
                out.wod_logits[rows.syn_start : rows.mlm_start],
                wod_labels[rows.syn_start : rows.mlm_start],
            )
        loss = sum(w[name] * value for name, value in losses.items())
        metrics |= {f"loss/{name}": value.detach().float() for name, value in losses.items()}
        return loss, metrics

    def _itm_terms(
        self, batch: dict[str, Any], scores: torch.Tensor, found: _Retrieved, b: int
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """L_ITM on the retrieved negatives (both directions summed) and its metrics;
        ``(s_pos, losses, metrics)`` with the other terms at zero."""
        k = found.k
        s_pos = scores[:b]
        s_i2t = scores[b : b + b * k].reshape(b, k)
        s_t2i = scores[b + b * k : b + 2 * b * k].reshape(b, k)
        itm_loss = self.itm_draw_loss or self.itm_loss
        l_i2t, o_i2t = itm_loss(s_pos, s_i2t, found.cap_valid)
        l_t2i, o_t2i = itm_loss(s_pos, s_t2i, found.img_valid)
        zero = scores.sum() * 0.0
        losses = {"itm": l_i2t + l_t2i, "mlm": zero, "istm": zero, "wod": zero, "woc": zero}
        metrics: dict[str, torch.Tensor] = {
            "loss/itm_i2t": l_i2t.detach(),
            "loss/itm_t2i": l_t2i.detach(),
            "itm/pos_score": s_pos.detach().float().mean(),
        }
        metrics |= mining_metrics("itm_i2t", itm_loss.miner, o_i2t, s_i2t, s_pos, found.cap_valid)
        metrics |= mining_metrics("itm_t2i", itm_loss.miner, o_t2i, s_t2i, s_pos, found.img_valid)
        if found.selection.draws is not None:
            metrics |= fne_draw_metrics("itm_i2t", found.selection.draws["i2t"])
            metrics |= fne_draw_metrics("itm_t2i", found.selection.draws["t2i"])
        if self.fne_miners:
            metrics |= fne_summary(self.fne_miners[0], batch["input_ids"].device)
        if self.audit is not None:
            metrics |= self._audit(batch, found, o_i2t, o_t2i)
        return s_pos, losses, metrics

    def _synthetic_scores(
        self, scores: torch.Tensor, labelled: Any, rows: _Rows
    ) -> tuple[torch.Tensor, torch.Tensor, Any]:
        """Each caption's synthetic pool as ``[B, width]`` scores with a validity mask, and
        the ``(owner, slot)`` index that placed them (``None`` without synthetic rows)."""
        b, device = rows.b, rows.input_ids.device
        syn_scores = torch.zeros(b, 1, device=device, dtype=scores.dtype)
        syn_mask = torch.zeros(b, 1, dtype=torch.bool, device=device)
        if not rows.n_syn:
            return syn_scores, syn_mask, None
        owner = torch.tensor(labelled.owner, device=device)
        width = int(torch.bincount(owner, minlength=b).max())
        slot = torch.cat([torch.arange(int((owner == a).sum()), device=device) for a in range(b)])
        syn_scores = torch.zeros(b, width, device=device, dtype=scores.dtype)
        syn_mask = torch.zeros(b, width, dtype=torch.bool, device=device)
        syn_scores = syn_scores.index_put((owner, slot), scores[rows.syn_start : rows.mlm_start])
        syn_mask[owner, slot] = True
        return syn_scores, syn_mask, (owner, slot)

    def _audit(
        self, batch: dict[str, Any], found: _Retrieved, o_i2t: Any, o_t2i: Any
    ) -> dict[str, torch.Tensor]:
        """Scene truth of this step's retrieved candidates (``tags_dc.truth_scenes``)."""
        pools, selection = found.pools, found.selection
        cap_valid, img_valid = found.cap_valid, found.img_valid
        truth_i2t, truth_t2i = self.audit.pool_truth(
            batch["index"].tolist(), batch["image_ids"].tolist(), pools
        )
        fne = next((m for m in self.fne_miners if m.ready), None)
        metrics: dict[str, torch.Tensor] = {}
        for prefix, truth, scores, mask, cols, out, valid in (
            ("itm_i2t", truth_i2t, pools.caption_scores, pools.caption_mask, selection.i2t,
             o_i2t, cap_valid),
            ("itm_t2i", truth_t2i, pools.image_scores, pools.image_mask, selection.t2i,
             o_t2i, img_valid),
        ):  # fmt: skip
            selected = out.selected if out.selected is not None else valid
            posterior = None if fne is None else fne.posterior(scores)
            metrics |= self.audit.direction_metrics(
                prefix, truth, scores, mask, cols, selected & valid, posterior,
                fne=bool(self.fne_miners),
            )  # fmt: skip
        return metrics


__all__ = ["TagsDCRecipe", "mask_tokens", "match_bce"]
