"""Contrastive dual encoders: ``CLIPModel`` (InfoNCE) and ``SiglipModel`` (sigmoid loss).

No cross-encoder exists in these models: :meth:`score_pairs` is the model's own scaled pair
similarity (``logit_scale.exp() * cos`` (+ ``logit_bias`` for SigLIP)), so "cross" and
"two-stage" evaluation rank exactly like "dual". There are no image-grounded token states
(no WoD/WoC heads) and no masked LM (refill needs a separate masked LM: the static
generator).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from tags.backends.base import VLBackend, normalize
from tags.backends.blip import check_architecture, load_processor
from tags.backends.registry import register_backend


def _pooled(output: Any) -> torch.Tensor:
    """``get_*_features`` return a tensor (transformers 4) or an output with the projected
    ``pooler_output`` (transformers 5)."""
    return output if isinstance(output, torch.Tensor) else output.pooler_output


@register_backend("clip")
class ClipBackend(VLBackend):
    name = "clip"
    image_kind = "pixels"
    capabilities = frozenset({"itc"})
    contrastive_loss = "infonce"
    architectures = ("CLIPModel",)
    #: pad every caption to the model's length (SigLIP pools the last position)
    pad_to_max_length = False

    def __init__(self, model, tokenizer=None, processor=None):
        if tokenizer is None and processor is not None:
            tokenizer = getattr(processor, "tokenizer", None)
        super().__init__(model, tokenizer, processor)

    @classmethod
    def model_class(cls) -> type:
        from transformers import CLIPModel

        return CLIPModel

    @classmethod
    def from_pretrained(cls, path: str | Path, **kwargs: Any) -> ClipBackend:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(path, local_files_only=True)
        check_architecture(config, cls.architectures, path)
        processor = load_processor(path, cls.name)
        model = cls.model_class().from_pretrained(path, local_files_only=True, **kwargs)
        return cls(model, processor=processor)

    @property
    def max_text_length(self) -> int:
        return int(self.model.config.text_config.max_position_embeddings)

    @property
    def embedding_dim(self) -> int:
        return int(self.model.config.projection_dim)

    def text_inputs(self, captions, max_length=None):
        if not self.pad_to_max_length:
            return super().text_inputs(captions, max_length)
        tokens = self._tokenizer()(
            list(captions),
            padding="max_length",
            truncation=True,
            max_length=self.max_text_length,
            return_tensors="pt",
        )
        return {"input_ids": tokens["input_ids"], "attention_mask": tokens["attention_mask"]}

    def encode_text(self, text):
        return normalize(
            _pooled(
                self.model.get_text_features(
                    input_ids=text["input_ids"], attention_mask=text.get("attention_mask")
                )
            )
        )

    def encode_image(self, image):
        pixels = image["pixel_values"].to(self.model.dtype)
        return normalize(_pooled(self.model.get_image_features(pixel_values=pixels)))

    def logit_params(self):
        return {"scale": self.model.logit_scale.exp()}

    def scale_logits(self, sims, params=None):
        params = params or self.logit_params()
        return sims * params["scale"] + params.get("bias", 0.0)

    def score_pairs(self, text, image):
        # fp32 product: bf16 cosines have 3 significant digits, so ranked pairs would tie
        t, i = self.encode_text(text).float(), self.encode_image(image).float()
        if t.shape[0] != i.shape[0]:
            t, i = (
                (t.expand(i.shape[0], -1), i) if t.shape[0] == 1 else (t, i.expand(t.shape[0], -1))
            )
        return self.scale_logits((t * i).sum(dim=-1))


@register_backend("siglip")
class SiglipBackend(ClipBackend):
    name = "siglip"
    contrastive_loss = "sigmoid"
    architectures = ("SiglipModel",)
    pad_to_max_length = True

    @classmethod
    def model_class(cls) -> type:
        from transformers import SiglipModel

        return SiglipModel

    @property
    def embedding_dim(self) -> int:
        return int(self.model.config.text_config.projection_size)

    def logit_params(self):
        return {"scale": self.model.logit_scale.exp(), "bias": self.model.logit_bias}

    def encode_text(self, text):
        """SigLIP pools the last position: text trimmed of padding (by a collator or the
        evaluator) is padded back to the model's length first."""
        ids, mask = text["input_ids"], text.get("attention_mask")
        missing = self.max_text_length - ids.shape[1]
        if missing > 0:
            pad = self.model.config.text_config.pad_token_id or 0
            ids = torch.nn.functional.pad(ids, (0, missing), value=pad)
            if mask is not None:
                mask = torch.nn.functional.pad(mask, (0, missing), value=0)
        return super().encode_text({"input_ids": ids, "attention_mask": mask})


__all__ = ["ClipBackend", "SiglipBackend"]
