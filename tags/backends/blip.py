"""BLIP retrieval backend: ``BlipForImageTextRetrieval`` (ITM head + ITC projections) on pixels.

- ``score_pairs``: the ITM head's match log-odds ``logit[1] - logit[0]`` over the text
  encoder's first token, with cross-attention to the ViT states; its sigmoid is the ITM
  softmax probability of "match". The text is used as the processor tokenizes it (as in
  ``BlipForImageTextRetrieval.forward``).
- ``encode_text`` / ``encode_image``: the ITC embeddings (``text_proj`` / ``vision_proj`` of
  the first token, L2-normalised), as ``forward(use_itm_head=False)`` computes them.
- ``text_token_states``: the image-grounded text encoder's last hidden states (the ITM
  path), for WoD/WoC heads.

The ViT runs once per image batch; a batch of one image is expanded against many captions
after the ViT, not before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from heads import fp32_linear
from tags.backends.base import VLBackend, broadcast_pair, normalize
from tags.backends.registry import register_backend
from tags.core.errors import BackendError

#: BLIP's initial ITC temperature (``temp = 0.07``); the HF retrieval model stores none.
BLIP_ITC_TEMPERATURE = 0.07


def _has_image_processor(processor_config: Path) -> bool:
    """transformers 5 writes the image processor into ``processor_config.json``."""
    try:
        data = json.loads(processor_config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "image_processor" in data


def load_processor(path: str | Path, family: str) -> Any:
    """``AutoProcessor`` of a local directory, or an error naming the missing files."""
    from transformers import AutoProcessor

    path = Path(path)
    if not (path / "preprocessor_config.json").is_file() and not _has_image_processor(
        path / "processor_config.json"
    ):
        raise BackendError(
            f"{path}: no image processor (preprocessor_config.json, or processor_config.json "
            f"with an image_processor entry); save the {family} "
            "processor beside the model (processor.save_pretrained(DIR))"
        )
    try:
        return AutoProcessor.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError, TypeError) as err:
        raise BackendError(
            f"{path}: cannot load the {family} processor and tokenizer ({err}); save them "
            "with processor.save_pretrained(DIR)"
        ) from err


def check_architecture(config: Any, wanted: tuple[str, ...], path: str | Path) -> None:
    archs = list(getattr(config, "architectures", None) or [])
    if archs and not set(archs) & set(wanted):
        raise BackendError(
            f"{path}: config.json architectures {archs}; the {config.model_type} backend "
            f"needs {' or '.join(wanted)} (a checkpoint with its retrieval heads)"
        )


@register_backend("blip")
class BlipBackend(VLBackend):
    name = "blip"
    image_kind = "pixels"
    capabilities = frozenset({"itm", "itc", "token_states"})
    contrastive_loss = "infonce"
    architectures = ("BlipForImageTextRetrieval",)

    def __init__(self, model, tokenizer=None, processor=None, heads=None):
        if tokenizer is None and processor is not None:
            tokenizer = getattr(processor, "tokenizer", None)
        super().__init__(model, tokenizer, processor)
        self.temperature = BLIP_ITC_TEMPERATURE
        self.heads = None
        if heads is not None:
            self.attach_heads(heads)

    def attach_heads(self, heads: Any) -> None:
        """Use ``heads`` (:class:`~tags.backends.heads.TagsHeads`), tied to the text encoder's
        word embeddings; ``mlm`` becomes available when it has an MLM head."""
        heads.tie(self._heads_parts()[0])
        self.heads = heads
        if heads.mlm is not None:
            self.capabilities = type(self).capabilities | {"mlm"}

    def ensure_heads(self, names: tuple[str, ...] = ("mlm", "wod", "woc")) -> Any:
        """The TAGS heads of ``names`` (fresh ones, sized from the text config, where missing)."""
        from tags.backends.heads import TagsHeads

        if self.heads is None:
            text = self._heads_parts()[1]
            self.attach_heads(
                TagsHeads(
                    text.hidden_size,
                    text.vocab_size,
                    names,
                    text.hidden_act,
                    text.layer_norm_eps,
                    text.hidden_dropout_prob,
                ).to(self.device)
            )
        elif self.heads.add(names):  # heads saved by another recipe (pretrain: MLM only)
            self.attach_heads(self.heads.to(self.device))
        return self.heads

    def _heads_parts(self) -> tuple[Any, Any]:
        """(word embeddings the vocabulary heads tie to, the config that sizes the heads)."""
        return self.model.text_encoder.get_input_embeddings(), self.model.config.text_config

    def head_problem(self, name: str) -> str | None:
        """ITM: the model's own head, usable unless the checkpoint lacked its weights; MLM,
        WoD, WoC: the TAGS heads saved beside the model (``tags_heads.json``), trained by a
        recipe where the file records it."""
        from tags.backends.heads import HEAD_NAMES, HEADS_CONFIG

        if name == "itm":
            if "itm" in self.missing_weights:
                return "not in the checkpoint's weights (it would be randomly initialised)"
            return None
        if name not in HEAD_NAMES:
            return super().head_problem(name)
        if self.heads is None:
            return f"not saved (no {HEADS_CONFIG} beside the model)"
        if name in self.heads.fresh:
            return "new, randomly initialised (neither saved nor trained)"
        saved = [n for n in self.heads.settings["names"] if n not in self.heads.fresh]
        if name not in saved:
            return f"not saved ({HEADS_CONFIG} lists: {', '.join(saved) or 'none'})"
        trained = self.heads.trained
        if trained is not None and name not in trained:
            return (
                f"saved but never trained ({HEADS_CONFIG} trained: {', '.join(trained) or 'none'})"
            )
        return None

    def mark_trained_heads(self, names: tuple[str, ...]) -> None:
        if self.heads is not None:
            self.heads.mark_trained(names)

    def save_pretrained(self, path: str | Path) -> None:
        super().save_pretrained(path)
        self.save_extras(path)

    @classmethod
    def model_class(cls) -> type:
        from transformers import BlipForImageTextRetrieval

        return BlipForImageTextRetrieval

    @classmethod
    def from_pretrained(cls, path: str | Path, **kwargs: Any) -> BlipBackend:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(path, local_files_only=True)
        check_architecture(config, cls.architectures, path)
        processor = load_processor(path, cls.name)
        model, info = cls.model_class().from_pretrained(
            path, local_files_only=True, output_loading_info=True, **kwargs
        )
        return cls.loaded(model, processor, path, info)

    @classmethod
    def loaded(cls, model: Any, processor: Any, path: str | Path, info: dict) -> BlipBackend:
        """The backend of a model just loaded from ``path``, with its TAGS heads and a note of
        the heads whose weights the checkpoint lacked (``info``: the loading info)."""
        from tags.backends.heads import TagsHeads, missing_head_weights

        backend = cls(model, processor=processor, heads=TagsHeads.load(path))
        missing = info.get("missing_keys", ())
        backend.missing_weights = frozenset(missing_head_weights(missing, {"itm": "itm_head."}))
        return backend

    @property
    def max_text_length(self) -> int:
        return int(self.model.config.text_config.max_position_embeddings)

    @property
    def embedding_dim(self) -> int:
        return int(self.model.config.image_text_hidden_size)

    # ------------------------------------------------------------------ model calls

    def image_states(self, image: dict[str, torch.Tensor]) -> torch.Tensor:
        """``[B, patches + 1, H]`` ViT states (``image["image_embeds"]`` when cached)."""
        if "image_embeds" in image:
            return image["image_embeds"]
        pixels = image["pixel_values"].to(self.model.dtype)
        states = self.model.vision_model(pixel_values=pixels).last_hidden_state
        if "image_index" in image:  # one ViT pass per distinct image, then one row per text
            states = states[image["image_index"]]
        return states

    def _grounded_states(self, text, image) -> torch.Tensor:
        states = self.image_states(image)
        input_ids, states = broadcast_pair(text["input_ids"], states)
        mask = text.get("attention_mask")
        if mask is not None:
            mask = mask.expand(input_ids.shape[0], -1)
        image_mask = torch.ones(states.shape[:2], dtype=torch.long, device=states.device)
        return self.model.text_encoder(
            input_ids=input_ids,
            attention_mask=mask,
            encoder_hidden_states=states,
            encoder_attention_mask=image_mask,
        ).last_hidden_state

    def itm_logits(self, text, image) -> torch.Tensor:
        """``[B, 2]`` ITM logits (no match, match) of row-aligned pairs."""
        return fp32_linear(self.model.itm_head, self._grounded_states(text, image)[:, 0, :])

    def itm_head_logits(self, states: torch.Tensor) -> torch.Tensor:
        """Match log-odds from image-grounded token states (first token), in fp32."""
        logits = fp32_linear(self.model.itm_head, states[:, 0, :])
        return logits[:, 1] - logits[:, 0]

    def score_pairs(self, text, image):
        return self.itm_head_logits(self._grounded_states(text, image))

    def mlm_logits(self, text, image, masked_positions):
        self.require("mlm", "no MLM head saved beside the model (tags_heads.json)")
        if image is None:
            raise BackendError(
                f"the {self.name} MLM head reads image-grounded states: give an image"
            )
        states = self.text_token_states(text, image)
        if masked_positions.shape[0] != states.shape[0]:
            masked_positions = masked_positions.expand(states.shape[0], -1)
        return self.heads.mlm(states[masked_positions.bool()])

    def text_token_states(self, text, image):
        return self._grounded_states(text, image)

    def encode_text(self, text):
        states = self.model.text_encoder(
            input_ids=text["input_ids"], attention_mask=text.get("attention_mask")
        ).last_hidden_state
        return normalize(self.model.text_proj(states[:, 0, :]))

    def encode_image(self, image):
        return normalize(self.model.vision_proj(self.image_states(image)[:, 0, :]))

    def scale_logits(self, sims, params=None):
        return sims / self.temperature


__all__ = ["BLIP_ITC_TEMPERATURE", "BlipBackend", "check_architecture", "load_processor"]
