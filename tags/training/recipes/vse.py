"""``vse``: dual-encoder training of the shared backbone (VSE++ / SelHN / FNE / AOQ / NDGL).

Per step: image and caption embeddings (``encode_image`` / ``encode_text``) of the local batch
in one forward of :class:`DualEncoder`; candidates are the captions/images of every process
(``gather_with_grad``) or, with ``vse.queue_size > 0``, the momentum keys of the global batch
followed by the FNE memory queue; any registered miner on both directions. Optional extras:
synthetic negative captions of each caption (``data.negatives``) as additional text
candidates of its own image only; AOQ offline negatives (phases with ``miner: aoq``, ranked
with the previous phase's model at the phase start, before the phase's ``init`` weights are
loaded: the official round 2; saved beside the phase's model and reloaded on resume).

Every similarity goes through the backend (``similarity``, ``text_similarity``,
``pair_similarity``): a dot product of single vectors, or for BLIP-2 the max over the
image's query embeddings (its ITC), so the miners run on any backend with ``itc``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from tags.backends import as_backend
from tags.core.distributed import all_gather_no_grad, gather_sizes, gather_with_grad, get_rank
from tags.data import NegativePools, pad_text
from tags.data.negatives import pools_for
from tags.mining import (
    FeatureQueue,
    FNEMiner,
    MomentumEncoder,
    NDGLMiner,
    OfflineNegatives,
    ReferenceScores,
    build_offline_negatives,
    direction_pairs,
    get_miner,
)
from tags.training.metrics import fne_summary, mining_metrics
from tags.training.recipes.base import (
    Recipe,
    StepContext,
    StepOutput,
    register_recipe,
    to_device,
)
from tags.training.retrieval import encode_dataset

#: AOQ's ranking of the training set, saved in ``output_dir/phases/{index}_{name}/``.
OFFLINE_FILE = "aoq_offline_negatives.pt"
TEXT_KEYS = ("input_ids", "attention_mask")
CONTRASTIVE = ("infonce", "sigmoid")


class DualEncoder(nn.Module):
    """Wraps a model so that one ``forward`` (one DDP call) encodes both modalities, through
    its backend (:mod:`tags.backends`: region features for TagsModel, pixels for CLIP & co.)."""

    def __init__(self, model: nn.Module, backend: Any = None) -> None:
        super().__init__()
        self.model = model
        self.backend = backend if backend is not None else as_backend(model)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **image: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        """``(image_emb [N_img, H] (BLIP-2: [N_img, Q, H]), text_emb [N_txt, H],
        logit_params)``, L2-normalised;
        ``image`` holds the backend's image batch (``region_*`` or ``pixel_values``);
        ``logit_params``: the contrastive loss's learned scale/bias (CLIP, SigLIP)."""
        image_emb = self.backend.encode_image(image)
        text = self.backend.encode_text({"input_ids": input_ids, "attention_mask": attention_mask})
        return image_emb, text, self.backend.logit_params()


@register_recipe("vse")
class VSERecipe(Recipe):
    loss_terms = ("triplet", "contrastive", "hard_negative")
    # hard_negative (vse.loss: contrastive with synthetic negatives): cross-entropy of each
    # image over its own caption and that caption's synthetic negatives only, off by default
    default_weights: ClassVar[dict[str, float]] = {
        "triplet": 1.0,
        "contrastive": 1.0,
        "hard_negative": 0.0,
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """As :class:`Recipe` (``config, accelerator, model, tokenizer, dataset, backend``)."""
        super().__init__(*args, **kwargs)
        config, model, tokenizer, dataset = self.config, self.model, self.tokenizer, self.dataset
        vse = config.vse
        if vse.loss == "contrastive" and self.backend.contrastive_loss not in CONTRASTIVE:
            raise ValueError(
                f"vse.loss: contrastive needs a contrastive model (CLIP, SigLIP, BLIP ITC); "
                f"the {self.backend.name} backend trains with vse.loss: miner"
            )
        self.wrapper = DualEncoder(model, self.backend)
        self.base_miner = get_miner(vse.miner.name, **vse.miner.kwargs)
        self.miner = self.base_miner
        # per-phase overrides, built up front so that their state (FNE statistics) is in
        # every checkpoint and on the accelerator's device
        self.phase_miners = nn.ModuleDict(
            {str(i): self._phase_miner(p) for i, p in enumerate(config.phases) if p.miner}
        )
        self.momentum: MomentumEncoder | None = None
        self.queue: FeatureQueue | None = None
        if vse.queue_size > 0:
            self.momentum = MomentumEncoder(model, vse.momentum)
            self.momentum.module.eval()  # keys without dropout
            self.momentum_backend = type(self.backend)(self.momentum.module, tokenizer)
            shape = self.backend.image_embedding_shape  # BLIP-2: one vector per query
            self.queue = FeatureQueue(shape, self.backend.embedding_dim, vse.queue_size)
        self.pools: NegativePools | None = None
        if vse.synthetic_negatives > 0:
            self.pools = pools_for(config.data, dataset)
        self.offline: OfflineNegatives | None = None
        self.reference: ReferenceScores | None = None
        if vse.reference_scores:
            self.reference = ReferenceScores.from_files(vse.reference_scores)
            expected = (dataset.num_images, len(dataset))
            if tuple(self.reference.scores.shape) != expected:
                raise ValueError(
                    f"vse.reference_scores: shape {tuple(self.reference.scores.shape)}, expected "
                    f"[images, captions] = {list(expected)} of the training set"
                )

    @classmethod
    def validate(cls, config: Any) -> None:
        from tags.core.errors import ConfigError

        super().validate(config)
        if config.vse.synthetic_negatives > 0 and not config.data.negatives:
            raise ConfigError("vse.synthetic_negatives needs data.negatives (a negatives file)")
        if config.vse.loss == "contrastive" and (
            config.vse.queue_size or any(p.miner for p in config.phases)
        ):
            raise ConfigError(
                "vse.loss: contrastive is the model's own loss over the global batch: set "
                "vse.queue_size=0 and no per-phase miner"
            )
        for i, phase in enumerate(config.phases):
            hard = phase.weights.get("hard_negative", 0.0)
            if hard < 0:
                raise ConfigError(f"phases.{i}.weights.hard_negative must be >= 0, got {hard}")
            if hard and (config.vse.loss != "contrastive" or not config.vse.synthetic_negatives):
                raise ConfigError(
                    f"phases.{i}.weights.hard_negative needs vse.loss: contrastive and "
                    "vse.synthetic_negatives > 0 (it ranks each caption's synthetic negatives)"
                )
        if config.vse.miner.name == "aoq":
            raise ConfigError("vse.miner: aoq needs a first round; set it on a later phase")
        if config.vse.miner.name == "ndgl" or any(p.miner == "ndgl" for p in config.phases):
            if not config.vse.reference_scores:
                raise ConfigError("the ndgl miner needs vse.reference_scores (score files)")
            if config.vse.queue_size or config.vse.synthetic_negatives:
                raise ConfigError(
                    "ndgl targets exist for training-set pairs only: set vse.queue_size=0 "
                    "and vse.synthetic_negatives=0"
                )
        for i, phase in enumerate(config.phases):
            if phase.miner == "aoq" and i == 0:
                raise ConfigError("phases.0.miner: aoq needs a previous (round 1) phase")
            if (
                phase.miner == "aoq"
                and phase.init != "initial"
                and not config.vse.aoq.allow_finetune
            ):
                raise ConfigError(
                    f"phases.{i}: AOQ's round 2 retrains from scratch (init: initial, the "
                    f"paper); init: {phase.init} would fine-tune round 1's model (the paper's "
                    "Table 3: about 3 R@1 lower). Set init: initial, or vse.aoq.allow_finetune"
                    "=true to fine-tune on purpose"
                )

    @property
    def module(self) -> nn.Module:
        return self.wrapper

    def tags_model(self, module: nn.Module) -> nn.Module:
        return self.accelerator.unwrap_model(module).model

    def stateful(self) -> list[Any]:
        objects: list[Any] = [self.base_miner]
        if self.momentum is not None:
            objects += [self.momentum, self.queue]
        if len(self.phase_miners):
            objects.append(self.phase_miners)
        return objects

    def _phase_miner(self, phase: Any) -> nn.Module:
        """A phase's ``miner:`` override (with ``vse.miner.kwargs`` when the names match)."""
        same = phase.miner == self.config.vse.miner.name
        return get_miner(phase.miner, **(self.config.vse.miner.kwargs if same else {}))

    def _offline_path(self, index: int, phase: Any) -> Path:
        return Path(self.config.output_dir) / "phases" / f"{index}_{phase.name}" / OFFLINE_FILE

    # ------------------------------------------------------------------ hooks
    def start_phase(self, index: int, phase: Any, module: nn.Module) -> None:
        self.resume_phase(index, phase, module, build=True)

    def resume_phase(self, index: int, phase: Any, module: nn.Module, build: bool = False) -> None:
        """Select the phase's miner; AOQ phases rank the training set (``build``: at the
        phase start, with the previous phase's model) or reload that ranking (resume)."""
        self.miner = self.phase_miners[str(index)] if phase.miner else self.base_miner
        self.offline = None
        if (phase.miner or self.config.vse.miner.name) != "aoq":
            return
        path = self._offline_path(index, phase)
        if build:
            self.offline = self._build_offline(module)
            if self.accelerator.is_main_process:
                path.parent.mkdir(parents=True, exist_ok=True)
                self.offline.save(path)
            self.accelerator.wait_for_everyone()
        elif path.is_file():
            self.offline = OfflineNegatives.load(path)
        else:
            from tags.core.errors import ConfigError

            raise ConfigError(
                f"resuming inside AOQ phase {index} ({phase.name}) needs its offline "
                f"negatives, ranked at the phase start with the previous phase's model: "
                f"{path} is missing"
            )

    def start_epoch(self, epoch: int) -> None:
        if isinstance(self.miner, FNEMiner):
            self.miner.start_epoch()

    def after_optimizer_step(self, module: nn.Module) -> None:
        if self.momentum is not None:
            self.momentum.update(self.tags_model(module))

    @torch.no_grad()
    def _build_offline(self, module: nn.Module) -> OfflineNegatives:
        """Rank the whole training set with the current model (AOQ between the rounds)."""
        model = self.tags_model(module)
        was_training = model.training
        model.eval()
        ds, device = self.dataset, self.accelerator.device
        with self.accelerator.autocast():
            images, captions = encode_dataset(model, ds, device)
        model.train(was_training)
        aoq = self.config.vse.aoq
        h = min(aoq.h, len(ds) - 1)
        offline = build_offline_negatives(
            images,
            captions,
            ds.image_of,
            h=h,
            h_caption=max(1, min(h // 5, ds.num_images - 1)),
            chunk_size=aoq.chunk_size,
            device=device,
            similarity=self.backend.similarity,
            text_similarity=self.backend.text_similarity,
        )
        return offline

    # ------------------------------------------------------------------ step
    def _inputs(
        self, batch: dict[str, Any], ctx: StepContext
    ) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        """Texts and images to encode: the batch, then synthetic and AOQ extras."""
        device = batch["input_ids"].device
        b = batch["input_ids"].shape[0]
        texts = [row[: int(m.sum())] for row, m in zip(batch["input_ids"], batch["attention_mask"])]
        images = self.backend.image_items(batch)
        layout: dict[str, Any] = {"batch": b}
        if self.pools is not None:
            owner = []
            for i, caption_id in enumerate(batch["caption_ids"]):
                for text, _ in self.pools.get(caption_id, self.config.vse.synthetic_negatives):
                    enc = self.tokenizer(
                        text, truncation=True, max_length=self.config.data.max_text_len
                    )
                    texts.append(torch.tensor(enc["input_ids"], device=device))
                    owner.append(i)
            layout["syn_owner"] = torch.tensor(owner, dtype=torch.long, device=device)
        if self.offline is not None:
            # one generator per anchor (its dataset index): the same draw on any process
            parts = [
                self.offline.sample(torch.tensor([i]), ctx.generator(2, i))
                for i in batch["index"].tolist()
            ]
            drawn = {key: torch.cat([p[key] for p in parts]) for key in parts[0]}
            for key in ("t_off", "t_off2"):
                layout[key] = len(texts)
                texts += [
                    torch.tensor(self.dataset.tokens(int(i)), device=device) for i in drawn[key]
                ]
            for key in ("i_off", "i_off2"):
                layout[key] = len(images)
                for i in drawn[key].tolist():
                    images.append(to_device(self.dataset.image(i), device))
        input_ids, attention = pad_text(texts, self.tokenizer.pad_token_id or 0)
        inputs = {"input_ids": input_ids.to(device), "attention_mask": attention.to(device)}
        for key, value in self.backend.collate_images(images).items():
            inputs[key] = value.to(device)
        return inputs, layout

    def _targets(
        self,
        images: torch.Tensor,
        captions: torch.Tensor,
        batch: dict,
        own: torch.Tensor,
        kind: str,
    ) -> dict[str, torch.Tensor]:
        """NDGL's reference scores for the anchors of one direction (local anchors x global
        candidates, like the predicted scores)."""
        target = self.reference.batch(images.cpu(), captions.cpu())
        if kind == "t2i":
            target = target.t()
        target = target.to(batch["input_ids"].device)
        rows = torch.arange(target.shape[0], device=target.device)
        return {"target_scores": target, "target_positive": target[rows, own]}

    def training_step(
        self, module: nn.Module, batch: dict[str, Any], ctx: StepContext
    ) -> StepOutput:
        inputs, layout = self._inputs(batch, ctx)
        b = layout["batch"]
        image_all, text_all, logit_params = module(**inputs)
        img, txt = image_all[:b], text_all[:b]
        ids = batch["image_ids"]
        device = img.device
        all_ids = all_gather_no_grad(ids)
        offset = sum(gather_sizes(b, device)[: get_rank()])
        own = offset + torch.arange(b, device=device)
        # similarities through the backend: BLIP-2 images are one embedding per query token
        sim, text_sim = self.backend.similarity, self.backend.text_similarity
        pair = self.backend.pair_similarity

        if isinstance(self.miner, FNEMiner):
            s_global = sim(all_gather_no_grad(img.detach()), all_gather_no_grad(txt.detach()))
            self.miner.observe(s_global, all_ids, anchors=own)

        if self.queue is not None:
            keys = self.momentum_backend
            with torch.no_grad():
                k_img = keys.encode_image(
                    {k: v[:b] for k, v in inputs.items() if k not in TEXT_KEYS}
                ).float()
                k_txt = keys.encode_text({k: inputs[k][:b] for k in TEXT_KEYS}).float()
            cand_txt, cand_ids = self.queue.extend(all_gather_no_grad(k_txt), all_ids, "text")
            cand_img, _ = self.queue.extend(all_gather_no_grad(k_img), all_ids, "image")
            i2t = direction_pairs(sim(img, cand_txt.to(img)), own, ids, cand_ids)
            t2i = direction_pairs(text_sim(txt, cand_img.to(txt)), own, ids, cand_ids)
        else:
            all_txt, all_img = gather_with_grad(txt), gather_with_grad(img)
            if self.config.vse.loss == "contrastive":
                syn = text_all[b : b + layout.get("syn_owner", torch.empty(0)).numel()]
                if self.pools is not None:  # every process's synthetic columns, in rank order
                    syn = gather_with_grad(syn)
                out = self._contrastive_step(
                    img, txt, all_img, all_txt, syn, own, ids, all_ids, ctx, logit_params
                )
                if "syn_owner" in layout and ctx.weights.get("hard_negative", 0.0) > 0:
                    local_syn = text_all[b : b + layout["syn_owner"].numel()]
                    term = self._hard_negative_loss(
                        img, txt, local_syn, layout["syn_owner"], logit_params
                    )
                    out.loss = out.loss + ctx.weights["hard_negative"] * term
                    out.metrics["loss/hard_negative"] = term.detach()
                return out
            i2t = direction_pairs(sim(img, all_txt), own, ids, all_ids)
            t2i = direction_pairs(text_sim(txt, all_img), own, ids, all_ids)

        if "syn_owner" in layout:
            syn = text_all[b : b + layout["syn_owner"].numel()]
            extra = sim(img, syn)
            owner_mask = layout["syn_owner"][None, :] == torch.arange(b, device=device)[:, None]
            i2t = type(i2t)(
                torch.cat([i2t.scores, extra], 1),
                i2t.positive,
                torch.cat([i2t.negative_mask, owner_mask], 1),
            )

        i2t_extra: dict[str, Any] = {}
        t2i_extra: dict[str, Any] = {}
        if isinstance(self.miner, FNEMiner):
            # one number per anchor, keyed by its dataset index: the same draw on any process
            # layout and after a resume
            for extra, key in ((i2t_extra, 3), (t2i_extra, 4)):
                extra["uniforms"] = torch.stack(
                    [torch.rand((), generator=ctx.generator(key, i)) for i in batch["index"]]
                ).to(device)
        if isinstance(self.miner, NDGLMiner):
            i2t_extra |= self._targets(ids, all_gather_no_grad(batch["index"]), batch, own, "i2t")
            t2i_extra |= self._targets(all_ids, batch["index"], batch, own, "t2i")
        if self.offline is not None and "t_off" in layout:
            t_off = text_all[layout["t_off"] : layout["t_off"] + b]
            t_off2 = text_all[layout["t_off2"] : layout["t_off2"] + b]
            i_off = image_all[layout["i_off"] : layout["i_off"] + b]
            i_off2 = image_all[layout["i_off2"] : layout["i_off2"] + b]
            i2t_extra |= {"offline_scores": pair(img, t_off), "pair_scores": pair(i_off, t_off)}
            t2i_extra |= {"offline_scores": pair(i_off, txt), "pair_scores": pair(i_off2, t_off2)}

        out_i2t = self.miner(*i2t, **i2t_extra)
        out_t2i = self.miner(*t2i, **t2i_extra)
        loss_i2t, loss_t2i = out_i2t.loss.mean(), out_t2i.loss.mean()
        loss = ctx.weights["triplet"] * (loss_i2t + loss_t2i)

        if self.queue is not None:
            self.queue.enqueue(k_img, k_txt, ids)

        metrics = {"loss/triplet_i2t": loss_i2t.detach(), "loss/triplet_t2i": loss_t2i.detach()}
        metrics |= mining_metrics("i2t", self.miner, out_i2t, *i2t)
        metrics |= mining_metrics("t2i", self.miner, out_t2i, *t2i)
        metrics |= fne_summary(self.miner, device)
        if self.queue is not None:
            metrics["queue/filled"] = torch.tensor(float(len(self.queue)), device=device)
        return StepOutput(loss=loss, metrics=metrics)

    def _hard_negative_loss(
        self,
        img: torch.Tensor,
        txt: torch.Tensor,
        syn: torch.Tensor,
        owner: torch.Tensor,
        params: dict[str, torch.Tensor],
    ) -> torch.Tensor:
        """Cross-entropy of each local image over ``[own caption, own synthetic negatives]``
        (the in-batch captions left out): the compositional signal of the synthetic
        negatives, not diluted by the batch's easy negatives. Images whose caption has no
        synthetic negative contribute 0."""
        rows = torch.arange(img.shape[0], device=img.device)
        pos = self.backend.scale_logits(self.backend.pair_similarity(img, txt), params).float()
        neg = self.backend.contrastive_logits(img, syn.to(img.dtype), params).float()
        neg = neg.masked_fill(owner[None, :] != rows[:, None], float("-inf"))
        logits = torch.cat([pos[:, None], neg], 1)
        return torch.nn.functional.cross_entropy(logits, torch.zeros_like(rows))

    def _contrastive_step(
        self,
        img: torch.Tensor,
        txt: torch.Tensor,
        all_img: torch.Tensor,
        all_txt: torch.Tensor,
        syn: torch.Tensor,
        own: torch.Tensor,
        ids: torch.Tensor,
        all_ids: torch.Tensor,
        ctx: StepContext,
        params: dict[str, torch.Tensor],
    ) -> StepOutput:
        """The model's own loss, NegCLIP-style: every local image against the global
        captions followed by the global synthetic negatives (``[b, B + S]`` logits, as one
        process would compute them on the global batch).

        - ``infonce`` (CLIP, BLIP ITC): cross-entropy both ways; other captions of the same
          image are left out of the softmax (never negatives); synthetic captions are extra
          columns of the image-to-text softmax only.
        - ``sigmoid`` (SigLIP): a binary term per (image, caption) pair, +1 for captions of
          the image, -1 otherwise (synthetic captions included), summed per image.
        """
        texts = torch.cat([all_txt, syn.to(all_txt.dtype)], 0)
        logits = self.backend.contrastive_logits(img, texts, params).float()
        same = ids[:, None] == all_ids[None, :]  # [b, B]
        rows = torch.arange(img.shape[0], device=img.device)
        if self.backend.contrastive_loss == "sigmoid":
            labels = -torch.ones_like(logits)
            labels[:, : all_txt.shape[0]][same] = 1.0
            loss = -torch.nn.functional.logsigmoid(labels * logits).sum(1).mean()
            terms = {"loss/sigmoid": loss.detach()}
        else:
            other = same.clone()
            other[rows, own] = False
            i2t = logits.clone()
            i2t[:, : all_txt.shape[0]][other] = float("-inf")
            t2i = self.backend.scale_logits(self.backend.text_similarity(txt, all_img), params)
            t2i = t2i.float()  # texts x images
            t2i = t2i.masked_fill(other, float("-inf"))
            loss_i2t = torch.nn.functional.cross_entropy(i2t, own)
            loss_t2i = torch.nn.functional.cross_entropy(t2i, own)
            loss = 0.5 * (loss_i2t + loss_t2i)
            terms = {"loss/infonce_i2t": loss_i2t.detach(), "loss/infonce_t2i": loss_t2i.detach()}
        with torch.no_grad():
            pos = logits[rows, own]
            syn_logits = logits[:, all_txt.shape[0] :]
            metrics = dict(terms)
            if syn_logits.numel():
                # share of images that score their own caption above every synthetic one
                metrics["contrastive/pos_beats_synthetic"] = (
                    (pos[:, None] > syn_logits).all(1).float().mean()
                )
        return StepOutput(loss=ctx.weights["contrastive"] * loss, metrics=metrics)


__all__ = ["DualEncoder", "VSERecipe"]
