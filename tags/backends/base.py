"""The backend interface: what a recipe, the generator and the evaluator need from a model.

Batches are plain ``dict``s of tensors, made by the backend itself:

- text: :meth:`VLBackend.text_inputs` (``input_ids``, ``attention_mask``, right-padded);
- images: region features (``region_features``, ``region_boxes``, ``region_mask``) for
  ``image_kind == "regions"``, or processor pixels (``pixel_values``) for ``"pixels"``,
  made by :meth:`VLBackend.image_inputs` from PIL images.

Pair methods take row-aligned text and image batches; either side may be a batch of one,
broadcast against the other (one image against many captions and the reverse).

A method the model cannot serve raises :class:`BackendError` naming the backend and the
reason; :attr:`VLBackend.capabilities` says up front what is there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from tags.core.errors import BackendError

#: ``itm``: a cross-encoder pair logit; ``itc``: text/image embeddings (dual retrieval);
#: ``token_states``: image-grounded text token states (WoD/WoC heads);
#: ``mlm``: image-conditioned masked-LM logits (dynamic refill).
CAPABILITIES = ("itm", "itc", "token_states", "mlm")


def broadcast_pair(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Expand a batch of one against the other side's batch (dim 0)."""
    if a.shape[0] == b.shape[0]:
        return a, b
    if a.shape[0] == 1:
        return a.expand(b.shape[0], *a.shape[1:]), b
    if b.shape[0] == 1:
        return a, b.expand(a.shape[0], *b.shape[1:])
    raise BackendError(f"pair batches differ: {a.shape[0]} texts vs {b.shape[0]} images")


class VLBackend:
    """A vision-language model behind one interface.

    Attributes:
        model: the wrapped ``nn.Module`` (train it, prepare it with Accelerate).
        tokenizer: its tokenizer (``None`` when the directory has none).
        processor: its image processor (``None`` for region-feature models).
    """

    name: ClassVar[str] = ""
    model_types: ClassVar[tuple[str, ...]] = ()
    image_kind: ClassVar[str] = "pixels"
    capabilities: ClassVar[frozenset[str]] = frozenset()
    #: contrastive loss the model was trained with: "infonce", "sigmoid" or "triplet"
    contrastive_loss: ClassVar[str] = "infonce"

    def __init__(self, model: nn.Module, tokenizer: Any = None, processor: Any = None):
        self.model = model
        self.tokenizer = tokenizer
        self.processor = processor

    # ------------------------------------------------------------------ loading / saving

    @classmethod
    def from_pretrained(cls, path: str | Path, **kwargs: Any) -> VLBackend:
        raise NotImplementedError

    def save_pretrained(self, path: str | Path) -> None:
        """Model, tokenizer and processor, loadable with plain ``transformers``."""
        path = Path(path)
        self.model.save_pretrained(path)
        if self.processor is not None:
            self.processor.save_pretrained(path)
        elif self.tokenizer is not None:
            self.tokenizer.save_pretrained(path)

    # ------------------------------------------------------------------ helpers

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def supports(self, capability: str) -> bool:
        return capability in self.capabilities

    def require(self, capability: str, why: str = "") -> None:
        if capability not in self.capabilities:
            raise BackendError(
                f"the {self.name} backend has no {capability!r} capability"
                + (f" ({why})" if why else "")
                + f"; it has: {', '.join(sorted(self.capabilities)) or 'none'}"
            )

    def _tokenizer(self) -> Any:
        if self.tokenizer is None:
            raise BackendError(
                f"the {self.name} model has no tokenizer: save one beside the model "
                "(tokenizer.json / vocab.txt / vocab.json)"
            )
        return self.tokenizer

    @property
    def max_text_length(self) -> int:
        raise NotImplementedError

    # ------------------------------------------------------------------ batch preparation

    def text_inputs(
        self, captions: list[str], max_length: int | None = None
    ) -> dict[str, torch.Tensor]:
        """Right-padded ``input_ids`` / ``attention_mask`` of ``captions``."""
        limit = min(max_length or self.max_text_length, self.max_text_length)
        tokens = self._tokenizer()(
            list(captions),
            padding=True,
            truncation=True,
            max_length=limit,
            return_tensors="pt",
        )
        return {"input_ids": tokens["input_ids"], "attention_mask": tokens["attention_mask"]}

    def image_inputs(self, images: list[Any]) -> dict[str, torch.Tensor]:
        """Processor pixels of PIL images (``pixel_values`` ``[B, 3, H, W]``)."""
        if self.image_kind != "pixels":
            raise BackendError(f"the {self.name} backend reads region features, not raw images")
        if self.processor is None:
            raise BackendError(
                f"the {self.name} model has no image processor: save one beside the model "
                "(preprocessor_config.json)"
            )
        image_processor = getattr(self.processor, "image_processor", self.processor)
        out = image_processor(images=list(images), return_tensors="pt")
        return {"pixel_values": out["pixel_values"]}

    def collate_images(self, items: list[Any]) -> dict[str, torch.Tensor]:
        """One image batch from per-image items (``dataset.image(i)``): pixel tensors
        ``[3, H, W]`` here, ``(features, boxes)`` for region models."""
        return {"pixel_values": torch.stack(list(items))}

    def image_items(self, batch: dict[str, Any]) -> list[Any]:
        """Per-image items of a collated batch (the inverse of :meth:`collate_images`)."""
        return list(batch["pixel_values"].unbind(0))

    def image_batch(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        """The image keys of a collated training batch."""
        return {"pixel_values": batch["pixel_values"]}

    @property
    def embedding_dim(self) -> int:
        """Size of :meth:`encode_text` / :meth:`encode_image` embeddings."""
        raise NotImplementedError

    def row_images(self, items: list[Any], rows: list[int]) -> dict[str, torch.Tensor]:
        """Images of a joint forward whose row ``r`` shows ``items[rows[r]]``: the distinct
        images once (``pixel_values``) plus ``image_index`` (the vision tower runs once per
        image)."""
        return {**self.collate_images(items), "image_index": torch.tensor(rows, dtype=torch.long)}

    # ------------------------------------------------------------------ training / generation

    heads: Any = None

    @property
    def mask_token_id(self) -> int:
        return int(self._tokenizer().mask_token_id)

    @property
    def vocab_size(self) -> int:
        return int(self.model.config.text_config.vocab_size)

    def ensure_heads(self, names: tuple[str, ...] = ("mlm", "wod", "woc")) -> Any:
        """The TAGS-DC heads over :meth:`text_token_states` (created when missing)."""
        self.require("token_states", "TAGS-DC heads need image-grounded token states")
        raise NotImplementedError

    def trainable_module(self, names: tuple[str, ...] = ("mlm", "wod", "woc")) -> nn.Module:
        """The module a recipe trains: TagsModel's ``forward(input_ids, attention_mask,
        heads=..., masked_positions=..., **images)`` with ``itm_scores`` & co. outputs, with
        the TAGS heads ``names`` (created where missing)."""
        from tags.backends.heads import TrainableBackend

        self.ensure_heads(names)
        return TrainableBackend(self)

    #: heads (``itm``, ``mlm``, ...) whose weights the loaded checkpoint lacked (random init)
    missing_weights: frozenset[str] = frozenset()

    def head_problem(self, name: str) -> str | None:
        """Why head ``name`` (``itm``, ``mlm``, ``wod``, ``woc``) is not there trained
        (``None`` when it is); :func:`~tags.backends.heads.require_heads` reports it."""
        return f"missing (the {self.name} backend has no {name} head)"

    def mark_trained_heads(self, names: tuple[str, ...]) -> None:
        """Record that a recipe trains the heads of ``names`` (saved with the model)."""

    def save_extras(self, path: str | Path) -> None:
        """What lives outside the model (the TAGS heads), beside it."""
        if self.heads is not None:
            self.heads.save(path)

    def load_extras(self, path: str | Path) -> None:
        """Copy the TAGS heads saved beside a model in ``path`` into this backend's heads, in
        place (the optimizer keeps its parameters); heads saved there but absent here, or
        absent there, are left as they are."""
        from tags.backends.heads import TagsHeads

        saved = TagsHeads.load(path) if self.heads is not None else None
        if saved is None:
            return
        own = self.heads.state_dict()
        with torch.no_grad():
            for key, value in saved.state_dict().items():
                if key in own and not key.endswith("decoder.weight"):
                    own[key].copy_(value)

    def masked_lm_adapter(self, tokenizer: Any, device: Any, use_image: bool = True) -> Any:
        """This model's MLM as the negative engine's refill model (``logits_at``)."""
        from tags.backends.adapters import BackendMaskedLM

        self.require("mlm", "refill with a separate masked LM (the static generator)")
        return BackendMaskedLM(self, device, use_image)

    def pair_scorer(self, tokenizer: Any, device: Any, max_length: int = 128) -> Any:
        """This model's pair score as the negative engine's top-m scorer (``score``)."""
        from tags.backends.adapters import BackendPairScorer

        return BackendPairScorer(self, device, max_length=max_length)

    # ------------------------------------------------------------------ model calls

    def score_pairs(
        self, text: dict[str, torch.Tensor], image: dict[str, torch.Tensor]
    ) -> torch.Tensor:
        """``[B]`` matching logits of row-aligned (text, image) pairs (higher = match)."""
        raise NotImplementedError

    def pair_probability(self, logits: torch.Tensor) -> torch.Tensor:
        """Matching probability in [0, 1] of :meth:`score_pairs` logits, in fp32 (a bf16
        sigmoid rounds every logit above ~6 to exactly 1.0, so ranked candidates would tie)."""
        return torch.sigmoid(logits.float())

    def encode_text(self, text: dict[str, torch.Tensor]) -> torch.Tensor:
        """``[B, D]`` L2-normalised text embeddings."""
        self.require("itc", "no text embedding")
        raise NotImplementedError

    def encode_image(self, image: dict[str, torch.Tensor]) -> torch.Tensor:
        """``[B, D]`` L2-normalised image embeddings."""
        self.require("itc", "no image embedding")
        raise NotImplementedError

    @property
    def image_embedding_shape(self) -> tuple[int, ...]:
        """Shape of one image's :meth:`encode_image` embedding (``(D,)``; BLIP-2: one per
        query token, ``(Q, D)``)."""
        return (self.embedding_dim,)

    def similarity(self, image_emb: torch.Tensor, text_emb: torch.Tensor) -> torch.Tensor:
        """``[I, T]`` similarity used for ranking (cosine by default)."""
        return image_emb @ text_emb.T

    def text_similarity(self, text_emb: torch.Tensor, image_emb: torch.Tensor) -> torch.Tensor:
        """``[T, I]``: :meth:`similarity` with texts as rows (text-to-image anchors)."""
        return text_emb @ image_emb.T

    def pair_similarity(self, image_emb: torch.Tensor, text_emb: torch.Tensor) -> torch.Tensor:
        """``[B]`` similarity of row-aligned (image, text) embedding pairs."""
        return (image_emb * text_emb).sum(-1)

    def logit_params(self) -> dict[str, torch.Tensor]:
        """Learned logit scale/bias of the contrastive loss, computed inside the trained
        module's ``forward`` (DDP: a parameter used outside ``forward`` breaks its hooks)."""
        return {}

    def scale_logits(
        self, sims: torch.Tensor, params: dict[str, torch.Tensor] | None = None
    ) -> torch.Tensor:
        """Similarities as logits of the model's own contrastive loss (its temperature or
        learned scale/bias; ``params`` from :meth:`logit_params`)."""
        return sims

    def contrastive_logits(
        self,
        image_emb: torch.Tensor,
        text_emb: torch.Tensor,
        params: dict[str, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """``[I, T]`` logits of the model's own contrastive loss (scaled similarity)."""
        return self.scale_logits(self.similarity(image_emb, text_emb), params)

    def text_token_states(
        self, text: dict[str, torch.Tensor], image: dict[str, torch.Tensor]
    ) -> torch.Tensor:
        """``[B, L, H]`` token states of the image-grounded text (WoD/WoC heads)."""
        self.require("token_states")
        raise NotImplementedError

    def mlm_logits(
        self,
        text: dict[str, torch.Tensor],
        image: dict[str, torch.Tensor] | None,
        masked_positions: torch.Tensor,
    ) -> torch.Tensor:
        """``[num_masked, vocab]`` refill logits at ``masked_positions`` (row-major order)."""
        self.require("mlm", "refill with a separate masked LM (the static generator)")
        raise NotImplementedError

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({type(self.model).__name__}, image_kind={self.image_kind}, "
            f"capabilities={sorted(self.capabilities)})"
        )


def normalize(x: torch.Tensor) -> torch.Tensor:
    return F.normalize(x, dim=-1)


__all__ = ["CAPABILITIES", "BackendError", "VLBackend", "broadcast_pair", "normalize"]
